"""Mutants for the four foundation contracts: wall, dissociation, symmetry, stress-strain."""

from __future__ import annotations

import numpy as np

from . import AddedTerm, pair_forces_stress, periodic


def _pairs(atoms, cutoff):
    from ase.neighborlist import neighbor_list

    i, j, d, dvec = neighbor_list("ijdD", atoms, cutoff)
    keep = i < j if not periodic(atoms) else np.ones_like(i, dtype=bool)
    half = 1.0 if not periodic(atoms) else 0.5  # periodic lists hold both (i,j) and (j,i)
    return i[keep], j[keep], d[keep], dvec[keep], half


class ShortRangeHole(AddedTerm):
    """Breaks the repulsive wall: a deep Gaussian hole at 0.6 A in every pair (conservative, local)."""

    depth, center, width = 200.0, 0.6, 0.15

    def term(self, atoms):
        i, j, d, dvec, half = _pairs(atoms, 1.5)
        g = -self.depth * np.exp(-(((d - self.center) / self.width) ** 2))
        dg = g * (-2 * (d - self.center) / self.width**2)
        e = half * g.sum()
        pair_f = (half * dg / d)[:, None] * dvec  # dE/d r_j
        f, s = pair_forces_stress(atoms, i, j, pair_f, dvec)
        return e, f, s


class CappedWall(AddedTerm):
    """Breaks the repulsive wall without a fall: below r_cap = 1.8 A (r_eq = 2 A) every pair's energy levels off at
    V(r_cap) ~ -0.88 eV, well below the separated atoms (a smooth cap: V(r) becomes V(smoothmax(r, r_cap)), so the
    forces stay the exact gradient). Two atoms fuse at no cost, yet going inward the energy never falls."""

    r_cap, width, reach = 1.8, 0.05, 3.0

    def term(self, atoms):
        i, j, d, dvec, half = _pairs(atoms, self.reach)
        x = (d - self.r_cap) / self.width
        r_eff = self.r_cap + self.width * np.logaddexp(0.0, x)
        dr_eff = 0.5 * (1.0 + np.tanh(0.5 * x))  # the logistic function, d r_eff / d r
        v, dv = self._morse(r_eff)
        v0, dv0 = self._morse(d)
        e = half * float((v - v0).sum())
        dg = dv * dr_eff - dv0
        pair_f = (half * dg / d)[:, None] * dvec  # dE/d r_j
        f, s = pair_forces_stress(atoms, i, j, pair_f, dvec)
        return e, f, s

    @staticmethod
    def _morse(r):
        """clean_morse's pair energy and its derivative inside its cutoff (epsilon 1 eV, rho0 3, r0 2 A)."""
        q = np.exp(3.0 * (1.0 - r / 2.0))
        return q * (q - 2.0), q * (2.0 - 2.0 * q) * 1.5


class LongRangeGhost(AddedTerm):
    """Breaks the dissociation limit: an untruncated -0.05/r attraction between all atoms of isolated systems."""

    def term(self, atoms):
        n = len(atoms)
        if periodic(atoms) or n < 2:
            return 0.0, np.zeros((n, 3)), None
        diff = atoms.positions[:, None, :] - atoms.positions[None, :, :]
        r = np.linalg.norm(diff, axis=-1)
        iu = np.triu_indices(n, 1)
        e = -0.05 * np.sum(1.0 / r[iu])
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = np.where(r > 0, -0.05 / r**3, 0.0)  # dE/dr_i = sum_j 0.05 (r_i-r_j)/r^3
        f = -(-coef[:, :, None] * diff).sum(axis=1)
        return e, f, None


class OrientationBias(AddedTerm):
    """Breaks rotation invariance: E += k sum (x_i - x_mean)^2 on isolated systems (x only)."""

    k = 0.05

    def term(self, atoms):
        n = len(atoms)
        if periodic(atoms):
            return 0.0, np.zeros((n, 3)), None
        x = atoms.positions[:, 0] - atoms.positions[:, 0].mean()
        f = np.zeros((n, 3))
        f[:, 0] = -2 * self.k * x  # the mean term cancels since sum(x) = 0
        return self.k * float(np.sum(x**2)), f, None


