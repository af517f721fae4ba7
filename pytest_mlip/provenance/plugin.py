"""Provenance, reports and the CI gate as pytest hooks (loaded by ``pytest_mlip.plugin``).

- Every real model call and every number derived from a verdict is stored as
  an artifact in a SQLite store (default ``provenance.sqlite`` in the
  ``--mlip-output`` folder); each contract item records its artifacts right
  after it runs, in the process that ran it (xdist workers included).
- The item's report carries the artifact ids (user property
  ``mlip_artifacts``) and, for JUnit XML, ``mlip_status``,
  ``mlip_max_normalized``, ``mlip_violation``, ``mlip_tolerance`` and
  ``mlip_artifact``.
- ``--mlip-baseline``: a failed hard contract on the target that the baseline
  already knows (and that did not regress beyond the margin) has its call
  report turned into a pass here (``pytest_runtest_makereport``), so the run
  fails only on new failures and regressions; the terminal shows it as
  ``VIOLATED`` and the gate lists it as known.
- At the end (controller only): the run artifact citing every verdict, the
  report folder, the baseline update and the pull-request summary.
"""

from __future__ import annotations

import json
import math
import sys
import time
import uuid
from pathlib import Path

import pytest

from ..errors import MlipError
from ..numbers import Number, add_number_option

PROV_KEY = pytest.StashKey["ProvenanceRun"]()
STORE_NAME = "provenance.sqlite"
#: a file pytest-mlip writes into every report folder: only such a folder (or an empty one) is written into
REPORT_MARKER = ".pytest-mlip-report"
REPORT_MARKER_TEXT = "written by pytest-mlip: this folder is replaced on every --mlip-report run\n"


def is_our_report_dir(folder: Path) -> bool:
    """The folder holds the marker pytest-mlip writes, with its exact text (a hand-made or empty one does not count)."""
    marker = folder / REPORT_MARKER
    try:
        return marker.is_file() and not marker.is_symlink() and marker.read_text(errors="replace") == REPORT_MARKER_TEXT
    except OSError:
        return False
SUMMARY_HEAD = "### pytest-mlip on"


