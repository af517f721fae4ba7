"""report.json's ``reference`` entry of a probe, read back from the store (values as the artifacts hold them)."""

from __future__ import annotations


def reference_ids(pid: dict) -> list[str]:
    """Artifact ids of a probe's reference (for the report's completeness check and snapshot)."""
    ref = pid.get("reference") or {}
    out = [ref.get("decision")] + list((ref.get("observables") or {}).values())
    out += list((ref.get("points") or {}).values()) + list((ref.get("curve") or {}).values())
    return [i for i in out if i]


def reference_entry(pid: dict, arts: dict) -> dict | None:
    """``{engine, method, observables, decision, points}`` of a probe, or None when it was not settled."""
    from ..reporting.claims import claim

    ref = pid.get("reference")
    if not ref:
        return None
    dec = arts[ref["decision"]]
    return {
        "engine": ref["engine"], "method": ref.get("method", ""),
        "observables": {k: claim(arts[a].value, a) for k, a in (ref.get("observables") or {}).items()},
        "decision": {"text": dec.value, "artifact": dec.id, "quantity": dec.params.get("quantity"),
                     "reason": dec.params.get("reason", ""), "band": dec.params.get("band")},
        "points": {k: {"value": arts[a].value, "artifact": a} for k, a in (ref.get("points") or {}).items()},
        "curve": {k: {"values": arts[a].value, "artifact": a} for k, a in (ref.get("curve") or {}).items()},
    }


def reference_cited(probe: dict) -> list[str]:
    ref = probe.get("reference")
    if not ref:
        return []
    return ([ref["decision"]["artifact"]] + [c["artifact"] for c in ref["observables"].values()]
            + [c["artifact"] for c in ref["points"].values()] + [c["artifact"] for c in ref.get("curve", {}).values()])


def reference_rows(verdicts: list[dict]) -> list[dict]:
    """One row per settled probe for the report's reference section (target verdicts, report order)."""
    out = []
    for v in verdicts:
        for p in v["probes"]:
            ref = p.get("reference")
            if not ref:
                continue
            q = ref["decision"]["quantity"]
            model_value = p["observables"].get(q) or p["violations"].get(q)
            out.append({"contract": v["contract"], "model": v["model"], "probe": p["probe"], "quantity": q,
                        "model_value": model_value, "reference": ref["observables"].get(q), "ref": ref})
    return out
