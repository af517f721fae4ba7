"""Each foundation contract bites: its planted defect fails, a clean analytic model passes."""

import pytest

from pytest_mlip.testing import assert_bites, run_contract

M = "tests.mutants.foundation"
CLEAN = "tests.mutants:clean_morse"


@pytest.mark.parametrize(
    "contract, mutant",
    [
        ("repulsive-wall-dimers", "ShortRangeHole"),
        ("repulsive-wall-dimers", "CappedWall"),
        ("dissociation-limit", "LongRangeGhost"),
        ("rotation-invariance", "OrientationBias"),
        ("translation-invariance", "AbsolutePosition"),
        ("permutation-invariance", "IndexWeights"),
        ("permutation-invariance", "SpeciesOrder"),
        ("inversion-invariance", "Chirality"),
        ("periodic-image-consistency", "NonExtensive"),
        ("stress-strain-consistency", "StressScaled"),
        ("determinism", "CallToCallNoise"),
        ("determinism", "StressNoise"),
    ],
)
def test_contract_bites(contract, mutant):
    bad, good = assert_bites(contract, f"{M}:{mutant}", CLEAN)
    assert bad.max_normalized > 1.0 >= good.max_normalized
    assert bad.worst_probe is not None


def test_wall_reports_collapse_configuration():
    v = run_contract("repulsive-wall-dimers", f"{M}:ShortRangeHole")
    worst = v.worst()
    obs = worst.observables
    assert obs["falls_below_minimum"]
    assert 0.4 < obs["r_worst"] < 0.8  # the hole is planted at 0.6 A
    assert worst.atoms is not None and len(worst.atoms) == 2


def test_a_capped_wall_fails_by_its_shortfall_not_by_a_drop():
    """A held-out case: a wall frozen flat inside 2 A passed (drop 0). The cap is ~0.88 eV below the outer end."""
    worst = run_contract("repulsive-wall-dimers", f"{M}:CappedWall").worst()
    assert worst.violations["drop"] < 0.01 < worst.violations["shortfall"]
    assert 0.8 < worst.violations["shortfall"] < 0.95 and worst.observables["r_worst"] == 0.3


def test_surface_wall_bites():
    assert_bites("repulsive-wall-surface", f"{M}:ShortRangeHole", CLEAN)


def test_stress_strain_skips_without_periodic_cells():
    from pytest_mlip.structures import Molecule

    v = run_contract("stress-strain-consistency", CLEAN, structures=[Molecule(name="H2O")])
    assert v.status == "skip" and "periodic" in v.reason


def test_unsupported_element_is_skipped_not_failed():
    v = run_contract("repulsive-wall-dimers", "emt", pairs=[("Si", "Si")])
    assert v.status == "skip" and "not supported" in v.reason


def test_determinism_names_a_stress_that_changes_between_calls():
    """Energy and forces repeat exactly; the stress does not: the violation is the stress's."""
    v = run_contract("determinism", f"{M}:StressNoise")
    worst = v.worst()
    assert v.status == "fail" and worst.violations["stress"] > 1e-5
    assert worst.violations["energy"] == 0.0 and worst.violations["forces"] == 0.0
