"""Reports, the CI gate and the pull-request summary as pytest hooks (loaded by ``pytest_mlip.plugin``).

- ``--mlip-baseline``: a failed hard contract on the target that the baseline
  already knows (and that did not regress beyond the margin) has its call
  report turned into a pass here (``pytest_runtest_makereport``), so the run
  fails only on new failures and regressions; the terminal shows it as
  ``VIOLATED`` and the gate lists it as known.
- What did not finish (crashes, items never run, an interruption, a dead
  worker, deselected hard contracts, the sampled determinism check's
  violations) is gathered here into the ``incomplete`` block.
- At the end (controller only): the provenance run is finished with the gate and
  the incomplete block in its run artifact (``ProvenanceRun.finish``), then the
  report folder, the baseline update and the pull-request summary are written.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from ..errors import MlipError
from ..numbers import Number, add_number_option
from ..laws.determinism.check import Determinism
from ..provenance.plugin import PROV_KEY, is_worker
from .folder import MARKER, first_conflict, read_manifest

REPORT_KEY = pytest.StashKey["ReportingRun"]()
#: a file pytest-mlip writes into every report folder, listing the files it wrote (reporting.folder): only such a
#: folder (or an empty one) is written into, and only the files it lists are replaced
REPORT_MARKER = MARKER
SUMMARY_HEAD = "### pytest-mlip on"
#: the incomplete block's key for the sampled determinism check (the evaluator repeats a sample of every model's
#: calls): named after the law it applies, read from the law's record
SAMPLED = Determinism.name


def is_our_report_dir(folder: Path) -> bool:
    """The folder holds the marker pytest-mlip writes, in its form (a hand-made or empty one does not count)."""
    return read_manifest(folder) is not None


def pytest_addoption(parser):
    group = parser.getgroup("mlip", "physics contracts for machine-learning interatomic potentials")
    group.addoption("--mlip-report", action="store", default=None, metavar="DIR",
                    help="write report.json, report.md and a self-contained report.html (with figures) to DIR")
    group.addoption("--mlip-baseline", action="store", default=None, metavar="FILE",
                    help="CI gate: fail only on new hard failures or regressions against this baseline file")
    group.addoption("--mlip-update-baseline", action="store_true", default=False,
                    help="rewrite the --mlip-baseline file from this run (its failures become known ones)")
    add_number_option(group, "--mlip-regression-margin", Number("a relative growth of v/tau", "0.2", integer=False),
                      default=0.2, metavar="FRACTION",
                      help="relative growth of v/tau over the baseline that counts as a regression (default 0.2)")
    group.addoption("--mlip-summary-md", action="store", default=None, metavar="FILE",
                    help="write a short Markdown summary (verdicts, gate) fit for a pull-request comment")


class ReportingRun:
    """Per-process state of the gate and the outputs of one pytest run."""

    def __init__(self, config, state):
        self.config = config
        self.state = state
        self.baseline: dict | None = None
        self.baseline_path: Path | None = None
        self.update_baseline = False
        self.margin = 0.2
        self.report_dir: Path | None = None
        self.summary_path: Path | None = None
        self.gate = None
        self.written_baseline: dict | None = None
        self.written: list[str] = []
        self.errors: list[str] = []
        self.tracker: "_Collector | None" = None
        self.incomplete: dict = {}
        #: gating failures pytest counted as no failure (an xfail mark, a hook that rewrote the outcome)
        self.overruled: list[str] = []
        #: the provenance run's id and code version (read by the summary)
        self.run_id: str | None = None
        self.code_version: str | None = None


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from ..plugin import STATE_KEY, runs_nothing

    state = config.stash.get(STATE_KEY, None)
    if state is None or runs_nothing(config):  # --mlip-contracts lists, --collect-only collects: nothing runs
        return
    rep = ReportingRun(config, state)
    try:
        _configure_gate(config, rep)
        if not is_worker(config):
            _configure_outputs(config, rep)
    except MlipError as exc:
        from ..plugin import _usage_stopped, usage_error

        _usage_stopped(config, exc)  # a baseline refused: the outputs, when ours, say so
        raise usage_error(config, exc) from None
    config.stash[REPORT_KEY] = rep
    if not is_worker(config):
        rep.tracker = _Collector(config)
        config.pluginmanager.register(rep.tracker, "mlip-reporting-collector")
        _trap_sigterm(config)
        if rep.report_dir is not None or rep.summary_path is not None:
            from .stopped import register

            register(config, rep)  # a call the watchdog must end still leaves an INCOMPLETE summary and report


def pytest_sessionstart(session):
    """Before any item runs, the summary and report folder say INCOMPLETE (the finished run overwrites them): a
    process killed outright leaves those, not the previous run's report."""
    rep = session.config.stash.get(REPORT_KEY, None)
    if rep is None or is_worker(session.config) or (rep.report_dir is None and rep.summary_path is None):
        return
    from .stopped import write_running

    try:
        write_running(session.config, rep)
    except MlipError as exc:
        from ..plugin import usage_error

        raise usage_error(session.config, exc) from None


