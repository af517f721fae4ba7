"""Reference card of the repulsive wall: does the reference energy also fall going inward?"""

from __future__ import annotations

import numpy as np

from ...reference.cards import Card, ProbeCase, RefConfig

POINTS = 6


class RepulsiveWallCard(Card):
    check = "repulsive_wall"
    quantity = "drop"
    floor_tolerance = "drop"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on compressed dimers; the band is the law's tau"
    engines = "pyscf (dimers), gpaw (dimers, surfaces)"
    table = ((f"reference: drop_ref = the largest inward fall of the reference energy over {POINTS} points from the "
              "model's innermost distance to its r_eq, PBE; band drop_ref +- max(tau_drop, 3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        if case.values.get("r_eq") is None:
            return "the model's scan of this probe (its r_eq) is not known"
        return None

    def _grid(self, case: ProbeCase) -> np.ndarray:
        lo = float(case.values.get("r_inner") or 0.3)
        hi = float(case.values.get("r_eq"))
        return np.round(np.linspace(lo, hi, POINTS), 3)

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import RepulsiveWall

        out = []
        for k, d in enumerate(self._grid(case)):
            atoms = RepulsiveWall._place(case.built, float(d))
            atoms.calc = None
            if case.built.params.get("kind") == "dimer":
                atoms = atoms.copy()
                atoms.pbc, atoms.cell = False, [0, 0, 0]
            out.append(RefConfig(f"r{k}", "scan point", atoms, distance=float(d)))
        return out

    def curve(self, settings, case: ProbeCase, energies: dict[str, float]):
        r = self._grid(case)
        e = [energies[f"r{k}"] for k in range(len(r))]
        curve_e = case.values.get("curve_E") or []
        # anchored at r_eq to the model's own curve there (the reference is not computed at the curve's far end)
        offset = float(case.values["E_eq"]) - float(curve_e[-1]) if curve_e and "E_eq" in case.values else 0.0
        return [float(x) for x in r], [float(x - e[-1] + offset) for x in e]

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        from .check import wall_violation

        r = self._grid(case)
        e = np.array([energies[f"r{k}"] for k in range(len(r))])
        drop, _ = wall_violation(r, e, len(r) - 1)
        return {"drop": drop}
