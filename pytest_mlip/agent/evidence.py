"""Initial evidence: contract verdicts on the target and committee, from wherever they are.

Three sources, tried in this order by the detective:

- a report folder or ``report.json`` written by ``pytest --mlip=... --mlip-report=DIR``
  (its ``provenance.sqlite`` snapshot is adopted, so the evidence keeps its artifact ids);
- the artifact store a pytest run wrote (default ``.mlip/provenance.sqlite``): the
  latest finished run on the target;
- neither: the detective gathers it, running the built-in contracts on the
  target and every committee model through :func:`pytest_mlip.testing.run_contract`.

Each becomes a list of :class:`EvidenceItem` (one per contract x model), which
the memory stores; a later run reads the memory, not these sources.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import MlipError, loads_json


class EvidenceItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    contract: str
    check: str
    model: str
    role: str
    status: str
    hard: bool = True
    basis: str = "exact"
    max_normalized: float | str | None = None
    worst_probe: str | None = None
    reason: str = ""
    #: probe -> {"status", "normalized", "violations"}
    probes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: artifact ids: "verdict", "max_normalized", "probes": {probe: normalized id}
    artifacts: dict[str, Any] = Field(default_factory=dict)
    source: str = "gathered"

    @property
    def v(self) -> float:
        """max v/tau as a float (inf for an error, 0 when absent)."""
        x = self.max_normalized
        if isinstance(x, str):
            return float(x)
        return 0.0 if x is None else float(x)

    def failing_probes(self) -> list[str]:
        return [p for p, d in self.probes.items() if d.get("status") == "error"
                or (d.get("normalized") is not None and _f(d["normalized"]) > 1.0)]

    def passing_probes(self) -> list[str]:
        return [p for p, d in self.probes.items() if d.get("status") == "ok"
                and d.get("normalized") is not None and _f(d["normalized"]) <= 1.0]


def _f(x) -> float:
    return float(x) if isinstance(x, str) else (math.nan if x is None else float(x))


def item_from_verdict(verdict, ids: dict, source: str) -> EvidenceItem:
    """Evidence from a live :class:`~pytest_mlip.laws.base.Verdict` and its artifact id map."""
    from ..provenance.artifact import finite_or_str

    probes = {}
    for p in verdict.probes:
        probes[p.probe] = {"status": p.status,
                           "normalized": finite_or_str(p.normalized) if p.normalized is not None else None,
                           "violations": {k: finite_or_str(float(v)) for k, v in p.violations.items()},
                           "message": p.message[:200]}
    arts = {"verdict": ids.get("verdict"), "max_normalized": ids.get("max_normalized"),
            "probes": {k: d.get("normalized") for k, d in ids.get("probes", {}).items()}}
    return EvidenceItem(contract=verdict.contract, check=verdict.check, model=verdict.model, role=verdict.role,
                        status=verdict.status, hard=verdict.hard, basis=verdict.basis,
                        max_normalized=finite_or_str(verdict.max_normalized) if verdict.max_normalized is not None
                        else None, worst_probe=verdict.worst_probe, reason=verdict.reason[:300], probes=probes,
                        artifacts=arts, source=source)


# --- sources -------------------------------------------------------------------------------------------------------


def from_report(path, ledger=None, target: str | None = None, named: bool = False) -> list[EvidenceItem]:
    """Evidence from a report folder or its report.json (adopting the snapshot's artifacts into ``ledger``);
    with ``target`` (a model name), a report of another target is refused; so is the report of an incomplete run,
    unless the contracts to widen are ``named`` (--contracts): its verdicts are partial, and 'no hypothesis' on them
    read as a clean model (held-out round 11)."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    if not path.is_file():
        raise MlipError(f"no report at {path}; pass the folder pytest --mlip=MODEL --mlip-report=DIR wrote "
                        "(or its report.json)")
    try:
        data = loads_json(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise MlipError(f"cannot read the report {path} ({exc}); regenerate it with pytest --mlip-report=DIR") \
            from None
    if not isinstance(data, dict) or data.get("format") != "pytest-mlip-report":
        raise MlipError(f"{path} is not a pytest-mlip report; pass the folder pytest --mlip-report=DIR wrote")
    ran = (data.get("run") or {}).get("target") if isinstance(data.get("run"), dict) else None
    if target is not None and ran != target:
        raise MlipError(f"{path} is a report on {ran}, not on the target {target}: its verdicts are not evidence about "
                        f"{target}; pass a report of pytest --mlip={target} --mlip-report=DIR")
    inc = data.get("incomplete")
    if isinstance(inc, dict) and inc.get("fails_run") and not named:
        how = f"the run was {inc['interrupted']}; " if inc.get("interrupted") else ""
        raise MlipError(f"{path} is the report of an INCOMPLETE run ({how}{inc.get('count', 0)} problem(s) its "
                        "verdicts do not cover): its evidence is partial, and finding nothing in it would read as a "
                        "clean model; rerun pytest --mlip-report=DIR to completion, or name the contracts to widen "
                        "with --contracts")
    out = []
    for v in data.get("verdicts", []):
        probes, pids = {}, {}
        for p in v.get("probes", []):
            norm = p.get("normalized") or {}
            probes[p["probe"]] = {"status": p.get("status"), "normalized": norm.get("value"),
                                  "violations": {k: c.get("value") for k, c in (p.get("violations") or {}).items()},
                                  "message": (p.get("message") or "")[:200]}
            pids[p["probe"]] = norm.get("artifact")
        mn = v.get("max_normalized") or {}
        worst = None
        active = {k: _f(d["normalized"]) for k, d in probes.items() if d.get("normalized") is not None}
        if active:
            worst = max(active, key=lambda k: active[k])
        out.append(EvidenceItem(
            contract=v["contract"], check=v["check"], model=v["model"], role=v["role"],
            status=v["status"]["text"], hard=v.get("hard", True), basis=v.get("basis", "exact"),
            max_normalized=mn.get("value"), worst_probe=v.get("worst_probe") or worst, reason=v.get("reason", "")[:300],
            probes=probes, source=f"report:{path}",
            artifacts={"verdict": v["status"].get("artifact"), "max_normalized": mn.get("artifact"), "probes": pids}))
    if ledger is not None:
        # the report's one store (its snapshot, plain or gzipped, as the judge reads it): every number the
        # escalation reports cite from the evidence must be in the run's own store
        import os

        from ..reporting.judge_report import pick_store

        st, label, tmp = pick_store(path.parent, None)
        st.close()
        try:
            ledger.adopt(tmp or label, [i.artifacts["verdict"] for i in out if i.artifacts.get("verdict")])
        finally:
            if tmp:
                os.unlink(tmp)
    return out


def from_store(path, target: str, ledger=None) -> list[EvidenceItem]:
    """Evidence from the latest finished run on ``target`` in a pytest provenance store."""
    from ..provenance.store import Store

    path = Path(path)
    store = Store(path, readonly=True)
    try:
        rows = store.db.execute("SELECT id, target FROM runs WHERE artifact IS NOT NULL ORDER BY started DESC"
                                ).fetchall()
        run = next((r[0] for r in rows if r[1] == target), None)
        if run is None:
            raise MlipError(f"no finished run on {target} in the store {path}; run pytest --mlip={target} first "
                            "or let the detective gather evidence (leave out --mlip-store)")
        vids = [r[0] for r in store.db.execute("SELECT id FROM artifacts WHERE kind='verdict' AND run=?", (run,))]
        closure = store.closure(vids)
        arts = store.get_many(closure)
    finally:
        store.close()
    out = []
    for vid in vids:
        v = arts[vid]
        p = v.params
        parents = [arts[i] for i in v.parents if i in arts]
        mn = next((a for a in parents if a.kind == "max_normalized"), None)
        probes, pids = {}, {}
        for a in parents:
            if a.kind == "normalized":
                probe = a.params.get("probe")
                viols = {arts[i].params.get("key"): arts[i].value for i in a.parents
                         if i in arts and arts[i].kind == "violation"}
                probes[probe] = {"status": a.params.get("status", "ok"), "normalized": a.value, "violations": viols,
                                 "message": ""}
                pids[probe] = a.id
        out.append(EvidenceItem(
            contract=p.get("contract"), check=p.get("check"), model=v.model.name if v.model else "?",
            role=p.get("role", "target"), status=v.value, hard=p.get("hard", True), basis=p.get("basis", "exact"),
            max_normalized=mn.value if mn else None, worst_probe=p.get("worst_probe"), reason=p.get("reason", "")[:300],
            probes=probes, source=f"store:{path}#{run}",
            artifacts={"verdict": vid, "max_normalized": mn.id if mn else None, "probes": pids}))
    if ledger is not None:
        ledger.adopt(path, vids)
    return out


def gather(target: str, committee: list[str], ledger, contracts: list[str] | None = None,
           log=None, suite: dict | None = None) -> list[EvidenceItem]:
    """Run the built-in contracts on target and committee (``run_contract``), recording their artifacts."""
    from ..evaluation import evaluator_for
    from ..testing import run_contract
    from ..contracts.suite import load_suite

    suite = suite if suite is not None else load_suite()
    names = [n for n in suite if contracts is None or n in contracts]
    out = []
    for model in [target] + [m for m in committee if m != target]:
        role = "target" if model == target else "committee"
        for name in names:
            verdict = run_contract(suite[name], model, role=role)
            ids = ledger.verdict(verdict, evaluator_for(model), model, context={"agent": "evidence"})
            out.append(item_from_verdict(verdict, ids, "gathered"))
            if log:
                log(f"evidence: {name} on {model}: {verdict.status}"
                    + (f" (max v/tau {verdict.max_normalized:.3g})" if verdict.max_normalized is not None else ""))
    return out
