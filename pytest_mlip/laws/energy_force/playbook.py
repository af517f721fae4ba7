"""Energy-force consistency's detective playbook: neighbouring structures, half the finite-difference step, a
crystal."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook


class EnergyForcePlaybook(StructuresPlaybook):
    check = "energy_force"
    bounds = {"step": (1e-3, 1e-2)}
    importance = {"": 0.9}  # NVE energy drift, relaxations that stop at the wrong place
    mechanisms = {"": ("the forces are not the gradient of the energy: a direct-force head trained apart from the "
                       "energy, or a term (a cutoff, a charge) missing from one of the two")}
    conditions = ("step",)
    decision = (
        ("scope fails, control passes", "the inconsistency belongs to the structure class that failed"),
        ("half the step still fails", "not a truncation error of the difference: the forces are not -dE/dx"),
    )

    def vary(self, settings):
        return ({"step": max(1e-3, settings.step / 2)},
                "the central-difference step halved: a real inconsistency survives, a truncation error shrinks 4x")
