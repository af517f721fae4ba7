"""PES smoothness: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import PesSmoothness

_WHY_NOT = {
    'adversary': ('no objective yet: the domain (points along each curve) is continuous, and the check already refines its worst intervals; not written (issue 12 coverage, not done)'),
    'detective': ("no playbook yet: the detective does not widen this law's findings into hypotheses (issue 12 coverage, not done)"),
    'reference': ("a property of the model's own curves (cusps at its cutoff): nothing external to compare"),
    'calibration': ('its tolerance is argued from noise measured by hand and stated in its threshold text; benchmarks/calibrate_noise.py does not measure it (no calibration.json entry)'),
}

LAW = Law(
    check=PesSmoothness,
    figure="E(s) and F(s) along dimer curves and surface paths",
    axes={'s': ('distance along the scan', 'Å'), 'F': ('force along the scan', 'eV/Å')},
    mutant="tests.mutants.physics:step_pair",
    opt_out=_WHY_NOT,
)
