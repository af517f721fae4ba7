"""The NVE law bites: a non-conservative force heats a run and fails, clean models pass, an unstable run is a
violation (not an error), and the law is collected and reported by name in the default suite."""

import numpy as np
import pytest

from pytest_mlip.testing import assert_bites, builtin_contracts, run_contract

M = "tests.mutants.dynamics"
#: the law's cluster and bulk cell (Lennard-Jones's one sigma puts a molecule's 1 A bonds deep in its wall)
NON_MOLECULAR = [{"kind": "cluster", "symbols": "Cu3Ni3", "seed": 2}, {"kind": "bulk", "name": "Si", "cubic": True}]
ONE_RUN = {"structures": [{"kind": "cluster", "symbols": "Cu3Ni3", "seed": 2}], "temperatures": [300.0]}


def test_nve_bites_with_emt_as_the_clean_model():
    """EMT + a small rotational force fails on the default setting; EMT alone passes (its Si runs are skipped)."""
    bad, good = assert_bites("nve-conservation", f"{M}:stirring", "emt")
    assert bad.max_normalized > 10 > 1 >= good.max_normalized
    assert bad.worst().violations["drift"] > 1.0  # eV/atom/ps: the stirring heats ethanol's hydrogens
    assert bad.worst().violations["unstable"] == 0.0  # a conservation failure, not a collapse
    assert {p.probe for p in good.probes if p.status == "ok"} == {
        "CH3CH2OH@300K", "CH3CH2OH@1000K", "Cu3Ni3-cluster/s2@300K", "Cu3Ni3-cluster/s2@1000K"}


def test_lennard_jones_passes_and_its_trace_is_reported():
    v = run_contract("nve-conservation", "lennard-jones", structures=NON_MOLECULAR)
    assert v.status == "pass", v.reason
    # one model call per step, step 0 included (the second temperature's step 0 comes from the cache; a structure
    # the process evaluated before, e.g. the element probe's first call, may be a cache hit too)
    assert len(v.probes) == 4 and v.evaluations + v.cache_hits == 4 * 201 and v.cache_hits >= 2
    obs = v.probes[0].observables
    assert obs["steps_done"] == 200 and obs["curve_t"][0] == 0.0 and obs["curve_t"][-1] == pytest.approx(100.0)
    assert len(obs["curve_t"]) == len(obs["curve_dE"]) <= 101 and obs["curve_dE"][0] == 0.0


def test_the_drift_and_excursion_are_the_numbers_defined():
    """drift = |slope| of E_total/N, excursion = max |E_total - E_total(0)|/N: recomputed from the trace."""
    v = run_contract("nve-conservation", f"{M}:stirring", **ONE_RUN)
    p = v.probes[0]
    t, de = np.array(p.observables["curve_t"]), np.array(p.observables["curve_dE"])
    assert p.violations["excursion"] >= np.abs(de).max() - 1e-12
    assert abs(np.polyfit(t / 1000.0, de, 1)[0]) == pytest.approx(p.violations["drift"], rel=0.05)
    assert p.observables["drift_signed"] > 0  # the stirring heats


def test_a_stiff_conservative_run_is_refined_and_a_defect_is_not():
    """EMT's ethanol at 1 fs: the excursion past a tight tau is the integrator's (0.0092 -> 0.0025 eV/atom at
    0.5 fs), so the finer run is the measurement and it passes; without refinement it fails. The stirring's
    drift does not shrink with the step (6.18 -> 6.17 eV/atom/ps): still a failure, at the step asked for."""
    ethanol = {"structures": [{"kind": "molecule", "name": "CH3CH2OH"}], "temperatures": [1000.0], "steps": 100,
               "timestep": 1.0, "tolerance": {"drift": 0.05, "excursion": 0.005, "unstable": 0.5}}
    v = run_contract("nve-conservation", "emt", **ethanol)
    p = v.probes[0]
    assert v.status == "pass", v.reason
    assert p.observables["timestep_fs"] == 0.5 and "integrator's error" in p.observables["refined"]
    assert run_contract("nve-conservation", "emt", refine=False, **ethanol).status == "fail"
    bad = run_contract("nve-conservation", f"{M}:stirring", **{**ethanol, "timestep": 0.5, "steps": 200})
    assert bad.status == "fail" and "the model's own" in bad.worst().observables["refined"]
    assert bad.worst().observables["timestep_fs"] == 0.5


def test_a_collapse_is_a_violation_not_an_error():
    v = run_contract("nve-conservation", f"{M}:collapse", **ONE_RUN)
    assert v.status == "fail" and v.gating
    p = v.worst()
    assert p.violations["unstable"] == 1.0 and "closest pair" in p.observables["label"]
    assert p.observables["steps_done"] < 200 and p.observables["min_distance_ratio"] < 0.5  # stopped there
    assert p.observables["label"].startswith(f"unstable at step {p.observables['steps_done']}:")
    assert p.atoms is not None and len(p.atoms) == 6  # the frame where it stopped is the worst configuration


def test_a_nan_mid_run_is_an_instability_and_a_nan_at_the_start_an_error():
    v = run_contract("nve-conservation", f"{M}:collapse_to_nan", **ONE_RUN)
    assert v.status == "fail"
    obs = v.worst().observables
    assert v.worst().violations["unstable"] == 1.0 and "non-finite model output" in obs["label"]
    assert obs["label"].startswith(f"unstable at step {obs['steps_done'] + 1}:")  # the step whose call gave NaN
    # the given structure itself gives NaN (a pair at 0.8 A, under 1 A): garbage output, not dynamics
    start = run_contract("nve-conservation", "tests.mutants:NanAtShortRange", temperatures=[300.0],
                         structures=[{"kind": "dimer", "elements": ["Cu", "Cu"], "distance": 0.8}])
    assert start.status == "error" and "non-finite energy" in start.reason


def test_runs_are_reproducible():
    a = run_contract("nve-conservation", "lennard-jones", **ONE_RUN).probes[0]
    b = run_contract("nve-conservation", "lennard-jones", **ONE_RUN).probes[0]
    assert a.observables["curve_dE"] == b.observables["curve_dE"]


def test_settings_are_checked():
    from pytest_mlip.laws.nve_conservation.check import NVESettings

    settings = builtin_contracts()["nve-conservation"]
    assert settings.hard and settings.basis == "exact" and settings.temperatures == [300.0, 1000.0]
    for bad in ({"temperatures": []}, {"temperatures": [-5.0]}, {"timestep": 10.0}, {"steps": 1},
                {"min_distance_fraction": 1.5}):
        with pytest.raises(ValueError):
            NVESettings.model_validate({**settings.model_dump(), **bad})


def test_the_law_is_collected_in_the_default_suite_and_reported_by_name(run):
    listed = run("--mlip=emt", "--mlip-committee=none", "--mlip-contracts")
    assert any(line.startswith("nve-conservation") and "nve_conservation" in line and "hard" in line
               for line in listed.stdout.lines), listed.stdout.str()[-2000:]
    result = run("--mlip=emt", "--mlip-committee=none", "-k", "nve-conservation", "--mlip-partial")
    assert result.ret == 0
    summary = result.stdout.str().split("mlip contracts")[-1]
    assert any(line.startswith("nve-conservation") and "pass" in line for line in summary.splitlines()), summary
