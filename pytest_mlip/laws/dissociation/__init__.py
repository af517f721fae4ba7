"""Dissociation limit / size consistency: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import Dissociation

_WHY_NOT = {
    'reference': ('locality at 12 A or beyond the cutoff: DFT fragments add up unless their charge or spin state changes, which the reference would test rather than the model'),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=Dissociation,
    objective="adversary:DissociationObjective",
    playbook="playbook:DissociationPlaybook",
    calibration="calibration:noise",
    mutant="tests.mutants.foundation:LongRangeGhost",
    opt_out=_WHY_NOT,
)
