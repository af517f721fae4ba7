"""Each physics contract bites: its planted defect fails, a clean analytic model passes."""

import numpy as np
import pytest

from pytest_mlip.testing import assert_bites, builtin_contracts, run_contract

M = "tests.mutants.physics"
CLEAN = "tests.mutants:clean_morse"


@pytest.mark.parametrize(
    "contract, mutant, clean",
    [
        ("energy-force-consistency", "hidden_pair_force", CLEAN),
        ("zero-net-force", "constant_force", CLEAN),
        ("jacobian-symmetry", "curl_force", CLEAN),
        ("pes-smoothness", "step_pair", "lennard-jones"),  # both on LJ: long scans stay fast
        ("compression-wall", "compression_collapse", "lennard-jones"),
        ("compression-wall", "CompressionPlateau", "lennard-jones"),
        ("dimer-tail", "long_tail", CLEAN),
    ],
)
def test_contract_bites(contract, mutant, clean):
    bad, good = assert_bites(contract, f"{M}:{mutant}", clean)
    assert bad.max_normalized > 1.0 >= good.max_normalized
    assert bad.worst_probe is not None


# Not energy-force: LJ with sigma = 2 A puts the 1 A bonds of ethanol deep in its r^-12 wall (E ~ 1e3 eV),
# where the central-difference truncation error itself exceeds 0.05 eV/A; the smooth Morse model passes it.
@pytest.mark.parametrize("contract", ["zero-net-force", "jacobian-symmetry", "pes-smoothness", "dimer-tail"])
def test_lennard_jones_passes(contract):
    v = run_contract(contract, "lennard-jones", recheck_guaranteed=True)
    assert v.status == "pass", v.reason


def test_guaranteed_checks_run_by_default_and_skip_only_on_opt_out():
    """'Guaranteed by construction' is measured: both laws run on a conservative model unless opted out."""
    for contract in ("energy-force-consistency", "jacobian-symmetry"):
        v = run_contract(contract, CLEAN)
        assert v.status == "pass", v.reason
        v = run_contract(contract, CLEAN, recheck_guaranteed=False)
        assert v.status == "skip" and "--mlip-skip-guaranteed" in v.reason
    # a model that declares itself non-conservative is checked without being asked
    v = run_contract("jacobian-symmetry", f"{M}:curl_force")
    assert v.status == "fail"


def test_mutants_break_only_their_law():
    """The energy-force mutant keeps a symmetric Jacobian and zero net force; the net-force one keeps symmetry."""
    from pytest_mlip.structures import Bulk, Molecule

    small = [Molecule(name="H2O", rattle=0.03), Bulk(name="Si", rattle=0.05)]
    for mutant in ("hidden_pair_force", "constant_force"):
        v = run_contract("jacobian-symmetry", f"{M}:{mutant}", recheck_guaranteed=True, structures=small)
        assert v.status == "pass", (mutant, v.reason)
    for mutant in ("hidden_pair_force", "curl_force"):
        assert run_contract("zero-net-force", f"{M}:{mutant}").status == "pass", mutant


def test_smoothness_locates_the_step():
    v = run_contract("pes-smoothness", f"{M}:step_pair", pairs=[("Cu", "Cu")], surfaces=[])
    obs = v.worst().observables
    assert v.status == "fail" and abs(obs["s_energy_jump"] - 3.3) < 0.03
    assert abs(v.worst().violations["energy_jump"] - 0.05) < 5e-3  # the planted step, not a grid artefact


def test_compression_reports_collapse_scale_and_pressure():
    v = run_contract("compression-wall", f"{M}:compression_collapse",
                     crystals=[{"element": "Cu", "structure": "fcc"}])
    obs = v.worst().observables
    assert v.status == "fail" and obs["s_worst"] < 0.6
    assert obs["pressure_source"] == "model stress" and obs["pressure_drop_GPa"] > 0


def test_dimer_tail_is_soft_and_reports_fraction():
    settings = builtin_contracts()["dimer-tail"]
    assert settings.hard is False and settings.basis == "disagreement"
    v = run_contract("dimer-tail", f"{M}:long_tail", elements=["Cu"])
    assert v.status == "fail" and not v.gating  # soft: reported, never fails the run
    f = v.worst().observables["tail_fraction"]
    assert 0.2 < f < 0.4  # 0.3 eV planted on a 1 eV Morse well


def test_dimer_tail_skips_when_distance_outside_cutoff():
    v = run_contract("dimer-tail", CLEAN, distance=5.5)
    assert v.status == "skip" and "cutoff" in v.reason


def test_curve_measures_on_synthetic_curves():
    from pytest_mlip.laws.pes_smoothness.check import curvature_spikes, energy_jumps, force_flips, tortuosity

    s = np.linspace(1.0, 3.0, 201)
    e = (s - 2.0) ** 2
    f = -2 * (s - 2.0)
    assert energy_jumps(s, e, f).max() < 1e-9
    assert curvature_spikes(f).max() < 1e-9
    count, spurious = force_flips(s, e, f, 0.01, 1e-4)
    assert count == 1 and spurious == []
    assert tortuosity(e) == pytest.approx(1.0)
    f_bad = f.copy()
    f_bad[150:] *= -1  # forces flip at s = 2.5 while the energy keeps rising
    count, spurious = force_flips(s, e, f_bad, 0.01, 1e-4)
    assert count == 2 and len(spurious) == 1 and abs(spurious[0][0] - 2.5) < 0.02
    f_kink = f + np.where(s > 2.5, 0.2, 0.0)
    assert curvature_spikes(f_kink).max() == pytest.approx(0.2, rel=1e-6)


def test_smoothness_without_declared_cutoff():
    """EMT declares no cutoff: the scan ends at r_max + 0.3 A and the cutoff bracket is left out."""
    v = run_contract("pes-smoothness", "emt", pairs=[("Cu", "Cu")], surfaces=[])
    assert v.status == "pass", v.reason
    p = v.worst()
    assert "cutoff_energy" not in p.violations and p.observables["curve_s"][-1] == pytest.approx(6.3, abs=0.03)


def test_energy_force_tells_truncation_from_a_defect():
    """Lennard-Jones (sigma 2 A) on isobutane has forces of ~1.9e4 eV/A: the central difference at h = 3e-3 A is off
    by ~5 eV/A from truncation alone. Refined at h/2 the mismatch shrinks like h^2, so Richardson settles it and the
    clean model passes; the mutant's non-gradient force does not shrink and still fails."""
    from pytest_mlip.testing import run_contract

    isobutane = [{"kind": "molecule", "name": "isobutane", "rattle": 0.05}]
    clean = run_contract("energy-force-consistency", "lennard-jones", structures=isobutane)
    assert clean.status == "pass", clean.max_normalized
    assert clean.probes[0].observables["refined"] > 0


def test_a_compression_plateau_fails_by_its_shortfall_not_by_a_drop():
    """A flat compression curve never falls (drop 0) and passed; at 0.4 x it lies below the nearly free atoms."""
    v = run_contract("compression-wall", f"{M}:CompressionPlateau")
    for p in v.probes:
        assert p.violations["drop"] < 0.01 < p.violations["shortfall"] < 1.0, (p.probe, p.violations)
        assert p.observables["s_worst"] == pytest.approx(0.4, abs=1e-5)
