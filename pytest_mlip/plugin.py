"""The pytest plugin: ``pytest --mlip=NAME`` turns contract files into test items.

Options live in the "mlip" group; items are (contract x model) over the target
and its committee; a terminal section tabulates the verdicts. Only hard
contracts on the target fail the run; committee and soft violations are
reported as ``violated`` without failing it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from pathlib import Path

import pytest

from .errors import MlipError, one_line
from .numbers import Number, add_number_option


def _stop_ctrl_c_while_loading():
    """Ctrl-C while pytest imports its plugins (this one pulls in numpy, ASE and the laws) printed a traceback of
    pytest's plugin loader, ~70 lines (a held-out case), and ended the run before the summary and report folder it
    was asked for could say so: the previous run's passing pages stood for it (held-out round 13). Until this
    plugin's ``pytest_configure`` runs, a Ctrl-C is held, and the run stops there with one line (exit 2, its pages
    marked INCOMPLETE); a second Ctrl-C ends the process at once (exit 2, nothing written). Returns the
    handler to put back (None when none was set: not the main thread, or someone else's handler is in place).
    Ctrl-C in pytest's own start, before this module is imported, is pytest's (its traceback)."""
    import signal
    import sys
    import threading

    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler \
            or "pytest_mlip.cli" in sys.modules:  # a console command imports this module: not pytest loading it
        return None
    leave = os._exit  # the real one: the exit guard, set later, wraps os._exit

    def stop(signum, frame):
        if _CTRL_C_WHILE_LOADING:
            sys.stderr.write("\npytest-mlip: interrupted (Ctrl-C, twice) while pytest loads its plugins; nothing "
                             "was run and nothing was written (an earlier run's summary or report is left as it "
                             "was)\n")
            sys.stderr.flush()
            leave(2)  # pytest's exit code for an interrupted run
        _CTRL_C_WHILE_LOADING.append(True)  # its line comes when the run stops, a moment later

    signal.signal(signal.SIGINT, stop)
    return signal.default_int_handler


#: a Ctrl-C held while pytest loaded its plugins (see _stop_ctrl_c_while_loading): the run stops at configure
_CTRL_C_WHILE_LOADING: list = []

#: the SIGINT handler to restore when this plugin configures (see _stop_ctrl_c_while_loading)
_LOADING_SIGINT = [_stop_ctrl_c_while_loading()]


#: Ctrl-C received since pytest-mlip took SIGINT over and not yet handled as an interrupt (see _remember_ctrl_c)
_CTRL_C_SEEN: list = []
#: the SIGINT handler pytest-mlip replaced (Python's default), put back when the run ends
_ORIGINAL_SIGINT: list = []


def _remember_ctrl_c(signum, frame):
    """Python's own Ctrl-C (a KeyboardInterrupt), remembered: raised while Python runs a weakref callback or a
    ``__del__`` (an import's module lock, held-out round 13) the exception is printed as "ignored", and the run went
    on to exit 0 with a complete report. The run looks again at its next step (the end of its preparation, the end
    of each item: :func:`stop_if_ctrl_c_lost`) and stops there, interrupted."""
    import signal

    _CTRL_C_SEEN.append(True)
    signal.default_int_handler(signum, frame)


def stop_if_ctrl_c_lost():
    """A Ctrl-C that was received and never handled as an interrupt is one now."""
    if _CTRL_C_SEEN:
        _CTRL_C_SEEN.clear()
        raise KeyboardInterrupt


def _restore_ctrl_c():
    """Once this plugin configures, Ctrl-C raises KeyboardInterrupt again, as Python's own handler does, and is
    remembered (:func:`_remember_ctrl_c`)."""
    import signal

    handler = _LOADING_SIGINT.pop() if _LOADING_SIGINT else None
    if handler is not None:
        with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing was set from it
            signal.signal(signal.SIGINT, _remember_ctrl_c)
            _ORIGINAL_SIGINT.append(handler)


CONTRACT_GLOB = "mlip_*.toml"

#: the provenance store; reports, gate and summary; the adversary; the reference (their own options and hooks)
pytest_plugins = ["pytest_mlip.provenance.plugin", "pytest_mlip.reporting.plugin", "pytest_mlip.adversary.plugin",
                  "pytest_mlip.reference.plugin",
                  "pytest_mlip.fixtures", "pytest_mlip.progress", "pytest_mlip.options"]


def pytest_addoption(parser):
    group = parser.getgroup("mlip", "physics contracts for machine-learning interatomic potentials")
    group.addoption("--mlip", action="store", default=None, metavar="MODEL",
                    help="target model: a registered name (see --mlip-list), NAME=WEIGHTS, a MACE file path, "
                         "or module:factory returning an ASE calculator")
    group.addoption("--mlip-committee", action="store", default=None, metavar="LIST",
                    help="comma-separated committee models, 'none' for the target alone "
                         "(default: one usable shipped model per other family)")
    group.addoption("--mlip-list", action="store_true", default=False,
                    help="list every registered model and whether it is usable here, then exit")
    group.addoption("--mlip-output", action="store", default=None, metavar="DIR",
                    help="folder for worst configurations and run data (default: .mlip under the rootdir)")
    group.addoption("--mlip-skip-guaranteed", action="store_true", default=False,
                    help="opt out of measuring laws a model's construction guarantees (energy-force consistency, "
                         "Jacobian symmetry on models that declare conservative forces); the summary says they were "
                         "not measured")
    group.addoption("--mlip-no-builtin", action="store_true", default=False,
                    help="do not collect the built-in contract suite, only contract files given or found")
    group.addoption("--mlip-offline", action="store_true", default=False,
                    help="never download model weights: a model not cached here is an error naming where to put "
                         "its file (default: a registered foundation model is downloaded once, on first use)")
    group.addoption("--mlip-contracts", action="store_true", default=False,
                    help="list the collected contracts (law, hard/soft, tolerance, file) and exit")
    # at most 1e8 s (three years: "no limit" in practice): the watchdog's timer takes 2 x SECONDS + 5 and Python's
    # timers overflow near 9.2e9 s
    # at least 0.1 s: below it the timer fires before any model can answer, and every call reads as the model's
    add_number_option(group, "--mlip-timeout", Number("a number of seconds", "600", integer=False, minimum=0.1,
                                                      maximum=1e8), default=None,
                      metavar="SECONDS",
                      help="seconds one model call may take; a call past it is an error verdict naming the call "
                         "and the run goes on (default 900; ini: mlip_timeout)")
    group.addoption("--mlip-partial", action="store_true", default=False,
                    help="accept a partial run: hard contracts of the collected files dropped by -k/-m/--deselect "
                         "do not make the run incomplete (the summary and reports still name them as PARTIAL); "
                         "without it they do, and the gate fails")
    group.addoption("--mlip-debug", action="store_true", default=False,
                    help="show the traceback behind a usage error or an internal error (pytest's --full-trace "
                         "does too); without it every such error is one line")
    parser.addini("mlip", "default target model for --mlip", default=None)
    parser.addini("mlip_committee", "default committee (comma-separated or 'none')", default=None)
    parser.addini("mlip_output", "default --mlip-output folder", default=None)
    parser.addini("mlip_timeout", "default --mlip-timeout (seconds)", default=None)
    parser.addini("mlip_paths", "extra folders to collect when --mlip is given without paths (contract files, "
                                "tests using the mlip_model / mlip_check fixtures)",
                  type="paths", default=[])


from .contracts.suite import builtin_contracts_dir  # noqa: E402,F401  (where the built-in contract files are)


class MlipSession:
    """Run-wide state: target, committee, output folder, collected verdicts."""

    def __init__(self, config, target: str, committee: list[str]):
        self.config = config
        self.target = target
        self.committee = committee
        out = config.getoption("mlip_output") or config.getini("mlip_output") or ".mlip"
        self.output = (Path(config.rootpath) / out) if not Path(out).is_absolute() else Path(out)
        self.skip_guaranteed = bool(config.getoption("mlip_skip_guaranteed"))
        #: measure laws a model's construction guarantees (the default; --mlip-skip-guaranteed opts out)
        self.recheck = not self.skip_guaranteed
        self.verdicts: list[dict] = []
        #: every contract the run's files hold: name -> hard (from the preflight; what "complete" means)
        self.contract_index: dict[str, bool] = {}
        #: every verdict name of the run -> what owns it (a contract file, or a test without its model): names key
        #: the summary, the report and the baseline, so two owners of one name is an error, never a merged row
        self.names: dict[str, str] = {}

    @property
    def models(self) -> list[str]:
        return [self.target] + [m for m in self.committee if m != self.target]


STATE_KEY = pytest.StashKey[MlipSession]()


def _target(config) -> str | None:
    return config.getoption("mlip") or config.getini("mlip") or None


def pytest_cmdline_main(config):
    from .options import COMMAND_LINE_ONLY, from_override, refuse_in_addopts

    refuse_in_addopts(config)
    listing = config.getini("mlip_list")  # read here, before the options module fills flags from the ini file
    if from_override(config, "mlip_list"):  # -o mlip_list=true: on the command line, for this run
        listing = None if str(listing).lower() in ("false", "no", "off", "0") else True
        config.option.mlip_list = bool(listing)
    elif listing not in (None, False, "", "false", "no", "off", "0") and not config.getoption("mlip_list"):
        raise pytest.UsageError(f"ini option mlip_list = {str(listing).lower()} in {config.inipath}: "
                                f"{COMMAND_LINE_ONLY['mlip_list']}; remove the line and pass --mlip-list on the "
                                "command line of the one run that needs it")
    if config.getoption("mlip_list"):
        from .models.registry import describe, model_names, registry, resolve

        target = _target(config)
        if target and target.strip():  # --mlip-list --mlip=typo: the listing must not hide that the name is wrong
            from .models import factory

            factory.SEARCH_PATHS[:] = list(dict.fromkeys(
                [str(config.rootpath)] + [str(p) for p in config.getini("pythonpath")]))
            try:
                resolve(target)
            except MlipError as exc:
                raise usage_error(config, exc) from None
        rows = [describe(registry()[n]) for n in model_names()]
        cols = ["name", "usable", "weights", "elements", "cutoff", "dtype", "conservative", "training", "channel"]
        widths = {c: max(len(c), *(len(str(r[c] if c != "usable" else r[c][:3])) for r in rows)) for c in cols}
        print("  ".join(c.ljust(widths[c]) for c in cols))
        for r in rows:
            print("  ".join(str(r[c] if c != "usable" else r[c][:3].rstrip(":")).ljust(widths[c]) for c in cols))
        print("\nweights: 'in wheel' ships with its package; 'cached' is downloaded already; 'fetch' is downloaded "
              "once, on first use, into its package's own cache (not with --mlip-offline); 'local file' needs "
              "NAME=/path; 'none': analytic")
        missing = [r for r in rows if r["usable"] != "yes" and r["weights"] != "fetch"]
        if missing:
            print("\nnot usable here, and how to fix it:")
            for r in missing:
                print(f"  {r['name']}: {r['usable'][4:]}")
        return 0
    return None


# Warnings the model packages raise on every load or call; they say nothing about a model's physics
# and would bury the contract summary (pytest's -W or filterwarnings still override them).
THIRD_PARTY_NOISE = (
    "ignore:Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected:UserWarning",
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning",
    "ignore:Converting a tensor with requires_grad=True to a scalar:UserWarning",
    "ignore:Set OLD_ERROR_HANDLING to false:DeprecationWarning",
    "ignore:Only FixAtoms and FixCartesian is supported by Pymatgen:UserWarning",
    "ignore:Skipping unhashable information:UserWarning",
)


def pytest_configure(config):
    _restore_ctrl_c()
    stage = ["preparing the run"]  # what a Ctrl-C interrupts, named in its line
    try:
        if _CTRL_C_WHILE_LOADING:
            _CTRL_C_WHILE_LOADING.clear()
            stage[0] = "pytest loaded its plugins"
            raise KeyboardInterrupt
        _configure(config, stage)
        stop_if_ctrl_c_lost()
    except KeyboardInterrupt:
        _CTRL_C_SEEN.clear()
        _interrupted_while_preparing(config, stage[0], pages=len(stage) > 1 and bool(stage[1]))
        raise
    except pytest.UsageError as exc:
        _usage_stopped(config, exc)
        raise


def _usage_stopped(config, exc: BaseException) -> None:
    """The run's summary and report folder (when ours) say a usage error stopped it (reporting.stopped)."""
    if getattr(config, "workerinput", None) is not None:
        return
    target = config.getoption("mlip", None) or config.getini("mlip") or "?"
    from .reporting.stopped import write_usage_stopped

    try:
        write_usage_stopped(config, str(target), one_line(exc) or type(exc).__name__)
    except Exception:  # noqa: BLE001 - the usage error is what the user must see; its line is not lost for this
        pass


def _configure(config, stage: list):
    config.addinivalue_line("markers", "mlip_contract: a physics-contract item generated by pytest-mlip")
    config.addinivalue_line("markers", "slow: a long-running contract (slow = true in its file); -m 'not slow' skips it")
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:  # the watchdog's one line must reach the terminal, not a capture file
        from .evaluation import evaluator as _evaluator

        _evaluator.before_hard_stop = lambda: capman.suspend_global_capture(in_=False)
    _check_ini_keys(config)
    _check_empty_values(config)
    given = config.getoption("mlip")
    if given is not None and not given.strip():  # --mlip= with an unset variable ($MODEL) behind it
        raise pytest.UsageError(f"--mlip={given!r} names no model; pass --mlip=NAME (pytest --mlip-list shows "
                                "the registered models), a module:factory or a model file")
    target = _target(config)
    if not target:
        _refuse_options_without_a_model(config)
        return
    _check_path_arguments(config)
    _refuse_blocked_parts(config)
    guard_process_exit(config)
    for line in THIRD_PARTY_NOISE:
        config.addinivalue_line("filterwarnings", line)
    from .models import factory, weights
    from .models.registry import default_committee, refuse_repeated_models, resolve

    factory.SEARCH_PATHS[:] = list(dict.fromkeys(
        [str(config.rootpath)] + [str(p) for p in config.getini("pythonpath")]))

    weights.set_offline(bool(config.getoption("mlip_offline")) or None)
    loading = stage  # the model being made available or loaded: a Ctrl-C there is named after it
    loading[0] = f"loading model {target!r}"
    try:
        _check_environment(config)  # the options and output paths too: the pages below go only where allowed
        from .reporting.stopped import write_starting

        stage.append(write_starting(config, target))  # they say INCOMPLETE before a factory can crash the process
        from .evaluation.shared import SharedFunctions, named

        shared = SharedFunctions()  # before the model's module is imported (resolve imports it)
        entry = resolve(target)
        reason = _make_available(config, entry)
        if reason:
            raise MlipError(f"model {entry.name!r} is not usable here: {reason}")
        given = config.getoption("mlip_committee")
        if given is not None and not given.strip():  # --mlip-committee= with an unset variable behind it
            raise MlipError(f"--mlip-committee={given!r} names no model; pass --mlip-committee=none for the target "
                            "alone, --mlip-committee=default for one shipped model per other family, or a list "
                            "(a,b)")
        raw = given or config.getini("mlip_committee") or "default"
        if raw.strip().lower() == "none":
            committee = []
        elif raw.strip().lower() == "default":
            committee = default_committee(target)
        else:
            committee = [c.strip() for c in raw.split(",") if c.strip()]
            if not committee:
                raise MlipError(f"--mlip-committee={raw!r} names no model; list models (a,b) or pass "
                                "--mlip-committee=none for the target alone")
            refuse_repeated_models(target, committee)
            for c in committee:
                e = resolve(c)
                loading[0] = f"loading model {c!r}"
                why = _make_available(config, e)
                if why:
                    raise MlipError(f"committee model {e.name!r} is not usable here: {why}")
        for spec in [target, *committee]:
            loading[0] = f"loading model {spec!r}"
            load_users_model(spec)
        replaced = shared.restore()
        if replaced:  # at the import of the model's module (held-out round 16: builtins.max, then NaN hidden)
            raise MlipError(f"importing the module of {', '.join(repr(m) for m in [target, *committee])} replaced "
                            f"{named(replaced)}, which pytest-mlip's checks call; a model must not change Python's "
                            "builtins, math, json, os, numpy or ASE's Atoms and Calculator: remove that from its code")
    except MlipError as exc:
        raise usage_error(config, exc) from None
    loading[0] = "reading the contract files"
    config.stash[STATE_KEY] = MlipSession(config, target, committee)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(p) for p in _default_paths(config)]
    try:
        config.stash[STATE_KEY].contract_index = _preflight_contracts(config, target, committee)
    except MlipError as exc:
        raise usage_error(config, exc) from None


#: options whose value names a file, a folder or an engine: (dest, option, what it names, an example, without it)
VALUE_OPTIONS = (
    ("mlip_report", "--mlip-report", "folder", "--mlip-report=mlip-report", "no report is written"),
    ("mlip_summary_md", "--mlip-summary-md", "file", "--mlip-summary-md=mlip-summary.md", "no summary is written"),
    ("mlip_baseline", "--mlip-baseline", "file", "--mlip-baseline=mlip-baseline.json", "the run is not gated"),
    ("mlip_store", "--mlip-store", "file", "--mlip-store=.mlip/provenance.sqlite",
     "the store is provenance.sqlite in the output folder"),
    ("mlip_output", "--mlip-output", "folder", "--mlip-output=.mlip", "the output folder is .mlip under the rootdir"),
    ("mlip_reference", "--mlip-reference", "engine", "--mlip-reference=pyscf", "no reference is computed"),
)


def _check_ini_keys(config):
    """A misspelt ``mlip_*`` key in the ini (``mlip_commitee``) got only pytest's generic warning, and the run went
    on with the default committee. An ``mlip`` key pytest-mlip does not know is a usage error naming the near one."""
    import difflib

    known = []
    keys = getattr(config, "_inicfg", None)  # pytest >= 9 deprecates the public name; older pytest has only it
    for key in sorted(config.inicfg if keys is None else keys):
        if not key.lower().startswith("mlip"):
            continue
        try:
            config.getini(key)
        except ValueError:
            if not known:
                known = [name for name in config._parser._inidict if name.startswith("mlip")]
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            fix = f"did you mean {close[0]}?" if close else "pytest --help lists the mlip_* keys it reads"
            raise pytest.UsageError(f"unknown ini key {key!r} in {config.inipath} (pytest-mlip ignores no mlip key "
                                    f"it does not read); {fix}") from None


def _check_empty_values(config):
    """``--mlip-report=`` (an unset variable behind it, say) was read as "not given": the report the user asked
    for was silently not written. An empty or blank value is a usage error naming the option and an example."""
    for dest, name, what, example, without in VALUE_OPTIONS:
        given = config.getoption(dest, None)
        if given is not None and not str(given).strip():
            raise pytest.UsageError(f"{name}={given!r} names no {what}; pass one, e.g. {example}, or leave {name} "
                                    f"out ({without})")


def guard_process_exit(config):
    """``os._exit(0)`` from model code outside a model call (a module that exits as it is imported, a thread the model
    starts) ended the process with status 0 and nothing run: the gate passed (held-out cases). Until the run has its
    status, status 0 from ``os._exit`` becomes 1 with one line saying the run did not finish (see
    :mod:`pytest_mlip.exitguard`); an xdist worker also notes it for the controller."""
    from .exitguard import guard_os_exit

    def before():
        try:
            capman = config.pluginmanager.getplugin("capturemanager")
            if capman is not None:  # the line must reach the terminal, not a capture file
                capman.suspend_global_capture(in_=False)
        except Exception:  # noqa: BLE001 - the note below still goes
            pass
        log = process_exit_log(config)
        if log is not None:  # an xdist worker: its exit status reaches no one, the controller reads this
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{config.workerinput.get('workerid', 'worker')}: os._exit(0) called by model "
                         "code (an import or a thread of the model?); the process ended there\n")

    worker = getattr(config, "workerinput", None) is not None
    done: list = []  # the run has printed everything (its cleanup): before, its status is not yet its result

    def result():
        # a worker's own status reaches no one: every os._exit(0) there leaves its note for the controller; the
        # run's status is its result only once the terminal summary is out (a held-out case: os._exit(0) from a
        # model thread between the session's end and its summary exited 0 with the summary lost)
        return None if worker or not done else config.stash.get(FINAL_STATUS, None)

    restore = guard_os_exit(result, "the run", before=before)
    process = _owns_the_process()

    def finish():
        done.append(True)
        if not process:  # an in-process run (pytester, pytest.main): the caller's os._exit is its own again
            restore()
        # else the guard stays for the process's last moments: an atexit handler of model code calling os._exit(0)
        # turned a failed run into exit 0 (held-out round 11); os._exit(0) now exits with the run's status

    config.add_cleanup(finish)


