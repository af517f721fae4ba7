"""Every ``--mlip-*`` command-line option can also be set as an ini option.

``--mlip-report=DIR`` is ``mlip_report = "DIR"`` under ``[tool.pytest.ini_options]``
in pyproject.toml (or ``[pytest]`` in pytest.ini / tox.ini); a flag such as
``--mlip-offline`` is ``mlip_offline = true``. The command line wins over the
ini file. Loaded last of the plugin's modules, so it sees every option the
others declared.
"""

from __future__ import annotations

import pytest

from .errors import MlipError
from .numbers import convert_options

GROUP = "mlip"


def _mlip_options(parser):
    return [opt for opt in parser.getgroup(GROUP).options if any(n.startswith("--mlip") for n in opt.names())]


def ini_name(opt) -> str:
    return opt.dest


def is_flag(opt) -> bool:
    """A ``store_true`` option (pytest 9's ``attrs()`` no longer names the action: no argument, const True)."""
    attrs = opt.attrs()
    return attrs.get("action") == "store_true" or (attrs.get("nargs") == 0 and attrs.get("const") is True)


def pytest_addoption(parser):
    for opt in _mlip_options(parser):
        name = ini_name(opt)
        if name in parser._inidict:  # declared by its own module (mlip, mlip_committee, mlip_output)
            continue
        flag = is_flag(opt)
        parser.addini(name, f"default of {opt.names()[0]}" + (" (true/false)" if flag else ""),
                      type="bool" if flag else "string", default=None)


#: flags that make a run something other than a gate: set in the ini file, every run (a CI job's too) would pass
#: without checking anything against the baseline, so they are command-line only
COMMAND_LINE_ONLY = {
    "mlip_update_baseline": "every run would record the baseline instead of being gated by it",
    "mlip_list": "every run would list the models and run no contract",
    "mlip_contracts": "every run would list the contracts and run none",
}


def env_addopts() -> list[str]:
    """The arguments of the PYTEST_ADDOPTS environment variable, as pytest splits them."""
    import os
    import shlex

    try:
        return shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return os.environ.get("PYTEST_ADDOPTS", "").split()


#: pytest's own flags that run no test (or never end): in the addopts of a project that runs pytest --mlip (or
#: PYTEST_ADDOPTS), every gating run would check nothing and exit 0 (held-out round 15: --collect-only, --fixtures,
#: --markers); flag -> what pytest then does
_NOTHING = "would check nothing and exit 0"
RUNS_NO_TEST = {**dict.fromkeys(("--collect-only", "--co"), "collects and runs no contract"),
                **dict.fromkeys(("--fixtures", "--funcargs", "--fixtures-per-test"), "lists the fixtures"),
                "--markers": "lists the markers", "--setup-only": "sets up the fixtures and runs no contract",
                "--setup-plan": "plans the fixtures and runs no contract",
                **dict.fromkeys(("--version", "-V"), "prints its version"),
                **dict.fromkeys(("--help", "-h"), "prints its help"),
                **dict.fromkeys(("--looponfail", "-f"), "reruns the failing tests on every file change, for ever")}


def refuse_in_addopts(config):
    """The command-line-only flags written into the ini file's addopts (a held-out case: every run recorded the
    baseline and passed), and pytest's flags that run no test there when the project runs pytest --mlip."""
    addopts = [str(a) for a in (config.getini("addopts") or [])]
    env = env_addopts()  # the environment's addopts hold for every run there too (a CI variable; round 9)
    places = ((f"the addopts of {config.inipath}", addopts), ("the PYTEST_ADDOPTS environment variable", env))
    for dest in COMMAND_LINE_ONLY:
        name = "--" + dest.replace("_", "-")
        for where, given in places:
            if any(a == name or a.startswith(name + "=") for a in given):
                raise pytest.UsageError(f"{name} in {where}: {COMMAND_LINE_ONLY[dest]}; remove it from there and "
                                        "pass it on the command line of the one run that needs it")
    args = [str(a) for a in config.invocation_params.args]  # --help stops pytest's parsing before --mlip is set
    if not (config.getoption("mlip", None) or config.getini("mlip")
            or any(a == "--mlip" or a.startswith("--mlip=") for a in args)):
        return  # a plain pytest run where pytest-mlip is installed: its addopts are its own
    for where, given in places:
        found = next((a for a in given if a in RUNS_NO_TEST), None)
        if found:
            never = "would never end" if "for ever" in RUNS_NO_TEST[found] else _NOTHING
            raise pytest.UsageError(f"{found} in {where}: pytest then {RUNS_NO_TEST[found]}, so every pytest --mlip "
                                    f"run there {never}; remove it from there and pass it on the command line of the "
                                    "one run that needs it")


