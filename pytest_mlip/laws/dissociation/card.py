"""Reference card of the dissociation limit: A+B at the model's gap and the isolated fragments, with spin states.

Each fragment keeps its own spin (2S: the parity of its electrons, or its ``info['spin']``); the pair is their
sum (non-interacting fragments, high-spin coupled, which at this distance is degenerate with any other coupling).
Charges are neutral. Within the band the reference's energies add up and the model's leak is its own.
"""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig
from ...reference.engines import unpaired


class DissociationCard(Card):
    check = "dissociation"
    quantity = "energy"
    floor_tolerance = "energy"
    engines = "pyscf (molecular fragments), gpaw (isolated, in a vacuum box)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on separated fragments; the band is the law's tau"
    table = (("reference: energy_ref = |E(A+B) - E(A) - E(B)| at the model's gap (max(gap, cutoff + 2 A)), fragments "
              "neutral, each in its own spin state and A+B in their sum, PBE; band energy_ref +- max(tau_energy, 3 x "
              "method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import combine

        a, b = case.built.params["a"].copy(), case.built.params["b"].copy()
        gap = float(case.values.get("gap") or settings.gap)
        ab, b_placed = combine(a, b, gap)
        sa, sb = unpaired(a), unpaired(b)
        a.info, b_placed.info, ab.info = {"spin": sa}, {"spin": sb}, {"spin": sa + sb}
        for x in (a, b_placed, ab):
            x.calc = None
        return [RefConfig("pair", "A+B at the model's gap, the fragments' spins summed", ab),
                RefConfig("A", "fragment A alone, its own spin", a),
                RefConfig("B", "fragment B alone at the same position, its own spin", b_placed)]

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        return {"energy": abs(energies["pair"] - energies["A"] - energies["B"])}
