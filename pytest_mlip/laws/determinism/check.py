"""Determinism: the same input gives the same output, call after call."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ..base import Check, ContractSettings, Measurement


def stress_change(first, again) -> float:
    """The largest change of a stress component between two evaluations (0 when either has no stress)."""
    if first.stress is None or again.stress is None:
        return 0.0
    return float(np.abs(np.asarray(again.stress, dtype=float) - np.asarray(first.stress, dtype=float)).max())


class DeterminismSettings(ContractSettings):
    check: Literal["determinism"] = "determinism"
    repeats: int = Field(2, ge=1, le=20, description="fresh calls per structure compared with the first")

    default_tolerance = {"energy": 1e-5, "forces": 5e-4, "stress": 1e-5}


class Determinism(Check):
    name = "determinism"
    title = "Determinism (repeatable outputs)"
    not_replayable = "its law measures fresh model calls"
    # the statement is part of every report (committed ones too): the stress, checked since, is in the procedure
    statement = ("Evaluating the same configuration again returns the same energy and forces, up to the model's "
                 "floating-point noise.")
    rationale = ("Every other verdict compares outputs of different calls: a model whose outputs change from call "
                 "to call (dropout left on, an uninitialised buffer, a random seed per call, state carried between "
                 "calls) shows up as symmetry or smoothness failures blamed on the wrong law. This check names the "
                 "defect itself, and it runs first in reports that explain other failures.")
    procedure = ("Evaluate each structure once (the cached call the other contracts share), then `repeats` more "
                 "times bypassing the cache, and report the largest change of the energy per atom, of any force "
                 "component and of any stress component. Label-free: only the model's own outputs.")
    threshold = ("energy <= 1e-5 eV/atom, forces <= 5e-4 eV/A, stress <= 1e-5 eV/A^3: >= 3x the largest float32 "
                 "noise of the symmetry contracts' energies, forces and stresses on the shipped models (1.43e-6 "
                 "eV/atom, 1.24e-4 eV/A, 5.84e-7 eV/A^3 in calibration.json); repeated calls in one process with one torch thread are measured identical "
                 "(0) on the analytic references. Hard, exact.")
    units = {"energy": "eV/atom", "forces": "eV/A", "stress": "eV/A^3"}
    Settings = DeterminismSettings

    def measure(self, settings, evaluator, probe):
        atoms = probe.atoms
        first = evaluator.evaluate(atoms)
        de, df, ds = 0.0, 0.0, 0.0
        for _ in range(settings.repeats):
            again = evaluator.repeat(atoms)
            de = max(de, abs(again.energy - first.energy) / len(atoms))
            df = max(df, float(np.abs(again.forces - first.forces).max()))
            ds = max(ds, stress_change(first, again))
        return Measurement(violations={"energy": de, "forces": df, "stress": ds},
                           observables={"repeats": settings.repeats, "energy": first.energy, "natoms": len(atoms)})

    def setting_details(self, settings) -> str:
        return f"{settings.repeats} fresh call(s) per structure against the cached one"