def _owns_the_process() -> bool:
    """This run is the process's program (``pytest`` or ``python -m pytest``: pytest's console_main, one pytest
    main on the stack), not a run inside another (pytester's in-process runs, ``pytest.main`` from a script)."""
    import sys

    config_module = os.path.join("_pytest", "config", "__init__.py")
    frame, names = sys._getframe(), []
    while frame is not None:
        if frame.f_code.co_filename.endswith(config_module):
            names.append(frame.f_code.co_name)
        frame = frame.f_back
    # pytest 9 names them _console_main and _main (pytest.main and console_main call those); pytest 8 main alone
    mains = names.count("_main") if "_main" in names else names.count("main")
    return bool({"console_main", "_console_main"} & set(names)) and mains == 1


#: the run's exit status once pytest-mlip's session finisher has set it (read by the os._exit guard's undo)
FINAL_STATUS = pytest.StashKey[int]()


def process_exit_log(config, worker_only: bool = True) -> Path | None:
    """Where an xdist worker notes an ``os._exit(0)`` of model code for the controller: a file per run in the
    output folder (None outside a worker, or before the run has an id)."""
    worker = getattr(config, "workerinput", None)
    if worker_only and worker is None:
        return None
    state = config.stash.get(STATE_KEY, None)
    if worker is not None:
        run_id = worker.get("mlip_run_id")
    else:
        from .provenance.plugin import PROV_KEY

        run_id = getattr(config.stash.get(PROV_KEY, None), "run_id", None)
    if state is None or not run_id:
        return None
    return Path(state.output) / "process-exits" / f"{run_id}.log"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """After every other finisher (xdist's teardown of its workers included): a worker that model code ended with
    ``os._exit(0)`` after its last item (its status reaches no one) still fails the run, with one line; and a hook
    that set the exit status to 0 after the gate failed the run (a conftest's ``session.exitstatus = 0``: held-out
    round 13) is overruled, with one line."""
    config = session.config
    from .reporting.plugin import REPORT_KEY

    try:
        result = yield
    except SystemExit as exc:  # sys.exit(0) in another finisher would end the run with 0 (held-out round 14)
        gate = getattr(config.stash.get(REPORT_KEY, None), "status", None)
        if exc.code not in (0, None) or gate in (None, 0):
            raise
        import sys

        print(f"pytest-mlip: a pytest_sessionfinish hook (a conftest or a plugin) called sys.exit({exc.code!r}); the "
              f"run failed pytest-mlip's gate: exit {gate}", file=sys.stderr, flush=True)
        session.exitstatus = gate
        result = None
    except Exception as exc:  # a conftest's finisher that raised: one line, not pytest's crash traceback (round 15)
        if debug(config) or config.stash.get(STATE_KEY, None) is None:
            raise
        result = None
        session.exitstatus = _hook_failed(config, "pytest_sessionfinish", exc, session.exitstatus)
    gate = getattr(config.stash.get(REPORT_KEY, None), "status", None)
    if gate not in (None, 0) and session.exitstatus == 0:
        import sys

        print(f"pytest-mlip: a pytest_sessionfinish hook (a conftest or a plugin) set the exit status to 0; the run "
              f"failed pytest-mlip's gate: exit {gate}", file=sys.stderr, flush=True)
        session.exitstatus = gate
    log = None if getattr(config, "workerinput", None) is not None else process_exit_log(config, worker_only=False)
    if log is not None and log.is_file():
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
        log.unlink()
        if lines:
            import sys

            print(f"pytest-mlip: INCOMPLETE: {lines[0]}" + (f" (+{len(lines) - 1} more)" if len(lines) > 1 else "")
                  + "; exit 1", file=sys.stderr, flush=True)
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
    config.stash[FINAL_STATUS] = int(session.exitstatus)
    return result


