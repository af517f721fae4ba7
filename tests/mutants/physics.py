"""Mutants for the six physics contracts: each plants one defect in a clean analytic model.

- ``hidden_pair_force``  energy-force consistency: forces carry a pair term the energy lacks
- ``constant_force``     zero net force: every atom gets the same extra force
- ``curl_force``         force-Jacobian symmetry: coordination-weighted central forces (a curl)
- ``step_pair``          PES smoothness: a 0.05 eV energy step when a pair crosses 3.3 A
- ``compression_collapse`` compression wall: a volume term that dives at strong compression
- ``long_tail``          dimer mid-range tail: an attractive Gaussian pair well at 4.5 A

The base is the clean Morse model of ``tests.mutants`` (``step_pair`` and
``compression_collapse``: the registry's Lennard-Jones model, much faster for
long scans and dense cells). Clean models to compare with: ``clean_morse`` and
``lennard-jones``.
"""

from __future__ import annotations

import numpy as np
from ase.calculators.calculator import Calculator, all_changes

from . import AddedTerm, pair_forces_stress, periodic


def lennard_jones():
    """The registry's ``lennard-jones`` model (sigma 2 A, epsilon 0.1 eV, smooth cutoff 5-6 A)."""
    from ase.calculators.lj import LennardJones

    calc = LennardJones(sigma=2.0, epsilon=0.1, rc=6.0, ro=5.0, smooth=True)
    calc.mlip_metadata = {"cutoff": 6.0, "conservative": True, "dtype": "float64"}
    return calc


def pair_term(atoms, cutoff: float, phi):
    """Energy, forces and stress of a pair potential ``phi(r) -> (e(r), de/dr)`` within ``cutoff``."""
    from ase.neighborlist import neighbor_list

    i, j, d, dvec = neighbor_list("ijdD", atoms, cutoff)
    if periodic(atoms):
        weight = 0.5  # the full list holds (i, j) and (j, i)
    else:
        keep = i < j
        i, j, d, dvec, weight = i[keep], j[keep], d[keep], dvec[keep], 1.0
    e, de = phi(d)
    pair_f = (weight * de / np.where(d > 0, d, 1.0))[:, None] * dvec  # dE/dr_j of each pair
    forces, stress = pair_forces_stress(atoms, i, j, pair_f, dvec)
    return weight * float(np.sum(e)), forces, stress


class OnLennardJones(AddedTerm):
    """An added term on the registry's ``lennard-jones`` model: fast for dense cells and long scans."""

    def __init__(self, **kwargs):
        super().__init__(base=lennard_jones(), **kwargs)
        self.mlip_metadata["cutoff"] = 6.0


class HiddenPairForce(AddedTerm):
    """Breaks energy-force consistency: forces include -grad of 2 exp(-(r/2)^2) eV, the energy does not.

    The extra force field is a gradient (symmetric Jacobian, zero net force,
    rotation-equivariant), so only F = -dE/dx of the *reported* energy fails.
    """

    conservative = False
    a, w = 2.0, 2.0

    def term(self, atoms):
        def phi(r):
            g = self.a * np.exp(-((r / self.w) ** 2))
            return g, g * (-2 * r / self.w**2)

        _, f, _ = pair_term(atoms, 6.0, phi)
        return 0.0, f, None  # the stress stays the strain derivative of the reported energy


class ConstantForce(AddedTerm):
    """Breaks zero net force: every atom gets the same 0.005 eV/A push (energy unchanged).

    A pure force-head defect: it also breaks F = -dE/dx (the energy does not
    see the push) and rotation equivariance (the push has a fixed direction);
    its Jacobian is zero, so force-Jacobian symmetry holds.
    """

    conservative = False
    push = 0.005 * np.array([1.0, 2.0, 2.0]) / 3.0

    def term(self, atoms):
        return 0.0, np.tile(self.push, (len(atoms), 1)), None


