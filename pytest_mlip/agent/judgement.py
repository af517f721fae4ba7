"""Verdicts rendered against the pre-registration: escalate, reject, or exhausted.

The rules are fixed and asymmetric. An exact-constraint violation (an exact
basis protocol the target fails with v/tau > 1) is decisive on its own;
committee disagreement only allocates suspicion (a disagreement-basis
hypothesis escalates only when the target stands at least a decade above the
committee median). Each prediction with a definite expectation is checked as
registered; any that fails rejects the hypothesis, with the prediction as the
reason. Every model failing a scope protocol alike (the target not standing
a decade above the committee) makes the protocol suspect and rejects too. There is no "confirm": confirmation belongs to the human verifier.
"""

from __future__ import annotations

from .schema import AgentVerdict, Hypothesis, PredictionCheck, Preregistration, ProbeReport

#: a disagreement-basis escalation needs the target this many decades above the committee median
DISAGREEMENT_DECADES = 1.0


def spell(decades: float) -> str:
    """A decade count in words (reports print no uncited digits)."""
    words = {1.0: "one decade", 2.0: "two decades", 3.0: "three decades", 0.5: "half a decade"}
    return words.get(float(decades), "the pre-registered number of decades")


def _observed(status: str) -> str:
    return {"error": "fail"}.get(status, status)


def _committee_observed(report: ProbeReport) -> str:
    """Outcome of the committee: 'fail' when most members violate the protocol, else 'pass' ('skip' when none ran).

    Unanimity is neither expected nor required: one member out of two violating it still counts as pass.
    """
    obs = [_observed(o.status) for o in report.committee if o.status != "skip"]
    if not obs:
        return "skip"
    fails = sum(1 for o in obs if o == "fail")
    return "fail" if fails * 2 > len(obs) else "pass"


def check_predictions(prereg: Preregistration, reports: dict[str, ProbeReport]) -> list[PredictionCheck]:
    out = []
    for p in prereg.predictions:
        r = reports.get(p.name)
        if r is None:
            out.append(PredictionCheck(name=p.name, kind=p.kind, expected=f"target {p.target}", observed="not run",
                                       held=None, note="not run (evaluation budget spent or stopped)"))
            continue
        t = _observed(r.target.status)
        if p.target in ("pass", "fail"):
            if t == "skip":
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=f"target {p.target}",
                                           observed="skip", held=None, note=r.target.reason or "skipped"))
            else:
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=f"target {p.target}", observed=t,
                                           held=(t == p.target)))
        else:
            out.append(PredictionCheck(name=p.name, kind=p.kind, expected="target any", observed=t, held=None,
                                       note="informational"))
        if p.excess_decades is not None:
            dis = r.signals.get("disagreement")
            want = f"target at least {spell(p.excess_decades)} above the committee median"
            if dis is None:
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=want, observed="no committee value",
                                           held=None))
            else:
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=want,
                                           observed=f"{float(dis):.3g} decades", held=float(dis) >= p.excess_decades))
        if p.above_band:
            band, vt = r.signals.get("band_excess"), r.signals.get("exact_violation")
            want = "target above one and above the committee band by more than its spread"
            if band is None or vt is None:
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=want, observed="no committee value",
                                           held=None))
            else:
                out.append(PredictionCheck(name=p.name, kind=p.kind, expected=want,
                                           observed=f"{float(band):.3g} above the band",
                                           held=float(band) > 0 and float(vt) > 1.0))
        if p.committee in ("pass", "fail"):
            c = _committee_observed(r)
            held = None if c in ("skip",) else (c == p.committee)
            out.append(PredictionCheck(name=p.name, kind=p.kind, expected=f"committee {p.committee} (at least half)",
                                       observed=f"committee {c}", held=held))
    return out


def render(h: Hypothesis, prereg: Preregistration, reports: dict[str, ProbeReport],
           budget_spent: bool = False) -> AgentVerdict:
    """The rule-based verdict for a hypothesis given its pre-registration and probe reports."""
    checks = check_predictions(prereg, reports)
    failed = [c for c in checks if c.held is False]
    reasons = []
    for c in failed:
        reasons.append(f"pre-registered prediction failed: {c.name} ({c.kind}) expected {c.expected}, observed "
                       f"{c.observed}")
    suspects = [r for r in reports.values() if r.protocol_suspect and r.kind == "scope"]
    for r in suspects:
        reasons.append(f"protocol suspect: every model (target and committee) violates {r.name}")
    if failed or suspects:
        return AgentVerdict(hypothesis=h.id, verdict="reject", reasons=reasons, checks=checks)
    definite = [c for c in checks if c.expected.startswith("target ") and not c.expected.endswith("any")]
    untested = [c for c in definite if c.held is None]
    if untested:
        why = "evaluation budget spent" if budget_spent else "untestable"
        return AgentVerdict(hypothesis=h.id, verdict="exhausted", checks=checks,
                            reasons=[f"{why}: {c.name} ({c.kind}) {c.note or c.observed}" for c in untested])
    scope = [reports[p.name] for p in prereg.predictions if p.kind == "scope" and p.target == "fail"
             and p.name in reports]
    decisive = [r for r in scope if r.target.status in ("fail", "error")
                and (r.signals.get("exact_violation") or 0) > 1.0]
    if h.basis == "exact" and decisive:
        reasons = [f"the target violates the exact constraint on the pre-registered scope protocol {r.name} "
                   "(decisive on its own); every definite prediction held" for r in decisive]
        for r in decisive:
            if _committee_observed(r) == "fail" or any(o.status in ("fail", "error") for o in r.committee):
                held = [c for c in checks if c.name == r.name and c.held
                        and ("above the committee" in c.expected)]
                reasons.append(f"committee members violate {r.name} too"
                               + (", but the target stands out by its size (the pre-registered disagreement held)"
                                  if held else "; no disagreement was pre-registered on it, so the escalation rests "
                                               "on the target's exact violation alone"))
        return AgentVerdict(hypothesis=h.id, verdict="escalate", type="exact-constraint violation", checks=checks,
                            reasons=reasons)
    strong = [r for r in scope if (r.signals.get("disagreement") or 0) >= DISAGREEMENT_DECADES]
    banded = {p.name for p in prereg.predictions if p.kind == "scope" and p.above_band}
    outside = [r for r in scope if r.name in banded and (r.signals.get("band_excess") or 0) > 0
               and (r.signals.get("exact_violation") or 0) > 1.0 and r not in strong]
    if h.basis == "disagreement" and (strong or outside):
        return AgentVerdict(hypothesis=h.id, verdict="escalate", type="cross-model disagreement", checks=checks,
                            reasons=[f"the target stands at least {DISAGREEMENT_DECADES:g} decade above the committee "
                                     f"median on {r.name}; every definite prediction held" for r in strong]
                            + [f"the target stands above the committee band by more than the committee's own spread "
                               f"on {r.name} (pre-registered); every definite prediction held" for r in outside])
    return AgentVerdict(hypothesis=h.id, verdict="reject", checks=checks,
                        reasons=["no decisive signal: the predictions held but no scope protocol shows a decisive "
                                 "exact violation or a strong disagreement"])


