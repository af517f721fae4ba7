"""Stress-strain consistency in an escalation report: the stress error in GPa, and what it reaches."""

from __future__ import annotations

from ...agent.lawreport import EV_A3_TO_GPA, LawReport


class StressReport(LawReport):
    phrases = {
        "open": " (",
        "reaches": "): cell relaxations and NPT dynamics go to the wrong volume.",
        "boundary": "fixed-cell calculations (NVT MD, relaxations at fixed lattice)",
    }

    def impact(self, w, r, probes):
        t = r.target
        lines = []
        for p in probes:
            s_id = w.probe_ids(t, p).get("violations", {}).get("stress")
            if not s_id:
                continue
            gp = w.ratio("stress_error_gpa", s_id, 1 / EV_A3_TO_GPA, "the stress error in GPa", p, r.name, "GPa")
            lines.append(w.where(r.name, t.model, p) + [w.value(s_id)]
                         + ([w.law_phrase("open"), w.value(gp)] if gp else [w.law_phrase("open")])
                         + [w.law_phrase("reaches")])
        return lines, [[w.law_phrase("boundary")]]
