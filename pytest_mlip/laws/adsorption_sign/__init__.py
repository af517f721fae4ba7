"""Adsorption-energy sign: this law's home (its record is ``LAW``, see laws/law.py)."""

from ..law import Law
from .check import AdsorptionSign

_WHY_NOT = {
    'adversary': ("discrete domain: sites, metals and adsorbates are categories and each point is a "
                  "BFGS relaxation to a local minimum; there is no continuous input to ascend"),
    'calibration': ("tau(E_rel) = 0.05 eV is set by the relaxation (fmax 0.10 eV/A hides < 0.01 eV), "
                    "far above float32 noise (< 1e-4 eV, stated in its contract file); not measured "
                    "by benchmarks/calibrate_noise.py (a BFGS relaxation per site and model)"),
}

LAW = Law(
    check=AdsorptionSign,
    playbook="playbook:AdsorptionSignPlaybook",
    card="card:AdsorptionSignCard",
    figure="heatmap of E_rel (metal x adsorbate) per model",
    mutant="tests.mutants.surface:u_block_shift",
    opt_out=_WHY_NOT,
)
