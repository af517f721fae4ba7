"""Zero net force: the forces on all atoms sum to zero (no self-propulsion)."""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..base import Check, ContractSettings, Measurement
from .domain import NetForceDomain


class ZeroNetForceSettings(ContractSettings):
    check: Literal["zero_net_force"] = "zero_net_force"
    #: Z for --mlip-adversary (None: the contract's structures displaced; see domain.py beside this module)
    adversary: NetForceDomain | None = None

    default_tolerance = {"net_force": 1e-3}


class ZeroNetForce(Check):
    name = "zero_net_force"
    title = "Zero net force"
    statement = ("The forces on all atoms of a system sum to zero, for isolated systems and for periodic cells: "
                 "internal forces cannot push the centre of mass.")
    rationale = ("Translation invariance of the energy implies sum_i F_i = 0 (Newton's third law). A residual net "
                 "force accelerates the centre of mass: NVE runs drift and heat, and a relaxation never reaches "
                 "fmax. Autograd makes F = -dE/dx, but the zero sum also needs E to be exactly translation "
                 "invariant, and a direct-force head guarantees neither, so every model is checked (one call per "
                 "structure, mostly shared with the energy-force contract through the cache).")
    procedure = ("Evaluate the forces of rattled molecules, a random cluster, a rattled slab and rattled bulk cells; "
                 "report |sum_i F_i| (vector norm) and, for isolated systems, the net torque about the centroid. "
                 "Label-free: only the model's own forces.")
    threshold = ("|sum_i F_i| <= tau (1e-3 eV/A). The float32 noise of the sum is <= 6.9e-7 eV/A on these "
                 "structures (sevennet-0, chgnet-0.3.0, diep), so tau is > 1000x the noise; 1e-3 eV/A is also the "
                 "force tolerance of the symmetry and dissociation contracts. Hard, exact.")
    units = {"net_force": "eV/A"}
    Settings = ZeroNetForceSettings

    def measure(self, settings, evaluator, probe):
        atoms = probe.atoms
        forces = evaluator.forces(atoms)
        net = forces.sum(axis=0)
        obs = {
            "net_force_vector": [float(x) for x in net],
            "natoms": len(atoms),
            "max_abs_force": float(np.abs(forces).max()),
            "periodic": bool(np.all(atoms.pbc)),
        }
        if not np.any(atoms.pbc):
            u = atoms.positions - atoms.positions.mean(axis=0)
            obs["net_torque"] = float(np.linalg.norm(np.cross(u, forces).sum(axis=0)))
        return Measurement(violations={"net_force": float(np.linalg.norm(net))}, observables=obs)
