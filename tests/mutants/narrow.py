"""Planted defects in narrow regions of Z, for the adversary's tests and benchmark.

Each model is a clean Morse pair potential (true smooth cutoff 5 A, float64)
written in torch, plus one defect term that breaks a law only in a small
region of the contract's admissible inputs, away from where the sampled
probes look. They expose ``mlip_torch_outputs`` (autograd, second derivatives
included) exactly as the adversary's SevenNet backend does for a shipped
model; :class:`PlainNarrowHole` hides it, to exercise the finite-difference
and force-gradient fallbacks on a plain ASE calculator.

Defect profiles are Lorentzians, 1 / (1 + (x / w)^2): narrow where they
exceed the tolerance, with smooth tails (as the spurious features of fitted
models have). :class:`CompactHole` is the control with Gaussian profiles,
whose tails vanish within a few widths.

* :class:`AngularHole`: the repulsive wall: a hole in the pair energy at one
  distance (1.965 A, between the scan's grid points, just inside r_eq = 2 A)
  and one bond direction (72 deg from z, where the sampled scan never
  points); :class:`DeepAngularHole` puts it at 1.875 A;
* :class:`HeightBump`: the surface wall: a bump in the O-Cu pair energy at
  one height (1.375 A), between the surface scan's 0.1 A grid points;
* :class:`OrientationWell`: rotation invariance: an energy well only when the
  first bond points along one direction of the lab frame.
"""

from __future__ import annotations

import numpy as np
from ase.calculators.calculator import Calculator, all_changes

CUTOFF = 5.0


def _torch():
    import torch

    return torch


def _pairs(numbers, positions, cell, pbc, cutoff=CUTOFF):
    """(i, j, vectors r_j - r_i) of the full neighbour list, vectors differentiable in positions and cell."""
    from ase import Atoms
    from ase.neighborlist import neighbor_list

    torch = _torch()
    atoms = Atoms(numbers=numbers, positions=positions.detach().numpy(), cell=cell.detach().numpy(), pbc=pbc)
    i, j, shifts = neighbor_list("ijS", atoms, cutoff)
    i, j = torch.as_tensor(i), torch.as_tensor(j)
    vec = positions[j] - positions[i]
    if np.any(pbc):
        vec = vec + torch.as_tensor(shifts, dtype=positions.dtype) @ cell
    return i, j, vec


def lorentzian(x, w):
    return 1.0 / (1.0 + (x / w) ** 2)


class TorchMorse(Calculator):
    """Clean Morse pair potential in torch: D = 1 eV, a = 1.5 / A, r0 = 2 A, cosine switch 4-5 A.

    Subclasses add ``defect(numbers, positions, cell, pbc, i, j, vec) -> energy``.
    """

    implemented_properties = ["energy", "forces", "stress"]
    D, a, r0, r_switch = 1.0, 1.5, 2.0, 4.0

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mlip_metadata = {"cutoff": CUTOFF, "conservative": True, "dtype": "float64"}

    def energy(self, numbers, positions, cell, pbc):
        torch = _torch()
        i, j, vec = _pairs(numbers, positions, cell, pbc)
        if len(i) == 0:
            e = positions.sum() * 0.0
        else:
            r = torch.linalg.norm(vec, dim=1)
            morse = self.D * ((1 - torch.exp(-self.a * (r - self.r0))) ** 2 - 1)
            t = torch.clamp((r - self.r_switch) / (CUTOFF - self.r_switch), 0.0, 1.0)
            e = 0.5 * (morse * 0.5 * (1 + torch.cos(np.pi * t))).sum()
        return e + self.defect(numbers, positions, cell, pbc, i, j, vec)

    def defect(self, numbers, positions, cell, pbc, i, j, vec):
        return positions.sum() * 0.0

    def mlip_torch_outputs(self, numbers, positions, cell, pbc, want_stress=False):
        """Energy, forces (create_graph) and stress, differentiable in positions and cell."""
        torch = _torch()
        periodic = bool(np.all(pbc))
        strain = torch.zeros((3, 3), dtype=torch.float64, requires_grad=True)
        if periodic and want_stress:
            m = torch.eye(3, dtype=torch.float64) + 0.5 * (strain + strain.T)
            pos, lat = positions @ m, cell @ m
        else:
            pos, lat = positions, cell
        e = self.energy(numbers, pos, lat, pbc)
        if periodic and want_stress:
            gx, gs = torch.autograd.grad(e, [positions, strain], create_graph=True)
            volume = torch.abs(torch.det(cell))
            s = gs / volume
            stress = torch.stack([s[0, 0], s[1, 1], s[2, 2], s[1, 2], s[0, 2], s[0, 1]])
            return {"energy": e, "forces": -gx, "stress": stress}
        (gx,) = torch.autograd.grad(e, positions, create_graph=True)
        return {"energy": e, "forces": -gx}

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        torch = _torch()
        a = self.atoms
        pos = torch.tensor(a.positions, dtype=torch.float64, requires_grad=True)
        cell = torch.tensor(a.cell.array, dtype=torch.float64)
        periodic = bool(np.all(a.pbc)) and a.cell.rank == 3
        out = TorchMorse.mlip_torch_outputs(self, a.numbers, pos, cell, tuple(a.pbc), want_stress=periodic)
        self.results = {"energy": float(out["energy"].detach()), "forces": out["forces"].detach().numpy().copy()}
        if periodic:
            self.results["stress"] = out["stress"].detach().numpy().copy()


