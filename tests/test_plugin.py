"""The plugin end to end: exit codes, committee, options, errors, summary table."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLEAN = "tests.mutants:clean_morse"
HOLE = "tests.mutants.foundation:ShortRangeHole"


def test_clean_target_passes_even_if_committee_violates(run):
    result = run(f"--mlip={CLEAN}", f"--mlip-committee={HOLE}", "-k", "repulsive-wall-dimers", "--mlip-partial")
    assert result.ret == 0
    out = result.stdout.str()
    assert "mlip contracts" in out and "violated" in out
    assert "fail*" in out  # committee failure shown as non-gating


def test_hard_failure_on_target_fails_the_run(run):
    result = run(f"--mlip={HOLE}", "--mlip-committee=none", "-k", "repulsive-wall-dimers")
    assert result.ret == 1
    out = result.stdout.str()
    assert "repulsive-wall-dimers FAILED" in out
    assert "worst configuration:" in out and ".extxyz" in out
    assert "reproduce: pytest --mlip=" in out


def test_committee_none_runs_target_alone(run):
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", "--collect-only", "-q")
    items = [line for line in result.stdout.lines if "::" in line]
    assert items and all(f"[{CLEAN}]" in line for line in items)


def test_committee_items_and_spread_column(run):
    result = run(f"--mlip={CLEAN}", "--mlip-committee=lennard-jones", "-k", "dissociation", "--mlip-partial")
    assert result.ret == 0
    out = result.stdout.str()
    assert "lennard-jones" in out and "spread" in out


def test_ini_defaults(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makeini(f"[pytest]\nmlip = {CLEAN}\nmlip_committee = none\nmlip_partial = true\n")
    result = pytester.runpytest_inprocess("-k", "dissociation", "-p", "no:cacheprovider")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*dissociation-limit*pass*"])


def test_unknown_model_suggests_close_names(run):
    result = run("--mlip=sevenet-0")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*unknown model 'sevenet-0'; did you mean sevennet-0*"])


def test_missing_weights_names_the_path(run):
    result = run("--mlip=mace-mp-0-medium", "--mlip-offline")
    assert result.ret != 0
    err = result.stderr.str()
    assert "not usable here" in err and ".cache" in err and "mace-mp-0-medium=" in err


def test_factory_returning_non_calculator(run):
    result = run("--mlip=tests.mutants:not_a_calculator", "--mlip-committee=none", "-k", "dissociation")
    assert result.ret != 0
    assert "not an ASE calculator" in result.stdout.str() + result.stderr.str()


def test_nan_model_gives_failed_verdict_with_configuration(run):
    result = run("--mlip=tests.mutants:NanAtShortRange", "--mlip-committee=none", "-k", "repulsive-wall-dimers")
    assert result.ret == 1
    out = result.stdout.str()
    assert "non-finite energy" in out and ".extxyz" in out


def test_raising_model_fails_probe_and_run_goes_on(run):
    result = run("--mlip=tests.mutants:RaisesOnLargeSystems", "--mlip-committee=none", "-k", "rotation or translation")
    out = result.stdout.str()
    assert result.ret == 1
    assert "simulated model crash on a large system" in out
    assert "translation-invariance" in out  # the next contract still ran


def test_malformed_contract_file_names_file_line_field(run, pytester):
    pytester.makefile(".toml", mlip_bad='[[contract]]\nname = "x"\ncheck = "symmetry"\ntransform = "shear"\n')
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", "--mlip-no-builtin", "mlip_bad.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # before any model call
    err = result.stderr.str()
    assert "mlip_bad.toml:4: contract[0].transform" in err and len(err.strip().splitlines()) == 1


def test_user_contract_file_in_project_contracts_folder(run, pytester):
    (pytester.path / "contracts").mkdir()
    (pytester.path / "contracts" / "mlip_mine.toml").write_text(
        '[[contract]]\nname = "my-rotation"\ncheck = "symmetry"\ntransform = "rotation"\n'
        'structures = [{kind = "molecule", name = "NH3"}]\n'
    )
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", "--collect-only", "-q")
    assert "my-rotation" in result.stdout.str()
    assert "repulsive-wall-dimers" in result.stdout.str()  # the built-in suite too


def test_mlip_list(run):
    result = run("--mlip-list")
    assert result.ret == 0
    out = result.stdout.str()
    for name in ("sevennet-0", "chgnet-0.3.0", "diep", "mace-mpa-0", "orb-v3-conservative-inf-omat", "emt"):
        assert name in out


@pytest.mark.slow
def test_runs_from_any_directory_after_install(tmp_path):
    """`pytest --mlip=...` in a folder with no tests collects the built-in suite."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--mlip=lennard-jones", "--mlip-committee=none",
                           "-q", "-p", "no:cacheprovider", "-k", "dissociation or rotation", "--mlip-partial"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "dissociation-limit" in proc.stdout and "rotation-invariance" in proc.stdout


def test_contract_marked_slow_is_left_out_by_marker_selection(run, pytester):
    pytester.makefile(".toml", mlip_big=(
        '[[contract]]\nname = "big-wall"\ncheck = "repulsive_wall"\nslow = true\n'
        'pairs = [["Cu", "Cu"]]\ntolerance = { drop = 0.01 }\n'))
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", "--mlip-no-builtin", "mlip_big.toml",
                 "-m", "not slow")
    assert result.ret == 1  # nothing left to run, and a hard contract left out: INCOMPLETE, exit 1 (not pytest's 5)
    result.stdout.fnmatch_lines(["*1 deselected*"])
    result = run(f"--mlip={CLEAN}", "--mlip-committee=none", "--mlip-no-builtin", "mlip_big.toml", "-m", "slow")
    assert result.ret == 0
