"""Planted narrow defects in models that offer values only: no autograd, not declared conservative.

These are the models the adversary meets in CHGNet, DIEP or any ASE calculator
a user brings: energies and forces through ``calculate`` and nothing else the
search may differentiate (``mlip_torch_outputs`` is hidden and the metadata
does not claim forces = -dE/dx), so every gradient the adversary uses is a
finite difference it pays for in model evaluations. Each is the clean torch
Morse of :mod:`tests.mutants.narrow` plus one narrow defect that the sampled
check misses (tests/test_adversary_blind.py asserts that it passes):

* :class:`BlindAngularHole`: the repulsive wall's angular hole (1.965 A, one
  bond direction 72 deg from z); 4 search variables, all of which matter;
* :class:`WallDip`: an isotropic dip inside the steep wall (1.72 A, between
  the 0.05 A grid's points, 5 mA wide); the bond direction does not matter,
  the coordinate scan follows the clean slope past it and the line scan of
  pairs finds it;
* :class:`BlindHeightBump`: a bump in the O-Cu energy at one adsorbate
  height over the surface (1.375 A, between the 0.1 A grid's points);
* :class:`TailBump`: a spurious interaction 7.3 A out, past the declared
  5 A cutoff (the dissociation limit's domain starts at cutoff + 1 A, the
  sampled check looks 12 A apart);
* :class:`NarrowTailBump`: the tail bump 0.5 mA wide and between Ni atoms
  only (the contract's Ni + Ni pair alone): narrow in Z, where the tail bump
  (4 mA, every pair) is not (about 3% of Z violates it);
* :class:`WallBump`: a narrow spurious barrier on the wall (1.975 A, 2 mA
  wide, any bond direction): a finding a kept protocol file reproduces;
* :class:`CompressionDip`: the compression wall: a pair dip 5 mA wide at
  1.9 A on Lennard-Jones, crossed by every compressed crystal at one scale;
* :class:`BlindClean`: the clean Morse, values only (must stay clean).
"""

from __future__ import annotations

import numpy as np

from . import AddedTerm
from .narrow import CUTOFF, AngularHole, HeightBump, TorchMorse, _pairs, _torch, lorentzian


class _ValuesOnly:
    """Hide the autograd path and the conservative claim (a plain ASE calculator)."""

    mlip_torch_outputs = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mlip_metadata = {"cutoff": CUTOFF, "conservative": None, "dtype": "float64"}


class BlindClean(_ValuesOnly, TorchMorse):
    """The clean Morse reference, values only."""


class BlindAngularHole(_ValuesOnly, AngularHole):
    """The angular hole of the repulsive wall, values only."""


class BlindHeightBump(_ValuesOnly, HeightBump):
    """The surface wall's height bump, values only."""


class _PairLorentzian(_ValuesOnly, TorchMorse):
    """E += A L(r - r_c, w) per pair, out to r_c + 1 A (A < 0: a dip; beyond the 5 A cutoff: a spurious tail); only
    pairs of ``species`` where that is set."""

    amplitude, r_c, w = 0.0, 2.0, 0.01
    species: tuple[int, ...] | None = None  # only pairs of these atomic numbers (None: every pair)

    def defect(self, numbers, positions, cell, pbc, i, j, vec):
        if self.r_c + 1.0 > CUTOFF:
            i, j, vec = _pairs(numbers, positions, cell, pbc, cutoff=self.r_c + 1.0)
        if self.species is not None and len(i):
            keep = np.isin(np.asarray(numbers)[i.numpy()], self.species) & \
                np.isin(np.asarray(numbers)[j.numpy()], self.species)
            i, j, vec = i[keep], j[keep], vec[_torch().as_tensor(keep)]
        if len(i) == 0:
            return positions.sum() * 0.0
        r = _torch().linalg.norm(vec, dim=1)
        return 0.5 * self.amplitude * lorentzian(r - self.r_c, self.w).sum()


class WallBump(_PairLorentzian):
    """A 0.3 eV barrier 2 mA wide at 1.975 A, between the grid's 1.95 and 2.0 A."""

    amplitude, r_c, w = 0.3, 1.975, 0.002


class WallDip(_PairLorentzian):
    """An isotropic 0.15 eV dip 5 mA wide at 1.72 A, deep in the wall, where the clean slope is -2.4 eV/A."""

    amplitude, r_c, w = -0.15, 1.72, 0.005


class TailBump(_PairLorentzian):
    """A 2 meV interaction 4 mA wide at 7.3 A, past the declared cutoff (5 A)."""

    amplitude, r_c, w = 0.002, 7.3, 0.004


class NarrowTailBump(TailBump):
    """The tail bump 0.5 mA wide, between Ni atoms only (in the dissociation limit's pairs: Ni + Ni alone)."""

    w, species = 0.0005, (28,)



class CompressionDip(AddedTerm):
    """The compression wall: a 0.15 eV pair dip 5 mA wide at 1.9 A on the registry's Lennard-Jones (whose
    crystals pass the wall; a Morse wall is finite and does not), values only: every compressed crystal crosses
    the dip at one scale (its nearest neighbours at 1.9 A), between the scan's points (0.055 x the equilibrium
    size apart)."""

    conservative = None
    amplitude, r_c, w = -0.15, 1.9, 0.005

    def __init__(self, **kwargs):
        from .physics import lennard_jones

        super().__init__(base=lennard_jones(), **kwargs)
        self.mlip_metadata = {"cutoff": 6.0, "conservative": None, "dtype": "float64"}

    def term(self, atoms):
        from .physics import pair_term

        def phi(r):
            x = (r - self.r_c) / self.w
            lor = 1.0 / (1.0 + x * x)
            return self.amplitude * lor, self.amplitude * (-2.0 * x / self.w) * lor * lor

        return pair_term(atoms, self.r_c + 1.0, phi)
