"""Born stability, desorption barrier and adsorption sign bite: planted defects fail, EMT passes."""

import numpy as np
import pytest

from pytest_mlip.testing import assert_bites, run_contract

M = "tests.mutants.surface"
CLEAN = "emt"  # ASE EMT: fcc metals (Al Ni Cu Pd Ag Pt Au) with H C N O


@pytest.mark.slow  # ~15 s of CPU: imports pymatgen and torch, 11 crystals x 36 strains
def test_born_stability_bites():
    bad, good = assert_bites("born-stability", f"{M}:angular_shear", CLEAN)
    worst = bad.worst()
    assert worst.observables["C44"] < 0 and "C44" in worst.observables["born_conditions_failed"]
    cu = next(p for p in good.probes if p.probe == "Cu-fcc").observables
    assert cu["C44"] > 0 and cu["lambda_min_GPa"] > 0 and cu["crystal_system"] == "cubic"
    # the unsupported crystals are skipped with a reason, not failed
    assert any(p.status == "skip" and "not supported" in p.message for p in good.probes)


def test_born_stability_not_converged_is_a_failed_probe():
    from pytest_mlip.structures import Bulk

    v = run_contract("born-stability", CLEAN, structures=[Bulk(name="Cu", crystalstructure="fcc", a=4.2)], steps=1)
    assert v.status == "fail"
    obs = v.worst().observables
    assert obs["label"].startswith("not converged") and v.worst().violations["not_converged"] == 1.0


def test_born_stability_a_model_with_no_stiffness_fails():
    """A tensor of zeros has no negative eigenvalue, but it is not positive definite: 'flat' names it."""
    from pytest_mlip.structures import Bulk

    cu = [Bulk(name="Cu", crystalstructure="fcc")]
    bad = run_contract("born-stability", "tests.mutants.garbage:zero", structures=cu)
    assert bad.status == "fail" and bad.worst().violations["flat"] == 1.0
    assert bad.worst().observables["label"].startswith("flat") and bad.worst().observables["lambda_max_GPa"] == 0
    good = run_contract("born-stability", CLEAN, structures=cu)
    assert good.status == "pass" and good.worst().violations["flat"] == 0.0
    assert good.worst().observables["lambda_max_GPa"] > 100


@pytest.mark.slow  # ~9 s of CPU: two scans and a 17-image CI-NEB per mutant case
def test_desorption_barrier_bites_and_neb_confirms():
    cases = [{"adsorbate": "CO", "metal": "Cu", "facet": "fcc111", "site": "ontop"},
             {"adsorbate": "NO", "metal": "Pt", "facet": "fcc111", "site": "hollow"}]
    bad, good = assert_bites("desorption-barrier", f"{M}:desorption_bump", CLEAN, cases=cases, neb=True)
    obs = bad.worst().observables
    assert obs["violation_basis"] == "CI-NEB" and obs["neb"]["converged"]
    assert 0.2 < obs["rise"] < 0.35 and 0.2 < obs["neb"]["barrier"] < 0.35  # the planted bump is 0.3 eV
    assert 1.0 <= obs["dz_at_max"] <= 2.5  # planted ~1.5 A above the adsorbed height
    for p in good.probes:
        assert p.observables["rise"] <= 0.05 and "neb" not in p.observables  # NEB runs for failing cases only


def test_adsorption_sign_bites_in_the_u_block_only():
    bad, good = assert_bites("adsorption-sign", f"{M}:u_block_shift", CLEAN, metals=["Ni", "Cu"],
                             adsorbates=["O", "CO"], relax_sites=None)
    by_id = {p.probe: p for p in bad.probes}
    assert by_id["O/Ni(111)"].observables["E_rel"] > 0.05 and by_id["O/Ni(111)"].observables["u_block"]
    assert by_id["O/Cu(111)"].observables["E_rel"] < 0  # outside the block the mutant is EMT
    for p in bad.probes + good.probes:
        if p.observables.get("E_rel") is not None:  # a minimum is always an intact, bound adsorbate
            assert p.observables["best_status"] in ("bound", "slipped")
    assert all(p.observables["E_rel"] < -0.3 for p in good.probes)


def test_adsorption_not_converged_is_labelled():
    v = run_contract("adsorption-sign", CLEAN, metals=["Cu"], adsorbates=["O"], steps=1)
    assert v.status == "fail" and v.worst().observables["label"].startswith("not converged")


def test_connectivity_flags_dissociation_desorption_and_slip():
    from pytest_mlip.structures.adsorbates import build_slab, classify, place

    slab = build_slab("Cu")
    n = len(slab)
    assert classify(place(slab, "OH", "ontop"), n, "ontop").status == "bound"
    broken = place(slab, "OH", "ontop")
    broken.positions[-1, 2] += 1.5  # O-H stretched to ~2.5 A
    assert classify(broken, n, "ontop").status == "dissociated"
    away = place(slab, "CO", "ontop")
    away.positions[n:, 2] += 4.0
    assert classify(away, n, "ontop").status == "desorbed"
    hollow = place(slab, "O", "hollow")
    out = classify(hollow, n, "bridge")  # planned bridge, found in the hollow
    assert out.site == "hollow" and out.status == "slipped"


def test_every_relaxation_call_goes_through_the_evaluator():
    from pytest_mlip.evaluation import Evaluator
    from pytest_mlip.models.registry import load
    from pytest_mlip.structures.adsorbates import build_slab, place, relax

    ev = Evaluator(load(CLEAN))
    atoms = place(build_slab("Pt"), "O", "hollow", lift=0.3)
    first = relax(atoms, ev)
    calls = ev.stats.calls
    assert first.converged and first.steps >= 1 and calls >= first.steps
    again = relax(atoms, ev)  # deterministic: the second relaxation is all cache hits
    assert ev.stats.calls == calls and again.energy == first.energy
    fixed = atoms.constraints[0].index
    assert np.allclose(first.atoms.positions[fixed], atoms.positions[fixed])  # bottom layers held


def test_contract_files_parse_and_reject_unknown_names():
    from pathlib import Path

    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.errors import ContractFileError

    grid = parse_contracts(Path(__file__).parents[1] / "benchmarks" / "mlip_adsorption_grid.toml")[0]
    assert len(grid.metals) == 14 and len(grid.adsorbates) == 8
    text = '[[contract]]\nname = "x"\ncheck = "adsorption_sign"\nmetals = ["Xx"]\nadsorbates = ["O"]\n'
    with pytest.raises(ContractFileError, match="metals"):
        parse_contracts("bad.toml", text=text)
    text = ('[[contract]]\nname = "x"\ncheck = "desorption_barrier"\n'
            'cases = [{ adsorbate = "CO", metal = "Cu", site = "hollow4" }]\n')
    with pytest.raises(ContractFileError, match="site"):
        parse_contracts("bad.toml", text=text)
