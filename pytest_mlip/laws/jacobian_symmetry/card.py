"""Reference card of force-Jacobian symmetry: what a reference can and cannot add (not run here).

A Hessian element from reference energies, (E(++) - E(+-) - E(-+) + E(--)) / 4h^2, is symmetric by construction
(mixed differences of one function), so it restates the law rather than testing it. What a reference adds is the
true curvature at the model's worst pair: the element d2E/dx_p dx_q that the model's J_pq and J_qp should both
equal, showing which of the two is wrong. The card writes the four displaced configurations at the worst pair
(and the undisplaced one); the engines here compute energies only and do not decide it.
"""

from __future__ import annotations

import re

from ...reference.cards import Card, ProbeCase, RefConfig, Undecidable

#: displacement of each coordinate (A)
STEP = 0.01


class JacobianSymmetryCard(Card):
    check = "jacobian_symmetry"
    quantity = "asymmetry"
    floor_tolerance = "asymmetry"
    engines = "none: not run here"
    not_run_here = ("a Hessian from reference energies is symmetric by construction, so it restates the law; the "
                    "curvature d2E/dx_p dx_q at the model's worst pair (what J_pq and J_qp should both equal) is "
                    "written as inputs, but the model records only their antisymmetric part, so no decision is made "
                    "here")
    table = ((f"reference (external): H_pq = (E(++) - E(+-) - E(-+) + E(--)) / (4 x {STEP:g}^2) at the model's worst "
              "pair (p, q); the model's J_pq and J_qp against -H_pq show which is wrong", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        pair = case.values.get("worst_pair")
        if not pair or len(pair) != 2 or not all(re.fullmatch(r"\d+[xyz]", str(x)) for x in pair):
            return "the model's worst pair of coordinates is not known"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        (i, a), (j, b) = [(int(x[:-1]), "xyz".index(x[-1])) for x in case.values["worst_pair"]]
        base = case.built.atoms.copy()
        base.calc = None
        out = [RefConfig("structure", "the undisplaced structure", base)]
        for name, si, sj in (("pp", 1, 1), ("pm", 1, -1), ("mp", -1, 1), ("mm", -1, -1)):
            atoms = base.copy()
            atoms.positions[i, a] += si * STEP
            atoms.positions[j, b] += sj * STEP
            ways = ["forward" if x > 0 else "backward" for x in (si, sj)]
            out.append(RefConfig(name, f"the worst pair's coordinates displaced {ways[0]} and {ways[1]}", atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        raise Undecidable(self.not_run_here)

    @staticmethod
    def hessian_element(energies: dict[str, float]) -> float:
        """H_pq from the four displaced energies (for the external code's results)."""
        return float((energies["pp"] - energies["pm"] - energies["mp"] + energies["mm"]) / (4 * STEP * STEP))