class CurlForce(AddedTerm):
    """Breaks force-Jacobian symmetry: central pair forces weighted by the pair's coordination.

    F_i += sum_j c (n_i + n_j) g(r_ij) (r_i - r_j)/r_ij with n_i = sum_k w(r_ik):
    action equals reaction (zero net force), local, and equivariant under
    rotations, translations, inversion and permutations, but no energy has
    it as its gradient once three atoms interact (dF_i/dx_k != dF_k/dx_i),
    so it breaks F = -dE/dx too: no force field can break the one without
    the other.
    """

    conservative = False
    c, w_len, g_len, cutoff = 10.0, 2.0, 2.0, 6.0

    def term(self, atoms):
        from ase.neighborlist import neighbor_list

        n = len(atoms)
        i, j, d, dvec = neighbor_list("ijdD", atoms, self.cutoff)  # full list: (i, j) and (j, i)
        coord = np.bincount(i, weights=np.exp(-((d / self.w_len) ** 2)), minlength=n)
        mag = self.c * (coord[i] + coord[j]) * np.exp(-((d / self.g_len) ** 2))
        f = np.zeros((n, 3))
        np.add.at(f, i, -(mag / d)[:, None] * dvec)  # dvec = r_j - r_i: pushes i away from j
        return 0.0, f, None


class StepPair(OnLennardJones):
    """Breaks PES smoothness: +0.05 eV for every pair closer than 3.3 A, a hard step (no force), on LJ."""

    height, r_step = 0.05, 3.3

    def term(self, atoms):
        def phi(r):
            return np.where(r < self.r_step, self.height, 0.0), np.zeros_like(r)

        e, f, s = pair_term(atoms, self.r_step + 0.5, phi)
        return e, f, None if s is None else np.zeros(6)


class CompressionCollapse(OnLennardJones):
    """Breaks the compression wall: E += N f(v), f = -A / v^8 per atom (v = V/N), periodic cells only.

    Built on the registry's Lennard-Jones model (fast at high density). Under
    compression (linear scale s) the term grows as s^-24, faster than the LJ
    wall (s^-12): it is ~1e-3 eV/atom at equilibrium and outweighs the wall
    below about 0.6 x the equilibrium size. Its stress f'(v) on the diagonal
    is analytic (stress-strain consistency holds); it has no forces.
    """

    amplitude, power = 3.1e4, 8  # eV A^24 per atom

    def term(self, atoms):
        n = len(atoms)
        if not periodic(atoms):
            return 0.0, np.zeros((n, 3)), None
        v = atoms.get_volume() / n
        g = -self.amplitude / v**self.power
        dg = -self.power * g / v
        return n * g, np.zeros((n, 3)), np.array([dg, dg, dg, 0.0, 0.0, 0.0])


class CompressionPlateau(Calculator):
    """Breaks the compression wall without a fall: a periodic cell whose nearest neighbours are closer than
    d_cap = sigma = 2 A is computed as the registry's Lennard-Jones model at its size scaled up to d_cap, so under
    uniform compression E/atom levels off (~ -0.1 to -0.2 eV/atom) below the nearly free atoms at 3 x; going
    inward it never falls. Isolated systems and cells with every neighbour beyond d_cap are plain Lennard-Jones."""

    implemented_properties = ["energy", "forces", "stress"]
    d_cap = 2.0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.base = lennard_jones()
        self.mlip_metadata = {"cutoff": 6.0, "dtype": "float64", "conservative": True}

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        from ase.neighborlist import neighbor_list

        super().calculate(atoms, properties, system_changes)
        work = self.atoms.copy()
        if periodic(work):
            d = neighbor_list("d", work, self.d_cap)
            if d.size:
                work.set_cell(work.cell.array * (self.d_cap / d.min()), scale_atoms=True)
        self.base.calculate(work, ["energy", "forces"] + (["stress"] if periodic(work) else []), all_changes)
        self.results = {k: v for k, v in self.base.results.items() if k in ("energy", "forces", "stress")}


class LongTail(AddedTerm):
    """Breaks the mid-range tail: E += -0.3 exp(-((r - 4.5)/0.5)^2) eV per pair (conservative)."""

    depth, center, width = 0.3, 4.5, 0.5

    def term(self, atoms):
        def phi(r):
            g = -self.depth * np.exp(-(((r - self.center) / self.width) ** 2))
            return g, g * (-2 * (r - self.center) / self.width**2)

        return pair_term(atoms, self.center + 5 * self.width, phi)


def hidden_pair_force():
    return HiddenPairForce()


def constant_force():
    return ConstantForce()


def curl_force():
    return CurlForce()


def step_pair():
    return StepPair()


def compression_collapse():
    return CompressionCollapse()


def long_tail():
    return LongTail()
