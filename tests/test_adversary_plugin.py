"""``pytest --mlip=... --mlip-adversary`` end to end on planted-defect models (in-process pytester)."""

from pathlib import Path

import pytest
import torch  # noqa: F401  (imported before any in-process pytester run)

import pytest_mlip.adversary.plugin  # noqa: F401
import pytest_mlip.adversary.runner  # noqa: F401
import tests.mutants.narrow  # noqa: F401
from pytest_mlip.adversary.objectives import OBJECTIVES

ROOT = Path(__file__).resolve().parent.parent
HOLE = "tests.mutants.narrow:AngularHole"


@pytest.fixture
def run(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    # dissociation stands in for a contract with no search objective
    monkeypatch.delitem(OBJECTIVES, "dissociation")

    def _run(*args):
        return pytester.runpytest_inprocess(f"--mlip={HOLE}", "--mlip-committee=none", "-p", "no:cacheprovider",
                                            "-k", "repulsive-wall-dimers or dissociation-limit", "--mlip-partial", *args)

    return _run


def test_adversary_reports_apart_and_never_fails_the_run(run, pytester):
    result = run("--mlip-adversary", "--mlip-adversary-budget=60", "-v")
    out = result.stdout.str()
    assert result.ret == 0, out  # the sampled checks pass; the adversary finding does not change that
    assert "adversary::repulsive-wall-dimers[tests.mutants.narrow:AngularHole] PASSED" in out
    assert "mlip adversary (bounded search over Z" in out
    row = next(line for line in out.splitlines() if line.startswith("repulsive-wall-dimers") and "VIOLATION" in line)
    assert "0 pass" in row and "/60" in row and "forces" in row
    assert "no search objective (not searched): dissociation-limit (dissociation)" in out
    extxyz = pytester.path / ".mlip" / "adversary" / "tests.mutants.narrow_AngularHole" / "repulsive-wall-dimers.extxyz"
    script = extxyz.with_name("repulsive-wall-dimers_repro.py")
    assert extxyz.exists() and f"reproduce: python {script}" in out
    assert script.exists() and "repulsive-wall-dimers on tests.mutants.narrow:AngularHole: adversary v/tau =" in out
    # (the script itself is run in tests/test_adversary.py::test_found_value_is_recomputed_from_the_saved_file...)


def test_gate_turns_a_finding_into_a_failure(run):
    result = run("--mlip-adversary", "--mlip-adversary-budget=60", "--mlip-adversary-gate")
    out = result.stdout.str()
    assert result.ret == 1
    assert "failing because of --mlip-adversary-gate" in out
    assert "FAILED mlip_repulsive_wall.toml::adversary::repulsive-wall-dimers" in out
    assert "FAILED mlip_repulsive_wall.toml::repulsive-wall-dimers[" not in out  # the sampled item still passes


def test_without_the_flag_there_are_no_adversary_items(run):
    result = run("--collect-only", "-q")
    assert "adversary::" not in result.stdout.str()


@pytest.mark.parametrize("budget", ["0", "-3"])
def test_nonpositive_budget_is_a_usage_error(run, budget):
    result = run("--mlip-adversary", f"--mlip-adversary-budget={budget}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--mlip-adversary-budget='{budget}' is not a number of model evaluations (a whole number >= 1); give e.g."
            in result.stderr.str())


def test_rotation_search_on_a_model_with_stress_runs(pytester, monkeypatch):
    """The rotation objective rotates the stress tensor too: a model with stress (Lennard-Jones) must be searched,
    not crash (a moved import did, and no test searched rotations on a model with stress)."""
    monkeypatch.syspath_prepend(str(ROOT))
    result = pytester.runpytest_inprocess("--mlip=lennard-jones", "--mlip-committee=none", "-p", "no:cacheprovider",
                                          "-k", "rotation", "--mlip-partial", "--mlip-adversary",
                                          "--mlip-adversary-budget=12")
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert "rotation-invariance  lennard-jones" in out and "12/12" in out, out[-3000:]
