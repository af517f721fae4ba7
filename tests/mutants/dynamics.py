"""Mutant for the NVE law: a small rotational (non-conservative) force on a clean model.

- ``stirring``  NVE energy conservation: pair couples that all turn the same way about z heat an NVE run
- ``collapse``  NVE stability: a conservative pair attraction that pulls atoms onto each other (energy is
  conserved, the run is not physical)
- ``collapse_to_nan``  NVE stability: the same, and a NaN energy once a pair is nearer than 1.5 A

The base is ASE's EMT (the registry's ``emt``), a clean model whose NVE runs conserve energy on the
law's cluster and metal cells; the clean models to compare with are ``emt`` and ``lennard-jones``.
"""

from __future__ import annotations

import numpy as np

from . import AddedTerm


def emt():
    from ase.calculators.emt import EMT

    calc = EMT()
    calc.mlip_metadata = {"conservative": True, "dtype": "float64"}
    return calc


class Stirring(AddedTerm):
    """Breaks NVE energy conservation: F_i += k sum_j w(r_ij) z x (r_j - r_i), w = exp(-(r/2)^2), k 0.05 eV/A^2.

    Each pair gets a couple (equal and opposite forces, so no net force) that turns it the same way about
    the z axis: a vortex field with a non-zero curl, so no energy has it as its gradient and the work it does
    along a trajectory does not cancel. The energy is EMT's, untouched. Forces of ~0.05-0.1 eV/A: about
    the size of a direct-force head's error, small next to the thermal forces of the runs.
    """

    conservative = False
    k, width, cutoff = 0.05, 2.0, 6.0

    def __init__(self, **kwargs):
        super().__init__(base=emt(), **kwargs)
        self.mlip_metadata.pop("cutoff", None)  # EMT declares none

    def term(self, atoms):
        from ase.neighborlist import neighbor_list

        n = len(atoms)
        i, j, d, dvec = neighbor_list("ijdD", atoms, self.cutoff)  # full list: (i, j) and (j, i); dvec = r_j - r_i
        w = self.k * np.exp(-((d / self.width) ** 2))
        f = np.zeros((n, 3))
        np.add.at(f, i, w[:, None] * np.cross([0.0, 0.0, 1.0], dvec))
        return 0.0, f, None


class Collapse(AddedTerm):
    """Breaks NVE stability, conservatively: E += -A sum_pairs exp(-(r/2)^2), A 40 eV, which outweighs EMT's
    repulsion, so atoms fall onto each other within tens of femtoseconds."""

    depth, width, cutoff = 40.0, 2.0, 8.0

    def __init__(self, **kwargs):
        super().__init__(base=emt(), **kwargs)
        self.mlip_metadata.pop("cutoff", None)

    def term(self, atoms):
        from .physics import pair_term

        def phi(r):
            g = -self.depth * np.exp(-((r / self.width) ** 2))
            return g, g * (-2 * r / self.width**2)

        return pair_term(atoms, self.cutoff, phi)


class CollapseToNaN(Collapse):
    """The collapse, and a NaN energy once two atoms are nearer than 1.5 A (a model that breaks down mid-run)."""

    def term(self, atoms):
        e, f, s = super().term(atoms)
        n = len(atoms)
        d = atoms.get_all_distances(mic=bool(atoms.pbc.all())) + 10.0 * np.eye(n)
        return (float("nan") if d.min() < 1.5 else e), f, s


def stirring():
    return Stirring()


def collapse():
    return Collapse()


def collapse_to_nan():
    return CollapseToNaN()
