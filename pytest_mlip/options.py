"""Every ``--mlip-*`` command-line option can also be set as an ini option.

``--mlip-report=DIR`` is ``mlip_report = "DIR"`` under ``[tool.pytest.ini_options]``
in pyproject.toml (or ``[pytest]`` in pytest.ini / tox.ini); a flag such as
``--mlip-offline`` is ``mlip_offline = true``. The command line wins over the
ini file. Loaded last of the plugin's modules, so it sees every option the
others declared.
"""

from __future__ import annotations

import pytest

GROUP = "mlip"


def _mlip_options(parser):
    return [opt for opt in parser.getgroup(GROUP).options if any(n.startswith("--mlip") for n in opt.names())]


def ini_name(opt) -> str:
    return opt.dest


def is_flag(opt) -> bool:
    """A ``store_true`` option (argparse reports it as nargs 0, const True; older pytest as its action)."""
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


def _given_on_command_line(config, opt) -> bool:
    args = [str(a) for a in config.invocation_params.args]
    return any(a == n or a.startswith(n + "=") for a in args for n in opt.names())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Fill each option not given on the command line from its ini value (converted to the option's type)."""
    for opt in _mlip_options(config._parser):
        if _given_on_command_line(config, opt):
            continue
        raw = config.getini(ini_name(opt))
        if raw is None or raw == "" or raw == []:
            continue
        attrs = opt.attrs()
        if is_flag(opt):
            value = bool(raw)
        else:
            kind = attrs.get("type")
            value = raw if kind in (None, str, "string") else _convert(kind, raw, opt)
        setattr(config.option, opt.dest, value)


def _convert(kind, raw, opt):
    try:
        return kind(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {ini_name(opt)} = {raw!r} is not a valid {getattr(kind, '__name__', kind)} "
                                f"(as {opt.names()[0]} takes)") from None