#: options that do something without a target model
WITHOUT_A_MODEL = ("--mlip-list",)


def _refuse_options_without_a_model(config):
    """``pytest --mlip-timeout=5`` with no ``--mlip`` (nor ``mlip`` in the ini) ran nothing of pytest-mlip and said
    "no tests ran" (a held-out case): an option of the plugin given without a model is a usage error naming it."""
    given = [str(a).split("=")[0] for a in config.invocation_params.args if str(a).startswith("--mlip-")]
    given = [a for a in given if a not in WITHOUT_A_MODEL]
    if given:
        raise pytest.UsageError(f"{given[0]} is an option of a pytest-mlip run, but no model was given: add "
                                "--mlip=NAME (or set mlip in the ini file; pytest --mlip-list shows the models)")


def runs_nothing(config) -> bool:
    """--mlip-contracts (list the contracts) and pytest's --collect-only collect and run nothing: no verdict, and
    no store run, report, summary or baseline that would claim a run (a collect-only run was INCOMPLETE, exit 1).
    So do pytest's --fixtures, --fixtures-per-test, --markers, --setup-plan and --setup-only (held-out round 15:
    --fixtures wrote an INCOMPLETE summary and exited 0)."""
    return bool(config.getoption("mlip_contracts", False) or any(
        config.getoption(dest, False) for dest in ("collectonly", "showfixtures", "show_fixtures_per_test",
                                                   "markers", "setupplan", "setuponly")))


