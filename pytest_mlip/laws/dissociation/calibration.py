"""The dissociation limit's calibration entry: the symmetry noise floor, energy scaled by the probes' atoms."""

from __future__ import annotations


def noise(settings, ctx) -> dict:
    from ..symmetry.calibration import noise_floor
    from .check import Dissociation

    floor = ctx.shared("symmetry floor", noise_floor)
    ctx.observed(settings)  # the raw worst violations go to calibration.json's 'observed' (they include findings)
    natoms = max(len(p.atoms) for p in Dissociation().probes(settings))
    return {"energy": floor["energy"] * natoms, "forces": floor["forces"]}