def pytest_addoption(parser):
    group = parser.getgroup("mlip", "physics contracts for machine-learning interatomic potentials")
    group.addoption("--mlip-store", action="store", default=None, metavar="PATH",
                    help="SQLite provenance store of every model call and derived number "
                         f"(default: {STORE_NAME} in the --mlip-output folder)")
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


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def new_run_id() -> str:
    return time.strftime("r%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


class ProvenanceRun:
    """Per-process provenance state of one pytest run."""

    def __init__(self, config, state, run_id: str, code_version: str, store):
        from .recorder import Ledger

        self.config = config
        self.state = state
        self.run_id = run_id
        self.code_version = code_version
        self.store = store
        self.ledger = Ledger(code_version, run_id)
        self.entries: dict[str, tuple[dict, dict]] = {}  # nodeid -> (verdict json, artifact ids)
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
        self.evaluators: list = []
        self.new_artifacts = 0
        self.run_artifact: str | None = None
        self.tracker: "_Collector | None" = None
        self.incomplete: dict = {}
        self.root: str | None = None

    def flush(self, extra=()):
        arts = self.ledger.take() + list(extra)
        if arts:
            self.new_artifacts += self.store.put_many(arts, run=self.run_id)


def _resolve_store_path(config, state) -> Path:
    raw = config.getoption("mlip_store")
    if raw:
        p = Path(raw).expanduser()
        return p if p.is_absolute() else Path(config.invocation_params.dir) / p
    return Path(state.output) / STORE_NAME


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from ..plugin import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is None or config.getoption("mlip_contracts", False):  # --mlip-contracts lists, runs nothing
        return
    from .artifact import code_version
    from .store import Store

    worker = getattr(config, "workerinput", None) or {}
    run_id = worker.get("mlip_run_id") or new_run_id()
    code = worker.get("mlip_code_version") or code_version()
    try:
        store = Store(_resolve_store_path(config, state))
        prov = ProvenanceRun(config, state, run_id, code, store)
        _configure_gate(config, prov)
        if not _is_worker(config):
            _configure_outputs(config, prov)
    except MlipError as exc:
        from ..plugin import usage_error

        raise usage_error(config, exc) from None
    config.stash[PROV_KEY] = prov
    if not _is_worker(config):
        store.begin_run(run_id, code, state.target, list(state.committee), list(config.invocation_params.args))
        prov.tracker = _Collector(config)
        config.pluginmanager.register(prov.tracker, "mlip-provenance-collector")
        _trap_sigterm(config)


def _trap_sigterm(config):
    """SIGTERM (a CI job cancelled) ends the run like Ctrl-C: the reports are written and say it was stopped."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def on_term(signum, frame):
        config.stash[_STOPPED] = "terminated (SIGTERM)"
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, on_term)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, previous))


def _configure_gate(config, prov):
    from ..reporting.gate import BaselineError, load_baseline

    raw = config.getoption("mlip_baseline")
    prov.update_baseline = config.getoption("mlip_update_baseline")
    prov.margin = config.getoption("mlip_regression_margin")
    if prov.update_baseline and not raw:
        raise MlipError("--mlip-update-baseline needs the file to write: add --mlip-baseline=FILE")
    if not raw:
        return
    path = Path(raw).expanduser()
    prov.baseline_path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
    if prov.update_baseline:
        if prov.baseline_path.exists():
            try:
                prov.baseline = load_baseline(prov.baseline_path)
            except BaselineError as exc:  # never overwrite a file that is not ours
                raise MlipError(f"--mlip-update-baseline refuses to overwrite {prov.baseline_path}: "
                                f"{str(exc).split(';')[0]}; pass a new file name with --mlip-baseline=FILE") from None
        else:
            prov.baseline = {}
        from ..reporting.report import writable_dir_error

        err = writable_dir_error(prov.baseline_path.parent, "--mlip-baseline")
        if err:
            raise MlipError(err.replace("=DIR", "=FILE in a writable folder"))
    else:
        prov.baseline = load_baseline(prov.baseline_path)


def _configure_outputs(config, prov):
    from ..reporting.report import writable_dir_error

    raw = config.getoption("mlip_report")
    if raw:
        p = Path(raw).expanduser()
        prov.report_dir = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        if prov.report_dir.exists() and not prov.report_dir.is_dir():
            raise MlipError(f"--mlip-report={raw} is a file, not a folder; pass a folder with --mlip-report=DIR")
        err = writable_dir_error(prov.report_dir, "--mlip-report")
        if err:
            raise MlipError(err)
        if prov.report_dir.is_dir() and any(prov.report_dir.iterdir()) and not is_our_report_dir(prov.report_dir):
            raise MlipError(f"--mlip-report={raw}: {prov.report_dir} is not empty and was not written by pytest-mlip "
                            f"(no {REPORT_MARKER} file with pytest-mlip's text); pass a new or empty folder, "
                            "e.g. --mlip-report=mlip-report")
        try:
            import jinja2  # noqa: F401
            import matplotlib  # noqa: F401
        except ImportError as exc:
            raise MlipError(f"--mlip-report needs {exc.name}: pip install 'pytest-mlip[report]'") from None
    raw = config.getoption("mlip_summary_md")
    if raw:
        p = Path(raw).expanduser()
        prov.summary_path = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        err = writable_dir_error(prov.summary_path.parent, "--mlip-summary-md")
        if err:
            raise MlipError(err.replace("=DIR", "=FILE in a writable folder"))
        if prov.summary_path.is_dir() or (prov.summary_path.is_file() and not _ours(prov.summary_path, SUMMARY_HEAD)):
            raise MlipError(f"--mlip-summary-md={raw}: {prov.summary_path} exists and is not a pytest-mlip summary; "
                            "pass a new file name, e.g. --mlip-summary-md=mlip-summary.md")


def _ours(path: Path, head: str) -> bool:
    """Does an existing file start like the ones pytest-mlip writes (an empty file counts as ours)?"""
    try:
        with open(path, "rb") as fh:
            start = fh.read(len(head.encode()))
    except OSError:
        return False
    return start == b"" or start == head.encode()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: every worker records under the controller's run id and code version."""
    prov = node.config.stash.get(PROV_KEY, None)
    if prov is not None:
        node.workerinput["mlip_run_id"] = prov.run_id
        node.workerinput["mlip_code_version"] = prov.code_version


def _contract_item(item) -> bool:
    """A contract file's item, or a test using the ``mlip_model`` fixture (pytest_mlip.fixtures)."""
    return getattr(item, "mlip_spec", None) is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    prov = item.config.stash.get(PROV_KEY, None)
    if prov is None or not _contract_item(item):
        return (yield)
    evaluator = None
    try:
        from ..evaluation import evaluator_for

        evaluator = evaluator_for(item.mlip_spec)
    except Exception:  # the item reports the load error itself
        pass
    if evaluator is not None:
        evaluator.recorder = prov.ledger.on_evaluation
        if not any(e is evaluator for e in prov.evaluators):
            prov.evaluators.append(evaluator)
    prov.ledger.context = {"item": item.nodeid}
    before = _sample_state(evaluator)
    try:
        return (yield)
    finally:
        _record_sample(item, evaluator, before)
        _record_item(item, prov, evaluator)


def _sample_state(evaluator) -> tuple[int, int, int, int]:
    if evaluator is None:
        return 0, 0, 0, 0
    return (evaluator.stats.calls, evaluator.stats.repeats, len(evaluator.nondeterminism),
            len(getattr(evaluator, "raised", ())))


def _record_sample(item, evaluator, before):
    """The item's share of the sampled determinism check (calls, repeats, violations) travels in its report, so the
    xdist controller sees every worker's; so do the model failures the item saw that no verdict reported (a test
    that caught the evaluator's error)."""
    if evaluator is None or evaluator.sample is None:
        return
    calls, repeats, found, raised = _sample_state(evaluator)
    unreported = list(dict.fromkeys(str(e) for e in evaluator.raised[before[3]:raised] if not e.reported))
    item.user_properties.append(("mlip_sample", json.dumps({
        "model": evaluator.name, "calls": calls - before[0], "repeats": repeats - before[1],
        "violations": evaluator.nondeterminism[before[2]:found], "unreported": unreported}, default=float)))


def _record_item(item, prov, evaluator):
    from .recorder import verdict_artifacts

    verdict = getattr(item, "verdict", None)
    if verdict is None or evaluator is None:
        prov.flush()
        return
    from ..reporting.report import reproduce_command

    arts, ids = verdict_artifacts(verdict, evaluator, prov.code_version, run=prov.run_id,
                                  context={"item": item.nodeid})
    ids["spec"] = item.mlip_spec
    ids["reproduce"] = getattr(item, "mlip_reproduce", None) or reproduce_command(item.mlip_spec, verdict.contract)
    prov.flush(arts)
    props = item.user_properties
    props.append(("mlip_artifacts", json.dumps(ids, sort_keys=True)))
    props.append(("mlip_artifact", ids["verdict"]))
    props.append(("mlip_status", verdict.status))
    if verdict.max_normalized is not None:
        props.append(("mlip_max_normalized", repr(float(verdict.max_normalized))))
    worst = verdict.worst()
    if worst is not None and worst.violations:
        props.append(("mlip_worst_probe", worst.probe))
        props.append(("mlip_violation", ", ".join(f"{k}={v!r}" for k, v in worst.violations.items())))
    props.append(("mlip_tolerance", ", ".join(f"{k}={v!r}" for k, v in verdict.tolerance.items())))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    prov = item.config.stash.get(PROV_KEY, None)
    if (prov is None or rep.when != "call" or prov.baseline is None or not _contract_item(item)
            or getattr(item, "verdict", None) is None or not item.verdict.gating):
        return rep
    from ..reporting.gate import classify

    v = item.verdict
    entry = prov.baseline.get((v.model, v.contract))
    change = classify({"model": v.model, "contract": v.contract, "role": v.role, "hard": v.hard,
                       "status": v.status, "max_normalized": v.max_normalized}, entry, prov.margin)
    kind = "known" if prov.update_baseline else change.kind
    note = f"{kind}" + (f": {change.note}" if change.note and not prov.update_baseline else "")
    if kind in ("known", "improved") and rep.failed:
        # A failure the baseline already records: report it, do not fail the run.
        rep.outcome = "passed"
        rep.longrepr = None
    rep.user_properties.append(("mlip_gate", note))
    item.user_properties.append(("mlip_gate", note))
    return rep


def _collect(config, report):
    prov = config.stash.get(PROV_KEY, None)
    if prov is None or report.when != "call":
        return
    verdict = ids = None
    for key, value in getattr(report, "user_properties", []):
        if key == "mlip_verdict":
            verdict = json.loads(value)
        elif key == "mlip_artifacts":
            ids = json.loads(value)
    if verdict is not None and ids is not None:
        prov.entries[report.nodeid] = (verdict, ids)


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
        self.interrupted: str | None = None
        self.dead_workers: list[str] = []
        #: the sampled determinism check: model -> [calls, repeats]; violations found
        self.sampled: dict[str, list[int]] = {}
        self.nondeterminism: list[dict] = []
        #: item name -> the first model failure it saw that no verdict reported (a test caught the error)
        self.unreported: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        _collect(self.config, report)
        for key, value in getattr(report, "user_properties", []):
            if key == "mlip_sample" and report.when == "call":
                data = json.loads(value)
                counts = self.sampled.setdefault(data["model"], [0, 0])
                counts[0] += data["calls"]
                counts[1] += data["repeats"]
                self.nondeterminism += data["violations"]
                if data.get("unreported"):
                    name = report.nodeid.rpartition("::")[2]
                    more = len(data["unreported"]) - 1
                    self.unreported[name] = data["unreported"][0][:240] + (f" (+{more} more)" if more else "")
        if _split_nodeid(report.nodeid) is None:
            return
        if report.when == "call" or report.failed or report.skipped:
            self.reported.add(report.nodeid)
        if report.failed and not any(k == "mlip_verdict" for k, _ in getattr(report, "user_properties", [])):
            text = str(report.longrepr or "").strip().splitlines()
            self.crashed[report.nodeid] = (text[-1] if text else "crashed")[:300]

    def pytest_collection_finish(self, session):
        self.expected.update(i.nodeid for i in session.items if _split_nodeid(i.nodeid))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.expected.update(i for i in ids if _split_nodeid(i))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        if error:
            self.dead_workers.append(f"{getattr(node, 'gateway', None) and node.gateway.id or 'worker'}: "
                                     f"{str(error).strip().splitlines()[-1][:200] if str(error).strip() else 'died'}")

    def pytest_keyboard_interrupt(self, excinfo):
        if self.interrupted is None:  # SIGTERM arrives as a KeyboardInterrupt too: its handler names the signal
            self.interrupted = self.config.stash.get(_STOPPED, None) or "interrupted (Ctrl-C)"

    def incomplete(self, state, verdicts: list[dict]) -> dict:
        """The top-level ``incomplete`` block of report.json: what did not finish, with names and a count."""
        errors = sorted(f"{v['contract']}[{v['model']}]" for v in verdicts if v["status"] == "error")
        crashed = sorted(f"{_split_nodeid(n)[0]}[{_split_nodeid(n)[1]}]" for n in self.crashed)
        not_run = sorted(f"{_split_nodeid(n)[0]}[{_split_nodeid(n)[1]}]" for n in self.expected - self.reported)
        target_collected = {_split_nodeid(n)[0] for n in self.expected if _split_nodeid(n)[1] == state.target}
        deselected = sorted(n for n, hard in state.contract_index.items() if hard and n not in target_collected)
        if self.interrupted is None and self.config.stash.get(_STOPPED, None):
            self.interrupted = self.config.stash[_STOPPED]
        partial = sorted(deselected) if self.config.getoption("mlip_partial", False) else []
        if partial:  # the user accepted a partial run (--mlip-partial): named, not counted
            deselected = []
        determinism = determinism_names(self.nondeterminism)
        unreported = [f"{name}: {msg}" for name, msg in sorted(self.unreported.items())]
        unchecked = unchecked_target(state.target, verdicts)
        count = (len(errors) + len(crashed) + len(not_run) + len(deselected) + len(determinism) + len(unreported)
                 + len(unchecked))
        return {"count": count, "errors": errors, "crashed": crashed, "not_run": not_run,
                "deselected_hard": deselected, "determinism": determinism, "unreported": unreported,
                "unchecked": unchecked, "interrupted": self.interrupted,
                "dead_workers": list(self.dead_workers), "partial": partial,
                # what alone fails a run that has no baseline gate: an error verdict on any model (target or
                # committee), a crash, an interruption, an item left over, outputs that change between identical
                # calls, hard contracts deselected without --mlip-partial
                "fails_run": bool(errors or crashed or not_run or self.interrupted or self.dead_workers
                                  or determinism or deselected or unreported or unchecked)}

    def sample_line(self) -> str | None:
        """The cost and outcome of the sampled determinism check, in one line."""
        if not self.sampled:
            return None
        calls = sum(c for c, _ in self.sampled.values())
        repeats = sum(r for _, r in self.sampled.values())
        from ..evaluation.evaluator import DEFAULT_SAMPLE as sample

        verdict = (f"{len(self.nondeterminism)} DETERMINISM VIOLATION(S)" if self.nondeterminism
                   else "identical within the floor")
        return (f"determinism (sampled): {repeats} of {calls} model call(s) repeated ({sample.fraction:.0%} seeded "
                f"sample, at least {sample.minimum} per model and process; +{repeats} call(s)): {verdict}")


def unchecked_target(target: str, verdicts: list[dict]) -> list[str]:
    """One line when the target has verdicts and every one is a skip: the run checked nothing on it (a model that
    supports no element of any contract, every law skipped), which must not read as a pass."""
    mine = [v for v in verdicts if v["model"] == target and v.get("role", "target") == "target"]
    if not mine or any(v["status"] != "skip" for v in mine):
        return []
    reasons = sorted({v.get("reason") or "skipped" for v in mine})
    return [f"nothing was checked on {target}: all {len(mine)} contract(s) skipped ({reasons[0][:200]}"
            + (f"; +{len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ")")]


def determinism_names(found: list[dict]) -> list[str]:
    """One entry per (model, structure) whose outputs differed between identical calls, worst first, with numbers."""
    worst: dict[tuple, dict] = {}
    for f in found:
        k = (f["model"], f["structure"])
        score = (math.inf if f.get("energy") is None
                 else max(f["energy"] / f["floor"]["energy"], f["forces"] / f["floor"]["forces"]))
        if k not in worst or score > worst[k][0]:
            worst[k] = (score, f)
    out = []
    for score, f in sorted(worst.values(), key=lambda x: -x[0]):
        if f.get("energy") is None:
            out.append(f"determinism[{f['model']}] on {f['structure']}: {f['message']}")
        else:
            out.append(f"determinism[{f['model']}] on {f['structure']}: energy {f['energy']:.3g} eV/atom, forces "
                       f"{f['forces']:.3g} eV/A between identical calls (floor {f['floor']['energy']:g} eV/atom, "
                       f"{f['floor']['forces']:g} eV/A)")
    return out


_STOPPED = pytest.StashKey[str]()


def gate_incomplete(block: dict, baseline: dict) -> dict:
    """What the baseline gate counts as unfinished: everything that did not finish, and of the deselected hard
    contracts those the baseline holds (the baseline defines the gated suite: leaving one of its contracts out
    would hide it; a contract it never held is outside the gate)."""
    if not block:
        return {}
    gated = {contract for (_, contract), e in baseline.items() if e.get("role", "target") == "target"}
    out = dict(block)
    out["deselected_hard"] = [n for n in block.get("deselected_hard", []) if n in gated]
    out["count"] = sum(len(out.get(k) or []) for k in ("errors", "crashed", "not_run", "deselected_hard",
                                                       "determinism", "unreported", "unchecked"))
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
                      ("determinism", "determinism violations (outputs differ between identical calls)"),
                      ("errors", "error verdicts"), ("crashed", "crashed"), ("not_run", "never ran"),
                      ("unreported", "model failures a test caught (no verdict reports them)"),
                      ("deselected_hard", "hard contracts deselected")):
        if block.get(key):
            parts.append(f"{what}: {', '.join(block[key][:12])}" + (" ..." if len(block[key]) > 12 else ""))
    head = f"INCOMPLETE: {block['count']} item(s) did not finish"
    if block.get("interrupted"):
        head += f"; the run was {block['interrupted']}"
    if block.get("dead_workers"):
        head += f"; worker(s) died ({'; '.join(block['dead_workers'])})"
    return [head] + [f"  {p}" for p in parts] + partial


def _junit(config):
    """pytest's JUnit XML writer when --junitxml is on (its global properties land in the file's header)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover
        return None
    return config.stash.get(xml_key, None)


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file, so the root is among its properties
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    prov = config.stash.get(PROV_KEY, None)
    if prov is None:
        return
    try:
        prov.flush()
        if _is_worker(config):
            return
        _finish_run(prov)
        inc = prov.incomplete
        if session.exitstatus == 0 and inc and (inc.get("fails_run") or (prov.gate is not None
                                                                         and not prov.gate.complete)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    except MlipError as exc:
        prov.errors.append(str(exc))
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    finally:
        for ev in prov.evaluators:
            if getattr(ev.recorder, "__self__", None) is prov.ledger:
                ev.recorder = None
        if _is_worker(config):
            prov.store.close()


def _finish_run(prov):
    from ..reporting.gate import baseline_document, compare, is_gating, write_atomic
    from .recorder import root_hash, run_artifact, run_texts

    entries = [prov.entries[k] for k in sorted(prov.entries)]
    verdicts = [v for v, _ in entries]
    vids = [ids["verdict"] for _, ids in entries]
    required = [ids["verdict"] for v, ids in entries if is_gating(v)]
    texts = {ids["verdict"]: run_texts(v, ids) for v, ids in entries}
    prov.incomplete = prov.tracker.incomplete(prov.state, verdicts) if prov.tracker else {}
    if prov.baseline is not None:
        prov.gate = compare(verdicts, prov.baseline, prov.margin)
        prov.gate.incomplete = gate_incomplete(prov.incomplete, prov.baseline)
    from ..reporting.report import gate_json

    extra = {"gate": gate_json(prov.gate)}
    inc = prov.incomplete
    if inc and (inc.get("count") or inc.get("interrupted") or inc.get("dead_workers") or inc.get("partial")):
        extra["incomplete"] = inc  # report.json is rebuilt from the store: the block travels in the run artifact
    refs = [r for _, ids in entries for r in ids.get("references", [])]  # --mlip-reference decisions
    if refs:
        extra["reference_decisions"] = refs
    run_art = run_artifact(prov.run_id, prov.code_version, prov.state.target, list(prov.state.committee), vids,
                           required, texts, extra, references=refs)
    prov.flush([run_art])
    models = {}
    for v, ids in entries:
        ident = ids.get("model") or {}
        m = models.setdefault(v["model"], {"version": ident.get("version"),
                                            "weights_hash": ident.get("weights_hash"), "role": v["role"],
                                            "spec": ids.get("spec")})
        if v["role"] == "target":
            m["role"] = "target"
    prov.store.finish_run(prov.run_id, models, run_art.id)
    prov.run_artifact = run_art.id
    prov.root = root_hash(prov.store, prov.run_id)
    xml = _junit(prov.config)
    if xml is not None and prov.root:
        xml.add_global_property("mlip_root", prov.root)
        xml.add_global_property("mlip_run", prov.run_id)
    if prov.update_baseline and prov.baseline_path is not None and prov.incomplete.get("fails_run"):
        prov.errors.append(f"baseline {prov.baseline_path} not updated: the run is incomplete (it was stopped, or "
                           "items did not finish or ended in error verdicts); rerun to completion to update it")
    elif prov.update_baseline and prov.baseline_path is not None:
        arts = {(v["model"], v["contract"]): ids.get("max_normalized") or ids["verdict"] for v, ids in entries}
        doc = baseline_document(verdicts, prov.state.target, prov.run_id, prov.code_version, arts)
        try:
            write_atomic(prov.baseline_path, json.dumps(doc, indent=1) + "\n")
        except OSError as exc:
            raise MlipError(f"cannot write the baseline {prov.baseline_path} ({exc.strerror}); "
                            "pass --mlip-baseline=FILE in a writable folder") from None
        prov.written.append(f"baseline: {prov.baseline_path} ({len(doc['entries'])} entries)")
        prov.written_baseline = doc
    if prov.report_dir is not None:
        from ..reporting.report import report_from_store, write_report

        data = report_from_store(prov.store, prov.run_id)
        write_report(prov.report_dir, data, prov.store)
        (prov.report_dir / REPORT_MARKER).write_text(REPORT_MARKER_TEXT)
        prov.written.append(f"report: {prov.report_dir / 'report.html'} (and report.md, report.json)")
    if prov.summary_path is not None:
        from ..reporting.summary import summary_markdown

        text = summary_markdown(entries, prov)
        try:
            write_atomic(prov.summary_path, text)
        except OSError as exc:
            raise MlipError(f"cannot write {prov.summary_path} ({exc.strerror}); "
                            "pass --mlip-summary-md=FILE in a writable folder") from None
        prov.written.append(f"summary: {prov.summary_path}")


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    result = yield
    prov = config.stash.get(PROV_KEY, None)
    if prov is None:
        return result
    from ..reporting.gate import gate_lines

    tr = terminalreporter
    lines = incomplete_lines(prov.incomplete)
    if lines:
        tr.section("mlip incomplete run" if lines[0].startswith("INCOMPLETE") else "mlip partial run", red=True)
        for line in lines:
            tr.write_line(line, red=True)
    if prov.gate is not None and prov.update_baseline:
        from ..reporting.gate import update_lines

        tr.section("mlip baseline update")
        for line in update_lines(prov.gate, prov.baseline_path, prov.written_baseline):
            tr.write_line(line)
    elif prov.gate is not None:
        tr.section("mlip gate")
        for line in gate_lines(prov.gate):
            tr.write_line(line)
    sample = prov.tracker.sample_line() if prov.tracker else None
    if sample:
        tr.write_line(sample, red=bool(prov.tracker.nondeterminism))
    n = prov.store.count(run=prov.run_id)
    tr.write_line(f"provenance: run {prov.run_id}, {n} new artifact(s) in {prov.store.path}")
    if prov.root:
        tr.write_line(f"mlip root: {prov.root} (pytest-mlip judge REPORT --root {prov.root})")
    for line in prov.written:
        tr.write_line(line)
    for err in prov.errors:
        tr.write_line(f"ERROR: {err}", red=True)
    if prov.errors:
        print(f"ERROR: {prov.errors[0]}", file=sys.stderr)
    return result


def pytest_unconfigure(config):
    prov = config.stash.get(PROV_KEY, None)
    if prov is not None:
        prov.store.close()