def _interrupted_while_preparing(config, stage: str, pages: bool = False):
    """Ctrl-C while the run is prepared (a model loads, the contract files are read) comes before pytest's terminal
    exists: the run ended without a byte of output (held-out cases). One line says what happened: nothing was run,
    no store run or baseline was written, and the summary and report folder asked for say INCOMPLETE, interrupted
    (``pages``: the start-of-run pages were written before the models loaded; they are replaced all the same, and
    written when a Ctrl-C came before them: held-out round 13). A second Ctrl-C is ignored while they are written."""
    import signal
    import sys

    if getattr(config, "workerinput", None) is None:
        held = None
        with contextlib.suppress(ValueError, OSError):
            held = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            from .reporting.stopped import write_interrupted

            target = config.getoption("mlip", None) or config.getini("mlip") or "?"
            pages = write_interrupted(config, str(target), stage) or pages
        except Exception:  # noqa: BLE001 - the line below is what the user must see
            pass
        finally:
            if held is not None:
                signal.signal(signal.SIGINT, held)
    marked = "; the summary and report folder say INCOMPLETE (interrupted)" if pages else ""
    baseline = " (--mlip-update-baseline: not written)" if config.getoption("mlip_update_baseline", None) else ""
    print(f"pytest-mlip: interrupted (Ctrl-C) while {stage}; nothing was run and no store run or baseline was "
          f"written{baseline}{marked}", file=sys.stderr, flush=True)


def debug(config) -> bool:
    return bool(config.getoption("mlip_debug", False) or config.getoption("fulltrace", False))


def usage_error(config, exc: BaseException) -> pytest.UsageError:
    """pytest's usage error (exit 4, one line); the traceback behind it only with --mlip-debug/--full-trace."""
    if debug(config):
        import traceback

        traceback.print_exception(exc)
    return pytest.UsageError(one_line(exc) or type(exc).__name__)


def _refuse_blocked_parts(config):
    """``-p no:pytest_mlip.provenance.plugin`` (or the reporting part) switched off the store, the determinism sample
    and the incomplete-run gate while the contracts still ran: garbage passed, exit 0 (held-out round 11). pytest-mlip
    runs whole or not at all (``-p no:mlip``)."""
    manager = config.pluginmanager
    for name in pytest_plugins:
        if name == "pytest_mlip.progress":  # the progress line only: -q does without it too
            continue
        if manager.is_blocked(name) or manager.get_plugin(name) is None:
            raise pytest.UsageError(f"-p no:{name} switches off a part of pytest-mlip that the gate needs (the store, "
                                    "the reports and the incomplete-run checks, the adversary, the reference, the "
                                    "fixtures): remove it; -p no:mlip leaves pytest-mlip out as a whole")


def _check_path_arguments(config):
    """A path argument that does not exist is pytest's usage error; pytest finds it only while collecting, after
    the models have loaded and an mlip block (and a store run) claimed a run. Said here first, in pytest's words."""
    if config.getoption("pyargs", False) or config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        path = arg.split("::", 1)[0]
        if path and not (base / path).exists():
            raise pytest.UsageError(f"file or directory not found: {arg}")


#: environment variables that hold a count (positive whole number), with what they count
COUNT_VARIABLES = {"PYTEST_MLIP_THREADS": "threads", "PYTEST_MLIP_REFERENCE_THREADS": "reference threads",
                   "PYTEST_MLIP_GPAW_RANKS": "GPAW MPI ranks"}
#: a count above this many times the machine's cores is a typo, not a setting (100000 threads stalls the run)
OVERSUBSCRIPTION = 4


def _check_environment(config):
    """Environment variables and option values: a mistake is a usage error before any model call."""
    import os

    cores = os.cpu_count() or 1
    for name, what in COUNT_VARIABLES.items():
        raw = os.environ.get(name)
        if raw is not None and raw.strip() != "":
            if not raw.strip().isdigit() or int(raw) < 1:
                raise MlipError(f"{name}={raw!r} is not a positive whole number of {what}; set it like {name}=4 "
                                "or unset it (default 1)")
            if int(raw) > OVERSUBSCRIPTION * cores:
                raise MlipError(f"{name}={raw.strip()} asks for more {what} than {OVERSUBSCRIPTION}x this machine's "
                                f"{cores} CPU cores, the most it accepts ({OVERSUBSCRIPTION * cores}); the cores themselves are "
                                f"the usual choice (like {name}={cores}), or unset it")
    raw = os.environ.get("PYTEST_MLIP_OFFLINE")
    if raw is not None and raw.strip().lower() not in ("", "1", "true", "yes", "on", "0", "false", "no", "off"):
        raise MlipError(f"PYTEST_MLIP_OFFLINE={raw!r} is not a boolean; set it to 1 (never download weights) or 0, "
                        "or unset it")
    from .evaluation.evaluator import DEFAULT_TIMEOUT, set_call_timeout

    seconds = config.getoption("mlip_timeout")  # text made a number by numbers.convert_options (ini included)
    set_call_timeout(DEFAULT_TIMEOUT if seconds is None else seconds)
    _check_output_paths(config)


#: options naming a file pytest-mlip (or pytest) writes or must keep; the report folder is checked apart
PATH_OPTIONS = (("mlip_baseline", "--mlip-baseline"), ("mlip_summary_md", "--mlip-summary-md"),
                ("mlip_store", "--mlip-store"), ("xmlpath", "--junitxml"))


#: what a run writes in its output folder (--mlip-output): the store, worst configurations, the adversary's files,
#: the reference cache and inputs, process-exit notes
OUTPUT_ENTRIES = ("provenance.sqlite", "provenance.sqlite-wal", "provenance.sqlite-shm", "provenance.sqlite-journal",
                  "worst", "adversary", "reference", "reference-inputs", "process-exits")