def _trap_sigterm(config):
    """SIGTERM (a CI job cancelled) ends the run like Ctrl-C: the reports are written and say it was stopped."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    told = []

    def on_term(signum, frame):
        from ..plugin import _HELD_SIGINT

        if config.stash.get(_STOPPED, None) or _HELD_SIGINT:  # already stopping: the outputs are being written
            if not told:  # a second signal there used to end in a traceback from inside pytest (a held-out case)
                told.append(True)
                import sys

                print("\npytest-mlip: SIGTERM while the stopped run writes its report and store (a few seconds); "
                      "held until then (SIGKILL stops at once)", file=sys.stderr, flush=True)
            return
        config.stash[_STOPPED] = "terminated (SIGTERM)"
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, on_term)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, previous))


def _configure_gate(config, rep):
    from .gate import BaselineError, read_baseline

    raw = config.getoption("mlip_baseline")
    rep.update_baseline = config.getoption("mlip_update_baseline")
    rep.margin = config.getoption("mlip_regression_margin")  # checked by numbers.convert_options
    if rep.margin is not None and (isinstance(rep.margin, bool) or not isinstance(rep.margin, (int, float))
                                   or not math.isfinite(rep.margin) or rep.margin < 0):
        # a conftest set it after the options were checked (held-out round 14: a 113-line traceback at the gate)
        raise MlipError(f"--mlip-regression-margin is {rep.margin!r} (set by a conftest or a plugin?), not a relative "
                        "growth of v/tau (a finite number >= 0); give e.g. --mlip-regression-margin=0.2")
    if rep.update_baseline and not raw:
        raise MlipError("--mlip-update-baseline needs the file to write: add --mlip-baseline=FILE")
    if not raw:
        return
    path = Path(raw).expanduser()
    rep.baseline_path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
    if rep.update_baseline:
        if rep.baseline_path.exists():
            try:
                rep.baseline, target = read_baseline(rep.baseline_path)
            except BaselineError as exc:  # never overwrite a file that is not ours
                raise MlipError(f"--mlip-update-baseline refuses to overwrite {rep.baseline_path}: "
                                f"{str(exc).split(';')[0]}; pass a new file name with --mlip-baseline=FILE") from None
            other = _other_target(rep.state.target, rep.baseline, target)
            if other:  # another target's record of known failures: never replaced without a word (a held-out case)
                raise MlipError(f"--mlip-update-baseline refuses to replace {rep.baseline_path}, the baseline of the "
                                f"target {other}, with one of {rep.state.target!r}: keep one baseline file per "
                                "target; pass a new file name with --mlip-baseline=FILE (or move the old one aside)")
        else:
            rep.baseline = {}
        from .report import writable_dir_error

        err = writable_dir_error(rep.baseline_path.parent, "--mlip-baseline")
        if err:
            raise MlipError(err.replace("=DIR", "=FILE in a writable folder"))
    else:
        rep.baseline, target = read_baseline(rep.baseline_path)
        edited = _header_disagrees(rep.baseline, target)
        if edited:
            raise MlipError(f"--mlip-baseline={raw} says it was recorded for the target {target!r}, but its target "
                            f"entries name {edited}: it was edited by hand; regenerate it with "
                            f"--mlip-baseline={raw} --mlip-update-baseline")
        other = _other_target(rep.state.target, rep.baseline, target)
        if other:
            raise MlipError(f"--mlip-baseline={raw} was recorded for the target {other}, and this run's target is "
                            f"{rep.state.target!r}: none of its entries would match, and the gate would pass "
                            f"whatever {rep.state.target} does; pass the baseline file recorded for "
                            f"{rep.state.target}, or record one with --mlip-baseline=FILE --mlip-update-baseline")


def _header_disagrees(baseline: dict, recorded: str | None) -> str | None:
    """The target entries' model(s), as text, when the file's ``target`` names another model (a hand edit: which of
    the two was meant cannot be told); else None."""
    from ..models.registry import resolve

    entries = {e["model"] for e in baseline.values() if e.get("role", "target") == "target"}
    if not recorded or not entries:
        return None
    names = {recorded.strip().lower()}
    try:
        names.add(resolve(recorded).name.lower())
    except MlipError:  # a factory or weights file no longer here: the text alone is compared
        pass
    if names & {n.lower() for n in entries}:
        return None
    return " and ".join(repr(n) for n in sorted(entries))


def _other_target(target: str, baseline: dict, recorded: str | None) -> str | None:
    """The target(s) a baseline was recorded for, as text, when this run's target is not among them (else None):
    compared as the verdicts name models (``EMT`` and ``emt`` are one model; so are two weights files of one
    registered model: gating new weights against the old ones is what a baseline is for)."""
    from ..models.registry import resolve
    from .gate import recorded_targets

    names = recorded_targets(baseline, recorded)
    if not names:
        return None
    mine = {target.strip().lower(), resolve(target).name.lower()}
    if mine & {n.lower() for n in names}:
        return None
    return " and ".join(repr(n) for n in sorted(names))


def _configure_outputs(config, rep):
    from .report import writable_dir_error

    raw = config.getoption("mlip_report")
    if raw:
        p = Path(raw).expanduser()
        rep.report_dir = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        if "generated_tests" in rep.report_dir.resolve().parts:  # a held-out case: pages and a store landed there
            raise MlipError(f"--mlip-report={raw} is inside generated_tests/, the agent's zone (protocol files "
                            "only); write the report elsewhere, e.g. --mlip-report=mlip-report")
        if rep.report_dir.is_symlink():  # (a dangling one too: the report replaces its folder by a rename)
            raise MlipError(f"--mlip-report={raw} is a symbolic link; pass the folder itself (or a new folder), e.g. "
                            "--mlip-report=mlip-report")
        if rep.report_dir.exists() and not rep.report_dir.is_dir():
            raise MlipError(f"--mlip-report={raw} is a file, not a folder; pass a folder with --mlip-report=DIR")
        err = writable_dir_error(rep.report_dir, "--mlip-report")
        if err:
            raise MlipError(err)
        if rep.report_dir.is_dir() and any(rep.report_dir.iterdir()) and not is_our_report_dir(rep.report_dir):
            raise MlipError(f"--mlip-report={raw}: {rep.report_dir} is not empty and was not written by pytest-mlip "
                            f"(no {REPORT_MARKER} file with pytest-mlip's text); pass a new or empty folder, "
                            "e.g. --mlip-report=mlip-report")
        _check_report_files(rep.report_dir)
        import importlib.util

        for name in ("jinja2", "matplotlib"):  # looked up, not imported: the start-of-run pages come first
            if importlib.util.find_spec(name) is None:
                raise MlipError(f"--mlip-report needs {name}: pip install 'pytest-mlip[report]'")
    _check_junitxml(config)
    raw = config.getoption("mlip_summary_md")
    if raw:
        p = Path(raw).expanduser()
        rep.summary_path = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        err = writable_dir_error(rep.summary_path.parent, "--mlip-summary-md")
        if err:
            raise MlipError(err.replace("=DIR", "=FILE in a writable folder"))
        from .folder import special_file
        from .summary import is_own_summary

        kind = special_file(rep.summary_path)
        if kind:
            raise MlipError(f"--mlip-summary-md={raw}: {rep.summary_path} is {kind}, not a file pytest-mlip may "
                            "replace; pass a file name, e.g. --mlip-summary-md=mlip-summary.md")
        if rep.summary_path.is_dir() or (rep.summary_path.is_file() and not is_own_summary(rep.summary_path)):
            raise MlipError(f"--mlip-summary-md={raw}: {rep.summary_path} exists and is not a pytest-mlip summary "
                            "as pytest-mlip wrote it (another file, or one edited since); pass a new file name, e.g. "
                            "--mlip-summary-md=mlip-summary.md, or move it aside")


def _check_junitxml(config) -> None:
    """pytest's ``--junitxml`` carries the run's verdicts and root (an output of the run, listed with ours): a file
    there that is not a JUnit XML report is the user's, never overwritten (a held-out case: --junitxml naming a
    contract file replaced it with XML)."""
    raw = getattr(config.option, "xmlpath", None)
    if not raw:
        return
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
    from .folder import special_file

    kind = special_file(path)
    if kind is None and path.is_file():
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            head = b""
        if head.strip() and b"<testsuite" not in head:
            kind = "a file that is not a JUnit XML report"
        elif head.strip() and not _pytest_junit(head, config):
            # another program's JUnit report (jest's, say) was replaced by pytest's (held-out round 11)
            kind = "a JUnit XML report that pytest did not write (its test suite is not named as pytest names it)"
    if kind:
        raise MlipError(f"--junitxml={raw}: {path} is {kind}; pytest would replace it: pass a new file name, e.g. "
                        "--junitxml=junit.xml, or move it aside")


def _pytest_junit(head: bytes, config) -> bool:
    """Whether a JUnit XML file's first test suite is named as pytest's junitxml names it (ini junit_suite_name,
    default "pytest")."""
    import re

    try:
        suite = config.getini("junit_suite_name") or "pytest"
    except (ValueError, KeyError):
        suite = "pytest"
    found = re.search(rb"<testsuite\s[^>]*?\bname=\"([^\"]*)\"", head)
    return found is not None and found.group(1).decode("utf-8", "replace") == suite


def _check_report_files(folder: Path) -> None:
    """Before any model call: a file of the user's (or a link) where the report writes stops the run now, with one
    line naming it, instead of being overwritten at the end (or failing the report after an hour of model calls)."""
    if folder.is_dir():
        problem = first_conflict(folder, read_manifest(folder) or {})
        if problem:
            raise MlipError(f"--mlip-report: {problem}")


def _contract_item(item) -> bool:
    """A contract file's item, or a test using the ``mlip_model`` fixture (pytest_mlip.fixtures)."""
    return getattr(item, "mlip_spec", None) is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    rep = item.config.stash.get(REPORT_KEY, None)
    if (rep is None or report.when != "call" or rep.baseline is None or not _contract_item(item)
            or getattr(item, "verdict", None) is None or not item.verdict.gating):
        return report
    v = item.verdict
    kind, why = baseline_view(rep, {"model": v.model, "contract": v.contract, "role": v.role, "hard": v.hard,
                                    "status": v.status, "max_normalized": v.max_normalized})
    note = f"{kind}" + (f": {why}" if why else "")
    if kind in KNOWN and report.failed:
        # A failure the baseline already records: report it, do not fail the run.
        report.outcome = "passed"
        report.longrepr = None
    report.user_properties.append(("mlip_gate", note))
    item.user_properties.append(("mlip_gate", note))
    return report


