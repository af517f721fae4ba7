"""The dissociation limit's detective playbook: neighbouring fragment pairs, and the same pairs farther apart."""

from __future__ import annotations

from ...agent.playbook import MECHANISM_UNITS, SCOPE_UNITS, Playbook
from ...agent.protocols import spec_label
from .report import DissociationReport


class DissociationPlaybook(Playbook):
    escalation_report = DissociationReport
    check = "dissociation"
    default_evidence = True
    unit_fields = ("pairs",)
    bounds = {"gap": (6.0, 40.0)}
    importance = {"": 0.8}  # binding and reaction energies
    mechanisms = {"": ("an interaction leaks beyond the cutoff (a global readout, a charge or composition term, or "
                       "graph edges longer than the stated cutoff)")}
    conditions = ("gap",)
    reference_outcomes = ("the reference energies add up: E(A+B) - E(A) - E(B) within tau {energy}",
                          "the reference energies of the separated fragments do not add up within tau {energy} (charge "
                          "transfer or a different spin state between fragments in the reference)")

    def probe_id(self, field, unit, table=None) -> str:
        return f"{spec_label(unit[0])}+{spec_label(unit[1])}"

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        pairs = [u for _, u in failing]
        existing = list(table.get("pairs", []))
        common = {"gap": settings.gap, "tolerance": dict(settings.tolerance)}
        preds = []
        if not narrowed:
            grown = []
            for a, b in pairs:
                grown.append([[x, b] for x in self._grow_structure(a)] + [[a, y] for y in self._grow_structure(b)])
            scope = self._filter_units(desk, "dissociation", "pairs", self._round_robin(grown), existing, claim,
                                       SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "fragment pairs of the failing class never evaluated: energies of far-apart fragments fail to add "
                    "on at least one; at least half the committee adds them",
                    {"name": f"{base}-scope", "check": "dissociation", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: neighbouring fragment pairs", "pairs": scope, **common}))
            grown = [[[x, b] for x in self._grow_structure(a)] for a, b in (u for _, u in passing)]
            control = self._neighbour_control(
                desk, h, base, "dissociation", "pairs", self._round_robin(grown), existing, clean, common,
                "neighbours of the fragment pairs that added up: they add up on the target too")
            if control:
                preds.append(control)
        preds.append(self._pred(
            f"{base}-farther", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the gap, further beyond the cutoff): a leak that does not decay with distance is a "
            "global term, not a long tail",
            {"name": f"{base}-farther", "check": "dissociation", "hard": True, "basis": "exact",
             "description": f"mechanism of {h.id}: the failing pairs, farther apart",
             "pairs": pairs[:MECHANISM_UNITS], "gap": min(40.0, settings.gap + 8.0),
             "tolerance": dict(settings.tolerance)}, extra=self._float64(desk)))
        return preds

    def reference_configs(self, check, settings, probe, series, points):
        from .check import combine

        a, b = probe.params["a"], probe.params["b"]
        ab, b_placed = combine(a, b, max(settings.gap, 8.0))
        return [(role, atoms, None, []) for role, atoms in (("A+B", ab), ("A alone", a), ("B alone", b_placed))]
