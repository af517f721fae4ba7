"""Reference card of the symmetry laws: the failing structure and its transformed image, computed by the reference.

The reference obeys the law up to its own numerical noise (integration grids, an egg-box effect), which is
exactly what the card measures: the reference's energy change per atom between a structure and its image, under
the same transformation that broke the model. Within the band the violation is the model's own.
"""

from __future__ import annotations

import numpy as np

from ...reference.cards import Card, ProbeCase, RefConfig


class SymmetryCard(Card):
    check = "symmetry"
    quantity = "energy"
    floor_tolerance = "energy"
    engines = "pyscf (molecules, clusters), gpaw (periodic cells)"
    spread: dict[str, float] = {}
    spread_source = "no second method measured on transformed images; the band is the law's tau"
    table = (("reference: energy_ref = |E(image) - (N_image / N) E(structure)| / N_image, the reference's own "
              "symmetry violation on the model's structure and the image that broke the model (its worst one, else "
              "the contract's first seeded draw), PBE; band energy_ref +- max(tau_energy, 3 x method spread)", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        if case.built is None:
            return "the probe is not in the contract's settings"
        return None

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        from .check import transformed

        ref = case.built.atoms.copy()
        image = case.worst_atoms
        same = image is not None and len(image) == len(ref) and np.allclose(image.positions, ref.positions)
        if image is None or same:  # the model's worst was the structure itself: the contract's first seeded draw
            image, _ = transformed(ref, settings.transform, np.random.default_rng(settings.seed), settings.supercell)
        image = image.copy()
        ref.calc = image.calc = None
        return [RefConfig("structure", "the probe structure", ref),
                RefConfig("image", f"its {settings.transform} image (the model's worst)", image)]

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        configs = self.configurations(settings, case)
        n, m = len(configs[0].atoms), len(configs[1].atoms)
        return {"energy": abs(energies["image"] - (m / n) * energies["structure"]) / m}