#: what report.json keeps of an adversary result (the terminal shows the rest)
ADVERSARY_KEYS = ("contract", "model", "role", "hard", "status", "value", "problem", "parameters", "reason",
                  "evaluations", "budget", "file", "command", "kept")


def adversary_row(result: dict, failed: bool) -> dict:
    """One adversary result as report.json lists it; ``gates``: it failed the run (--mlip-adversary-gate, or a
    model error the search met)."""
    row = {k: result.get(k) for k in ADVERSARY_KEYS}
    row["gates"] = bool(failed)
    return row


def _split_nodeid(nodeid: str) -> tuple[str, str] | None:
    """(contract, model) of a contract item's node id ``path/mlip_x.toml::NAME[MODEL]``."""
    path, _, name = nodeid.rpartition("::")
    if not path.endswith(".toml") or "[" not in name or not name.endswith("]"):
        return None
    i = name.index("[")
    return name[:i], name[i + 1:-1]


class _Collector:
    """Gathers each item's verdict and artifact ids from its report (on the xdist controller too), and what did
    not finish: items collected but never reported, items that crashed, an interruption, a dead worker."""

    def __init__(self, config):
        self.config = config
        self.expected: set[str] = set()
        self.reported: set[str] = set()
        self.crashed: dict[str, str] = {}
        #: tests of the user's (not contract items) that failed without giving a verdict: name -> why
        self.failed_tests: dict[str, str] = {}
        self.interrupted: str | None = None
        self.dead_workers: list[str] = []
        #: the sampled determinism check: model -> [calls, repeats]; violations found
        self.sampled: dict[str, list[int]] = {}
        #: model -> outputs the items asked of it (real calls and cache hits)
        self.asked: dict[str, int] = {}
        self.nondeterminism: list[dict] = []
        #: item name -> the first model failure it saw that no verdict reported (a test caught the error)
        self.unreported: dict[str, str] = {}
        #: (verdict name, model) -> the test that gave it; two tests giving one name, each in its own xdist worker
        #: (a worker refuses a clash only among its own tests), are a clash: names key the rows and the baseline
        self.owners: dict[tuple[str, str], str] = {}
        self.clashes: list[str] = []
        #: every item of the run (contract files and the user's tests): node id -> the reason it skipped; and the
        #: items that ran (a run whose every item skipped and that gave no verdict checked nothing)
        self.skipped: dict[str, str] = {}
        self.ran: set[str] = set()
        #: model -> [calls on two atoms or more, of those with every force exactly zero, their energies per atom]
        self.inert: dict[str, list] = {}
        #: (model, process id) -> that process's latest energy spread (cumulative, so the latest holds the rest)
        self.spreads: dict[tuple[str, int], dict] = {}
        #: whether any process reported what it collected (an interrupted xdist run may end before a worker did:
        #: then no contract was deselected, they all never ran)
        self.collected = False
        #: the adversary's results (--mlip-adversary), reported apart from the sampled verdicts
        self.adversary: list[dict] = []
        #: node id -> the refusal of a test's mlip_check arguments (the user's mistake: the run exits 4)
        self.usage_errors: dict[str, str] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr, excinfo):
        """A hook that raised while the run went on (a conftest's, a plugin's, an xdist worker's): one line, not
        pytest's INTERNALERROR traceback (held-out round 14); the run stops, its pages say INCOMPLETE with the line
        and it exits 3 (pytest's internal-error status)."""
        from ..errors import raised_where
        from ..plugin import debug

        exc = getattr(excinfo, "value", None)
        if debug(self.config) or not isinstance(exc, Exception):
            return None
        where = raised_where(exc)
        if isinstance(exc, AssertionError) and "xdist" in str(getattr(excinfo.traceback[-1], "path", "")):
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]  # a worker's: its traceback as the message
            where = f"{lines[-1].strip()[:300]} (in an xdist worker)" if lines else "an error in an xdist worker"
        line = f"stopped by a hook that raised {where}"
        self.interrupted = self.interrupted or line
        capture = self.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:  # its own hook (which would do this) does not run after this one
            capture.stop_global_capturing()
        pytest.exit(f"pytest-mlip: INCOMPLETE: {line}; fix the hook (--mlip-debug shows the traceback): exit 3",
                    returncode=int(pytest.ExitCode.INTERNAL_ERROR))

    def pytest_runtest_logreport(self, report):
        for key, value in getattr(report, "user_properties", []):
            if key == "mlip_adversary" and (report.when == "call" or report.skipped):
                self.adversary.append(adversary_row(json.loads(value), failed=report.failed))
                return  # not a contract item, nor a test of the user's: its own block says what it found
            if key == "mlip_sample" and report.when == "call":
                data = json.loads(value)
                counts = self.sampled.setdefault(data["model"], [0, 0])
                counts[0] += data["calls"]
                counts[1] += data["repeats"]
                self.asked[data["model"]] = self.asked.get(data["model"], 0) + data.get("asked", data["calls"])
                inert = self.inert.setdefault(data["model"], [0, 0, set(), 0])
                inert[0] += data.get("multi", 0)
                inert[1] += data.get("flat", 0)
                inert[2].update((formula, energy) for formula, energy in data.get("flat_calls", []))
                inert[3] += data.get("flat_isolated", 0)
                if "spread" in data:
                    key = (data["model"], data.get("pid", 0))
                    if data["spread"]["calls"] >= self.spreads.get(key, {"calls": -1})["calls"]:
                        self.spreads[key] = data["spread"]
                self.nondeterminism += data["violations"]
                if data.get("unreported"):
                    name = report.nodeid.rpartition("::")[2]
                    more = len(data["unreported"]) - 1
                    self.unreported[name] = data["unreported"][0][:240] + (f" (+{more} more)" if more else "")
            if key == "mlip_verdict" and (report.when == "call" or report.skipped):
                self._own(report.nodeid, json.loads(value))
            if key == "mlip_usage_error" and report.when == "call":
                self.usage_errors.setdefault(report.nodeid, str(value))
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr or "")
            self.skipped.setdefault(report.nodeid, str(reason).removeprefix("Skipped: ").strip() or "skipped")
        elif report.when == "call" or report.failed:
            self.ran.add(report.nodeid)
        if _split_nodeid(report.nodeid) is None:
            if report.failed and not any(k == "mlip_verdict" for k, _ in getattr(report, "user_properties", [])):
                # a test of the user's that failed without giving a verdict (mlip_check refused its settings, the
                # test raised): the verdict matrix does not show it, so the run is not complete (a held-out case)
                text = str(report.longrepr or "").strip().splitlines()
                self.failed_tests.setdefault(report.nodeid.rpartition("::")[2] or report.nodeid,
                                             (text[-1] if text else "failed")[:240])
            return
        if report.when == "call" or report.failed or report.skipped:
            self.reported.add(report.nodeid)
        if report.failed and not any(k == "mlip_verdict" for k, _ in getattr(report, "user_properties", [])):
            text = str(report.longrepr or "").strip().splitlines()
            self.crashed[report.nodeid] = (text[-1] if text else "crashed")[:300]

    def _own(self, nodeid: str, verdict: dict) -> None:
        key = (verdict["contract"], verdict["model"])
        other = self.owners.setdefault(key, nodeid)
        if other != nodeid:
            self.clashes.append(f"{key[0]}[{key[1]}] given by both {other} and {nodeid} (rename one test or pass "
                                "name=... to mlip_check)")

    def pytest_collection_finish(self, session):
        self.expected.update(i.nodeid for i in session.items if _split_nodeid(i.nodeid))
        if session.items or not self.config.pluginmanager.has_plugin("dsession"):  # xdist's controller collects none
            self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.expected.update(i for i in ids if _split_nodeid(i))
        self.collected = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        if error:
            self.dead_workers.append(f"{getattr(node, 'gateway', None) and node.gateway.id or 'worker'}: "
                                     f"{str(error).strip().splitlines()[-1][:200] if str(error).strip() else 'died'}")

    def pytest_keyboard_interrupt(self, excinfo):
        if self.interrupted is None:  # SIGTERM arrives as a KeyboardInterrupt too: its handler names the signal
            stopped = self.config.stash.get(_STOPPED, None)
            if stopped is None and type(excinfo.value).__name__ == "Interrupted":  # pytest stopped it (--sw, -x)
                stopped = f"stopped by pytest ({str(excinfo.value).strip()[:120] or 'shouldstop'})"
            self.interrupted = stopped or "interrupted (Ctrl-C)"

    def incomplete(self, state, verdicts: list[dict]) -> dict:
        """The top-level ``incomplete`` block of report.json: what did not finish, with names and a count."""
        errors = sorted(f"{v['contract']}[{v['model']}]" for v in verdicts if v["status"] == "error")
        crashed = sorted(f"{_split_nodeid(n)[0]}[{_split_nodeid(n)[1]}]" for n in self.crashed)
        not_run = sorted(f"{_split_nodeid(n)[0]}[{_split_nodeid(n)[1]}]" for n in self.expected - self.reported)
        target_collected = {_split_nodeid(n)[0] for n in self.expected if _split_nodeid(n)[1] == state.target}
        deselected = sorted(n for n, hard in state.contract_index.items() if hard and n not in target_collected)
        # a hard contract of the target skipped by a mark (a conftest's skip, not the law's own skip): not checked,
        # as if deselected (a held-out case passed with exit 0)
        given = {(v["contract"], v["model"]) for v in verdicts}
        for nodeid, reason in sorted(self.skipped.items()):
            split = _split_nodeid(nodeid)
            if split and split[1] == state.target and state.contract_index.get(split[0]) and split not in given:
                deselected.append(f"{split[0]} (skipped: {reason[:80]})")
        if not self.collected:  # stopped before any process said what it collected: nothing was deselected
            not_run = sorted(set(not_run) | {f"{n}[{state.target}]" for n in deselected})
            deselected = []
        if self.interrupted is None and self.config.stash.get(_STOPPED, None):
            self.interrupted = self.config.stash[_STOPPED]
        partial = sorted(deselected) if self.config.getoption("mlip_partial", False) else []
        if partial:  # the user accepted a partial run (--mlip-partial): named, not counted
            deselected = []
        determinism = determinism_names(self.nondeterminism)
        unreported = [f"{name}: {msg}" for name, msg in sorted(self.unreported.items())]
        unchecked = (unchecked_target(state.target, verdicts) or self.all_skipped(state.target, verdicts)
                     or self.nothing_ran(state.target, verdicts) or self.never_called(state.target, verdicts))
        clashes = sorted(set(self.clashes))
        broken = self.no_interaction()
        unchecked += broken + self.energy_ignores_structure(named=broken)
        # an item whose error verdict is counted is not counted again for the model failure it also saw
        extra = [name for name in self.unreported if name not in set(errors)]
        failed_tests = [f"{name}: {why}" for name, why in sorted(self.failed_tests.items())]
        errors += sorted(f"adversary::{r['contract']}[{r['model']}]" for r in self.adversary
                         if r["status"] == "model-error")  # garbage met by the search: an error of the model
        count = (len(errors) + len(crashed) + len(not_run) + len(deselected) + len(determinism) + len(extra)
                 + len(unchecked) + len(clashes) + len(failed_tests))
        return {"count": count, "errors": errors, "crashed": crashed, "not_run": not_run,
                "deselected_hard": deselected, SAMPLED: determinism, "unreported": unreported,
                "unchecked": unchecked, "clashes": clashes, "failed_tests": failed_tests,
                "interrupted": self.interrupted,
                "dead_workers": list(self.dead_workers), "partial": partial,
                # what alone fails a run that has no baseline gate: an error verdict on any model (target or
                # committee), a crash, an interruption, an item left over, outputs that change between identical
                # calls, hard contracts deselected without --mlip-partial
                "fails_run": bool(errors or crashed or not_run or self.interrupted or self.dead_workers
                                  or determinism or deselected or unreported or unchecked or clashes
                                  or failed_tests)}

    def no_interaction(self) -> list[str]:
        """Models whose every call on two atoms or more gave forces of exactly zero and an energy that is a sum of
        per-element constants: no interaction at all, which no law's check is built to catch (held-out cases: E = -1
        eV per atom, F = 0 passed the repulsive walls, the compression wall and the adsorption sign; E = a constant
        per element, or with a 1e-9 eV jitter, passed a test of one energy per atom)."""
        out = []
        for model, (multi, flat, calls, isolated) in sorted(self.inert.items()):
            # a perfect crystal's forces vanish by symmetry, and its supercells share its energy per atom: below
            # INERT_CALLS calls, two isolated structures (forces zero there only at an exact equilibrium) are needed
            if not (multi >= INERT_CALLS or isolated >= 2) or flat != multi:
                continue
            atomic = additive_energies(calls, isolated)
            if atomic is not None:
                per = ", ".join(f"{el} {e:.6g}" for el, e in sorted(atomic.items()))
                out.append(f"MODEL BROKEN {model}: no interaction: all {multi} call(s) on two atoms or more gave "
                           f"forces of exactly zero and an energy that is a sum of constants per atom ({per} eV)")
        return out

    def energy_ignores_structure(self, named: list[str]) -> list[str]:
        """Models whose every call on two atoms or more, over different compositions, gave one total energy (or,
        on isolated structures, one energy per atom), whatever the forces: the energy ignores the structure, and a
        flat curve passes every law that looks for a fall (held-out cases: E = -1 eV and E = 1e300 eV on every call,
        with EMT's forces, passed the zero-net-force and repulsive-wall contracts); ``named``: the lines that
        already name a model broken."""
        from ..evaluation.evaluator import EnergySpread

        merged: dict[str, EnergySpread] = {}
        for (model, _), data in sorted(self.spreads.items()):
            merged.setdefault(model, EnergySpread()).merge(data)
        out = []
        for model, spread in sorted(merged.items()):
            if any(line.startswith(f"MODEL BROKEN {model}: ") for line in named):
                continue  # named already (no interaction)
            line = blind_energy(spread)
            if line:
                out.append(f"MODEL BROKEN {model}: the energy ignores the structure: {line}")
        return out

    def nothing_ran(self, target: str, verdicts: list[dict]) -> list[str]:
        """One line when no item ran at all and no verdict was given (-k matching nothing, a path that does not
        exist): such a run checked nothing, and its report must not read 'all hard contracts pass' (held-out
        cases)."""
        if verdicts or self.ran or self.skipped or self.crashed:
            return []
        return [f"nothing was checked on {target}: no item ran (none was selected, or none collected)"]

    def never_called(self, target: str, verdicts: list[dict]) -> list[str]:
        """One line when tests ran but none gave a verdict on the target or called it (a held-out case: a test
        taking the ``mlip_model`` fixture and asserting True passed a model whose every energy is NaN)."""
        if verdicts or not self.ran or self.crashed or self.asked.get(target, 0):
            return []
        return [f"nothing was checked on {target}: {len(self.ran)} test(s) ran, none gave a contract verdict and "
                "none called the model"]

    def all_skipped(self, target: str, verdicts: list[dict]) -> list[str]:
        """One line when no verdict was given and every item of the run skipped (a user's test that skips itself,
        every contract file deselected by its own skip): the run checked nothing, which must not read as a pass."""
        if verdicts or not self.skipped or self.ran:
            return []
        reasons = sorted(set(self.skipped.values()))
        return [f"nothing was checked on {target}: no verdict, all {len(self.skipped)} item(s) skipped "
                f"({reasons[0][:200]}" + (f"; +{len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ")")]

    def sample_line(self) -> str | None:
        """The cost and outcome of the sampled determinism check, in one line."""
        if not self.sampled:
            return None
        calls = sum(c for c, _ in self.sampled.values())
        repeats = sum(r for _, r in self.sampled.values())
        from ..evaluation.evaluator import DEFAULT_SAMPLE as sample

        verdict = (f"{len(self.nondeterminism)} DETERMINISM VIOLATION(S)" if self.nondeterminism
                   else "identical within the floor" if repeats
                   else "not checked: no call could be repeated (every call failed, or none was made)")
        # a repeat may land on a call the run made once and a cache answered later: repeats can exceed calls
        return (f"determinism (sampled): {repeats} repeat(s) over {calls} model call(s) ({sample.fraction:.0%} seeded "
                f"sample, at least {sample.minimum} per model and process or every call when fewer, and the first call "
                f"again every {sample.anchor_every} calls and after the last item, and the first call of each kind of "
                f"system; "
                f"+{repeats} call(s)): "
                f"{verdict}")


def unchecked_target(target: str, verdicts: list[dict]) -> list[str]:
    """One line when the target has verdicts and every one is a skip (a model that supports no element of any
    contract, every law skipped), or every hard one is: the run checked nothing, or nothing that gates, on it,
    which must not read as a pass."""
    mine = [v for v in verdicts if v["model"] == target and v.get("role", "target") == "target"]
    hard = [v for v in mine if v.get("hard")]
    if mine and all(v["status"] == "skip" for v in mine):
        what, skipped = "nothing was checked", mine
    elif hard and all(v["status"] == "skip" for v in hard):
        # held-out round 20: the one hard contract skipped (an element the model refuses) beside a soft pass read
        # "all hard contracts pass", exit 0, and the judge approved it with --require-complete
        what, skipped = "no hard contract was checked", hard
    else:
        return []
    reasons = sorted({v.get("reason") or "skipped" for v in skipped})
    return [f"{what} on {target}: all {len(skipped)} {'hard ' if skipped is hard else ''}contract(s) skipped "
            f"({reasons[0][:200]}" + (f"; +{len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ")")]


def determinism_names(found: list[dict]) -> list[str]:
    """One entry per (model, structure) whose outputs differed between identical calls, worst first, with numbers."""
    worst: dict[tuple, dict] = {}
    for f in found:
        k = (f["model"], f["structure"])
        score = (math.inf if f.get("energy") is None
                 else max(f["energy"] / f["floor"]["energy"], f["forces"] / f["floor"]["forces"],
                          (f.get("stress") or 0.0) / f["floor"].get("stress", math.inf)))
        if k not in worst or score > worst[k][0]:
            worst[k] = (score, f)
    out = []
    for score, f in sorted(worst.values(), key=lambda x: -x[0]):
        if f.get("energy") is None:
            out.append(f"determinism[{f['model']}] on {f['structure']}: {f['message']}")
        else:
            stress = (f", stress {f['stress']:.3g} eV/A^3" if f.get("stress") else "")
            floor_s = (f", {f['floor']['stress']:g} eV/A^3" if "stress" in f["floor"] else "")
            out.append(f"determinism[{f['model']}] on {f['structure']}: energy {f['energy']:.3g} eV/atom, forces "
                       f"{f['forces']:.3g} eV/A{stress} between identical calls (floor {f['floor']['energy']:g} "
                       f"eV/atom, {f['floor']['forces']:g} eV/A{floor_s})")
    return out


_STOPPED = pytest.StashKey[str]()
#: calls on two atoms or more before a model with zero forces and additive energies everywhere is called inert
INERT_CALLS = 10
#: eV/atom: energies within it of a sum of per-element constants are additive (the determinism floor's energy)
ADDITIVE_FLOOR = 1e-5


def additive_energies(calls, isolated: int) -> dict[str, float] | None:
    """The per-element energies that give every flat call's energy within ADDITIVE_FLOOR per atom, or None.

    ``calls``: (formula, energy) pairs of calls whose forces were all exactly zero; ``isolated``: how many of those
    were isolated structures. One energy per atom over every call is no interaction (as before); with two isolated
    structures among them (forces zero there only at an exact equilibrium, never by a crystal's symmetry), so is an
    energy that does not depend on the geometry (one per formula) and is a sum of per-element constants. Supercells
    of one perfect crystal share an energy per atom with any model: that is why the second test needs the isolated
    calls; strained copies of a crystal differ in energy per atom and pass neither."""
    import numpy as np
    from ase.formula import Formula

    calls = sorted(calls)
    if not calls:
        return None
    counts = [Formula(f).count() for f, _ in calls]
    elements = sorted({el for c in counts for el in c})
    natoms = np.array([sum(c.values()) for c in counts], dtype=float)
    per_atom = np.array([e for _, e in calls], dtype=float) / natoms
    if per_atom.max() - per_atom.min() <= ADDITIVE_FLOOR:
        return {el: float(per_atom.mean()) for el in elements}
    if isolated < 2:
        return None
    by_formula: dict[str, list[float]] = {}
    for (formula, _), e in zip(calls, per_atom):
        by_formula.setdefault(formula, []).append(e)
    if any(max(v) - min(v) > ADDITIVE_FLOOR for v in by_formula.values()):
        return None  # the energy changes with the geometry: an interaction (whatever the forces say)
    formulas = sorted(by_formula)
    rows = [Formula(f).count() for f in formulas]
    sizes = np.array([sum(r.values()) for r in rows], dtype=float)
    a = np.array([[r.get(el, 0) for el in elements] for r in rows], dtype=float)
    energy = np.array([np.mean(by_formula[f]) for f in formulas]) * sizes
    fit, *_ = np.linalg.lstsq(a, energy, rcond=None)
    if np.max(np.abs(a @ fit - energy) / sizes) > ADDITIVE_FLOOR:
        return None
    return dict(zip(elements, map(float, fit)))


def blind_energy(spread) -> str | None:
    """What shows that a model's energy ignores the structure, in words, or None: at least INERT_CALLS calls on two
    atoms or more over two compositions or more with one total energy within ADDITIVE_FLOOR, or as many calls on
    isolated structures of two compositions or more with one energy per atom within it; either over two geometries
    or more (the element probe's dimers are one geometry, to which an element-blind potential gives one energy).
    A clean model's energies differ between compositions; supercells of one crystal share an energy per atom (so
    the second test takes isolated structures only), and rotated or translated copies share a total energy (one
    composition: no test)."""
    lo, hi = spread.total
    if spread.calls >= INERT_CALLS and len(spread.formulas) >= 2 and len(spread.geometries) >= 2 \
            and hi - lo <= ADDITIVE_FLOOR:
        return (f"all {spread.calls} call(s) on two atoms or more gave the energy {lo:.6g} eV, over "
                f"{', '.join(spread.formulas)}{' and more' if len(spread.formulas) >= spread.KEPT else ''}")
    lo, hi = spread.per_atom
    if spread.isolated >= INERT_CALLS and len(spread.isolated_formulas) >= 2 \
            and len(spread.isolated_geometries) >= 2 and hi - lo <= ADDITIVE_FLOOR:
        return (f"all {spread.isolated} call(s) on isolated structures of two atoms or more gave {lo:.6g} eV per "
                f"atom, over {', '.join(spread.isolated_formulas)}"
                f"{' and more' if len(spread.isolated_formulas) >= spread.KEPT else ''}")
    return None


def gate_incomplete(block: dict, baseline: dict, verdicts: list[dict], updating: bool = False) -> dict:
    """What the baseline gate counts as unfinished: everything that did not finish, of the deselected hard
    contracts those the baseline holds (the baseline defines the gated suite: leaving one of its contracts out
    would hide it; a contract it never held is outside the gate), and the baseline's hard contracts on the target
    that this run did not even collect (a contract file removed or a contract renamed)."""
    from .gate import missing_from_run

    gated = {contract for (_, contract), e in baseline.items() if e.get("role", "target") == "target"}
    out = dict(block or {})
    out["deselected_hard"] = [n for n in out.get("deselected_hard", []) if n in gated]
    out["missing"] = [] if updating else missing_from_run(baseline, verdicts, set(out["deselected_hard"])
                                                          | set(out.get("partial") or []))
    out["count"] = sum(len(out.get(k) or []) for k in ("errors", "crashed", "not_run", "deselected_hard",
                                                       SAMPLED, "unreported", "unchecked", "clashes", "missing"))
    if not out["count"] and not block:
        return {}
    return out


def incomplete_lines(block: dict) -> list[str]:
    """The incomplete block in words (terminal, summary); no numbers beyond the count."""
    if not block:
        return []
    partial = ([f"PARTIAL run (--mlip-partial): {len(block['partial'])} hard contract(s) of the collected files were "
                f"deselected and not run: {', '.join(block['partial'][:12])}" + (" ..." if len(block["partial"]) > 12
                                                                                 else "")]
               if block.get("partial") else [])
    if not (block.get("count") or block.get("interrupted") or block.get("dead_workers")):
        return partial
    parts = []
    for key, what in (("unchecked", "target not checked"),
                      (SAMPLED, "determinism violations (outputs differ between identical calls)"),
                      ("errors", "error verdicts"), ("crashed", "crashed"), ("not_run", "never ran"),
                      ("unreported", "model failures no verdict reports (a test caught them, or the element "
                                     "probe met them)"),
                      ("deselected_hard", "hard contracts deselected"),
                      ("clashes", "verdict names given by two tests (their rows would merge)"),
                      ("failed_tests", "tests that failed without giving a verdict"),
                      ("missing", "hard contracts of the baseline not collected (a contract file removed or a contract "
                                  "renamed? restore it, or rerun with --mlip-update-baseline to drop it)")):
        if block.get(key):
            parts.append(f"{what}: {', '.join(block[key][:12])}" + (" ..." if len(block[key]) > 12 else ""))
    head = f"INCOMPLETE: {block['count']} problem(s) the verdicts do not cover"
    if block.get("interrupted"):
        head += f"; the run was {block['interrupted']}"
    if block.get("dead_workers"):
        head += f"; worker(s) died ({'; '.join(block['dead_workers'])})"
    return [head] + [f"  {p}" for p in parts] + partial


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file, so the root is among its properties
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    rep = config.stash.get(REPORT_KEY, None)
    prov = config.stash.get(PROV_KEY, None)
    if rep is None or prov is None or is_worker(config):
        return
    _wait_for_workers(config)
    gone = prov.store.gone()
    if gone and rep.tracker and rep.tracker.interrupted is None:
        rep.tracker.interrupted = gone  # the run is incomplete: what it stored is not where the report says
    try:
        prov.flush()
        _finish_run(rep, prov)
        inc = rep.incomplete
        # 5 (no tests collected) too: an incomplete run is exit 1, whatever pytest would have said (a held-out case)
        if session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED) and inc and (
                inc.get("fails_run") or (rep.gate is not None and not rep.gate.complete)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if session.exitstatus in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
            rep.overruled = gating_failures(rep, [v for v, _ in prov.sorted_entries()])
            if rep.overruled:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if getattr(rep, "refused_update", False) and session.exitstatus != pytest.ExitCode.INTERRUPTED:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        usage = rep.tracker.usage_errors if rep.tracker else {}
        if usage and session.exitstatus != pytest.ExitCode.INTERRUPTED:
            # a test's mlip_check arguments are the user's mistake, found only when the test ran: one line and
            # pytest's usage-error status, like a contract file's (the test's failure above says the same)
            node, why = next(iter(sorted(usage.items())))
            more = f" (+{len(usage) - 1} more test(s))" if len(usage) > 1 else ""
            rep.errors.insert(0, f"usage error in {node}{more}: {why}")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
    except MlipError as exc:
        rep.errors.append(str(exc))
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    rep.status = int(session.exitstatus)  # what the gate says: a later hook may not lower it (plugin.py)


def _asked_on_command_line(config) -> bool:
    """--mlip-update-baseline on this run's command line (the ini file and PYTEST_ADDOPTS refuse it already)."""
    from ..options import from_override

    return any(str(a) == "--mlip-update-baseline" for a in config.invocation_params.args) \
        or from_override(config, "mlip_update_baseline")


#: what the baseline gate lets pass: a failure it records (or one that shrank beyond the margin)
KNOWN = ("known", "improved")


def baseline_view(rep, v: dict) -> tuple[str, str]:
    """The baseline gate's kind for a gating verdict (as report.json holds it) and its note: an update records every
    failure as known."""
    from .gate import classify

    if rep.update_baseline:
        return "known", ""
    change = classify(v, rep.baseline.get((v["model"], v["contract"])), rep.margin)
    return change.kind, change.note


def gating_failures(rep, verdicts: list[dict]) -> list[str]:
    """``contract[model]`` of each verdict that fails the run: a hard contract failing on the target, less what the
    baseline knows (as the item's report does it). The verdicts decide the gate, not the tests' outcomes: an xfail
    mark on a contract (a user's test, a conftest adding it) or a hook that rewrote a failed outcome had pytest exit 0
    on a hard failure the terminal and the summary named (held-out cases)."""
    from .gate import is_gating

    return [f"{v['contract']}[{v['model']}]" for v in verdicts
            if is_gating(v) and (rep.baseline is None or baseline_view(rep, v)[0] not in KNOWN)]


def _wait_for_workers(config):
    """Under xdist, shut the workers down (as xdist would right after this hook) before the run is summed up: model
    code that ends a worker with os._exit(0) after its last item leaves its line only then, and the report and the
    summary must say what the terminal says (a held-out case: exit 1 and INCOMPLETE on the terminal, 'all hard
    contracts pass' in the summary)."""
    dsession = config.pluginmanager.getplugin("dsession")
    nodes = getattr(dsession, "nodemanager", None)
    if nodes is not None:
        try:
            nodes.teardown_nodes()
        except Exception:  # noqa: BLE001 - xdist tears them down again itself; the summary goes on
            pass


def _finish_run(rep, prov):
    from .gate import baseline_document, compare, kept_entries, write_atomic

    rep.run_id, rep.code_version = prov.run_id, prov.code_version
    entries = prov.sorted_entries()
    verdicts = [v for v, _ in entries]
    if rep.tracker:  # an xdist worker ended by os._exit(0) of model code said so in a file (its status reaches no one)
        from ..plugin import process_exit_log

        log = process_exit_log(rep.config, worker_only=False)
        if log is not None and log.is_file():
            rep.tracker.dead_workers += [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            log.unlink()
    if rep.tracker:  # identical calls that two workers (or evaluators) answered differently: nondeterminism too
        from ..evaluation.evaluator import DEFAULT_SAMPLE
        from ..provenance.recorder import differing_calls

        rep.tracker.nondeterminism += differing_calls(prov.store, prov.run_id, DEFAULT_SAMPLE.floor())
    rep.incomplete = rep.tracker.incomplete(rep.state, verdicts) if rep.tracker else {}
    if rep.baseline is not None:
        rep.gate = compare(verdicts, rep.baseline, rep.margin)
        rep.gate.incomplete = gate_incomplete(rep.incomplete, rep.baseline, verdicts, rep.update_baseline)
    from .report import gate_json

    extra = {"gate": gate_json(rep.gate)}
    inc = rep.incomplete
    if inc and (inc.get("count") or inc.get("interrupted") or inc.get("dead_workers") or inc.get("partial")):
        extra["incomplete"] = inc  # report.json is rebuilt from the store: the block travels in the run artifact
    if rep.tracker and rep.tracker.adversary:  # in the run artifact, so the report is rebuilt with it
        extra["adversary"] = sorted(rep.tracker.adversary, key=lambda r: (r["contract"], r["role"] != "target",
                                                                          r["model"]))
    refs = [r for _, ids in entries for r in ids.get("references", [])]  # --mlip-reference decisions
    if refs:
        extra["reference_decisions"] = refs
    from ..provenance.platform import fingerprint

    extra["platform"] = fingerprint()  # the judge re-runs a call exactly only on the platform that made it
    prov.finish(extra, references=refs)
    if rep.update_baseline and rep.baseline_path is not None and not _asked_on_command_line(rep.config):
        # a conftest or plugin that set the option turned every gated run into an update (held-out round 14)
        rep.errors.append(f"baseline {rep.baseline_path} not updated: --mlip-update-baseline was set by code (a "
                          "conftest or a plugin), not on the command line; remove that code and pass the flag on "
                          "the command line of the one run that updates the baseline")
        rep.update_baseline = False
        rep.refused_update = True  # the user's mistake: the run ends with pytest's usage-error status
    elif rep.update_baseline and rep.baseline_path is not None and rep.incomplete.get("fails_run"):
        rep.errors.append(f"baseline {rep.baseline_path} not updated: the run is incomplete (it was stopped, or "
                           "items did not finish or ended in error verdicts); rerun to completion to update it")
    elif rep.update_baseline and rep.baseline_path is not None:
        arts = {(v["model"], v["contract"]): ids.get("max_normalized") or ids["verdict"] for v, ids in entries}
        doc = baseline_document(verdicts, rep.state.target, prov.run_id, prov.code_version, arts,
                                kept=kept_entries(rep.baseline or {}, verdicts, rep.incomplete.get("partial")))
        try:
            write_atomic(rep.baseline_path, json.dumps(doc, indent=1) + "\n")
        except OSError as exc:
            raise MlipError(f"cannot write the baseline {rep.baseline_path} ({exc.strerror}); "
                            "pass --mlip-baseline=FILE in a writable folder") from None
        rep.written.append(f"baseline: {rep.baseline_path} ({len(doc['entries'])} entries)")
        rep.written_baseline = doc
    if rep.report_dir is not None:
        from .report import report_from_store, write_report

        data = report_from_store(prov.store, prov.run_id)
        write_report(rep.report_dir, data, prov.store)  # the marker listing its files comes with it
        rep.written.append(f"report: {rep.report_dir / 'report.html'} (and report.md, report.json)")
    if rep.summary_path is not None:
        from .summary import summary_markdown, write_summary

        text = summary_markdown(entries, rep)
        try:
            write_summary(rep.summary_path, text)
        except OSError as exc:
            raise MlipError(f"cannot write {rep.summary_path} ({exc.strerror}); "
                            "pass --mlip-summary-md=FILE in a writable folder") from None
        rep.written.append(f"summary: {rep.summary_path}")


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rep = config.stash.get(REPORT_KEY, None)
    prov = config.stash.get(PROV_KEY, None)
    try:
        result = yield
    except Exception as exc:  # a conftest's summary hook that raised (held-out round 14): one line, then the gate's
        from ..plugin import _hook_failed, debug

        if rep is None or prov is None or debug(config):
            raise
        session = terminalreporter._session
        status = _hook_failed(config, "pytest_terminal_summary", exc, getattr(session, "exitstatus", 0))
        if session is not None:
            session.exitstatus = status
        result = None
    if rep is None or prov is None or is_worker(config):  # a worker's summary reaches no one (its store is closed)
        return result
    from .gate import gate_lines

    tr = terminalreporter
    lines = incomplete_lines(rep.incomplete)
    if lines:
        tr.section("mlip incomplete run" if lines[0].startswith("INCOMPLETE") else "mlip partial run", red=True)
        for line in lines:
            tr.write_line(line, red=True)
    if rep.gate is not None and rep.update_baseline:
        from .gate import update_lines

        tr.section("mlip baseline update")
        for line in update_lines(rep.gate, rep.baseline_path, rep.written_baseline):
            tr.write_line(line)
    elif rep.gate is not None:
        tr.section("mlip gate")
        for line in gate_lines(rep.gate):
            tr.write_line(line)
    if rep.overruled:
        tr.write_line(f"FAILED: {len(rep.overruled)} hard contract(s) failed on the target while pytest counted no "
                      f"failure (an xfail mark, or a hook that changed the outcome): {', '.join(rep.overruled[:6])}"
                      + (" ..." if len(rep.overruled) > 6 else "") + "; the verdicts gate the run: exit 1", red=True)
    sample = rep.tracker.sample_line() if rep.tracker else None
    if sample:
        tr.write_line(sample, red=bool(rep.tracker.nondeterminism))
    for line in prov.summary_lines():
        tr.write_line(line)
    for line in rep.written:
        tr.write_line(line)
    for err in rep.errors[1:]:  # the first one goes to stderr, once (one line where a usage error would be)
        tr.write_line(f"ERROR: {err}", red=True)
    if rep.errors:
        print(f"ERROR: {rep.errors[0]}", file=sys.stderr)
    return result
