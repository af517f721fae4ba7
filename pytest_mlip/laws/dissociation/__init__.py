"""Dissociation limit / size consistency: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import Dissociation

_WHY_NOT = {
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=Dissociation,
    objective="adversary:DissociationObjective",
    playbook="playbook:DissociationPlaybook",
    card="card:DissociationCard",
    calibration="calibration:noise",
    mutant="tests.mutants.foundation:LongRangeGhost",
    opt_out=_WHY_NOT,
)
