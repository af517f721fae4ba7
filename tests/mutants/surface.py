"""Mutants for the surface and elasticity contracts: Born stability, desorption barrier, adsorption sign.

Each wraps ASE's EMT (the clean reference for fcc metals with H, C, N, O) and
adds one conservative term with consistent forces (and stress, for periodic
cells), so it breaks only the law its contract checks.
"""

from __future__ import annotations

import numpy as np

from . import AddedTerm, periodic

EMT_ELEMENTS = ("H", "C", "N", "O", "Al", "Ni", "Cu", "Pd", "Ag", "Pt", "Au")
NONMETALS = ("H", "C", "N", "O", "F", "S", "Cl")


def clean_emt():
    """Clean reference: ASE EMT (fcc metals with H, C, N, O)."""
    from ase.calculators.emt import EMT

    calc = EMT()
    calc.mlip_metadata = {"elements": EMT_ELEMENTS, "conservative": True, "dtype": "float64"}
    return calc


class _EMTTerm(AddedTerm):
    def __init__(self, **kwargs):
        from ase.calculators.emt import EMT

        super().__init__(base=EMT(), **kwargs)
        self.mlip_metadata = {"elements": EMT_ELEMENTS, "conservative": True, "dtype": "float64"}


def _switch(d, r1, r2):
    """1 below r1, 0 above r2, cosine in between; and its derivative."""
    x = np.clip((d - r1) / (r2 - r1), 0.0, 1.0)
    s = 0.5 * (1 + np.cos(np.pi * x))
    ds = np.where((d > r1) & (d < r2), -0.5 * np.pi / (r2 - r1) * np.sin(np.pi * x), 0.0)
    return s, ds


def _virial_stress(atoms, pair_f, dvec):
    """Stress of pair forces ``pair_f`` = dE/d(dvec) (one entry per vector r_j - r_i + shift)."""
    t = np.einsum("ka,kb->ab", pair_f, dvec) / atoms.get_volume()
    t = 0.5 * (t + t.T)
    return np.array([t[0, 0], t[1, 1], t[2, 2], t[1, 2], t[0, 2], t[0, 1]])


class AngularShear(_EMTTerm):
    """Breaks Born stability: E -= k sum_i sum_{j<k} fc fc P(cos theta_jik), P zero at every fcc angle.

    P(c) = (c - 1/2)^2 c^2 (c + 1/2)^2 (c + 1)^2 vanishes with zero slope at the
    fcc nearest-neighbour angles (60, 90, 120, 180 degrees), so the ideal
    crystal, its lattice constant and its bulk modulus are EMT's, while every
    shear that bends the bonds lowers the energy: C44 and C' go negative.
    Energy, forces and stress come from one torch autograd pass.
    """

    k, r1, r2 = 4.0, 3.0, 3.3

    def term(self, atoms):
        import torch
        from ase.neighborlist import neighbor_list

        n = len(atoms)
        i, j, S = neighbor_list("ijS", atoms, self.r2)
        if len(i) < 2:
            return 0.0, np.zeros((n, 3)), (np.zeros(6) if periodic(atoms) else None)
        # all neighbour pairs (a, b), a < b, sharing a centre
        order = np.argsort(i, kind="stable")
        i, j, S = i[order], j[order], S[order]
        a_idx, b_idx = [], []
        starts = np.searchsorted(i, np.arange(n))
        ends = np.searchsorted(i, np.arange(n), side="right")
        for c in range(n):
            idx = np.arange(starts[c], ends[c])
            if len(idx) > 1:
                aa, bb = np.triu_indices(len(idx), 1)
                a_idx.append(idx[aa])
                b_idx.append(idx[bb])
        if not a_idx:
            return 0.0, np.zeros((n, 3)), (np.zeros(6) if periodic(atoms) else None)
        a_idx, b_idx = np.concatenate(a_idx), np.concatenate(b_idx)
        dt = torch.float64
        pos = torch.tensor(atoms.positions, dtype=dt, requires_grad=True)
        eps = torch.zeros((3, 3), dtype=dt, requires_grad=True)
        deform = torch.eye(3, dtype=dt) + 0.5 * (eps + eps.T)
        cell = torch.tensor(atoms.cell.array, dtype=dt) @ deform
        p = pos @ deform
        d = p[j] - p[i] + torch.tensor(S, dtype=dt) @ cell
        r = torch.linalg.norm(d, dim=1)
        x = torch.clamp((r - self.r1) / (self.r2 - self.r1), 0.0, 1.0)
        fc = 0.5 * (1 + torch.cos(np.pi * x))
        ua, ub = d[a_idx] / r[a_idx, None], d[b_idx] / r[b_idx, None]
        c = (ua * ub).sum(dim=1)
        P = (c - 0.5) ** 2 * c**2 * (c + 0.5) ** 2 * (c + 1) ** 2
        energy = -self.k * (fc[a_idx] * fc[b_idx] * P).sum()
        g_pos, g_eps = torch.autograd.grad(energy, (pos, eps))
        energy = float(energy.detach())
        forces = -g_pos.numpy()
        stress = None
        if periodic(atoms):
            t = g_eps.numpy() / atoms.get_volume()
            t = 0.5 * (t + t.T)
            stress = np.array([t[0, 0], t[1, 1], t[2, 2], t[1, 2], t[0, 2], t[0, 1]])
        return energy, forces, stress


