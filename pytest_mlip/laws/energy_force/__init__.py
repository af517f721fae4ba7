"""Energy-force consistency: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import EnergyForce

_WHY_NOT = {
    'adversary': ("no objective yet, though the domain (displaced structures) is continuous: the "
                  "check refines each force component (h/2, Richardson) to tell truncation from a "
                  "defect, and a sound objective must reproduce that refinement in its violation; not"
                  " written"),
    'figure': ("single-point quantities, no scan to draw: the report's verdict matrix shows its v/tau per model"),
}

LAW = Law(
    check=EnergyForce,
    playbook="playbook:EnergyForcePlaybook",
    card="card:EnergyForceCard",
    calibration="calibration:noise",
    mutant="tests.mutants.physics:hidden_pair_force",
    opt_out=_WHY_NOT,
)
