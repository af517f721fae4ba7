"""The fixtures a model developer writes tests with: ``mlip_model`` and ``mlip_check``.

tests/data/user_project/test_my_model.py is such a file (the README's example):
run on a clean analytic model (emt) with a planted-defect committee member,
and with the mutant as the target.
"""

import json
import sqlite3
from pathlib import Path

import pytest

from pytest_mlip.laws import CHECKS
from pytest_mlip.errors import MlipError
from pytest_mlip.fixtures import settings_for

ROOT = Path(__file__).resolve().parent.parent
USER_FILE = ROOT / "tests" / "data" / "user_project" / "test_my_model.py"
HOLE = "tests.mutants.foundation:ShortRangeHole"


@pytest.fixture
def run(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile(test_my_model=USER_FILE.read_text())

    def _run(*args):
        return pytester.runpytest_inprocess(*args, "-p", "no:cacheprovider")

    return _run


def test_each_test_runs_per_model_and_committee_violation_is_reported(run, pytester):
    result = run("--mlip=emt", f"--mlip-committee={HOLE}", "test_my_model.py", "-v", "--mlip-report=rep")
    assert result.ret == 0
    out = result.stdout.str()
    # ids are the model names, the target first
    result.stdout.fnmatch_lines(["*test_copper_wall[[]emt[]] PASSED*",
                                 f"*test_copper_wall[[]{HOLE}[]] VIOLATED*",
                                 "*test_copper_relaxes_to_a_minimum[[]emt[]] PASSED*"])
    # the summary table has a row per test, the committee failure marked non-gating, with its number
    row = next(line for line in out.splitlines() if line.startswith("test_copper_wall "))
    assert "0 pass" in row and "fail*" in row
    assert "test_copper_wall on tests.mutants.foundation:ShortRangeHole: worst probe Cu-Cu: drop=" in out
    # the report carries it like any contract's verdict
    data = json.loads((pytester.path / "rep" / "report.json").read_text())
    verdicts = {(v["contract"], v["model"]): v for v in data["verdicts"]}
    v = verdicts[("test_copper_wall", HOLE)]
    assert v["status"]["text"] == "fail" and v["role"] == "committee" and not v["gating"]
    assert v["reproduce"].endswith(f"'test_my_model.py::test_copper_wall[{HOLE}]'")
    assert verdicts[("test_copper_wall", "emt")]["status"]["text"] == "pass"
    assert ("rotation-invariance", "emt") not in verdicts  # the built-in suite was not collected


def test_violated_hard_check_on_the_target_fails_the_test(run):
    result = run(f"--mlip={HOLE}", "--mlip-committee=emt", "test_my_model.py", "-k", "wall")
    assert result.ret == 1
    out = result.stdout.str()
    assert "test_copper_wall FAILED on tests.mutants.foundation:ShortRangeHole (hard, exact)" in out
    assert "worst configuration:" in out and "test_copper_wall.extxyz" in out
    assert f"reproduce: pytest --mlip={HOLE} --mlip-committee=none --mlip-partial 'test_my_model.py::test_copper_wall[{HOLE}]'" in out
    result.stdout.fnmatch_lines(["*1 failed, 1 passed*"])


def test_calc_goes_through_the_evaluator_and_is_recorded(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile(test_relax="""
        from ase.build import bulk
        from ase.optimize import BFGS

        def test_relax(mlip_model):
            atoms = bulk("Cu", "fcc", a=3.6917, cubic=True)  # a configuration no other test computes
            atoms.rattle(0.03, seed=7)
            atoms.calc = mlip_model.calc
            BFGS(atoms, logfile=None).run(fmax=0.05, steps=50)
    """)
    result = pytester.runpytest_inprocess("--mlip=emt", "--mlip-committee=none", "test_relax.py",
                                          "-p", "no:cacheprovider")
    assert result.ret == 0
    con = sqlite3.connect(pytester.path / ".mlip" / "provenance.sqlite")
    kinds = dict(con.execute("select kind, count(*) from artifacts group by kind").fetchall())
    con.close()
    assert kinds.get("evaluation", 0) > 3, kinds  # every BFGS step's model call is an artifact


def test_without_mlip_the_tests_skip_with_the_reason(run):
    result = run("test_my_model.py", "-rs")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*3 skipped*"])
    assert "run with --mlip=MODEL" in result.stdout.str()


def test_baseline_knows_a_fixture_failure(run, pytester):
    args = (f"--mlip={HOLE}", "--mlip-committee=none", "test_my_model.py", "-k", "wall", "--mlip-baseline=b.json")
    assert run(*args, "--mlip-update-baseline").ret == 0
    assert run(*args).ret == 0  # known failure: does not fail the gate


def test_model_object(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile(test_m="""
        def test_m(mlip_model):
            assert mlip_model.name == "emt" and mlip_model.role == "target"
            assert "Cu" in mlip_model.info.elements and mlip_model.info.family == "analytic"
            from ase.build import bulk
            a = bulk("Cu"); a.calc = mlip_model.calc
            e = a.get_potential_energy()
            b = bulk("Cu"); b.calc = mlip_model.calc
            assert b.get_potential_energy() == e
            assert mlip_model.evaluator.stats.hits >= 1  # the second call came from the cache
    """)
    result = pytester.runpytest_inprocess("--mlip=emt", "--mlip-committee=none", "test_m.py", "-p",
                                          "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()


def test_settings_for_check_contract_object_and_errors():
    s = settings_for("repulsive_wall", "t", {"pairs": [["Cu", "Cu"]]})
    assert s.check == "repulsive_wall" and s.name == "t" and s.pairs == [("Cu", "Cu")]
    s = settings_for("repulsive-wall-dimers", "t", {"pairs": [["Cu", "Cu"]], "hard": False})
    assert s.name == "t" and not s.hard and s.tolerance == {"drop": 0.01, "shortfall": 0.01} and s.r_inner == 0.3
    obj = CHECKS["repulsive_wall"].Settings(name="x", pairs=[["Ni", "Ni"]], tolerance={"drop": 0.02})
    s = settings_for(obj, "t", {"step": 0.1})
    assert s.tolerance == {"drop": 0.02, "shortfall": 0.01} and s.step == 0.1 and s.name == "t"
    with pytest.raises(MlipError, match="did you mean repulsive_wall"):
        settings_for("repulsive_wal", "t", {})
    with pytest.raises(MlipError, match="invalid settings"):
        settings_for("repulsive_wall", "t", {"step": -1})


def test_mlip_paths_folder_with_fixture_tests_runs_beside_the_builtin_suite(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    (pytester.path / "physics").mkdir()
    (pytester.path / "physics" / "test_my_model.py").write_text(USER_FILE.read_text())
    pytester.makeini("[pytest]\nmlip_paths = physics\n")
    result = pytester.runpytest_inprocess("--mlip=emt", "--mlip-committee=none", "--collect-only", "-q",
                                          "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "physics/test_my_model.py::test_copper_wall[emt]" in out and "repulsive-wall-dimers[emt]" in out


def test_readme_example_is_the_tested_file():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Writing your own tests", 1)[1].split("\n## ", 1)[0]
    for name in ("test_copper_wall", "test_rotation_of_my_molecule", "test_copper_relaxes_to_a_minimum"):
        assert f"def {name}(" in section and f"def {name}(" in USER_FILE.read_text()
    assert 'mlip_check("repulsive_wall", pairs=[["Cu", "Cu"]])' in section


def test_a_test_that_never_calls_the_model_does_not_pass_the_gate(pytester, monkeypatch):
    """Held-out case (round 7): a test taking ``mlip_model`` and asserting True passed the gate on a model whose
    every energy is NaN: no verdict, no call. Such a run checked nothing on the target: INCOMPLETE, exit 1."""
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile(test_u="""
        def test_nothing(mlip_model):
            assert mlip_model.name
    """)
    result = pytester.runpytest_inprocess("--mlip=emt", "--mlip-committee=none", "test_u.py", "-p",
                                          "no:cacheprovider")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*nothing was checked on emt*none called the model*"])
    # a test whose model output comes from the cache did ask the model (the full suite's order gave one)
    pytester.makepyfile(test_u="""
        from ase.build import bulk

        def test_asks(mlip_model):
            a = bulk("Cu"); a.calc = mlip_model.calc
            assert a.get_potential_energy() == a.get_potential_energy()
    """)
    for _ in range(2):  # the second run's evaluator may answer from the process's cache
        result = pytester.runpytest_inprocess("--mlip=emt", "--mlip-committee=none", "test_u.py", "-p",
                                              "no:cacheprovider")
        assert result.ret == 0, result.stdout.str()
