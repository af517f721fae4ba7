"""Reference card of Born stability: the strained cells of the model's relaxed crystal (not run here).

Elastic constants need the relaxed cell, then each of the six Voigt strains at several magnitudes with the ions
relaxed in every strained cell: dozens of converged periodic calculations with stresses, hours per crystal with
GPAW here (and its LCAO stresses are not accurate enough). The card writes the model's relaxed cell and the cells
at +- the contract's largest strain for each Voigt component as inputs for an external plane-wave code; the
external reference's C (its smallest eigenvalue lambda_min) decides: a reference with lambda_min > 0 where the
model's is negative makes the instability the model's.
"""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig, Undecidable


class BornStabilityCard(Card):
    check = "born_stability"
    quantity = "born"
    floor_tolerance = "born"
    engines = "none: not run here"
    not_run_here = ("elastic constants need dozens of strained, ion-relaxed periodic cells with converged stresses: "
                    "hours per crystal with GPAW here, and LCAO stresses are not accurate enough")
    table = (("reference (external): lambda_min of the reference's elastic tensor from the written strained cells "
              "(ions relaxed); the model's instability is its own when the reference's lambda_min > 0", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.worst_atoms is None:
            return "the model's relaxed cell is not known"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from ..stress_strain.check import strained

        cell = case.worst_atoms.copy()
        cell.calc = None
        h = max(abs(float(x)) for x in settings.strains)
        out = [RefConfig("relaxed", "the model's relaxed cell", cell)]
        for k in range(6):
            for name, sign in (("p", 1.0), ("m", -1.0)):
                atoms = strained(cell, k, sign * h)
                atoms.calc = None
                way = "stretched" if sign > 0 else "compressed"
                out.append(RefConfig(f"e{k + 1}{name}", f"{way} by a Voigt strain of the contract's largest magnitude "
                                                        "(relax the ions)", atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        raise Undecidable(self.not_run_here)
