"""Energy-force consistency: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import OBSERVED_NOISE, Law
from .check import EnergyForce

_WHY_NOT = {
    'adversary': ('no objective yet, though the domain (displaced structures) is continuous: the check refines each force component (h/2, Richardson) to tell truncation from a defect, and a sound objective must reproduce that refinement in its violation; not written'),
    'reference': ("a consistency of the model's own outputs (forces = -dE/dx): nothing external to compare"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=EnergyForce,
    playbook="playbook:EnergyForcePlaybook",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.physics:hidden_pair_force",
    opt_out=_WHY_NOT,
)
