"""Born elastic stability of crystals known to be stable: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import BornStability

_WHY_NOT = {
    'adversary': ("each point is a cell relaxation followed by strained ionic relaxations: the "
                  "violation is a property of the relaxed crystal, not of a continuous input the "
                  "search could move"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
    'calibration': ("tau = 3x the largest standard error of lambda_min from the fit scatter on the "
                    "shipped models (3.0 GPa, stated in its threshold); each verdict reports its own "
                    "error; not measured by benchmarks/calibrate_noise.py"),
}

LAW = Law(
    check=BornStability,
    playbook="playbook:BornStabilityPlaybook",
    card="card:BornStabilityCard",
    mutant="tests.mutants.surface:angular_shear",
    opt_out=_WHY_NOT,
)