def _check_output_paths(config):
    """Two options naming one file would have one output overwrite the other (a summary written over the baseline
    it was gated against), and a file inside the report folder would be replaced with the report: usage errors."""
    import os

    base = Path(config.invocation_params.dir)
    seen = {}
    for dest, name in PATH_OPTIONS:
        raw = getattr(config.option, dest, None)
        if not raw:
            continue
        path = Path(os.path.realpath(base / Path(str(raw)).expanduser()))
        if path in seen:
            raise MlipError(f"{seen[path]} and {name} name the same file {path}: one would overwrite the other; "
                            f"give {name} another file name")
        seen[path] = name
    raw_out = config.getoption("mlip_output", None) or config.getini("mlip_output")
    output = None
    if raw_out:
        output = Path(os.path.realpath(Path(config.rootpath) / Path(str(raw_out)).expanduser()))
        if output.exists() and not output.is_dir():
            raise MlipError(f"--mlip-output={raw_out}: {output} is a file, not a folder; give a folder for the "
                            "store and the run's outputs, e.g. --mlip-output=.mlip")
        from .reporting.report import writable_dir_error

        err = writable_dir_error(output, "--mlip-output")
        if err:
            raise MlipError(f"--mlip-output={raw_out}: {err}")
    effective = Path(config.rootpath) / Path(str(raw_out or ".mlip")).expanduser()
    from .reporting.folder import not_plain_entry

    if effective.is_symlink():  # the store was written through it into the folder it names (held-out round 12)
        raise MlipError(f"the output folder {effective} is a symbolic link: pytest-mlip never writes through links; "
                        "pass the folder itself with --mlip-output=DIR, or remove the link")
    odd = not_plain_entry(effective, OUTPUT_ENTRIES)
    if odd:
        raise MlipError(f"the output folder {effective} holds {odd}: pytest-mlip never writes through links or into "
                        "special files there (worst configurations, adversary scripts); remove it, or give "
                        "--mlip-output another folder")
    report = config.getoption("mlip_report", None)
    if report:
        folder = Path(os.path.realpath(base / Path(str(report)).expanduser()))
        if output is not None and folder == output:
            raise MlipError(f"--mlip-report and --mlip-output name the same folder {folder}: the report replaces its "
                            "folder's files, the store among them; give --mlip-report another folder")
        for path, name in seen.items():
            if path == folder or folder in path.parents:
                raise MlipError(f"{name}={path} lies inside the report folder {folder}, whose files the report "
                                f"replaces; put {name} outside it")


#: seconds a ``module:function`` factory may take to return (at least; ``--mlip-timeout`` when longer): a factory
#: that hangs must not hang the CI job with no output (a held-out case); loading weights takes seconds to minutes
FACTORY_SECONDS = 600.0


@contextlib.contextmanager
def _load_deadline(spec: str):
    """A factory that hangs is the user's mistake: a usage error after FACTORY_SECONDS (or --mlip-timeout)."""
    from .evaluation.evaluator import CALL_TIMEOUT, _Deadline, alarm_after

    seconds = max(FACTORY_SECONDS, CALL_TIMEOUT.get("seconds") or 0.0)
    try:
        with alarm_after(seconds):
            yield
    except _Deadline:
        raise MlipError(f"the model factory {spec!r} did not return within {seconds:g} s (a hang while it builds the "
                        "calculator?); fix the factory, or raise the limit with a longer --mlip-timeout") from None


def load_users_model(spec: str, debug: str = "--mlip-debug shows the traceback"):
    """A ``module:function`` model is the user's code, a model file the user's file: load it now, so their
    mistakes are usage errors (``debug``: how this command shows the traceback, or "")."""
    with _process_state_kept(spec):
        _load_users_model(spec, debug)


@contextlib.contextmanager
def _process_state_kept(spec: str):
    """What a factory may change of the process and the run depends on is put back once the model has loaded
    (held-out round 11): the working directory (``os.chdir`` in the user's code moved every relative path resolved
    after it: ``--junitxml=j.xml`` replaced a file of the user's in the folder it moved to) and the recursion limit
    (``sys.setrecursionlimit(60)`` had a flat contract file refused as nested too deeply), and the standard streams
    (``sys.stdout = None`` ended the run in an INTERNALERROR traceback: round 12). A model that replaced a function
    of builtins, math or numpy is refused (round 13): the checks themselves would run the model's code."""
    import sys

    from .evaluation.shared import SharedFunctions, named

    start, limit, streams = os.getcwd(), sys.getrecursionlimit(), (sys.stdout, sys.stderr, sys.stdin)
    shared = SharedFunctions()
    pid = os.getpid()
    try:
        yield
    finally:
        if os.getpid() != pid:  # a process the factory forked came back: it must not run the session (round 17)
            print(f"pytest-mlip: a process the factory of {spec!r} forked returned into the run; it was ended (a "
                  "factory's child process must end itself)", file=sys.__stderr__, flush=True)
            os._exit(0)
        with contextlib.suppress(OSError):
            if os.getcwd() != start:
                os.chdir(start)
        if sys.getrecursionlimit() < limit:
            sys.setrecursionlimit(limit)
        sys.stdout, sys.stderr, sys.stdin = streams
    replaced = shared.restore()
    if replaced:
        raise MlipError(f"loading model {spec!r} replaced {named(replaced)}, which pytest-mlip's checks call; a model "
                        "must not change Python's builtins, math, json, os, numpy or ASE's Atoms and Calculator: "
                        "remove that from its code")