class DesorptionBump(_EMTTerm):
    """Breaks barrier-free desorption: a 0.3 eV Gaussian bump in the adsorbate's height above the surface.

    h = (lowest adsorbate atom z) - (highest metal atom z); the bump is centred
    1.5 A above typical adsorption heights (h0 = 3.3 A, width 0.4 A), so the
    adsorbed minimum and the desorbed asymptote are EMT's, and the path
    between them climbs 0.3 eV. Systems without both kinds of atoms are EMT.
    """

    height, h0, width = 0.3, 3.3, 0.4

    def term(self, atoms):
        n = len(atoms)
        sym = np.array(atoms.get_chemical_symbols())
        ads = np.where(np.isin(sym, NONMETALS))[0]
        met = np.where(~np.isin(sym, NONMETALS))[0]
        f = np.zeros((n, 3))
        if len(ads) == 0 or len(met) == 0:
            return 0.0, f, (np.zeros(6) if periodic(atoms) else None)
        ia = ads[np.argmin(atoms.positions[ads, 2])]
        im = met[np.argmax(atoms.positions[met, 2])]
        h = atoms.positions[ia, 2] - atoms.positions[im, 2]
        g = self.height * np.exp(-(((h - self.h0) / self.width) ** 2))
        dg = g * (-2 * (h - self.h0) / self.width**2)
        f[ia, 2] -= dg
        f[im, 2] += dg
        s = None
        if periodic(atoms):  # E depends on the z-difference only: virial of that one vector
            dvec = atoms.positions[ia] - atoms.positions[im]
            s = _virial_stress(atoms, np.array([[0.0, 0.0, dg]]), dvec[None, :])
        return float(g), f, s


class UBlockShift(_EMTTerm):
    """Breaks the adsorption sign: +6 eV for every O or F atom near a Ni atom (the seed's +U-block defect).

    Each O/F atom a gets shift * [1 - prod_Ni (1 - s(d_a,Ni))], s = 1 within
    2.5 A and switched off smoothly (cosine) by 3.5 A: conservative, local.
    The seed's defect makes O/F on U metals bind less than the free species;
    EMT binds O to Ni(111) by 4.7 eV, so the shift must exceed that to flip
    the sign (a +2 eV shift would leave E_rel < 0).
    """

    shift, r1, r2 = 6.0, 2.5, 3.5

    def term(self, atoms):
        from ase.neighborlist import neighbor_list

        n = len(atoms)
        f = np.zeros((n, 3))
        sym = np.array(atoms.get_chemical_symbols())
        if not (np.isin(sym, ("O", "F")).any() and (sym == "Ni").any()):
            return 0.0, f, (np.zeros(6) if periodic(atoms) else None)
        i, j, d, D = neighbor_list("ijdD", atoms, self.r2)
        keep = np.isin(sym[i], ("O", "F")) & (sym[j] == "Ni")
        i, j, d, D = i[keep], j[keep], d[keep], D[keep]
        s, ds = _switch(d, self.r1, self.r2)
        energy = 0.0
        pair_g = np.zeros((len(i), 3))  # dE/dD for each (a, Ni) vector
        for a in np.unique(i):
            m = np.where(i == a)[0]
            one_minus = 1.0 - s[m]
            prod = np.prod(one_minus)
            energy += self.shift * (1.0 - prod)
            for k_local, k in enumerate(m):
                others = np.prod(np.delete(one_minus, k_local))
                dE_dd = self.shift * others * ds[k]
                pair_g[k] = dE_dd * D[k] / d[k]
        np.add.at(f, j, -pair_g)  # D = r_Ni - r_a: dE/dr_Ni = +pair_g
        np.add.at(f, i, pair_g)
        stress = _virial_stress(atoms, pair_g, D) if periodic(atoms) else None
        return float(energy), f, stress


def angular_shear():
    return AngularShear()


def desorption_bump():
    return DesorptionBump()


def u_block_shift():
    return UBlockShift()
