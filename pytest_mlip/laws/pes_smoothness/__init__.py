"""PES smoothness: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import PesSmoothness

_WHY_NOT = {
    'adversary': ("no objective yet, though the domain (points along each curve) is continuous: the "
                  "check already refines its worst intervals adaptively (levels x refine), which is a"
                  " 1-D search of the same domain"),
    'calibration': ("each tau is >= 3.5x the largest value on smooth curves (sevennet-0's dimers and "
                    "path, diep's dimers), measured by hand and stated in its threshold; not measured"
                    " by benchmarks/calibrate_noise.py"),
}

LAW = Law(
    check=PesSmoothness,
    playbook="playbook:PesSmoothnessPlaybook",
    card="card:PesSmoothnessCard",
    figure="E(s) and F(s) along dimer curves and surface paths",
    axes={'s': ('distance along the scan', 'Å'), 'F': ('force along the scan', 'eV/Å')},
    mutant="tests.mutants.physics:step_pair",
    opt_out=_WHY_NOT,
)
