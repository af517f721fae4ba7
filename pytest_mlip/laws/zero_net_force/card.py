"""Reference card of the zero net force: the reference's net force along the model's, from a rigid translation.

The engines here compute energies; a rigid translation by +-delta along the model's net force u gives the
reference's net force along u as -(E(+delta) - E(-delta)) / (2 delta) (translation invariance makes it zero for
any correct electronic-structure method, up to its egg-box noise). Within the band the model's net force is its own.
"""

from __future__ import annotations

import numpy as np

from ...reference.cards import WORD, Card, ProbeCase, RefConfig

#: rigid translation (A): large enough that SCF noise (1e-8 Ha) gives < 1e-5 eV/A, small enough to stay linear
DELTA = 0.05

class ZeroNetForceCard(Card):
    check = "zero_net_force"
    quantity = "net_force"
    floor_tolerance = "net_force"
    engines = "pyscf (molecules, clusters), gpaw (slabs, bulk)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on rigid translations; the band is the law's tau"
    table = ((f"reference: net_force_ref = |E(+{DELTA:g} A u) - E(-{DELTA:g} A u)| / {2 * DELTA:g} A, the reference's "
              "net force along the model's net force direction u from the whole structure translated rigidly, PBE; "
              "band net_force_ref +- max(tau_net_force, 3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        return None

    @staticmethod
    def direction(case: ProbeCase) -> np.ndarray:
        u = np.asarray(case.values.get("net_force_vector") or [0.0, 0.0, 1.0], float)
        norm = np.linalg.norm(u)
        return u / norm if norm > 0 else np.array([0.0, 0.0, 1.0])

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        u = self.direction(case)
        out = []
        for name, sign in (("plus", 1.0), ("minus", -1.0)):
            atoms = case.built.atoms.copy()
            atoms.calc = None
            atoms.positions += sign * DELTA * u
            out.append(RefConfig(name, f"the structure translated rigidly {WORD[name]} along the model's net force",
                                 atoms))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        return {"net_force": abs(energies["plus"] - energies["minus"]) / (2 * DELTA)}
