"""Repulsive wall: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import RepulsiveWall

LAW = Law(
    check=RepulsiveWall,
    objective="adversary:RepulsiveWallObjective",
    playbook="playbook:RepulsiveWallPlaybook",
    card="card:RepulsiveWallCard",
    figure="dimer and surface-approach scans E(r)",
    calibration="calibration:noise",
    mutant="tests.mutants.foundation:ShortRangeHole",
)
