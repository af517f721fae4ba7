"""Force-Jacobian symmetry: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import OBSERVED_NOISE, Law
from .check import JacobianSymmetry

_WHY_NOT = {
    'adversary': ("no objective yet, though the domain (displaced structures) is continuous: each "
                  "point costs a Richardson-extrapolated finite-difference Jacobian (4 x 3n force "
                  "calls), which a search budget of tens of evaluations cannot afford; not written"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=JacobianSymmetry,
    playbook="playbook:JacobianSymmetryPlaybook",
    card="card:JacobianSymmetryCard",
    calibration=OBSERVED_NOISE,
    mutant="tests.mutants.physics:curl_force",
    opt_out=_WHY_NOT,
)
