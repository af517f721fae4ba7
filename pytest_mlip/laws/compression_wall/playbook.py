"""The compression wall's detective playbook: neighbouring elements in the same lattice, a finer inward scan,
the other close-packed lattice."""

from __future__ import annotations

from ...agent.chemistry import reference_structure, same_class_neighbours
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook

#: each lattice's alternative of similar packing (what a phase transition under pressure could visit)
_OTHER = {"fcc": "hcp", "hcp": "fcc", "bcc": "fcc", "sc": "bcc", "diamond": "sc"}


class CompressionWallPlaybook(Playbook):
    check = "compression_wall"
    unit_fields = ("crystals",)
    bounds = {"scale_min": (0.3, 0.8), "inward_points": (4, 60)}
    importance = {"": 0.8}  # high-pressure phases, shock and radiation-damage MD
    mechanisms = {"": ("no training data far inside the equilibrium volume: the learned many-body energy of the "
                       "compressed crystal turns over and falls, so the crystal collapses under pressure")}
    conditions = ("scale_min", "inward_points")
    decision = (
        ("scope fails, control passes", "the collapse belongs to the elements of this class in this lattice"),
        ("the finer inward scan still fails", "not an undersampled curve: the energy falls under compression"),
        ("the other lattice fails too", "the collapse is the element's, whatever its packing"),
    )

    def probe_id(self, field, unit, table=None) -> str:
        return f"{unit['element']}-{unit['structure']}"

    def signature(self, field_, unit) -> tuple:
        return (unit["structure"],) + super().signature(field_, unit)

    def _table(self, base, suffix, h, what, crystals, settings, **extra):
        return {"name": f"{base}-{suffix}", "check": self.check, "hard": True, "basis": "exact",
                "description": f"{what} of {h.id}", "crystals": crystals, "scale_min": settings.scale_min,
                "inward_points": settings.inward_points, "outward_points": settings.outward_points,
                "tolerance": dict(settings.tolerance), **extra}

    @staticmethod
    def _grow(crystals):
        lists = []
        for c in crystals:
            same = [n for n in same_class_neighbours(c["element"]) if reference_structure(n)[0] == c["structure"]]
            lists.append([{"element": n, "structure": c["structure"]} for n in same])
        return lists

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        crystals = [u for _, u in failing]
        existing = list(table.get("crystals", []))
        preds = []
        if not narrowed:
            scope = self._filter_units(desk, self.check, "crystals", self._round_robin(self._grow(crystals)),
                                       existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "neighbouring elements of the failing class in the same lattice, never evaluated: the target's "
                    "energy falls under compression on at least one; at least half the committee keeps a wall",
                    self._table(base, "scope", h, "scope: neighbouring elements, same lattice", scope, settings)))
            ctrl = self._filter_units(desk, self.check, "crystals",
                                      self._round_robin(self._grow([u for _, u in passing])), existing + scope, clean,
                                      CONTROL_UNITS)
            if ctrl:
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    "neighbours of the crystals that kept a wall: the target keeps it on them too",
                    self._table(base, "control", h, "control: neighbours of the crystals that passed", ctrl,
                                settings)))
        preds.append(self._pred(
            f"{base}-finer", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (twice the inward points): a fall that survives a finer scan is the model's",
            self._table(base, "finer", h, "mechanism: the failing crystals, finer inward scan", crystals[:2],
                        settings, inward_points=min(60, 2 * settings.inward_points)), extra=self._float64(desk)))
        other = [{"element": c["element"], "structure": _OTHER[c["structure"]]} for c in crystals]
        other = [c for c in other if c not in existing]
        if other:
            preds.append(self._pred(
                f"{base}-lattice", "impact", "any", "any",
                "the application setting: the same element in the lattice a transition under pressure would visit: "
                "does the collapse carry over?",
                self._table(base, "lattice", h, "impact: another lattice of the failing elements", other[:2],
                            settings)))
        return preds
