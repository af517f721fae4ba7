"""Born elastic stability of crystals known to be stable: the elastic tensor is positive definite."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from ..base import Check, ContractSettings, Measurement

EV_A3_TO_GPA = 160.21766208
VOIGT_PAIRS = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]


class BornStabilitySettings(ContractSettings):
    check: Literal["born_stability"] = "born_stability"
    hard: bool = True
    basis: Literal["exact", "disagreement"] = "exact"
    strains: list[float] = Field(default_factory=lambda: [-0.02, -0.015, -0.01, 0.01, 0.015, 0.02],
                                 description="strain magnitudes applied to each of the six Voigt components")
    fmax: float = Field(0.005, gt=0.0, description="cell + position relaxation criterion (eV/A, FrechetCellFilter)")
    steps: int = Field(200, ge=1, le=5000, description="step budget of the cell relaxation")
    ion_fmax: float = Field(0.005, gt=0.0, description="ionic relaxation criterion at each strain (eV/A)")
    ion_steps: int = Field(50, ge=1, le=5000, description="step budget of each strained-cell ionic relaxation")

    default_tolerance = {"born": 9.0, "not_converged": 0.5, "flat": 0.5}

    @field_validator("strains")
    @classmethod
    def _strains(cls, v):
        if len(v) < 2 or any(abs(x) > 0.05 or x == 0 for x in v):
            raise ValueError("give at least two non-zero strains with |strain| <= 0.05")
        return v


def crystal_system(atoms, symprec: float = 1e-3) -> tuple[str, int]:
    """(crystal system, space-group number) by spglib."""
    import spglib

    cell = (atoms.cell.array, atoms.get_scaled_positions(), atoms.numbers)
    data = spglib.get_symmetry_dataset(cell, symprec=symprec)
    n = int(data.number) if data is not None else 1
    for top, name in ((2, "triclinic"), (15, "monoclinic"), (74, "orthorhombic"), (142, "tetragonal"),
                      (167, "trigonal"), (194, "hexagonal"), (230, "cubic")):
        if n <= top:
            return name, n
    return "triclinic", n


def born_conditions(c: np.ndarray, system: str) -> dict[str, float]:
    """System-specific Born conditions as margins (> 0 means satisfied; Mouhat & Coudert 2014).

    Each is implied by positive definiteness when the tensor has the system's
    symmetry in the standard frame; they are reported because they say *which*
    deformation is soft.
    """
    C = lambda i, j: float(c[i - 1, j - 1])  # noqa: E731 - 1-based like the literature
    if system == "cubic":
        return {"C11-C12": C(1, 1) - C(1, 2), "C11+2C12": C(1, 1) + 2 * C(1, 2), "C44": C(4, 4)}
    if system in ("hexagonal", "tetragonal"):
        out = {"C11-|C12|": C(1, 1) - abs(C(1, 2)),
               "C33(C11+C12)-2C13^2": C(3, 3) * (C(1, 1) + C(1, 2)) - 2 * C(1, 3) ** 2,
               "C44": C(4, 4), "C66": C(6, 6)}
        return out
    return {}


class BornStability(Check):
    name = "born_stability"
    title = "Born elastic stability of known stable crystals"
    statement = ("A crystal that is stable in nature, relaxed by the model within its own space group, has a "
                 "positive-definite elastic tensor C (all eigenvalues of the 6x6 Voigt matrix > 0): every small "
                 "homogeneous strain raises the energy.")
    rationale = ("A negative eigenvalue means the model's crystal shears or collapses spontaneously: MD at any "
                 "temperature drifts into another phase and elastic, phonon and defect properties are meaningless. "
                 "Fitting near-equilibrium energies does not constrain curvatures, so this is not guaranteed.")
    procedure = ("Relax cell and positions (FrechetCellFilter + BFGS, FixSymmetry keeps the space group) to "
                 "fmax; a relaxation that does not converge within its step budget fails the probe as 'not "
                 "converged'. Apply each of the six Voigt strains at +-1, +-1.5 and +-2 % (ions relaxed in the "
                 "strained cell when the cell has more than one atom), fit C from stress-strain with pymatgen's "
                 "ElasticTensor.from_independent_strains, and take the lowest eigenvalue of (C + C^T)/2. "
                 "Label-free: only the model's own stresses. System-specific Born conditions are reported.")
    threshold = ("born = max(0, -lambda_min(C)) <= tau (9 GPa = 3x the largest standard error of lambda_min "
                 "from the fit scatter on the shipped float32 models, 3.0 GPa; each verdict reports its own error); "
                 "not_converged (0/1) <= 0.5; flat (0/1) <= 0.5, 1 when even the largest eigenvalue of C is within "
                 "tau_born of zero (a crystal with no measurable stiffness: every strain leaves the stress unchanged, "
                 "which no positive-definite tensor does; the smallest lambda_max of these crystals is about 3B of "
                 "NaCl, ~75 GPa). Hard, exact: a crystal known to be stable must be mechanically "
                 "stable in any model of it; no committee is needed to judge it.")
    units = {"born": "GPa", "not_converged": "flag", "flat": "flag"}
    Settings = BornStabilitySettings
    needs_periodic = True
    needs_stress = True

    #: the elastic-tensor fit (pymatgen) and the space-group check (spglib); the 'laws' extra installs them
    requires = ("pymatgen", "spglib")

    def measure(self, settings, evaluator, probe):
        from ...structures.adsorbates import relax

        start = probe.atoms.copy()
        _, sg0 = crystal_system(start)
        rel = relax(start, evaluator, fmax=settings.fmax, steps=settings.steps, cell=True, symmetry=True)
        atoms = rel.atoms
        system, sg = crystal_system(atoms)
        obs = {"crystal_system": system, "spacegroup": sg, "spacegroup_start": sg0,
               "relax_converged": rel.converged, "relax_steps": rel.steps, "relax_fmax": rel.fmax,
               "cell_lengths": [float(x) for x in atoms.cell.lengths()],
               "cell_angles": [float(x) for x in atoms.cell.angles()],
               "volume_per_atom": float(atoms.get_volume() / len(atoms))}
        if not rel.converged:
            obs["label"] = f"not converged (cell relaxation: fmax {rel.fmax:.3g} eV/A after {rel.steps} steps)"
            return Measurement(violations={"born": 0.0, "not_converged": 1.0, "flat": 0.0}, observables=obs,
                               worst_atoms=atoms)

        c, ion_residual, sigma = self.elastic_tensor(settings, evaluator, atoms)
        ion_ok = ion_residual <= settings.ion_fmax
        sym = 0.5 * (c + c.T)
        eig = np.linalg.eigvalsh(sym)
        conditions = born_conditions(c, system)
        obs.update({
            "C_GPa": [[round(float(x), 3) for x in row] for row in c],
            "eigenvalues_GPa": [float(x) for x in eig],
            "lambda_min_GPa": float(eig[0]),
            "lambda_max_GPa": float(eig[-1]),
            "lambda_min_error_GPa": lambda_min_error(c, sigma),
            "C_error_GPa": [[round(float(x), 3) for x in row] for row in sigma],
            "born_conditions": {k: float(v) for k, v in conditions.items()},
            "born_conditions_failed": sorted(k for k, v in conditions.items() if v <= 0),
            "ion_relaxations_converged": ion_ok,
            "ion_residual_fmax": ion_residual,
        })
        for (i, j) in [(1, 1), (1, 2), (1, 3), (3, 3), (4, 4), (6, 6)]:
            obs[f"C{i}{j}"] = float(c[i - 1, j - 1])
        obs["B_voigt_GPa"] = float((c[0, 0] + c[1, 1] + c[2, 2] + 2 * (c[0, 1] + c[0, 2] + c[1, 2])) / 9)
        not_conv = 0.0 if ion_ok else 1.0
        if not ion_ok:
            obs["label"] = (f"not converged (ionic relaxation of a strained cell: fmax {ion_residual:.3g} eV/A "
                            f"after {settings.ion_steps} steps)")
        # positive definite means every eigenvalue > 0: one within noise of zero is not evidence against it (a
        # soft crystal), but a tensor whose *largest* eigenvalue is within noise of zero is no stiffness at all
        flat = 1.0 if float(eig[-1]) <= settings.tolerance.get("born", 9.0) else 0.0
        if flat:
            obs["label"] = (f"flat (largest eigenvalue of C {float(eig[-1]):.3g} GPa <= tau_born "
                            f"{settings.tolerance.get('born', 9.0):g} GPa: no measurable stiffness)")
        return Measurement(violations={"born": max(0.0, -float(eig[0])), "not_converged": not_conv, "flat": flat},
                           observables=obs, worst_atoms=atoms)

    @staticmethod
    def elastic_tensor(settings, evaluator, atoms) -> tuple[np.ndarray, float, np.ndarray]:
        """6x6 elastic tensor (GPa) from stress-strain finite differences (pymatgen fit).

        Also returns the largest residual force (eV/A) left by the ionic
        relaxations of the strained cells (0 for one-atom cells), and the
        standard error of each C_ij from the scatter of its linear fit (the
        noise of the model's stresses as this measurement sees it).
        """
        from pymatgen.analysis.elasticity import ElasticTensor, Strain, Stress

        from ...structures.adsorbates import relax

        def stress_of(cell_atoms):
            return evaluator.evaluate(cell_atoms).stress * EV_A3_TO_GPA

        eq = stress_of(atoms)
        strains, stresses, residual = [], [], 0.0
        sigma = np.zeros((6, 6))
        for k, (i, j) in enumerate(VOIGT_PAIRS):
            hs, ss = [0.0], [eq]
            for h in settings.strains:
                eps = np.zeros((3, 3))
                if i == j:
                    eps[i, i] = h
                else:
                    eps[i, j] = eps[j, i] = h / 2  # engineering shear strain h
                new = atoms.copy()
                new.set_cell(atoms.cell.array @ (np.eye(3) + eps), scale_atoms=True)
                if len(new) > 1:
                    r = relax(new, evaluator, fmax=settings.ion_fmax, steps=settings.ion_steps)
                    residual = max(residual, 0.0 if r.converged else r.fmax)
                    new = r.atoms
                s = stress_of(new)
                strains.append(Strain(eps))
                stresses.append(Stress(_matrix(s)))
                hs.append(h)
                ss.append(s)
            sigma[k] = _slope_errors(np.array(hs), np.array(ss))
        et = ElasticTensor.from_independent_strains(strains, stresses, eq_stress=Stress(_matrix(eq)), vasp=False)
        return np.array(et.voigt, dtype=float), residual, sigma

    def setting_details(self, settings) -> str:
        return (f"cell relaxed to fmax {settings.fmax:g} eV/A within {settings.steps} steps (space group kept); "
                f"strains {', '.join(f'{x:+g}' for x in settings.strains)} per Voigt component, ions relaxed")


def _slope_errors(h: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Standard error of the least-squares slope of each column of ``s`` against ``h``."""
    if len(h) < 3:
        return np.zeros(s.shape[1])
    A = np.vstack([h, np.ones_like(h)]).T
    coef, *_ = np.linalg.lstsq(A, s, rcond=None)
    resid = s - A @ coef
    var = (resid**2).sum(axis=0) / (len(h) - 2)
    return np.sqrt(var / ((h - h.mean()) ** 2).sum())


def lambda_min_error(c: np.ndarray, sigma: np.ndarray) -> float:
    """First-order error of the lowest eigenvalue of (C + C^T)/2 from the C_ij errors."""
    sym = 0.5 * (c + c.T)
    _, vecs = np.linalg.eigh(sym)
    v = vecs[:, 0]
    s_sym = 0.5 * np.sqrt(sigma**2 + sigma.T**2)
    return float(np.sqrt(((np.outer(v, v) * s_sym) ** 2).sum()))


def _matrix(v) -> np.ndarray:
    xx, yy, zz, yz, xz, xy = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