def allowed(planner_verdict: str, rule: AgentVerdict) -> str | None:
    """Why a planner's verdict is inconsistent with the rules (None: allowed).

    A planner may always reject (with its reason); it may escalate only what
    the rules escalate; "confirm" does not exist.
    """
    if planner_verdict not in ("escalate", "reject"):
        return f"verdict {planner_verdict!r} is not available: render escalate or reject (never confirm)"
    if planner_verdict == "escalate" and rule.verdict != "escalate":
        return ("escalation refused: against the pre-registration the evidence gives "
                f"{rule.verdict} ({'; '.join(rule.reasons) or 'no reason'})")
    return None


def held_by_prediction(checks) -> dict[str, str]:
    """Whether each prediction held, as the report's table prints it: ``no`` when any of its checks failed, ``yes``
    when one held and none failed, ``n/a`` when none was definite."""
    held: dict[str, str] = {}
    for chk in checks:
        if chk.held is None:
            held.setdefault(chk.name, "n/a")
        elif chk.held is False or held.get(chk.name) == "no":
            held[chk.name] = "no"
        else:
            held[chk.name] = "yes"
    return held


def decision_inputs(h, prereg, reports, budget_spent: bool = False) -> tuple[dict, list[str]]:
    """What the decision is computed from, as data (the decision artifact's params), and the verdict artifacts it
    reads (its parents)."""
    preds = [{"name": p.name, "kind": p.kind, "target": p.target, "committee": p.committee,
              "excess_decades": p.excess_decades, "above_band": p.above_band} for p in prereg.predictions]
    probes, parents = {}, []
    for name, r in reports.items():
        outs = []
        for o in r.outcomes:
            vid = o.artifacts.get("verdict")
            outs.append({"model": o.model, "role": o.role, "verdict": vid, "status": o.status})
            if vid:
                parents.append(vid)
        sig = {k: r.signals.get(k) for k in ("exact_violation", "disagreement", "band_excess")}
        parents += [a for a in r.signal_artifacts.values() if a]
        probes[name] = {"kind": r.kind, "outcomes": outs, "signals": sig,
                        "signal_artifacts": dict(r.signal_artifacts), "protocol_suspect": r.protocol_suspect}
    params = {"hypothesis": h.id, "basis": h.basis, "predictions": preds, "probes": probes,
              "budget_spent": budget_spent, "rule": "pytest_mlip.agent.judgement.render"}
    return params, list(dict.fromkeys(parents))


def decide(params: dict, statuses: dict[str, str]) -> dict:
    """The decision from its recorded inputs, with each verdict's status read from its artifact (``statuses``:
    verdict id -> status): {verdict, type, held}. The judge recomputes a decision artifact with it."""
    from .schema import ModelOutcome, Prediction, ProbeReport

    h = Hypothesis.model_construct(id=params["hypothesis"], basis=params["basis"])
    prereg = Preregistration.model_construct(
        hypothesis=params["hypothesis"],
        predictions=[Prediction.model_construct(protocol={}, rationale="", extra_models=[], **p)
                     for p in params["predictions"]])
    reports = {}
    for name, r in params["probes"].items():
        outs = [ModelOutcome.model_construct(model=o["model"], role=o["role"],
                                             status=statuses.get(o["verdict"], o["status"]) if o["verdict"] else
                                             o["status"], reason="", probes={}, artifacts={})
                for o in r["outcomes"]]
        reports[name] = ProbeReport.model_construct(hypothesis=params["hypothesis"], name=name, kind=r["kind"],
                                                    check="", outcomes=outs, signals=r["signals"],
                                                    signal_artifacts=r["signal_artifacts"],
                                                    protocol_suspect=r["protocol_suspect"])
    v = render(h, prereg, reports, budget_spent=params.get("budget_spent", False))
    return {"verdict": v.verdict, "type": v.type, "held": held_by_prediction(v.checks)}
