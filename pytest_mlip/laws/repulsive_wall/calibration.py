"""The repulsive wall's calibration entry: the energy noise of a scan (dimers under rigid translation)."""

from __future__ import annotations

import numpy as np


def dimer_energy_noise(evaluator) -> float:
    """Worst |dE| of dimers translated by random vectors: the energy noise of a scan."""
    from ase import Atoms

    rng = np.random.default_rng(0)
    worst = 0.0
    for pair in [("Ni", "Ni"), ("C", "O"), ("H", "H"), ("Cu", "Pt")]:
        for r in (0.6, 1.2, 2.2, 3.5):
            a = Atoms(pair, positions=[[0, 0, 0], [0, 0, r]])
            a.center(vacuum=10)
            e0 = evaluator.energy(a)
            for _ in range(2):
                b = a.copy()
                b.positions += rng.uniform(-2, 2, 3)
                worst = max(worst, abs(evaluator.energy(b) - e0))
    return worst


def noise(settings, ctx) -> dict:
    return {"drop": ctx.shared("dimer energy noise", dimer_energy_noise)}
