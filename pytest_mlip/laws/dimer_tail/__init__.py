"""Dimer mid-range tail: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import DimerTail

_WHY_NOT = {
    'adversary': ('no objective yet: the tail distance is continuous within the cutoff, but the law is judged against the committee at one stated distance (basis disagreement); not written (issue 12 coverage, not done)'),
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
