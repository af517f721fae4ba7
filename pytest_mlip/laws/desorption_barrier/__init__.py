"""Spurious desorption barrier: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import DesorptionBarrier

_WHY_NOT = {
    'detective': ("no playbook yet: the detective does not widen this law's findings into hypotheses (issue 12 coverage, not done)"),
    'calibration': ('its tolerance is argued from noise measured by hand and stated in its threshold text; benchmarks/calibrate_noise.py does not measure it (no calibration.json entry)'),
}

LAW = Law(
    check=DesorptionBarrier,
    objective="adversary:DesorptionBarrierObjective",
    card="card:DesorptionBarrierCard",
    figure="rigid desorption scan E(dz) per case",
    axes={'dz': ('adsorbate height above its relaxed site', 'Å')},
    mutant="tests.mutants.surface:desorption_bump",
    opt_out=_WHY_NOT,
)
