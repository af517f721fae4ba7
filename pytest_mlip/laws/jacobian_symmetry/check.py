"""Force-Jacobian symmetry: dF_i/dx_j = dF_j/dx_i, the mark of a conservative force field."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ..base import Check, ContractSettings, Measurement
from ..energy_force.check import probe_rng


class JacobianSymmetrySettings(ContractSettings):
    check: Literal["jacobian_symmetry"] = "jacobian_symmetry"
    step: float = Field(2e-3, ge=1e-4, le=0.05, description="central-difference displacement h (A); below 1e-4 A float32 rounding swamps the difference")
    richardson: bool = Field(True, description="extrapolate (4 J(h/2) - J(h)) / 3: cancels the h^2 truncation error")
    max_atoms: int = Field(6, ge=2, le=64, description="atoms whose 3n x 3n Jacobian block is built (seeded subset)")
    seed: int = 0

    default_tolerance = {"asymmetry": 2.5e-3}


def force_jacobian(evaluator, atoms, indices, h: float) -> np.ndarray:
    """J[p, q] = dF_p/dx_q over the Cartesian components of ``indices`` (central differences)."""
    comps = [(i, a) for i in indices for a in range(3)]
    rows = np.array([3 * i + a for i, a in comps])
    jac = np.zeros((len(comps), len(comps)))
    for q, (i, a) in enumerate(comps):
        plus, minus = atoms.copy(), atoms.copy()
        plus.positions[i, a] += h
        minus.positions[i, a] -= h
        df = evaluator.forces(plus).reshape(-1) - evaluator.forces(minus).reshape(-1)
        jac[:, q] = df[rows] / (2.0 * h)
    return jac


def asymmetry(jac: np.ndarray) -> float:
    """lambda = ||J_anti||_F / ||J||_F with J_anti = (J - J^T)/2 (Bigi, Langer, Ceriotti 2025)."""
    norm = np.linalg.norm(jac)
    return float(np.linalg.norm(0.5 * (jac - jac.T)) / norm) if norm > 0 else 0.0


class JacobianSymmetry(Check):
    name = "jacobian_symmetry"
    title = "Force-Jacobian symmetry"
    statement = ("The Jacobian of the forces, J_ij = dF_i/dx_j (minus the Hessian of the energy), is symmetric: "
                 "its antisymmetric part vanishes.")
    rationale = ("A force field is the gradient of some energy exactly when its Jacobian is symmetric; an "
                 "antisymmetric part is a curl that pumps energy around closed paths (NVE heating, thermostat "
                 "artefacts, optimisers that cycle). Unlike the energy-force contract it needs no energy at all, "
                 "so it also grades force-only heads. Guaranteed for autograd models by construction, which is "
                 "a claim about code: it runs on every model (--mlip-skip-guaranteed opts out, shown in the summary).")
    procedure = ("For small molecules and a small crystal, build the Jacobian block of up to max_atoms atoms "
                 "(seeded subset) by central differences of the forces, Richardson-extrapolated from h = 2e-3 and "
                 "1e-3 A (12 calls per atom; the h^2 error is not symmetric and, on models whose forces curve on "
                 "a 0.01 A scale such as CHGNet, would pass for asymmetry), and report lambda = ||J_anti||_F / "
                 "||J||_F (the asymmetry of Bigi et al., 'The dark side of the forces', also used by ML-PEG's "
                 "physicality tests), plus the largest antisymmetric element. Label-free.")
    threshold = ("lambda <= tau (2.5e-3): >= 3x the largest lambda of the shipped autograd models, all of it "
                 "finite-difference and float32 noise (7.8e-4, chgnet-0.3.0 on rattled CH3OH; sevennet-0 <= 6.4e-5, "
                 "diep <= 2.7e-4), and below the smallest lambda Bigi et al. report for a direct-force model "
                 "(~4e-3, PET-NC; ORB 1.5e-2). Hard, exact.")
    units = {"asymmetry": "1"}
    Settings = JacobianSymmetrySettings
    guaranteed_for_conservative = True

    def measure(self, settings, evaluator, probe):
        atoms = probe.atoms
        n = len(atoms)
        if n > settings.max_atoms:
            rng = probe_rng(settings.seed, probe.id)
            indices = sorted(int(i) for i in rng.choice(n, settings.max_atoms, replace=False))
        else:
            indices = list(range(n))
        jac = force_jacobian(evaluator, atoms, indices, settings.step)
        if settings.richardson:
            jac = (4.0 * force_jacobian(evaluator, atoms, indices, settings.step / 2) - jac) / 3.0
        anti = 0.5 * (jac - jac.T)
        p, q = np.unravel_index(int(np.abs(anti).argmax()), anti.shape)
        return Measurement(
            violations={"asymmetry": asymmetry(jac)},
            observables={
                "jacobian_norm": float(np.linalg.norm(jac)),
                "max_antisymmetric": float(abs(anti[p, q])),
                "worst_pair": [f"{indices[p // 3]}{'xyz'[p % 3]}", f"{indices[q // 3]}{'xyz'[q % 3]}"],
                "atoms_used": len(indices),
                "step": settings.step,
            },
        )

    def setting_details(self, settings) -> str:
        how = f"Richardson from steps {settings.step:g} and {settings.step / 2:g} A" if settings.richardson else \
            f"step {settings.step:g} A"
        return f"central differences of forces, {how}, up to {settings.max_atoms} atoms per structure"