class AngularHole(TorchMorse):
    """Repulsive-wall defect: E += -A L(r - r_h, w_r) / (1 + kappa (1 - (b.n)^2)) for every pair,
    b the bond direction: a hole 1.23 A out along one axis n, 72 deg from z."""

    depth, r_h, w_r, kappa = 0.3, 1.965, 0.02, 2000.0
    axis = (np.sin(np.radians(72)) * np.cos(np.radians(40)), np.sin(np.radians(72)) * np.sin(np.radians(40)),
            np.cos(np.radians(72)))
    profile = staticmethod(lorentzian)

    def defect(self, numbers, positions, cell, pbc, i, j, vec):
        torch = _torch()
        if len(i) == 0:
            return positions.sum() * 0.0
        r = torch.linalg.norm(vec, dim=1)
        c = (vec @ torch.tensor(self.axis, dtype=torch.float64)) / r
        ang = self.angular(1 - c * c)
        return -0.5 * self.depth * (self.profile(r - self.r_h, self.w_r) * ang).sum()

    def angular(self, s2):
        return 1.0 / (1.0 + self.kappa * s2)


class DeepAngularHole(AngularHole):
    """The angular hole deeper inside the wall (1.875 A), where the clean wall is steep: gradient ascent
    aligns the bond direction but the wall's slope carries r_in past the hole (reported as a limit)."""

    r_h = 1.875


class CompactHole(AngularHole):
    """Control: the same hole with Gaussian profiles in distance and angle (tails vanish within a few widths)."""

    def profile(self, x, w):
        return _torch().exp(-((x / w) ** 2))

    def angular(self, s2):
        return _torch().exp(-self.kappa * s2)


class PlainNarrowHole(AngularHole):
    """The angular hole as a plain ASE calculator: no ``mlip_torch_outputs`` (finite-difference/force paths)."""

    mlip_torch_outputs = None


class HeightBump(TorchMorse):
    """Surface-wall defect: E += B L(r - r_b, w) for O-Cu pairs: a bump at one height over a top site."""

    height, r_b, w = 0.3, 1.375, 0.008
    species = (8, 29)

    def defect(self, numbers, positions, cell, pbc, i, j, vec):
        torch = _torch()
        if len(i) == 0:
            return positions.sum() * 0.0
        zi, zj = torch.as_tensor(numbers)[i], torch.as_tensor(numbers)[j]
        a, b = self.species
        mask = ((zi == a) & (zj == b)) | ((zi == b) & (zj == a))
        r = torch.linalg.norm(vec, dim=1)
        return 0.5 * self.height * (lorentzian(r - self.r_b, self.w) * mask.to(r.dtype)).sum()


class OrientationWell(TorchMorse):
    """Rotation defect: E += -A / (1 + kappa (1 - (b.n)^2)), b the direction from atom 0 to atom 1 of an
    isolated system: a well only when that bond points along one lab axis n."""

    depth, kappa = 0.05, 200000.0
    axis = tuple(np.array([0.3, -0.8, 0.52]) / np.linalg.norm([0.3, -0.8, 0.52]))

    def defect(self, numbers, positions, cell, pbc, i, j, vec):
        torch = _torch()
        if np.any(pbc) or positions.shape[0] < 2:
            return positions.sum() * 0.0
        b = positions[1] - positions[0]
        c = (b @ torch.tensor(self.axis, dtype=torch.float64)) / torch.linalg.norm(b)
        return -self.depth / (1.0 + self.kappa * (1 - c * c))


class NanGradient(TorchMorse):
    """Clean values through ASE, but its autograd outputs carry NaN (a model whose gradient is NaN)."""

    def mlip_torch_outputs(self, numbers, positions, cell, pbc, want_stress=False):
        torch = _torch()
        out = super().mlip_torch_outputs(numbers, positions, cell, pbc, want_stress)
        total = positions.sum()
        poison = 0.0 * torch.sqrt(total - total.detach())  # value 0, derivative 0 * inf = NaN
        out = dict(out)
        out["energy"] = out["energy"] + poison
        out["forces"] = out["forces"] + poison
        return out


def clean():
    """The clean torch Morse reference (every exact law holds; true cutoff 5 A)."""
    return TorchMorse()
