"""Adsorption-energy sign: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import AdsorptionSign

_WHY_NOT = {
    'adversary': ('discrete domain: sites, metals and adsorbates are categories and each point is a BFGS relaxation to a local minimum; there is no continuous input to ascend'),
    'detective': ("no playbook yet: the detective does not widen this law's findings into hypotheses (issue 12 coverage, not done)"),
    'reference': ('needs relaxations of every adsorbate on every slab: hours of GPAW per model here'),
    'calibration': ('its tolerance is argued from noise measured by hand and stated in its threshold text; benchmarks/calibrate_noise.py does not measure it (no calibration.json entry)'),
}

LAW = Law(
    check=AdsorptionSign,
    figure="heatmap of E_rel (metal x adsorbate) per model",
    mutant="tests.mutants.surface:u_block_shift",
    opt_out=_WHY_NOT,
)
