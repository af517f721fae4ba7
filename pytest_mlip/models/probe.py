"""Probe which elements a bare calculator supports (no declared metadata)."""

from __future__ import annotations

import math

import numpy as np


def probe_elements(calc, max_z: int = 94) -> tuple[str, ...]:
    """Elements for which a dimer at 2.5 A in a 20 A box gives finite energy and forces."""
    from ase import Atoms
    from ase.data import chemical_symbols

    ok = []
    for z in range(1, max_z + 1):
        atoms = Atoms(numbers=[z, z], positions=[[0, 0, 0], [0, 0, 2.5]], cell=[20, 20, 20], pbc=False)
        try:
            calc.results = {}
            calc.calculate(atoms, ["energy", "forces"], ["positions", "numbers", "cell", "pbc"])
            energy = calc.results.get("energy")
            forces = calc.results.get("forces")
            if energy is None or not math.isfinite(float(energy)):
                continue
            if forces is not None and not np.all(np.isfinite(forces)):
                continue
            ok.append(chemical_symbols[z])
        except Exception:
            continue
    calc.results = {}
    return tuple(ok)
