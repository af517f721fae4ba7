"""Reference card of PES smoothness: the reference's energy along the model's curve where the model jumps.

The engines here compute energies, so the card settles the energy measure: six points, spaced as the model's scan,
around the interval where the model's energy jumps (energy_jump). The reference's jump there is its change over
that interval minus the change predicted from the two intervals on each side (a smooth curve leaves ~ h^4 of its
fifth derivative; a step keeps its size). A failure of another measure (a force kink, a flip, the cutoff bracket)
needs reference forces along the curve and is outside this card.
"""

from __future__ import annotations

import numpy as np

from ...reference.cards import Card, ProbeCase, RefConfig

#: points around the jump's interval (its ends are points 2 and 3)
POINTS = 6


class PesSmoothnessCard(Card):
    check = "pes_smoothness"
    quantity = "energy_jump"
    floor_tolerance = "energy_jump"
    engines = "pyscf (dimer curves), gpaw (surface paths)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured along curves; the band is the law's tau"
    table = ((f"reference: energy_jump_ref = |dE_2 - (-dE_0 + 4 dE_1 + 4 dE_3 - dE_4) / 6| over {POINTS} reference "
              "points spaced as the model's scan around its worst energy interval (dE_k: the energy change over "
              "interval k), PBE; band energy_jump_ref +- max(tau_energy_jump, 3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        v, tau = case.values, {**settings.tolerance, **case.tolerance}
        ratios = {k: float(v[k]) / tau[k] for k in tau if isinstance(v.get(k), (int, float))}
        worst = max(ratios, key=ratios.get) if ratios else None
        if worst != "energy_jump":
            return (f"the model's failing measure is {worst}, which needs reference forces along the curve (the "
                    "engines here compute energies); this card settles energy_jump")
        if v.get("s_energy_jump") is None or v.get("spacing") is None:
            return "the model's worst energy interval is not known"
        return None

    def grid(self, case: ProbeCase) -> np.ndarray:
        h, mid = float(case.values["spacing"]), float(case.values["s_energy_jump"])
        return np.round(mid + h * (np.arange(POINTS) - (POINTS - 1) / 2), 6)

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import PesSmoothness

        out = []
        for k, s in enumerate(self.grid(case)):
            atoms = PesSmoothness._place(case.built, float(s))
            atoms.calc = None
            out.append(RefConfig(f"s{k}", "curve point around the model's worst energy interval", atoms,
                                 distance=float(s)))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        d = np.diff([energies[f"s{k}"] for k in range(POINTS)])
        return {"energy_jump": float(abs(d[2] - (-d[0] + 4 * d[1] + 4 * d[3] - d[4]) / 6))}
