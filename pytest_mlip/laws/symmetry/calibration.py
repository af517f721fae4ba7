"""The symmetry laws' calibration entry: the float32 noise floor of E/atom, F and sigma under exact symmetries."""

from __future__ import annotations

#: low-symmetry probes on which every shipped model is equivariant up to rounding
NOISE_PROBES = [
    {"kind": "molecule", "name": "CH3CH2OH", "rattle": 0.05},
    {"kind": "cluster", "symbols": "Cu3Ni3", "seed": 2},
    {"kind": "bulk", "name": "Si", "cubic": True, "rattle": 0.05},
    {"kind": "bulk", "name": "NaCl", "crystalstructure": "rocksalt", "a": 5.64, "rattle": 0.05},
]


def noise_floor(evaluator) -> dict:
    """Worst change of E/atom, F, sigma under rotation, translation and permutation of NOISE_PROBES."""
    from ..base import run_contract
    from .check import SymmetrySettings

    floor: dict[str, float] = {}
    for transform in ("rotation", "translation", "permutation"):
        settings = SymmetrySettings(name=f"noise-{transform}", transform=transform, samples=3,
                                    structures=NOISE_PROBES)
        for p in run_contract(settings, evaluator).probes:
            for k, v in p.violations.items():
                floor[k] = max(floor.get(k, 0.0), v)
    return floor


def noise(settings, ctx) -> dict:
    """Every symmetry contract gets the floor (shipped architectures obey these laws by construction)."""
    return ctx.shared("symmetry floor", noise_floor)
