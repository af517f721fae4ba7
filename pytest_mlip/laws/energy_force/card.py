"""Reference card of energy-force consistency: which of the model's energy or force is wrong.

The law is a consistency of the model's own outputs, so a reference cannot make the violation go away; what it
adds is the true force component where the model disagrees with itself. The engines here compute energies: the
reference force is -(E(x + h) - E(x - h)) / 2h at the model's worst atom and axis. The card compares the model's
returned force F_model with it: outside the band, the model's force head is wrong (confirmed); inside it, the
force is right and the model's energy surface is what is inconsistent (the law's violation stands, located in
the energy).
"""

from __future__ import annotations

from ...reference.cards import WORD, Card, ProbeCase, RefConfig

#: finite-difference step of the reference (A): SCF noise (1e-8 Ha) gives ~1e-5 eV/A, truncation ~h^2 F'''/6
STEP = 0.01

class EnergyForceCard(Card):
    check = "energy_force"
    quantity = "F_model"
    floor_tolerance = "forces"
    engines = "pyscf (molecules, clusters), gpaw (slabs, bulk)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on force components; the band is the law's tau"
    table = ((f"reference: F_ref = -(E(x + {STEP:g} A) - E(x - {STEP:g} A)) / {2 * STEP:g} A at the model's worst atom "
              "and axis, PBE; band F_ref +- max(tau_forces, 3 x method spread); the model's F_model is compared "
              "(its force head), its energy derivative F_fd is reported beside it", ""),
             ("the model's F_model inside the band while F_fd lies outside it: the force is right and the model's "
              "energy is what is inconsistent (the finding stands, located in the energy)", ""))

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        if case.values.get("worst_atom") is None or case.values.get("worst_axis") not in ("x", "y", "z"):
            return "the model's worst force component (atom, axis) is not known"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        i, axis = int(case.values["worst_atom"]), "xyz".index(case.values["worst_axis"])
        out = []
        for name, sign in (("plus", 1.0), ("minus", -1.0)):
            atoms = case.built.atoms.copy()
            atoms.calc = None
            atoms.positions[i, axis] += sign * STEP
            out.append(RefConfig(name, f"the model's worst atom displaced {WORD[name]} along its worst axis", atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        f_ref = -(energies["plus"] - energies["minus"]) / (2 * STEP)
        # both the model's returned force and its energy derivative should equal the reference's force
        return {"F_model": f_ref, "F_fd": f_ref}
