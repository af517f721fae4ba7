"""Reference card of the desorption barrier: the DFT energy along the model's own rigid scan."""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig

PAD = 4.0


class DesorptionBarrierCard(Card):
    check = "desorption_barrier"
    quantity = "rise"
    floor_tolerance = "barrier"
    spread: dict[str, float] = {}
    spread_source = "one engine only for slabs (no second method measured); the band is the law's tau"
    engines = "gpaw (periodic slab)"
    table = (("reference: rise_ref = E(dz at the model's maximum) - E(dz_max) on the model's own scan "
              "geometries (frozen slab, rigid molecule), PBE; band rise_ref +- max(tau_barrier, 3 x method "
              "spread)", ""),)

    def spread_key(self, case: ProbeCase) -> str:
        return str(case.values.get("case") or case.probe)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.values.get("violation_basis") == "CI-NEB":
            return ("the worst configuration is the NEB's top image, not a rigid-scan point; this card settles the "
                    "rigid scan (run the contract with neb = false)")
        if case.worst_atoms is None or case.values.get("dz_at_max") is None:
            return "the model's scan has no interior maximum here: no barrier position to compute"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import lifted
        from ...structures.adsorbates import ADSORBATES

        peak = case.worst_atoms.copy()
        peak.calc = None
        n = len(peak) - len(ADSORBATES[case.values["adsorbate"]])
        dz = float(case.values["dz_at_max"])
        far = lifted(peak, n, float(settings.dz_max) - dz)
        for a in (peak, far):
            a.info = {"spin": int(sum(a.numbers)) % 2}
            # the same cell for both, PAD A taller: the lifted molecule stays clear of the box's non-periodic
            # boundary (a real-space code refuses atoms next to it); atom positions are the model's
            a.cell[2, 2] += PAD
        return [RefConfig("peak", "the model's maximum on its rigid scan", peak),
                RefConfig("asymptote", "the scan's asymptote (dz_max)", far)]

    def curve(self, settings, case: ProbeCase, energies: dict[str, float]):
        return ([float(case.values["dz_at_max"]), float(settings.dz_max)],
                [float(energies["peak"] - energies["asymptote"]), 0.0])

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        return {"rise": float(energies["peak"] - energies["asymptote"])}

