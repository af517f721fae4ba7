"""Compression wall: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import CompressionWall

_WHY_NOT = {
    'calibration': ("float32 rounding is bounded analytically in its threshold (< 1e-3 eV/atom up to "
                    "|E| ~ 1e4 eV/atom, tau 1e-2); not measured by benchmarks/calibrate_noise.py"),
}

LAW = Law(
    check=CompressionWall,
    objective="adversary:CompressionWallObjective",
    playbook="playbook:CompressionWallPlaybook",
    card="card:CompressionWallCard",
    figure="E(scale) and P(scale) scans per crystal",
    axes={'E': ('energy per atom', 'eV/atom'), 'scale': ('lattice scale factor', ''), 'P_GPa': ('pressure', 'GPa')},
    mutant="tests.mutants.physics:compression_collapse",
    opt_out=_WHY_NOT,
)