def _load_users_model(spec: str, debug: str):
    from .models.registry import load, resolve

    entry = resolve(spec)
    if entry.weights and Path(entry.weights).is_file():
        try:
            load(spec, probe=False)
        except (MlipError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - a file that does not load is the file's fault, not a verdict
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise MlipError(f"cannot load the model file {entry.weights} ({type(exc).__name__}: {first[:200]}); "
                            f"is it a complete {entry.info.family} model file? (a download cut short: fetch it "
                            f"again{'; ' + debug if debug else ''})") from exc
        return
    if entry.info.family != "factory":
        return
    try:
        with _load_deadline(spec):
            load(spec, probe=False)  # no model call yet: the contract files and options are checked first
    except (MlipError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's factory raised (or exited): their mistake, one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise MlipError(f"the model factory {spec!r} raised {type(exc).__name__}: {first}; fix the factory (it "
                        f"must return an ASE calculator when called without arguments{'; ' + debug if debug else ''})"
                        ) from exc


#: folders never searched for contract files
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages", ".mlip", ".tox"}
#: a name that almost matches CONTRACT_GLOB: a TOML-ish extension anywhere (mlip_x.toml.txt, mlip_x.TOML, .tml)
NEAR_MISS = re.compile(r"(?i)\.(t[o0]m[l1i]?|tml|t[o0]ml)(\.|~|$)")  # .toml and its typos (.tom1, .t0ml, .tml)
#: folders where any TOML-ish file is taken for a misnamed contract file
CONTRACT_FOLDERS = ("contracts", "generated_tests")


#: contracts written in another format: mlip_x.yaml, mlip_x.json (contract files are TOML)
OTHER_FORMAT = re.compile(r"(?i)\.(ya?ml|json)$")


def near_miss(f: Path) -> bool:
    """A file that looks like a contract file but does not match CONTRACT_GLOB exactly (case included)."""
    clean = f.name.strip().lstrip(".").replace(" ", "")
    if f.name.startswith("mlip_") and f.name.endswith(".toml") and clean == f.name:
        return False
    if clean != f.name and clean.lower().startswith("mlip") and ".toml" in clean.lower():
        return True  # spaces or a leading dot: "mlip_x.toml ", "mlip_x. toml", ".mlip_x.toml" (held-out cases)
    if OTHER_FORMAT.search(f.name) and f.name.lower().startswith("mlip"):
        return True
    return bool(NEAR_MISS.search(f.name)) and ("mlip" in f.name.lower() or f.parent.name in CONTRACT_FOLDERS)


def _contract_files(config) -> tuple[list[Path], list[Path]]:
    """Contract files the run will collect, and near-miss files in the folders it searches."""
    base = Path(config.invocation_params.dir)
    root = Path(config.rootpath)
    files, near = [], []
    searched = [root / "contracts", root / "generated_tests", *map(Path, config.getini("mlip_paths"))]
    for arg in list(config.args) + [str(p) for p in searched if p.is_dir()]:
        p = Path(arg.split("::")[0])
        p = p if p.is_absolute() else base / p
        if str(arg) not in config.args and p.is_dir():  # a folder searched only for near misses
            near += [f for f in sorted(p.rglob("*")) if f.is_file() and near_miss(f)]
            continue
        if p.is_file() and p.match(CONTRACT_GLOB):
            files.append(p)
        elif p.is_file() and (near_miss(p) or NEAR_MISS.search(p.name)):
            # named on the command line, yet pytest collects no such file: it would say only "not found" (a
            # held-out case: mlip-c.toml, my_c.toml)
            fix = (f"write it as TOML in mlip_{_stem(p.name)}.toml" if OTHER_FORMAT.search(p.name)
                   else f"rename it to mlip_{_stem(p.name)}.toml")
            raise MlipError(f"{arg} is named on the command line but is not a contract file pytest --mlip collects: "
                            f"contract files are named {CONTRACT_GLOB} ({fix})")
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if any(part in SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
                    continue
                if f.is_symlink() and f.is_dir() and p.resolve().is_relative_to(f.resolve()):
                    raise MlipError(f"{f} is a link to {os.readlink(f)}, a folder that holds it: pytest would collect "
                                    "the same contract files again through it, without end; remove the link")
                if f.is_symlink() and not f.exists() and (f.match(CONTRACT_GLOB) or near_miss(f)):
                    raise MlipError(f"{f} is a link to {os.readlink(f)}, which does not exist: the contract file is "
                                    "not there; fix the link or remove it")
                if not f.is_file():
                    if f.match(CONTRACT_GLOB) and f.is_dir():  # named like one, never collected (held-out round 17)
                        raise MlipError(f"{f} is a folder named like a contract file, which pytest --mlip does not "
                                        "read: rename the folder (or put its contracts in a file of that name)")
                    if f.match(CONTRACT_GLOB):  # a named pipe, a device: never read, never skipped
                        from .reporting.folder import special_file

                        raise MlipError(f"{f} is {special_file(f) or 'not a regular file'}, not a contract file: "
                                        "replace it with a TOML file or remove it")
                    continue
                if f.match(CONTRACT_GLOB):
                    files.append(f)
                elif near_miss(f):
                    near.append(f)
    return list(dict.fromkeys(files)), list(dict.fromkeys(near))


def near_miss_folders(config) -> list[Path]:
    """Folders of the project root named almost like a searched folder (``contract/``, ``Contracts/``,
    ``generated-tests/``) that hold contract files: with no paths given, the run would silently leave them out."""
    import difflib

    if config.args_source == pytest.Config.ArgsSource.ARGS:  # the user named what to collect
        return []
    root = Path(config.rootpath)
    listed = {Path(p).resolve() for p in config.getini("mlip_paths")}
    out = []
    for d in sorted(root.iterdir()):
        if (not d.is_dir() or d.name in CONTRACT_FOLDERS or d.name in SKIP_DIRS or d.name.startswith(".")
                or d.resolve() in listed):
            continue
        name = d.name.lower().replace("-", "_").replace(" ", "_")
        if not any(name == f or difflib.SequenceMatcher(None, name, f).ratio() >= 0.8 for f in CONTRACT_FOLDERS):
            continue
        if any(f.is_file() and (f.match(CONTRACT_GLOB) or near_miss(f)) for f in d.rglob("*")):
            out.append(d)
    return out


def _refuse_code_in_the_agent_zone(config):
    """generated_tests/ holds data the agent's validator reads (protocol files); Python there (a conftest.py, a
    test module) would run code no validator has read, and a conftest can turn a failed run into a passed one."""
    base = Path(config.invocation_params.dir)
    zones = [Path(config.rootpath) / "generated_tests"]
    for arg in config.args:
        p = Path(arg.split("::")[0])
        p = p if p.is_absolute() else base / p
        zones += [q for q in [p, *p.parents, p.resolve(), *p.resolve().parents] if q.name == "generated_tests"]
    for zone in dict.fromkeys(z for z in zones if z.is_dir()):
        code = sorted(f for f in zone.rglob("*.py") if "__pycache__" not in f.parts)
        if code:
            raise MlipError(f"{code[0]} is Python in generated_tests/, the agent's zone, which holds protocol files "
                            "(mlip_*.toml) only: no validator reads code there; move it to tests/ or delete it")


def in_agent_zone(path) -> bool:
    """Is ``path`` a file of generated_tests/, reached by its own path or through a link (a held-out case: a folder
    linked to generated_tests/ ran a softened protocol there without the validator)."""
    path = Path(path)
    return "generated_tests" in path.parts or "generated_tests" in path.resolve().parts


def zone_limit(path: Path) -> int | None:
    """The atom limit a file under generated_tests/ (the agent's zone) may not raise; None elsewhere."""
    from .contracts.files import MAX_ATOMS

    return MAX_ATOMS if in_agent_zone(path) else None


def _preflight_contracts(config, target: str, committee: list[str]) -> dict[str, bool]:
    """Validate every contract file the run will collect, before any model call (a usage error on the first bad
    one); contract names must be unique across files; files under generated_tests/ pass the agent's validator."""
    from .contracts.files import parse_contracts

    root = Path(config.rootpath)
    for folder in config.getini("mlip_paths"):
        if not Path(folder).resolve().is_relative_to(root.resolve()):
            raise MlipError(f"the mlip_paths ini option names {folder}, which is outside the project {root}; "
                            "move the folder into the project or remove it from mlip_paths")
        if not Path(folder).is_dir():
            raise MlipError(f"the mlip_paths ini option names {folder}, which is not a folder; create it or remove "
                            "it from mlip_paths")
    _refuse_code_in_the_agent_zone(config)
    files, near = _contract_files(config)
    seen: dict[str, Path] = {}
    folded: dict[str, tuple[str, Path]] = {}
    index: dict[str, bool] = {}
    zone = None  # the agent validator of generated_tests/, built on the first file there
    for f in files:
        inside = f.resolve().is_relative_to(root.resolve())
        if in_agent_zone(f):  # before the file is parsed: a structure file the agent may not read is never opened
            if zone is None:
                from .agent.validator import Validator

                others = [Path(p) for p in config.getini("mlip_paths") if "generated_tests" not in Path(p).parts]
                zone = Validator(target, committee, existing_dirs=[root / "contracts", *others], check_support=False)
            _agent_zone(f, zone)
        settings = parse_contracts(f, root=root if inside else f.parent, fixed_limit=zone_limit(f))
        builtin = f.resolve().is_relative_to(builtin_contracts_dir().resolve())
        for s in settings:
            if not builtin and s.name in _builtin_names():
                raise MlipError(f"{f} names a contract {s.name!r}, the name of a built-in contract: a report would show "
                                "its verdict as the built-in one's; rename it (names identify contracts in reports "
                                "and baselines)")
            twin = folded.setdefault(s.name.casefold(), (s.name, f))
            if twin[0] != s.name:  # names differing in case alone: -k matches both, worst/ files collide
                raise MlipError(f"contract names {twin[0]!r} ({twin[1]}) and {s.name!r} ({f}) differ only in case: "
                                "names identify contracts in reports, baselines and file names; rename one of them")
            if s.name in seen and seen[s.name] != f:
                raise MlipError(f"duplicate contract name {s.name!r} in {f} and {seen[s.name]}: names identify "
                                "contracts in reports and baselines; rename one of them")
            seen.setdefault(s.name, f)
            index[s.name] = s.hard
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.names.update({name: f"contract file {path}" for name, path in seen.items()})
    for d in near_miss_folders(config):
        config_warning(config, f"{d} holds contract files but is not searched: with no paths given, pytest --mlip "
                               f"collects {' and '.join(f + '/' for f in CONTRACT_FOLDERS)} of the project and the "
                               f"mlip_paths ini folders (rename it to {difflib_closest(d.name)}/, add it to mlip_paths, "
                               "or pass it as a path)")
    for f in near:
        fix = (f"write it as TOML in mlip_{_stem(f.name)}.toml" if OTHER_FORMAT.search(f.name)
               else f"rename it to mlip_{_stem(f.name)}.toml")
        config_warning(config, f"{f} looks like a contract file but is not collected: contract files are named "
                               f"{CONTRACT_GLOB} ({fix})")
    return index


def config_warning(config, message: str) -> None:
    """pytest's configuration warning; where warnings are errors (-W error, filterwarnings = error) it is a usage
    error in one line, not an INTERNALERROR traceback (a held-out case)."""
    try:
        config.issue_config_time_warning(pytest.PytestConfigWarning(message), stacklevel=3)
    except Warning:
        raise MlipError(f"{message} [a warning, made an error by -W error or filterwarnings]") from None


def difflib_closest(name: str) -> str:
    import difflib

    return (difflib.get_close_matches(name.lower().replace("-", "_"), CONTRACT_FOLDERS, n=1, cutoff=0.0)
            or CONTRACT_FOLDERS[:1])[0]


@functools.lru_cache(maxsize=1)
def _builtin_names() -> frozenset[str]:
    """The built-in contracts' names (read from their files once, not validated again)."""
    import tomllib

    names = set()
    for f in builtin_contracts_dir().glob(CONTRACT_GLOB):
        try:
            names |= {t.get("name") for t in tomllib.loads(f.read_text()).get("contract", []) if isinstance(t, dict)}
        except (OSError, ValueError):
            continue
    return frozenset(names)


def _stem(name: str) -> str:
    """The contract name inside a near-miss file name: mlip-x.toml.txt, MLIP_x.TOML, mlipx.toml -> x."""
    name = name.strip().lstrip(".").replace(" ", "")
    base = OTHER_FORMAT.split(NEAR_MISS.split(name)[0])[0]
    return re.sub(r"(?i)^\s*mlip[-_ ]?", "", base).strip() or "name"


def _agent_zone(path: Path, validator):
    """generated_tests/ holds what the agent writes: every file there passes the agent's own validator, the file
    name (``mlip_<slug>.toml``) and the no-repeat rule included (a protocol that repeats one in contracts/, the
    built-in suite or an earlier generated file with only its name changed is refused)."""
    import tomllib

    from .agent.validator import check_text
    from .contracts.files import refuse_fixed_limit

    try:
        text = path.read_text(encoding="utf-8-sig")
        refuse_fixed_limit(path, tomllib.loads(text), zone_limit(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return  # not readable TOML: the contract parser says so in its own words, next
    # comments are inert (never read as data): the raw checks read the rest; the tables are checked again as the
    # validator writes them
    errors = check_text("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    if not errors:
        tables = tomllib.loads(text).get("contract", [])
        gate = validator.file(tables, slug=path.name.removeprefix("mlip_").removesuffix(".toml"))
        errors = gate.errors
        for s in gate.settings or []:
            validator.remember(s, f"{path.name}:{s.name}")
    if errors:
        raise MlipError(f"{path} is in generated_tests/ (the agent's zone) and the agent validator refuses it: "
                        f"{errors[0]}; " + ("delete it (what it checks is already checked)" if "repeats" in errors[0]
                                            else "fix the file or move it to contracts/"))


#: the SIGINT handler replaced while an interrupted run writes its outputs (restored at unconfigure)
_HELD_SIGINT: list = []


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    """After the first Ctrl-C, the run writes what it has (incomplete report, store, summary): a second Ctrl-C
    then would cut that short with a long traceback from inside pytest (a held-out case). Further Ctrl-C are
    answered with one line and held until the run has ended; SIGTERM and SIGKILL still stop it."""
    import signal
    import sys

    _CTRL_C_SEEN.clear()  # handled: the run stops as interrupted
    told = []

    def hold(signum, frame):
        if not told:
            told.append(True)
            print("\npytest-mlip: writing the interrupted run's report and store (a few seconds); Ctrl-C is held "
                  "until then (SIGTERM stops at once)", file=sys.stderr, flush=True)

    try:
        _HELD_SIGINT.append(signal.signal(signal.SIGINT, hold))
    except (ValueError, OSError):  # not the interpreter's main thread: nothing to hold
        pass


def _hook_failed(config, hook: str, exc: BaseException, status) -> int:
    """A hook (a conftest's, a plugin's) raised after the items ran: one line naming it, and an exit status that is
    not 0 (pytest's internal-error status, or the run's own when it already failed). The report pages were written
    before it, or still say INCOMPLETE from the run's start."""
    import sys

    from .errors import raised_where

    status = int(status) or int(pytest.ExitCode.INTERNAL_ERROR)
    print(f"pytest-mlip: a {hook} hook (a conftest or a plugin) raised {raised_where(exc)}; fix the hook "
          f"(--mlip-debug shows the traceback): exit {status}", file=sys.stderr, flush=True)
    return status


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_unconfigure(config):
    """After every other unconfigure: sys.exit(0) in one of them (a conftest's) after the gate failed the run ends
    it with the run's status, with one line (held-out round 14: exit 0 after a hard failure); one that raised ends
    it with one line too, not a traceback."""
    try:
        return (yield)
    except Exception as exc:
        if debug(config) or config.stash.get(STATE_KEY, None) is None:
            raise
        raise SystemExit(_hook_failed(config, "pytest_unconfigure", exc, config.stash.get(FINAL_STATUS, 0))) from None
    except SystemExit as exc:
        final = config.stash.get(FINAL_STATUS, None)
        if exc.code not in (0, None) or not final:
            raise
        import sys

        print(f"pytest-mlip: a pytest_unconfigure hook (a conftest or a plugin) called sys.exit({exc.code!r}); the "
              f"run failed pytest-mlip's gate: exit {final}", file=sys.stderr, flush=True)
        raise SystemExit(final) from None
    finally:
        _unconfigure(config)


def _unconfigure(config):
    import signal

    from .models import weights

    weights.set_offline(None)  # an in-process run (pytester) must not leave the next one offline
    _restore_ctrl_c()  # a run that ended before this plugin configured (pytest --help)
    if _CTRL_C_WHILE_LOADING:  # held while pytest loaded its plugins, and this plugin never configured
        import sys

        _CTRL_C_WHILE_LOADING.clear()
        print("pytest-mlip: interrupted (Ctrl-C) while pytest loaded its plugins", file=sys.stderr, flush=True)
        os._exit(2)
    while _HELD_SIGINT:  # Ctrl-C works again once the run has ended
        signal.signal(signal.SIGINT, _HELD_SIGINT.pop())
    while _ORIGINAL_SIGINT:  # Python's own handler, as before pytest-mlip's import
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGINT, _ORIGINAL_SIGINT.pop())
    _CTRL_C_SEEN.clear()


def pytest_runtest_logfinish(nodeid, location):
    stop_if_ctrl_c_lost()  # a Ctrl-C an item's code swallowed (or Python ignored) stops the run here


def _make_available(config, entry) -> str | None:
    """:func:`make_available` with the download's progress shown on the terminal (controller only)."""
    from .models.registry import make_available

    if hasattr(config, "workerinput"):  # the controller fetched already; a worker only looks
        return entry.unavailable(entry.weights)
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is None or entry.unavailable(entry.weights) is None:
        return make_available(entry, announce=print)
    with capman.global_and_fixture_disabled():
        return make_available(entry, announce=print)


def _default_paths(config) -> list[Path]:
    """What ``pytest --mlip=X`` collects with no paths: built-in suite + the project's own."""
    import fnmatch

    base = Path(config.invocation_params.dir)
    ignored = [(base / p).resolve() for p in (config.getoption("ignore", None) or [])]
    globs = [str(g) for g in (config.getoption("ignore_glob", None) or [])]

    def is_ignored(p: Path) -> bool:
        """pytest's --ignore / --ignore-glob name it (a held-out case: --ignore=contracts was not honoured, the
        folder being one pytest-mlip adds to what is collected)."""
        r = p.resolve()
        return any(r == i or r.is_relative_to(i) for i in ignored) or any(
            fnmatch.fnmatch(str(p), g) or fnmatch.fnmatch(str(r), g) for g in globs)

    paths: list[Path] = []
    if not config.getoption("mlip_no_builtin"):
        paths.append(builtin_contracts_dir())
    root = Path(config.rootpath)
    listed = [Path(p) for p in config.getini("mlip_paths")]
    for p in [root / "contracts", root / "generated_tests", *listed]:
        # contracts/ and generated_tests/ when they hold contract files; a listed folder in any case
        # (it may hold tests written with the mlip_model / mlip_check fixtures)
        try:
            p.resolve()
        except (RuntimeError, OSError) as exc:  # a link that points back at itself (held-out round 17: a traceback)
            raise pytest.UsageError(f"{p} cannot be read as a folder ({one_line(str(exc)) or 'a link loop'}): fix "
                                    "or remove the link") from None
        if is_ignored(p):
            continue
        if p.is_dir() and (p in listed or any(p.rglob(CONTRACT_GLOB))):
            if all(p.resolve() != q.resolve() for q in paths):
                paths.append(p)
    return paths


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".toml" and file_path.match(CONTRACT_GLOB):
        if parent.config.stash.get(STATE_KEY, None) is not None:
            return ContractFile.from_parent(parent, path=file_path)
    return None


class ContractFile(pytest.File):
    def collect(self):
        from .contracts.files import parse_contracts

        try:
            root = Path(self.config.rootpath)
            contracts = parse_contracts(self.path, root=root if self.path.resolve().is_relative_to(root.resolve())
                                        else self.path.parent, fixed_limit=zone_limit(self.path))
        except MlipError as exc:
            raise self.CollectError(str(exc)) from None
        state = self.config.stash[STATE_KEY]
        for settings in contracts:
            for model in state.models:
                role = "target" if model == state.target else "committee"
                item = ContractItem.from_parent(self, name=f"{settings.name}[{model}]", settings=settings,
                                                model=model, role=role)
                if settings.slow:
                    item.add_marker(pytest.mark.slow)
                yield item

    class CollectError(Exception):
        pass


def run_check(item, settings, evaluator, role: str):
    """Run one contract's fixed check on a model for a test item (a contract file's or a test using
    ``mlip_check``): save the worst configuration of a failure, attach the verdict to the item (the
    provenance hooks, summary and report read it from there), skip with the reason; return the verdict."""
    from .laws import run_contract
    from .reporting.verdicts import noise_for, save_worst

    state = item.config.stash[STATE_KEY]
    verdict = run_contract(settings, evaluator, role=role, recheck_guaranteed=state.recheck,
                           noise=noise_for(evaluator.name, settings.name))
    if verdict.status in ("fail", "error"):
        verdict.worst_file = save_worst(state.output, verdict)
    item.verdict = verdict
    item.user_properties.append(("mlip_verdict", verdict.model_dump_json()))
    if verdict.status == "skip":
        pytest.skip(verdict.reason)
    return verdict


class ContractFailure(Exception):
    def __init__(self, verdict):
        self.verdict = verdict


class ContractItem(pytest.Item):
    def __init__(self, *, settings, model, role, **kwargs):
        super().__init__(**kwargs)
        self.settings = settings
        self.model = model
        self.role = role
        self.verdict = None
        self.mlip_spec = model  # what the provenance hooks record this item's model calls under
        from .reporting.report import reproduce_command

        self.mlip_reproduce = reproduce_command(model, settings.name)  # recorded with the item's artifacts
        self.add_marker("mlip_contract")

    def runtest(self):
        from .evaluation import evaluator_for

        verdict = run_check(self, self.settings, evaluator_for(self.model), self.role)
        if verdict.gating:
            raise ContractFailure(verdict)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ContractFailure):
            from .reporting.verdicts import format_failure

            return format_failure(excinfo.value.verdict, self.config.stash[STATE_KEY])
        if not debug(self.config):
            exc = excinfo.value
            first = (str(exc).splitlines() or [""])[0]
            return (f"{self.name} did not finish: {type(exc).__name__}: {first} (the run is incomplete; "
                    "--mlip-debug shows the traceback)")
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # a line number, not None: pytest asserts one when a mark (skip, xfail) of a conftest decides the outcome
        return self.path, contract_line(self.path, self.settings.name), f"{self.settings.check}: {self.name}"


def contract_line(path, name: str) -> int:
    """The 0-based line of ``name = "<name>"`` in a contract file (0 when it is not found)."""
    import re

    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return 0
    pattern = re.compile(r"^\s*name\s*=\s*[\"']" + re.escape(name) + r"[\"']")
    return next((i for i, line in enumerate(lines) if pattern.match(line)), 0)


def contract_rows(items) -> list[dict]:
    """One row per collected contract (not per model): name, law, hard/soft, basis, tolerance, file."""
    from .laws import CHECKS
    from .laws.base import unit_text

    rows, seen = [], set()
    for item in items:
        if not isinstance(item, ContractItem) or item.settings.name in seen:
            continue
        s = item.settings
        seen.add(s.name)
        check = CHECKS[s.check]
        tol = ", ".join(f"{k} {v:g} {unit_text(check.units, k)}".strip() for k, v in s.tolerance.items())
        try:
            where = str(Path(item.path).relative_to(item.config.rootpath))
        except ValueError:
            where = str(item.path)
        rows.append({"contract": s.name, "law": f"{check.title} ({s.check})", "kind": "hard" if s.hard else "soft",
                     "basis": s.basis, "tolerance": tol or "-", "file": where})
    return rows


def pytest_collection_finish(session):
    stop_if_ctrl_c_lost()
    config = session.config
    if not config.getoption("mlip_contracts") or config.stash.get(STATE_KEY, None) is None:
        return
    tr = config.pluginmanager.getplugin("terminalreporter")
    rows = contract_rows(session.items)
    cols = ["contract", "law", "kind", "basis", "tolerance", "file"]
    widths = {c: max([len(c)] + [len(r[c]) for r in rows]) for c in cols}
    tr.section("mlip contracts collected")
    tr.write_line("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        tr.write_line("  ".join(r[c].ljust(widths[c]) for c in cols))
    tr.write_line(f"{len(rows)} contract(s); each runs once per model ({', '.join(config.stash[STATE_KEY].models)})")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    if session.config.getoption("mlip_contracts") and session.config.stash.get(STATE_KEY, None) is not None:
        return True  # listed, not run
    return None


def _verdict_of(report) -> dict | None:
    for key, value in getattr(report, "user_properties", []):
        if key == "mlip_verdict":
            return json.loads(value)
    return None


def pytest_report_teststatus(report, config):
    if report.when == "call" and report.passed:
        v = _verdict_of(report)
        if v and v["status"] == "fail":
            return "violated", "v", ("VIOLATED", {"yellow": True})
        if v and v["status"] == "error":  # a model error on a non-gating item: counted as what it is
            return "model error", "E", ("MODEL ERROR", {"red": True})
    return None


def pytest_runtest_logreport(report):
    pass


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(STATE_KEY, None)
    if state is None or config.getoption("mlip_contracts"):
        return
    if runs_nothing(config):
        terminalreporter.section("mlip contracts")
        terminalreporter.write_line("nothing was run: pytest was asked to list, collect or plan only (no verdict; "
                                    "no store run, report, summary or baseline written)")
        return
    verdicts = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            if getattr(rep, "when", None) == "call" or getattr(rep, "outcome", None) == "skipped":
                v = _verdict_of(rep)
                if v:
                    verdicts.append(v)
    from .reporting.plugin import REPORT_KEY
    from .reporting.verdicts import summary_lines

    prov = config.stash.get(REPORT_KEY, None)
    terminalreporter.section("mlip contracts")
    for line in garbage_lines(verdicts, state.target):
        terminalreporter.write_line(line, red=True)
    for line in summary_lines(verdicts, state, gate=getattr(prov, "gate", None),
                              updating=bool(getattr(prov, "update_baseline", False))
                              and bool(getattr(prov, "written_baseline", False))):
        terminalreporter.write_line(line)
    from .reporting.verdicts import unmeasured_guaranteed

    unmeasured = unmeasured_guaranteed(verdicts, state.target)
    if unmeasured and not state.skip_guaranteed:
        terminalreporter.write_line(unmeasured, yellow=True)
    if state.skip_guaranteed:
        terminalreporter.write_line("OPT-OUT: --mlip-skip-guaranteed: energy-force consistency and Jacobian symmetry "
                                    "were not measured on models that declare conservative forces (their skip reason "
                                    "says so)", yellow=True)


def garbage_lines(verdicts: list[dict], target: str) -> list[str]:
    """One line per model (target or committee) that errored on every contract it ran: a broken model, not a list
    of physics failures."""
    by_model: dict[tuple[bool, str], list[dict]] = {}
    for v in verdicts:
        if v["status"] != "skip":
            by_model.setdefault((v["role"] != "target", v["model"]), []).append(v)
    out = []
    for (committee, model), ran in sorted(by_model.items()):
        if any(v["status"] != "error" for v in ran):
            continue
        messages = [p.get("message", "") for v in ran for p in v.get("probes", []) if p.get("status") == "error"]
        first = next((m for m in messages if "invalid " in m), messages[0] if messages else "")
        what = "returned invalid output" if "invalid " in first else "failed to evaluate"
        role = "committee model " if committee else ""
        out.append(f"MODEL BROKEN: {role}{model} {what} on every contract it was asked for ({len(ran)}), e.g. "
                   f"{first}; fix the calculator (its results must hold a finite energy and (N, 3) forces)"
                   + (" or leave it out of --mlip-committee" if committee else ""))
    return out
