"""Stress-strain consistency: sigma = (1/V) dE/d(strain)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from .domain import StrainDomain
from ..base import Check, ContractSettings, Measurement


class StressStrainSettings(ContractSettings):
    check: Literal["stress_strain"] = "stress_strain"
    strain_step: float = Field(1e-3, gt=0.0, le=0.05)
    #: Z for --mlip-adversary (None: derived from this setting; see domain.py beside this module)
    adversary: StrainDomain | None = None

    default_tolerance = {"stress": 3e-4}


def strained(atoms, voigt_index: int, h: float):
    """Copy of ``atoms`` under a symmetric strain with one Voigt component = h."""
    eps = np.zeros((3, 3))
    i, j = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)][voigt_index]
    if i == j:
        eps[i, i] = h
    else:
        eps[i, j] = eps[j, i] = h / 2  # engineering shear strain h
    new = atoms.copy()
    new.set_cell(atoms.cell.array @ (np.eye(3) + eps), scale_atoms=True)
    return new


def finite_difference_stress(evaluator, atoms, h: float) -> np.ndarray:
    volume = atoms.get_volume()
    out = np.zeros(6)
    for k in range(6):
        e_plus = evaluator.energy(strained(atoms, k, h))
        e_minus = evaluator.energy(strained(atoms, k, -h))
        out[k] = (e_plus - e_minus) / (2 * h) / volume
    return out


class StressStrain(Check):
    name = "stress_strain"
    title = "Stress-strain consistency"
    statement = "The stress a model returns equals (1/V) dE/d(strain) of its own energy, for fully periodic cells."
    rationale = ("Cell relaxations, NPT dynamics and elastic constants use the stress; one that is not the strain "
                 "derivative of the energy relaxes to the wrong volume and breaks energy conservation under NPT.")
    procedure = ("Rattled, pre-strained periodic cells (so no component vanishes by symmetry); central differences "
                 "of the energy over each of the six Voigt strains (step 1e-3), compared with the model's stress.")
    threshold = "max_k |sigma_k - sigma_k^FD| <= tau_S (3e-4 eV/A^3 = 0.05 GPa), > 3x the finite-difference noise"
    units = {"stress": "eV/A^3"}
    Settings = StressStrainSettings
    needs_periodic = True
    needs_stress = True

    def measure(self, settings, evaluator, probe):
        ev = evaluator.evaluate(probe.atoms)
        if ev.stress is None:
            raise RuntimeError("stress missing although the model implements it")
        fd = finite_difference_stress(evaluator, probe.atoms, settings.strain_step)
        diff = np.abs(ev.stress - fd)
        return Measurement(
            violations={"stress": float(diff.max())},
            observables={"stress_model": [float(x) for x in ev.stress], "stress_fd": [float(x) for x in fd],
                         "component": int(diff.argmax()), "stress_worst": float(ev.stress[int(diff.argmax())]),
                         "stress_fd_worst": float(fd[int(diff.argmax())])},
        )

    def setting_details(self, settings) -> str:
        return f"central differences, strain step {settings.strain_step:g}"
