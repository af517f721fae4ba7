"""Zero net force: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import OBSERVED_NOISE, Law
from .check import ZeroNetForce

_WHY_NOT = {
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=ZeroNetForce,
    objective="adversary:ZeroNetForceObjective",
    playbook="playbook:ZeroNetForcePlaybook",
    card="card:ZeroNetForceCard",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.physics:constant_force",
    opt_out=_WHY_NOT,
)
