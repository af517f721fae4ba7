"""Born stability's detective playbook: neighbouring crystals, a tighter relaxation, another strain set."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook


class BornStabilityPlaybook(StructuresPlaybook):
    check = "born_stability"
    bounds = {"fmax": (0.001, 0.02), "ion_fmax": (0.001, 0.02)}
    importance = {"": 0.8}  # a crystal that shears away in MD, wrong phase stability
    mechanisms = {"": ("the model's energy surface of a known-stable crystal has a negative curvature along a shear "
                       "or a volume strain: the learned elastic response is wrong near equilibrium")}
    conditions = ("fmax", "ion_fmax")
    impact = ("a larger, rattled cubic cell of the same element (the crystal MD would start from): does the "
              "instability carry over?")
    decision = (
        ("scope fails, control passes", "the instability belongs to the crystal class that failed"),
        ("the tighter relaxation still fails", "not an unconverged cell: the elastic tensor is not positive definite"),
    )

    def vary(self, settings):
        return ({"fmax": max(0.001, settings.fmax / 2), "ion_fmax": max(0.001, settings.ion_fmax / 2)},
                "the cell and ionic relaxations tightened 2x: a real instability survives, a residual stress does not")
