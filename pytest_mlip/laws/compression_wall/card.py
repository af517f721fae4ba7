"""Reference card of the compression wall: the model's compressed cells (not run here).

Crystals compressed to 0.4 x their equilibrium size put neighbours about 1 A apart: PAW spheres overlap and an
LCAO basis is over-complete there, so GPAW here is out of its domain; a plane-wave code with hard, small-core
setups is needed. The card writes six cells from the model's worst compression to its equilibrium as inputs; the
reference's energy per atom over them decides like the law (the largest inward fall).
"""

from __future__ import annotations

import numpy as np

from ...reference.cards import Card, ProbeCase, RefConfig

POINTS = 6


class CompressionWallCard(Card):
    check = "compression_wall"
    quantity = "drop"
    floor_tolerance = "drop"
    engines = "none: not run here"
    not_run_here = ("cells compressed to 0.4 x equilibrium overlap PAW spheres and make an LCAO basis over-complete: "
                    "a plane-wave code with hard setups is needed, out of the engines and the budget here")
    table = ((f"reference (external): drop_ref = the largest inward fall of the reference energy per atom over "
              f"{POINTS} cells from the model's worst compression to its equilibrium, PBE with hard setups; band "
              "drop_ref +- max(tau_drop, 3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        if case.values.get("s_worst") is None or case.values.get("eq_over_reference") is None:
            return "the model's equilibrium and worst compression are not known"
        return None

    def scales(self, case: ProbeCase) -> np.ndarray:
        return np.round(np.linspace(float(case.values["s_worst"]), 1.0, POINTS), 4)

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import scaled

        eq = scaled(case.built.atoms, float(case.values["eq_over_reference"]))
        out = []
        for k, s in enumerate(self.scales(case)):
            atoms = scaled(eq, float(s))
            atoms.calc = None
            out.append(RefConfig(f"s{k}", "a cell between the model's worst compression and its equilibrium", atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        from ..repulsive_wall.check import wall_violation

        configs = self.configurations(settings, case)
        e = np.array([energies[c.name] / len(c.atoms) for c in configs])
        drop, _ = wall_violation(self.scales(case), e, len(e) - 1)
        return {"drop": drop}
