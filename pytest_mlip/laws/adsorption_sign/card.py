"""Reference card of the adsorption sign: the model's relaxed adsorbed configuration, its slab, the free adsorbate.

Relaxing every adsorbate on every slab with the reference is hours of GPAW per model here; the card instead takes
the model's own relaxed adsorbed configuration (its best bound site) and computes three single points: that
configuration, the same slab without the adsorbate, and the isolated adsorbate (gas-phase geometry, its ground
spin state). The reference E_rel on the model's geometry is an upper bound of the reference's relaxed E_rel (a
relaxation only lowers it), so a reference that binds there shows the model's unbound sign is its own.
"""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig


def _gas_spin(atoms) -> int:
    from ase.data import ground_state_magnetic_moments

    from ...reference.engines import unpaired

    if len(atoms) == 1:
        return int(round(ground_state_magnetic_moments[int(atoms.numbers[0])]))
    return unpaired(atoms)


class AdsorptionSignCard(Card):
    check = "adsorption_sign"
    quantity = "E_rel"
    floor_tolerance = "E_rel"
    engines = "gpaw (periodic slabs, LCAO; pyscf computes no periodic cell)"
    spread: dict[str, float] = {}
    spread_source = "one engine only for slabs (no second method measured); the band is the law's tau"
    table = (("reference: E_rel,ref = E(adsorbed) - E(slab) - E(adsorbate) as single points on the model's relaxed "
              "adsorbed configuration, the same slab without the adsorbate and the isolated adsorbate (its ground "
              "spin state), PBE; an upper bound of the relaxed reference value; band E_rel,ref +- max(tau_E_rel, "
              "3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.worst_atoms is None or case.values.get("adsorbate") is None:
            return "the model's relaxed adsorbed configuration is not known"
        if case.values.get("E_rel") is None:
            return ("the model found no intact bound state (its unbound flag): E_rel is not defined, and the "
                    "reference of a detached or broken adsorbate settles nothing")
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from ...structures.adsorbates import ADSORBATES, isolated

        ads = case.values["adsorbate"]
        adsorbed = case.worst_atoms.copy()
        adsorbed.calc = None
        n = len(adsorbed) - len(ADSORBATES[ads])
        slab = adsorbed[:n]
        gas = isolated(ads)
        gas.info["spin"] = _gas_spin(gas)
        site = case.values.get("best_final_site") or case.values.get("best_site") or "?"
        return [RefConfig("adsorbed", f"the model's relaxed {ads} at its {site} site", adsorbed),
                RefConfig("slab", "the same slab without the adsorbate", slab),
                RefConfig("adsorbate", "the isolated adsorbate in its ground spin state", gas)]

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        return {"E_rel": energies["adsorbed"] - energies["slab"] - energies["adsorbate"]}
