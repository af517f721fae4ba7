"""Born elastic stability of crystals known to be stable: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import BornStability

_WHY_NOT = {
    'adversary': ('each point is a cell relaxation followed by strained ionic relaxations: the violation is a property of the relaxed crystal, not of a continuous input the search could move'),
    'detective': ("no playbook yet: the detective does not widen this law's findings into hypotheses (issue 12 coverage, not done)"),
    'reference': ('elastic constants need many strained plane-wave bulk cells: hours per model here'),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
    'calibration': ('its tolerance is argued from noise measured by hand and stated in its threshold text; benchmarks/calibrate_noise.py does not measure it (no calibration.json entry)'),
}

LAW = Law(
    check=BornStability,
    mutant="tests.mutants.surface:angular_shear",
    opt_out=_WHY_NOT,
)
