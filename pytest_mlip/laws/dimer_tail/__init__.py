"""Dimer mid-range tail: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import DimerTail

_WHY_NOT = {
    'adversary': ('no objective yet: the law is judged at one stated distance against the committee (basis disagreement), so there is no model-only violation to ascend over the distance'),
    'calibration': ('a disagreement-basis law: tau (0.1) is set against the committee (2.5x the largest committee tail in the source study), not against float32 noise'),
}

LAW = Law(
    check=DimerTail,
    playbook="playbook:DimerTailPlaybook",
    card="card:DimerTailCard",
    figure="dimer curves E(r) - E(inf) with the tail point",
    mutant="tests.mutants.physics:long_tail",
    opt_out=_WHY_NOT,
)