def from_override(config, name: str) -> bool:
    """Is the ini value ``name`` given with ``-o name=...`` on the command line (one run), not in the ini file?"""
    overrides = [str(o) for o in (getattr(config.option, "override_ini", None) or [])]
    return any(o.split("=", 1)[0].strip() == name for o in overrides)


def _given_on_command_line(config, opt) -> bool:
    """Given as an option (it wins over the ini key): on the command line, in PYTEST_ADDOPTS or in the ini file's
    addopts, which pytest adds to the command line (held-out round 14: PYTEST_ADDOPTS=--mlip-committee=emt lost
    to mlip_committee in pyproject.toml, and a wrong value there went unchecked)."""
    args = [str(a) for a in config.invocation_params.args] + env_addopts() \
        + [str(a) for a in (config.getini("addopts") or [])]
    return any(a == n or a.startswith(n + "=") for a in args for n in opt.names())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Fill each option not given on the command line from its ini value (converted to the option's type)."""
    from_ini = set()
    args = [str(a) for a in config.invocation_params.args]
    refuse_in_addopts(config)
    for opt in _mlip_options(config._parser):
        given = [a for a in args for n in opt.names() if a == n or a.startswith(n + "=")]
        if len(given) > 1 and not is_flag(opt):  # argparse keeps the last, as pytest does; said, not silent
            from .plugin import config_warning

            try:
                config_warning(config, f"{opt.names()[0]} is given {len(given)} times ({', '.join(given)}): the last "
                                       "one is used")
            except MlipError as exc:
                raise pytest.UsageError(str(exc)) from None
        on_command_line = _given_on_command_line(config, opt)  # it wins, but a wrong ini value is still an error
        try:
            raw = config.getini(ini_name(opt))
        except (ValueError, pytest.UsageError) as exc:  # pytest's own bool parsing refused the text
            raise pytest.UsageError(f"ini option {ini_name(opt)}: {exc}; write {ini_name(opt)} = true or false "
                                    f"(as {opt.names()[0]} is a flag)") from None
        if isinstance(raw, (list, tuple)) and not is_flag(opt):  # a TOML array where one string is meant
            raise pytest.UsageError(f"ini option {ini_name(opt)} is a list ({raw!r}); write one string, e.g. "
                                    f"{ini_name(opt)} = \"a,b\" (as {opt.names()[0]}=VALUE takes)")
        if isinstance(raw, str) and not raw.strip() and not is_flag(opt):
            # present but empty (`mlip_report =`, `mlip = ""`): read as unset, the run silently did something else
            raise pytest.UsageError(f"ini option {ini_name(opt)} is empty; give it a value (as {opt.names()[0]}=VALUE "
                                    "takes) or remove the line")
        if raw is None or raw == "" or raw == []:
            continue
        attrs = opt.attrs()
        if is_flag(opt):
            value = _flag(raw, opt)
            if value and opt.dest in COMMAND_LINE_ONLY and not from_override(config, ini_name(opt)):
                raise pytest.UsageError(f"ini option {ini_name(opt)} = true in {config.inipath}: "
                                        f"{COMMAND_LINE_ONLY[opt.dest]}; remove the line and pass {opt.names()[0]} "
                                        "on the command line of the one run that needs it")
        else:
            kind = attrs.get("type")
            value = raw if kind in (None, str, "string") else _convert(kind, raw, opt)
            choices = attrs.get("choices")
            if choices and value not in choices:  # the command line refuses it up front; so does the ini file
                raise pytest.UsageError(f"ini option {ini_name(opt)} = {raw!r} is not one of {', '.join(map(str, choices))}"
                                        f" (as {opt.names()[0]} takes)")
        if on_command_line:
            from .numbers import NUMBER_OPTIONS

            number = NUMBER_OPTIONS.get(opt.names()[0])
            if number is not None:
                try:
                    number.parse(value, opt.names()[0], opt.dest)
                except MlipError as exc:
                    raise pytest.UsageError(f"{exc} (the command line gives {opt.names()[0]}, but the ini value is "
                                            "read too: fix or remove it)") from None
            continue
        setattr(config.option, opt.dest, value)
        from_ini.add(opt.dest)
    try:
        convert_options(config, from_ini)
    except MlipError as exc:
        raise pytest.UsageError(str(exc)) from None


def _flag(raw, opt) -> bool:
    """An ini flag: a real boolean, or true/false (yes/no, on/off, 1/0) written as text; anything else is a usage
    error (``bool("false")`` is True: never guess)."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise pytest.UsageError(f"ini option {ini_name(opt)} = {raw!r} is not a boolean; write {ini_name(opt)} = true "
                            f"or false (as {opt.names()[0]} is a flag)")


def _convert(kind, raw, opt):
    try:
        return kind(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {ini_name(opt)} = {raw!r} is not a valid {getattr(kind, '__name__', kind)} "
                                f"(as {opt.names()[0]} takes)") from None
