"""The terminal summary says what the exit code does: gate, baseline update, legends only when they apply."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLEAN = "tests.mutants:clean_morse"
HOLE = "tests.mutants.foundation:ShortRangeHole"


WALL = ("-k", "repulsive-wall-dimers")


def _summary(result) -> str:
    out = result.stdout.str()
    return out[out.index("mlip contracts"):]


def test_clean_run_prints_no_failure_legend(run):
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", *WALL)
    assert result.ret == 0
    text = _summary(result)
    assert "no hard failure on the target" in text
    assert "FAIL:" not in text and "fail*:" not in text and "spread:" not in text


def test_failing_run_says_it_fails(run):
    result = run(f"--mlip={HOLE}", "--mlip-committee=none", *WALL)
    assert result.ret == 1
    text = _summary(result)
    assert "1 hard failure(s) on the target (fail the run)" in text
    assert "FAIL: hard contract failed on the target (fails the run)." in text and "fail*:" not in text


def test_update_then_gate_agree_with_the_exit_code(run, pytester):
    result = run(f"--mlip={HOLE}", "--mlip-committee=none", "--mlip-baseline=b.json", "--mlip-update-baseline", *WALL)
    assert result.ret == 0
    text = _summary(result)
    assert "FAILED" not in text and "gating failure" not in text
    assert "mlip baseline update" in text
    assert f"wrote {pytester.path / 'b.json'}: 1 entries" in text and "1 hard failure(s) on the target now recorded as known" in text
    assert "recorded in the baseline as known (a baseline update fails nothing)" in text

    result = run(f"--mlip={HOLE}", "--mlip-committee=none", "--mlip-baseline=b.json", *WALL)
    assert result.ret == 0
    text = _summary(result)
    assert "gate (regression margin 0.2 relative): passed" in text
    assert "0 new or regressed hard failure(s) on the target (fail the run), 1 known to the baseline (do not)" in text
    assert "unless the baseline knows it" in text


def test_a_law_whose_package_is_missing_says_so(monkeypatch):
    from types import SimpleNamespace

    from pytest_mlip.laws import CHECKS
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.reporting.verdicts import summary_lines
    from pytest_mlip.testing import builtin_contracts

    check = CHECKS["born_stability"]()
    assert set(check.requires) == {"pymatgen", "spglib"}
    monkeypatch.setattr(type(check), "requires", ("pymatgen", "no_such_package_for_this_test"))
    verdict = check.run(builtin_contracts()["born-stability"], evaluator_for("emt"))
    assert verdict.status == "skip"
    assert verdict.reason == ("missing dependency: no_such_package_for_this_test not installed, needed by the "
                              "born_stability check: pip install 'pytest-mlip[laws]'")
    state = SimpleNamespace(models=["emt"], target="emt", committee=[])
    lines = summary_lines([verdict.model_dump(mode="json")], state)
    assert f"NOT RUN born-stability: {verdict.reason}" in lines


def test_laws_extra_declares_what_laws_import():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    from pytest_mlip.laws import CHECKS

    needed = {p for c in CHECKS.values() for p in c.requires}
    assert needed <= set(extras["laws"]) and "pytest-mlip[sevennet,chgnet,diep,mace,orb,laws]" in extras["models"]
