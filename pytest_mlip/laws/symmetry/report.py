"""Symmetry in an escalation report: the errors against a relaxation threshold and kT, and where they matter."""

from __future__ import annotations

from ...agent.lawreport import KT_300, RELAX_FMAX, LawReport


class SymmetryReport(LawReport):
    phrases = {
        "over_fmax": " (force_error_over_fmax ",
        "over_kt": " (energy_error_over_kT300 ",
        "close": ")",
        "matters": "The error matters where the symmetry is the property: mirror-image (enantiomer) energies, phonons "
                   "and elastic constants from finite differences, and anything compared across orientations or "
                   "positions of the same structure.",
        "relax": "relaxations to a force threshold above the violation of ",
        "relax_rest": " and MD, where the error is below the relaxation threshold (",
    }

    def impact(self, w, r, probes):
        t = r.target
        lines, boundary = [], []
        for p in probes:
            viol = w.probe_ids(t, p).get("violations", {})
            f_id, e_id = viol.get("forces"), viol.get("energy")
            fr = w.ratio("force_error_over_fmax", f_id, RELAX_FMAX,
                         f"the symmetry force error relative to a {RELAX_FMAX:g} eV/A relaxation threshold", p, r.name)
            er = w.ratio("energy_error_over_kT300", e_id, KT_300,
                         "the symmetry energy error per atom relative to kT at room temperature", p, r.name)
            parts = []
            if f_id:
                parts.append([w.value(f_id)] + ([w.law_phrase("over_fmax"), w.value(fr, label=False),
                                                 w.law_phrase("close")] if fr else []))
            if e_id:
                parts.append([w.value(e_id)] + ([w.law_phrase("over_kt"), w.value(er, label=False),
                                                 w.law_phrase("close")] if er else []))
            if not parts:
                continue
            items = w.where(r.name, t.model, p)
            for i, part in enumerate(parts):
                items += ([w.P("semicolon")] if i else []) + part
            lines.append(items + [w.P("period")])
            if fr and float(w.ledger.value(fr)) < 1:
                boundary.append([w.law_phrase("relax"), w.N("probe", p), w.law_phrase("relax_rest"), w.value(fr),
                                 w.law_phrase("close")])
        lines.append([w.law_phrase("matters")])
        return lines, boundary
