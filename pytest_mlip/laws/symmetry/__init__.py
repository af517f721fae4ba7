"""Symmetry: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import Symmetry

_WHY_NOT = {
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=Symmetry,
    objective="adversary:SymmetryObjective",
    playbook="playbook:SymmetryPlaybook",
    card="card:SymmetryCard",
    calibration="calibration:noise",
    mutant="tests.mutants.foundation:OrientationBias",
    opt_out=_WHY_NOT,
    read_against={"energy_force": ("energy-force consistency",
                                   "the symmetry failure may come from forces that are not -dE/dx",
                                   "the forces are the gradient of the energy")},
)