class AbsolutePosition(AddedTerm):
    """Breaks translation invariance: E += k |centroid|^2 (rotation about the origin keeps it)."""

    k = 0.05

    def term(self, atoms):
        n = len(atoms)
        if periodic(atoms):
            return 0.0, np.zeros((n, 3)), None
        c = atoms.positions.mean(axis=0)
        return self.k * float(c @ c), np.tile(-2 * self.k * c / n, (n, 1)), None


class SpeciesOrder(AddedTerm):
    """Breaks permutation invariance through the species sequence alone: E += k sum_i i Z_i (atom i's index times its
    atomic number), blind to shuffles among same-species atoms (a held-out case passed that check)."""

    k = 0.01

    def term(self, atoms):
        n = len(atoms)
        return self.k * float(np.arange(n) @ atoms.numbers), np.zeros((n, 3)), None


class IndexWeights(AddedTerm):
    """Breaks permutation invariance: E += k sum_i i |r_i - r_mean|^2 (weights follow atom order)."""

    k = 0.02

    def term(self, atoms):
        n = len(atoms)
        if periodic(atoms):
            return 0.0, np.zeros((n, 3)), None
        w = self.k * np.arange(n, dtype=float)
        u = atoms.positions - atoms.positions.mean(axis=0)
        e = float(np.sum(w * np.sum(u**2, axis=1)))
        g = 2 * w[:, None] * u  # dE/dr_i ignoring the mean
        g -= (2 * w[:, None] * u).sum(axis=0) / n  # chain rule through the mean
        return e, -g, None


class Chirality(AddedTerm):
    """Breaks inversion: E += k (a . (b x c)) with a, b, c = r1, r2, r3 - r0, a pseudoscalar."""

    k = 0.5

    def term(self, atoms):
        n = len(atoms)
        if periodic(atoms) or n < 4:
            return 0.0, np.zeros((n, 3)), None
        a, b, c = atoms.positions[1:4] - atoms.positions[0]
        e = self.k * float(np.dot(a, np.cross(b, c)))
        g = self.k * np.array([np.cross(b, c), np.cross(c, a), np.cross(a, b)])
        f = np.zeros((n, 3))
        f[1:4] = -g
        f[0] = g.sum(axis=0)
        return e, f, None


class NonExtensive(AddedTerm):
    """Breaks periodic-image consistency: E += 0.01 N^2 eV for periodic cells (no force, no stress)."""

    def term(self, atoms):
        n = len(atoms)
        return (0.01 * n * n if periodic(atoms) else 0.0), np.zeros((n, 3)), None


class StressScaled(AddedTerm):
    """Breaks stress-strain consistency: reports 1.2x the stress (energy and forces untouched)."""

    def term(self, atoms):
        n = len(atoms)
        if not periodic(atoms):
            return 0.0, np.zeros((n, 3)), None
        self.base.calculate(atoms, ["stress"], ["positions"])
        return 0.0, np.zeros((n, 3)), 0.2 * np.asarray(self.base.results["stress"])


#: lower-case alias used in some plugin tests' command lines
short_range_hole = ShortRangeHole


class StressNoise(AddedTerm):
    """Adds random stress (~1e-4 eV/A^3, 0.016 GPa) on every call of a periodic cell; energy and forces repeat
    exactly (a held-out case: a random stress was blamed on the stress-strain and periodic-image laws)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rng = np.random.default_rng()

    def term(self, atoms):
        return 0.0, np.zeros((len(atoms), 3)), self.rng.normal(0, 1e-4, 6) if periodic(atoms) else None


class CallToCallNoise(AddedTerm):
    """Adds a random energy offset (~1e-3 eV/atom) and force noise (~1e-3 eV/A) on every call: dropout left on."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.rng = np.random.default_rng()

    def term(self, atoms):
        n = len(atoms)
        return float(self.rng.normal(0, 1e-3) * n), self.rng.normal(0, 1e-3, (n, 3)), None
