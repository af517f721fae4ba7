"""``--mlip-reference=ENGINE``: settle the target's failing probes against a reference calculation.

After a contract item ran and its verdict was recorded, each failing probe of
the target (v/tau above one, worst first) whose check has a reference card is
settled with the engine, within ``--mlip-reference-budget`` seconds of engine
time per process (cached results are free). The artifacts go to the run's
store and the item's artifact map gets ``probes[probe]["reference"]``, which
the report turns into report.json's ``reference`` entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REF_KEY = pytest.StashKey["ReferenceRun"]()


from ..numbers import Number, add_number_option


def pytest_addoption(parser):
    group = parser.getgroup("mlip")
    group.addoption("--mlip-reference", action="store", default=None, metavar="ENGINE",
                    help="settle the target's failing probes of laws with a reference card by a DFT reference: "
                         "pyscf (molecules; pip install 'pytest-mlip[reference]') or gpaw (molecules and slabs)")
    add_number_option(group, "--mlip-reference-budget", Number("a number of engine seconds", "600", integer=False, strict=True),
                      default=None, metavar="SECONDS",
                      help="engine seconds the reference may spend per process (cached results are free; default "
                         "600)")
    parser.addini("mlip_reference", "default --mlip-reference engine (pyscf or gpaw)", default=None)
    parser.addini("mlip_reference_budget", "default --mlip-reference-budget (seconds)", default=None)


DEFAULT_BUDGET = 600.0


class ReferenceRun:
    def __init__(self, engine, cache, budget, inputs=None):
        self.engine = engine
        self.cache = cache
        self.budget = budget
        #: where the configurations of cards not computed here are written for an external code
        self.inputs = inputs
        self.settled: list = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from ..plugin import STATE_KEY

    name = config.getoption("mlip_reference", None) or config.getini("mlip_reference")
    if not name:
        return
    raw = config.getoption("mlip_reference_budget", None)  # checked by numbers.convert_options (ini included)
    budget = DEFAULT_BUDGET if raw is None else raw
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        raise pytest.UsageError("--mlip-reference needs a target model: add --mlip=MODEL")
    from ..errors import MlipError
    from .engines import engine
    from .settle import Budget, Cache

    try:
        eng = engine(name.strip().lower())
    except MlipError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[REF_KEY] = ReferenceRun(eng, Cache(Path(state.output) / "reference"), Budget(budget),
                                         inputs=Path(state.output) / "reference-inputs")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    ref = item.config.stash.get(REF_KEY, None)
    try:
        return (yield)
    finally:
        if ref is not None and getattr(item, "verdict", None) is not None and item.role == "target":
            _settle_item(item, ref)


def _settle_item(item, ref):
    from ..evaluation import evaluator_for
    from ..provenance.plugin import PROV_KEY
    from .settle import settle_verdict

    prov = item.config.stash.get(PROV_KEY, None)
    props = item.user_properties
    k = next((i for i, (key, _) in enumerate(props) if key == "mlip_artifacts"), None)
    ids = json.loads(props[k][1]) if k is not None else {"probes": {}}
    done = settle_verdict(item.verdict, item.settings, ref.engine, ref.cache, ref.budget,
                          model=evaluator_for(item.model).model, probe_ids=ids.get("probes", {}),
                          code_version=prov.code_version if prov else "", run=prov.run_id if prov else None,
                          inputs=ref.inputs)
    for st in done:
        ref.settled.append(st)
        if prov is not None:
            prov.flush(st.artifacts)
        if st.probe in ids.get("probes", {}):
            ids["probes"][st.probe]["reference"] = st.ids
            ids.setdefault("references", []).append(st.ids["decision"])
    if k is not None and done:
        props[k] = ("mlip_artifacts", json.dumps(ids, sort_keys=True))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    ref = config.stash.get(REF_KEY, None)
    if ref is None or not ref.settled:
        return
    tr = terminalreporter
    tr.section(f"mlip reference ({ref.engine.method.label()})")
    for st in ref.settled:
        fresh = sum(1 for p in st.points if not p["cached"])
        tr.write_line(f"{st.contract} {st.probe}: {st.decision.upper()} - {st.reason} "
                      f"({len(st.points)} point(s), {fresh} computed now, {st.seconds:.1f} s of engine time)")
