"""Provenance as pytest hooks (loaded by ``pytest_mlip.plugin``): the store, the run and its artifacts.

- Every real model call and every number derived from a verdict is stored as
  an artifact in a SQLite store (default ``provenance.sqlite`` in the
  ``--mlip-output`` folder); each contract item records its artifacts right
  after it runs, in the process that ran it (xdist workers included).
- The item's report carries the artifact ids (user property
  ``mlip_artifacts``) and, for JUnit XML, ``mlip_status``,
  ``mlip_max_normalized``, ``mlip_violation``, ``mlip_tolerance`` and
  ``mlip_artifact``.
- :meth:`ProvenanceRun.finish` writes the run artifact citing every verdict
  and computes the root hash; whoever ends the run (the reporting side,
  :mod:`pytest_mlip.reporting.plugin`) calls it with what the run artifact must
  also carry. Provenance knows nothing of reports, the baseline gate or the
  summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from pathlib import Path

import pytest

from ..errors import MlipError

PROV_KEY = pytest.StashKey["ProvenanceRun"]()
STORE_NAME = "provenance.sqlite"


def pytest_addoption(parser):
    group = parser.getgroup("mlip", "physics contracts for machine-learning interatomic potentials")
    group.addoption("--mlip-store", action="store", default=None, metavar="PATH",
                    help="SQLite provenance store of every model call and derived number "
                         f"(default: {STORE_NAME} in the --mlip-output folder)")


def is_worker(config) -> bool:
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
        self.evaluators: list = []
        self.new_artifacts = 0
        self.run_artifact: str | None = None
        self.root: str | None = None

    def flush(self, extra=()):
        arts = self.ledger.take() + list(extra)
        if arts:
            self.new_artifacts += self.store.put_many(arts, run=self.run_id)

    def sorted_entries(self) -> list[tuple[dict, dict]]:
        """(verdict json, artifact ids) of every contract item reported to this process, in node-id order."""
        return [self.entries[k] for k in sorted(self.entries)]

    def finish(self, extra: dict, references: list[str] = ()) -> None:
        """The run artifact (every verdict, the gating failures a report must claim, ``extra``), the run row and the
        root hash; the root goes to the JUnit XML's properties when it is written."""
        from ..laws.base import gates
        from .recorder import root_hash, run_artifact, run_texts

        entries = self.sorted_entries()
        vids = [ids["verdict"] for _, ids in entries]
        required = [ids["verdict"] for v, ids in entries if gates(v["role"], v["hard"], v["status"])]
        texts = {ids["verdict"]: run_texts(v, ids) for v, ids in entries}
        run_art = run_artifact(self.run_id, self.code_version, self.state.target, list(self.state.committee), vids,
                               required, texts, extra, references=list(references))
        self.flush([run_art])
        models = {}
        for v, ids in entries:
            ident = ids.get("model") or {}
            m = models.setdefault(v["model"], {"version": ident.get("version"),
                                                "weights_hash": ident.get("weights_hash"), "role": v["role"],
                                                "spec": ids.get("spec")})
            if v["role"] == "target":
                m["role"] = "target"
        self.store.finish_run(self.run_id, models, run_art.id)
        self.run_artifact = run_art.id
        self.root = root_hash(self.store, self.run_id)
        xml = _junit(self.config)
        if xml is not None and self.root:
            xml.add_global_property("mlip_root", self.root)
            xml.add_global_property("mlip_run", self.run_id)

    def summary_lines(self) -> list[str]:
        """The run's provenance in the terminal summary: its id, new artifacts, store and root hash."""
        n = self.store.count(run=self.run_id)
        lines = [f"provenance: run {self.run_id}, {n} new artifact(s) in {self.store.path}"]
        if self.root:
            lines.append(f"mlip root: {self.root} (pytest-mlip judge REPORT --root {self.root})")
        return lines


def _resolve_store_path(config, state) -> Path:
    raw = config.getoption("mlip_store")
    if raw:
        p = Path(raw).expanduser()
        return p if p.is_absolute() else Path(config.invocation_params.dir) / p
    return Path(state.output) / STORE_NAME


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from ..plugin import STATE_KEY, runs_nothing

    state = config.stash.get(STATE_KEY, None)
    if state is None or runs_nothing(config):  # --mlip-contracts lists, --collect-only collects: nothing runs
        return
    from .artifact import code_version
    from .store import Store

    worker = getattr(config, "workerinput", None) or {}
    run_id = worker.get("mlip_run_id") or new_run_id()
    code = worker.get("mlip_code_version") or code_version()
    try:
        store = Store(_resolve_store_path(config, state))
        if not is_worker(config):
            _refuse_an_altered_store(store)
    except MlipError as exc:
        from ..plugin import usage_error

        raise usage_error(config, exc) from None
    prov = ProvenanceRun(config, state, run_id, code, store)
    config.stash[PROV_KEY] = prov
    if not is_worker(config):
        store.begin_run(run_id, code, state.target, list(state.committee), list(config.invocation_params.args))
        config.pluginmanager.register(_Entries(prov), "mlip-provenance-entries")


