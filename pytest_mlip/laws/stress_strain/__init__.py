"""Stress-strain consistency: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import OBSERVED_NOISE, Law
from .check import StressStrain

_WHY_NOT = {
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=StressStrain,
    objective="adversary:StressStrainObjective",
    playbook="playbook:StressStrainPlaybook",
    card="card:StressStrainCard",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.foundation:StressScaled",
    opt_out=_WHY_NOT,
)
