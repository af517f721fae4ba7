"""Reference card of stress-strain consistency: which of the model's stress or energy is wrong.

Like energy-force consistency, the law is the model's own; a reference adds the true stress component where the
model disagrees with itself. The engines here compute energies: the reference stress is
(E(+h) - E(-h)) / (2 h V) under the Voigt strain of the model's worst component (h = max(the contract's step,
0.01), so the reference's SCF noise stays below tau), on a periodic cell: gpaw (LCAO; its energies are consistent
under strain, the basis moving with the atoms). Outside the band the model's stress head is wrong (confirmed);
inside it, the stress is right and its energy is what is inconsistent.
"""

from __future__ import annotations

from ...reference.cards import WORD, Card, ProbeCase, RefConfig

MIN_STRAIN = 0.01

class StressStrainCard(Card):
    check = "stress_strain"
    quantity = "stress_worst"
    floor_tolerance = "stress"
    engines = "gpaw (periodic cells; pyscf computes no periodic cell)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on strained cells; the band is the law's tau"
    table = (("reference: sigma_ref = (E(+h) - E(-h)) / (2 h V) for the Voigt component where the model's stress and "
              f"its energy's strain derivative differ most, h = max(strain_step, {MIN_STRAIN:g}), PBE; band sigma_ref "
              "+- max(tau_stress, 3 x method spread); the model's stress (stress_worst) is compared, its energy "
              "derivative (stress_fd_worst) reported beside it", ""),
             ("the model's stress inside the band while its energy derivative lies outside it: the stress is right "
              "and the model's energy is what is inconsistent (the finding stands, located in the energy)", ""))

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        if case.values.get("component") is None:
            return "the model's worst stress component is not known"
        return None

    @staticmethod
    def step(settings) -> float:
        return max(float(settings.strain_step), MIN_STRAIN)

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import strained

        k, h = int(case.values["component"]), self.step(settings)
        out = []
        for name, sign in (("plus", 1.0), ("minus", -1.0)):
            atoms = strained(case.built.atoms, k, sign * h)
            atoms.calc = None
            out.append(RefConfig(name, f"strained {WORD[name]} along the model's worst Voigt component", atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        h = self.step(settings)
        sigma = (energies["plus"] - energies["minus"]) / (2 * h) / case.built.atoms.get_volume()
        return {"stress_worst": sigma, "stress_fd_worst": sigma}