def _refuse_an_altered_store(store):
    """A run appends to its store and reuses what is there (a model call or a number with the same content id
    keeps the row first stored): a row edited since would enter this run's reports. Refused untouched, before any
    model call (a held-out case: an edited evaluation was reused and the new report failed the judge)."""
    from .artifact import SHORT_ID

    altered = store.first_altered()
    if altered is not None:
        bad, why = altered
        store.close()
        raise MlipError(f"provenance store {store.path} holds an artifact edited after it was stored ({bad.kind} "
                        f"{bad.id[:SHORT_ID]}: {why}); a run would build on it: move the store aside "
                        f"(mv {store.path} {store.path}.edited) and run again")


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
        if getattr(item, "mlip_last", False):  # the process's last item: every model's first call made again
            _repeat_anchors(item, prov, evaluator)
        _record_sample(item, evaluator, before)
        _record_item(item, prov, evaluator)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.mlip_last = nextitem is None  # the process's last item (an xdist worker's too)
    return (yield)


def _repeat_anchors(item, prov, evaluator) -> None:
    """Each model's first call made again at the end of the process's items (Evaluator.repeat_anchor); another
    model's share of it travels in its own sample record of this item."""
    for other in prov.evaluators:
        if other is evaluator:
            with contextlib.suppress(Exception):
                other.repeat_anchor()
            continue
        before = _sample_state(other)
        with contextlib.suppress(Exception):  # a failing repeat is recorded as a violation by the evaluator
            other.repeat_anchor()
        if _sample_state(other) != before:
            _record_sample(item, other, before)


def _sample_state(evaluator) -> tuple[int, int, int, int, int, int, int, int]:
    if evaluator is None:
        return 0, 0, 0, 0, 0, 0, 0, 0
    return (evaluator.stats.calls, evaluator.stats.repeats, len(evaluator.nondeterminism),
            len(getattr(evaluator, "raised", ())), evaluator.stats.multi, evaluator.stats.flat, evaluator.stats.hits,
            evaluator.stats.flat_isolated)


def _record_sample(item, evaluator, before):
    """The item's share of the sampled determinism check (calls, repeats, violations) travels in its report, so the
    xdist controller sees every worker's; so do the model failures the item saw that no verdict reported (a test
    that caught the evaluator's error)."""
    if evaluator is None or evaluator.sample is None:
        return
    calls, repeats, found, raised, multi, flat, hits, isolated = _sample_state(evaluator)
    unreported = list(dict.fromkeys(str(e) for e in evaluator.raised[before[3]:raised] if not e.reported))
    from ..models.probe import take_probe_failures

    unreported += [f"element probe of {evaluator.name}: {m}" for m in take_probe_failures(item.mlip_spec)]
    item.user_properties.append(("mlip_sample", json.dumps({
        "model": evaluator.name, "calls": calls - before[0], "repeats": repeats - before[1],
        "asked": calls - before[0] + hits - before[6],  # real calls and cache hits: the item asked the model
        "violations": evaluator.nondeterminism[before[2]:found], "unreported": unreported,
        # calls on two atoms or more, and those with every force exactly zero (with their formulas and energies)
        "multi": multi - before[4], "flat": flat - before[5], "flat_isolated": isolated - before[7],
        "flat_calls": sorted(evaluator.stats.flat_calls),
        # the process's energy spread so far (cumulative: the controller keeps each process's latest)
        "spread": evaluator.stats.spread.as_dict(), "pid": os.getpid()}, default=float)))


def _record_item(item, prov, evaluator):
    from .recorder import verdict_artifacts

    verdict = getattr(item, "verdict", None)
    if verdict is None or evaluator is None:
        prov.flush()
        return
    arts, ids = verdict_artifacts(verdict, evaluator, prov.code_version, run=prov.run_id,
                                  context={"item": item.nodeid})
    ids["spec"] = item.mlip_spec
    ids["reproduce"] = getattr(item, "mlip_reproduce", None)  # the item's command line (a contract item's or a test's)
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


class _Entries:
    """Gathers each contract item's verdict and artifact ids from its report (on the xdist controller too)."""

    def __init__(self, prov: ProvenanceRun):
        self.prov = prov

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        verdict = ids = None
        for key, value in getattr(report, "user_properties", []):
            if key == "mlip_verdict":
                verdict = json.loads(value)
            elif key == "mlip_artifacts":
                ids = json.loads(value)
        if verdict is not None and ids is not None:
            self.prov.entries[report.nodeid] = (verdict, ids)


def _junit(config):
    """pytest's JUnit XML writer when --junitxml is on (its global properties land in the file's header)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover
        return None
    return config.stash.get(xml_key, None)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    prov = session.config.stash.get(PROV_KEY, None)
    if prov is None:
        return
    prov.flush()
    for ev in prov.evaluators:
        if getattr(ev.recorder, "__self__", None) is prov.ledger:
            ev.recorder = None
    if is_worker(session.config):
        prov.store.close()


def pytest_unconfigure(config):
    prov = config.stash.get(PROV_KEY, None)
    if prov is not None:
        prov.store.close()
