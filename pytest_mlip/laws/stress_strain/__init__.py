"""Stress-strain consistency: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import OBSERVED_NOISE, Law
from .check import StressStrain

_WHY_NOT = {
    'reference': ("needs converged plane-wave stresses of bulk cells: out of a molecular code's reach and of LCAO's accuracy (plane-wave GPAW crashed on 2 ranks without ScaLAPACK, as reported in issue 15)"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=StressStrain,
    objective="adversary:StressStrainObjective",
    playbook="playbook:StressStrainPlaybook",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.foundation:StressScaled",
    opt_out=_WHY_NOT,
)
