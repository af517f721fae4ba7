"""ASE's analytic potentials: clean references that obey every exact law."""

from __future__ import annotations

from .info import ModelInfo
from .entry import ModelEntry, package_version

EMT_ELEMENTS = ("H", "C", "N", "O", "Al", "Ni", "Cu", "Pd", "Ag", "Pt", "Au")


def _emt(weights):
    from ase.calculators.emt import EMT

    return EMT()


def _lj(weights):
    from ase.calculators.lj import LennardJones

    # A smooth cutoff (smooth=True) keeps energy and forces continuous at rc.
    return LennardJones(sigma=2.0, epsilon=0.1, rc=6.0, ro=5.0, smooth=True)


def entries() -> list[ModelEntry]:
    version = package_version("ase")
    return [
        ModelEntry(
            info=ModelInfo(
                name="emt",
                family="analytic",
                description="ASE effective-medium theory (analytic reference)",
                elements=EMT_ELEMENTS,
                cutoff=None,
                dtype="float64",
                implemented_properties=("energy", "forces", "stress"),
                conservative=True,
                training_data="fitted analytic form",
                version=version,
            ),
            load=_emt,
        ),
        ModelEntry(
            info=ModelInfo(
                name="lennard-jones",
                family="analytic",
                description="ASE Lennard-Jones, sigma 2 A, epsilon 0.1 eV, smooth cutoff 5-6 A (one parameter set for every element)",
                elements=None,
                cutoff=6.0,
                dtype="float64",
                implemented_properties=("energy", "forces", "stress"),
                conservative=True,
                training_data="none (analytic)",
                version=version,
            ),
            load=_lj,
            aliases=("lj",),
        ),
    ]
