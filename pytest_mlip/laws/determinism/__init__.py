"""Determinism: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import OBSERVED_NOISE, Law
from .check import Determinism

_WHY_NOT = {
    'adversary': ("the input is not what varies: the law compares repeated calls on one "
                  "configuration, so searching the configuration finds nothing the sampled check does"
                  " not"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=Determinism,
    playbook="playbook:DeterminismPlaybook",
    card="card:DeterminismCard",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.foundation:CallToCallNoise",
    opt_out=_WHY_NOT,
)
