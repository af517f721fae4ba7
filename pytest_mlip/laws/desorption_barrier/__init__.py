"""Spurious desorption barrier: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import DesorptionBarrier

_WHY_NOT = {
    'calibration': ("tau = 0.05 eV is 2x the DFT residual of the seed's CO/Cu(111) path, > 100x float32 noise (stated in its threshold); not measured by benchmarks/calibrate_noise.py"),
}

LAW = Law(
    check=DesorptionBarrier,
    playbook="playbook:DesorptionBarrierPlaybook",
    objective="adversary:DesorptionBarrierObjective",
    card="card:DesorptionBarrierCard",
    figure="rigid desorption scan E(dz) per case",
    axes={'dz': ('adsorbate height above its relaxed site', 'Å')},
    mutant="tests.mutants.surface:desorption_bump",
    opt_out=_WHY_NOT,
)
