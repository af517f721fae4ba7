"""Planted defects for the detective agent: each is a *class* of failure, not one configuration.

The contract mutants (``foundation``) prove that one contract bites; these
prove that the detective generalises from evidence: the defect lives on a
class of configurations that the built-in contracts only sample, so a correct
hypothesis must predict it on neighbours never evaluated, and a wrong one
(too broad) must be rejected by its own pre-registration.
"""

from __future__ import annotations

import numpy as np

from . import AddedTerm, pair_forces_stress, periodic

#: d-block elements (groups 3-12), by atomic number
TRANSITION_METALS = frozenset(list(range(21, 31)) + list(range(39, 49)) + [57] + list(range(72, 81)))


class PairHole(AddedTerm):
    """A deep Gaussian hole at 0.6 A in the pair energy of selected element pairs (conservative, local).

    Subclasses choose the pairs with ``bites(z_i, z_j)``; every other pair is the clean Morse model.
    """

    depth, center, width, reach = 200.0, 0.6, 0.15, 1.5

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        from ase.data import chemical_symbols

        # every element (declared, so the registry need not probe 94 dimers to find out)
        self.mlip_metadata["elements"] = tuple(chemical_symbols[1:95])

    def bites(self, zi: int, zj: int) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _pairs(self, atoms):
        """(i, j, d, d_vec) of every ordered pair closer than ``reach`` (both orders, as ase's neighbor_list)."""
        if periodic(atoms):
            from ase.neighborlist import neighbor_list

            return neighbor_list("ijdD", atoms, self.reach)
        pos = atoms.positions
        dvec = pos[None, :, :] - pos[:, None, :]  # r_j - r_i
        d = np.linalg.norm(dvec, axis=-1)
        i, j = np.nonzero((d < self.reach) & ~np.eye(len(pos), dtype=bool))
        return i, j, d[i, j], dvec[i, j]

    def term(self, atoms):
        if len(atoms) < 2:
            return 0.0, np.zeros((len(atoms), 3)), None
        i, j, d, dvec = self._pairs(atoms)
        z = atoms.numbers
        keep = np.array([self.bites(z[a], z[b]) for a, b in zip(i, j)], dtype=bool) if len(i) else np.zeros(0, bool)
        i, j, d, dvec = i[keep], j[keep], d[keep], dvec[keep]
        half = 0.5  # the neighbour list holds both (i, j) and (j, i)
        g = -self.depth * np.exp(-(((d - self.center) / self.width) ** 2))
        dg = g * (-2 * (d - self.center) / self.width**2)
        e = half * float(g.sum())
        pair_f = (half * dg / d)[:, None] * dvec  # dE/dr_j of each listed pair
        f, s = pair_forces_stress(atoms, i, j, pair_f, dvec)
        return e, f, s


class TransitionMetalWall(PairHole):
    """Collapses at short range for every transition-metal pair; main-group and mixed pairs keep the wall."""

    def bites(self, zi, zj):
        return zi in TRANSITION_METALS and zj in TRANSITION_METALS


class MildTransitionMetalWall(TransitionMetalWall):
    """The same class of collapse, five times shallower: a committee member that violates the law too, but
    more than a decade less than :class:`TransitionMetalWall`."""

    depth = 40.0


class NickelOnlyWall(PairHole):
    """Collapses at short range for Ni-Ni alone: a hypothesis about all transition metals must be rejected."""

    def bites(self, zi, zj):
        return zi == 28 and zj == 28


#: the same defect under another spec (its own evaluator and cache: a test that counts evaluations uses it)
transition_metal_wall = TransitionMetalWall
#: ... and under a third spec: a committee member with exactly the target's defect
same_defect_wall = TransitionMetalWall


class ShearForce(AddedTerm):
    """Breaks rotation invariance in the forces alone: F_x += k (z - z_mean) on isolated systems, energy untouched.

    A force-head defect (the clean Morse energy is rotation-invariant): the rotated structure's forces are not the
    rotated forces, the forces are not -dE/dx of the reported energy, and their Jacobian is not symmetric
    (dF_x/dz = k, dF_z/dx = 0). Zero net force (sum of z - z_mean is zero) and translation-invariant. The
    detective's symmetry playbook must name it a force defect; the symmetry law's own mutant,
    ``foundation.OrientationBias`` (an orientation-dependent energy whose forces are its gradient), an energy defect.
    """

    conservative = False
    k = 0.2  # eV/A^2: forces off by ~0.2 eV/A a few tenths of an A from the centroid, 4x energy-force's tau

    def term(self, atoms):
        n = len(atoms)
        f = np.zeros((n, 3))
        if periodic(atoms):
            return 0.0, f, None
        f[:, 0] = self.k * (atoms.positions[:, 2] - atoms.positions[:, 2].mean())
        return 0.0, f, None
