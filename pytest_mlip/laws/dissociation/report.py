"""Dissociation (size consistency) in an escalation report: the error against kT, and what it reaches."""

from __future__ import annotations

from ...agent.lawreport import KT_300, LawReport


class DissociationReport(LawReport):
    phrases = {
        "over_kt": " (energy_error_over_kT300 ",
        "reaches": "): binding, adsorption and reaction energies referenced to separated fragments carry this error.",
        "boundary": "quantities that never compare a system with its separated fragments (relaxed geometries, "
                    "vibrational frequencies, MD of one connected system)",
    }

    def impact(self, w, r, probes):
        t = r.target
        lines = []
        for p in probes:
            e_id = w.probe_ids(t, p).get("violations", {}).get("energy")
            if not e_id:
                continue
            er = w.ratio("energy_error_over_kT300", e_id, KT_300,
                         "the size-consistency error relative to kT at room temperature", p, r.name)
            lines.append(w.where(r.name, t.model, p) + [w.value(e_id)]
                         + ([w.law_phrase("over_kt"), w.value(er, label=False)] if er else [w.P("open")])
                         + [w.law_phrase("reaches")])
        return lines, [[w.law_phrase("boundary")]]
