"""The dimer tail's detective playbook: neighbouring elements, another tail distance, the heteronuclear pair."""

from __future__ import annotations

from ...agent.chemistry import same_class_neighbours
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook
from ...agent.validator import law_hardness


class DimerTailPlaybook(Playbook):
    check = "dimer_tail"
    unit_fields = ("elements",)
    bounds = {"distance": (3.0, 6.0)}
    importance = {"": 0.6}  # mid-range binding: condensation, adsorption at distance, long MD
    mechanisms = {"": ("a mid-range tail: the learned pair energy still binds (or repels) strongly at a distance "
                       "where the reference has decayed, from sparse training data between the bond and the cutoff")}
    conditions = ("distance",)
    disagreement = "band"  # a fraction of the well depth: a decade above the committee is out of reach
    decision = (
        ("scope fails, control passes", "the tail belongs to the element class that failed"),
        ("the tail persists at another distance", "a tail, not a single point: it spans the mid range"),
        ("the reference tail stays below tau at the worst distance", "confirmed: the model's tail is spurious"),
    )
    reference_outcomes = ("the reference tail at the stated distance is within tau {tail} of zero",
                          "the reference has a tail larger than tau {tail} there too")

    def probe_id(self, field, unit, table=None) -> str:
        distance = (table or {}).get("distance", 4.5)
        return f"{unit}2@{float(distance):g}A"

    def reference_configs(self, check, settings, probe, series, points):
        """The tail fraction needs the dimer at the stated distance, near its equilibrium, and the isolated atom."""
        from ase import Atoms

        el = probe.params["element"]
        out = []
        for role, d in (("dimer at the tail distance", settings.distance), ("dimer near r_eq", probe.params["rcov"])):
            atoms = Atoms([el, el], positions=[[0, 0, 0], [0, 0, d]])
            atoms.center(vacuum=10.0)
            out.append((role, atoms, float(d), []))
        atom = Atoms([el], positions=[[0, 0, 0]])
        atom.center(vacuum=10.0)
        return out + [("isolated atom (E_inf = 2 E_atom)", atom, None, [])]

    def _table(self, base, suffix, h, what, elements, settings, **extra):
        return {"name": f"{base}-{suffix}", "check": self.check, "hard": law_hardness(self.check), "basis": settings.basis,
                "description": f"{what} of {h.id}", "elements": elements, "distance": settings.distance,
                "tolerance": dict(settings.tolerance), **extra}

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        els = [u for _, u in failing]
        existing = list(table.get("elements", []))
        preds = []
        if not narrowed:
            grown = self._round_robin([same_class_neighbours(e) for e in els])
            scope = self._filter_units(desk, self.check, "elements", grown, existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "neighbouring elements of the failing class, never evaluated: the target's tail stands out on at "
                    "least one; at least half the committee's does not",
                    self._table(base, "scope", h, "scope: neighbouring elements", scope, settings)))
            ctrl_src = self._round_robin([same_class_neighbours(u) for _, u in passing])
            ctrl = self._filter_units(desk, self.check, "elements", ctrl_src, existing + scope, clean, CONTROL_UNITS)
            if ctrl:
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    "neighbours of the elements whose tail agreed with the committee: the target's agrees too",
                    self._table(base, "control", h, "control: neighbours of the elements that passed", ctrl,
                                settings)))
        other = round(min(6.0, settings.distance + 0.5), 2)
        if other > _smallest_cutoff(desk) - 0.25:  # outside some model's reach: nearer instead
            other = round(max(3.0, settings.distance - 0.5), 2)
        side = "farther" if other > settings.distance else "nearer"
        preds.append(self._pred(
            f"{base}-{side}", "mechanism" if not narrowed else "scope", "fail", "any",
            f"one factor varied (the tail distance, half an angstrom {side}, inside every model's cutoff): a spurious "
            "tail spans the mid range, a single bad point does not",
            self._table(base, side, h, "mechanism: the failing elements at another distance", els[:4],
                        settings, distance=other), extra=self._float64(desk)))
        return preds


def _smallest_cutoff(desk) -> float:
    """The smallest cutoff (A) among the target and committee (inf when none is stated)."""
    from ...evaluation import evaluator_for

    cuts = []
    for spec in [desk.target] + list(desk.committee):
        try:
            c = evaluator_for(spec).model.info.cutoff
        except Exception:
            continue
        if c:
            cuts.append(float(c))
    return min(cuts) if cuts else float("inf")
