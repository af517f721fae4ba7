"""Dimer mid-range tail: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import DimerTail

_WHY_NOT = {
    'adversary': ('no objective yet: the tail distance is continuous within the cutoff, but the law is judged against the committee at one stated distance (basis disagreement); not written (issue 12 coverage, not done)'),
    'detective': ("no playbook yet: the detective does not widen this law's findings into hypotheses (issue 12 coverage, not done)"),
    'calibration': ('its tolerance is argued from noise measured by hand and stated in its threshold text; benchmarks/calibrate_noise.py does not measure it (no calibration.json entry)'),
}

LAW = Law(
    check=DimerTail,
    card="card:DimerTailCard",
    figure="dimer curves E(r) - E(inf) with the tail point",
    mutant="tests.mutants.physics:long_tail",
    opt_out=_WHY_NOT,
)
