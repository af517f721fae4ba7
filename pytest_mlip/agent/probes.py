"""Probes: one pre-registered protocol run on the target and every committee model.

A probe runs the identical protocol on every model through the fixed check
routines (``pytest_mlip.laws.run_contract``, the one way every engine runs a contract) and
reports both label-free signals:

- *exact-constraint violation*: the target's worst v/tau (decisive on its own
  for an exact-basis contract when above one);
- *committee disagreement*: log10 of how far the target's (1 + v/tau) stands
  above the committee median's (it only allocates suspicion);

and the severity as a continuous number, log10(1 + v/tau) of the target. If
every model, target and committee alike, shows the violation, the protocol
rather than the model is suspect.
"""

from __future__ import annotations

import math
import statistics
import time

from .schema import ModelOutcome, ProbeReport


def _num(x) -> float | None:
    if x is None:
        return None
    return float(x) if isinstance(x, str) else float(x)


def run_protocol(settings, models: list[tuple[str, str]], ledger, context: dict | None = None,
                 ) -> tuple[list[ModelOutcome], dict]:
    """Run ``settings`` on each (spec, role); returns outcomes and the raw verdicts by model."""
    from ..laws import run_contract
    from ..evaluation import evaluator_for
    from ..provenance.artifact import finite_or_str
    from ..reporting.verdicts import noise_for

    outcomes, verdicts = [], {}
    for spec, role in models:
        evaluator = evaluator_for(spec)
        verdict_role = "target" if role == "target" else "committee"
        verdict = run_contract(settings, evaluator, role=verdict_role, noise=noise_for(evaluator.name, settings.name))
        ids = ledger.verdict(verdict, evaluator, spec, context=dict(context or {}))
        probes = {}
        for p in verdict.probes:
            obs = {k: finite_or_str(float(v)) for k, v in p.observables.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
            probes[p.probe] = {"status": p.status,
                               "normalized": finite_or_str(float(p.normalized)) if p.normalized is not None else None,
                               "violations": {k: finite_or_str(float(v)) for k, v in p.violations.items()},
                               "observables": obs, "message": p.message[:200]}
        outcomes.append(ModelOutcome(
            model=spec, role=role, status=verdict.status,
            max_normalized=finite_or_str(float(verdict.max_normalized)) if verdict.max_normalized is not None else None,
            worst_probe=verdict.worst_probe, reason=verdict.reason[:300], evaluations=verdict.evaluations,
            probes=probes, artifacts=ids))
        verdicts[spec] = verdict
    return outcomes, verdicts


def signals(outcomes: list[ModelOutcome], ledger, name: str, basis: str,
            band: bool = False) -> tuple[dict, dict, bool]:
    """Severity, disagreement and exact-violation signals (each recorded as a derived artifact); with ``band``, how
    far the target stands above the committee band too (for a pre-registered band prediction)."""
    target = next(o for o in outcomes if o.role == "target")
    committee = [o for o in outcomes if o.role == "committee" and o.status != "skip"]
    sig, arts = {}, {}
    if target.status == "skip" or target.max_normalized is None:
        return {"target_status": target.status}, {}, False
    vt = _num(target.max_normalized)
    t_art = target.artifacts.get("max_normalized")
    severity = math.log10(1.0 + vt) if math.isfinite(vt) else math.inf
    sig["exact_violation"] = vt
    arts["exact_violation"] = t_art
    sig["severity"] = severity
    arts["severity"] = ledger.derive(
        "severity", severity, [t_art], params={"contract": name, "rule": "log10(1 + max v/tau) of the target"},
        reason="severity of the target's violation on this protocol (continuous)", context={"protocol": name},
        model=_loaded(target.model))
    failing = [p for p, d in target.probes.items() if d["status"] == "error"
               or (d["normalized"] is not None and _num(d["normalized"]) > 1.0)]
    active = [p for p, d in target.probes.items() if d["status"] != "skip"]
    if active:
        breadth = len(failing) / len(active)
        sig["breadth"] = breadth
        pids = [target.artifacts.get("probes", {}).get(p, {}).get("normalized") for p in active]
        arts["breadth"] = ledger.derive(
            "breadth", breadth, [i for i in pids if i] or [t_art],
            params={"contract": name, "rule": "fraction of the target's probes with v/tau > 1"},
            reason="breadth: the fraction of this protocol's configurations on which the target violates the law",
            context={"protocol": name}, model=_loaded(target.model))
    cvals = [(_num(o.max_normalized), o.artifacts.get("max_normalized")) for o in committee
             if o.max_normalized is not None]
    if cvals:
        med = statistics.median(v for v, _ in cvals)
        if math.isfinite(vt) and math.isfinite(med):
            dis = math.log10((1.0 + vt) / (1.0 + med))
        elif not math.isfinite(vt) and math.isfinite(med):
            dis = math.inf
        else:
            dis = 0.0
        sig["disagreement"] = dis
        arts["disagreement"] = ledger.derive(
            "disagreement", dis, [t_art] + [a for _, a in cvals],
            params={"contract": name, "rule": "log10((1 + v/tau target) / (1 + median v/tau committee))"},
            reason="committee disagreement: how far the target stands above the committee median (allocates "
                   "suspicion only)", context={"protocol": name})
        sig["committee_failing"] = float(sum(1 for o in committee if o.status in ("fail", "error")))
        top, low = max(v for v, _ in cvals), min(v for v, _ in cvals)
        if band and math.isfinite(vt) and math.isfinite(top):
            excess = vt - top - (top - low)
            sig["band_excess"] = excess
            arts["band_excess"] = ledger.derive(
                "band_excess", excess, [t_art] + [a for _, a in cvals],
                params={"contract": name, "rule": "v/tau target - max v/tau committee - (max - min v/tau committee)"},
                reason="committee band: how far the target stands above the committee's largest v/tau, beyond the "
                       "committee's own spread (allocates suspicion only)", context={"protocol": name})
    from .judgement import DISAGREEMENT_DECADES

    everyone = [target] + committee
    # "the same anomaly" in every model: all violate it and the target does not stand out by its size
    suspect = (len(everyone) >= 2 and all(o.status in ("fail", "error") for o in everyone)
               and not (sig.get("disagreement") or 0.0) >= DISAGREEMENT_DECADES)
    return sig, arts, suspect


def _loaded(spec: str):
    from ..evaluation import evaluator_for

    return evaluator_for(spec).model


def probe(hypothesis: str, prediction, settings, target: str, committee: list[str], ledger) -> ProbeReport:
    """Run one pre-registered prediction's protocol on target, committee and any extra models."""
    from ..evaluation import evaluator_for

    models = [(target, "target")] + [(c, "committee") for c in committee if c != target]
    models += [(m, "extra") for m in prediction.extra_models if m not in (target, *committee)]
    before = {spec: evaluator_for(spec).stats.calls for spec, _ in models}
    t0 = time.perf_counter()
    outcomes, _ = run_protocol(settings, models, ledger,
                               context={"agent": "probe", "hypothesis": hypothesis, "protocol": settings.name,
                                        "kind": prediction.kind})
    evaluations = sum(evaluator_for(spec).stats.calls - before[spec] for spec, _ in models)
    sig, arts, suspect = signals(outcomes, ledger, settings.name, settings.basis,
                                 band=bool(getattr(prediction, "above_band", False)))
    notes = []
    if suspect:
        notes.append("every model violates this protocol alike: the protocol, not the model, is suspect")
    skipped = [o.model for o in outcomes if o.status == "skip"]
    if skipped:
        notes.append(f"skipped on {', '.join(skipped)}")
    return ProbeReport(hypothesis=hypothesis, name=settings.name, kind=prediction.kind, check=settings.check,
                       outcomes=outcomes, signals=sig, signal_artifacts=arts, protocol_suspect=suspect, notes=notes,
                       seconds=time.perf_counter() - t0, evaluations=evaluations)
