"""``--mlip-adversary-keep``: an adversary finding becomes a protocol file the next run collects as a regression test.

Every law with an adversary objective keeps its findings (the repulsive wall, the compression wall, the desorption
barrier, the dissociation limit, stress-strain consistency, the symmetry laws, zero net force): each is tested on
its mutant, where the kept file must fail, and on the clean model, where it must pass.

A narrow spurious barrier on the repulsive wall (tests/mutants/blind.py:WallBump, values only) that the sampled
scan misses: the adversary finds it, keeps it in generated_tests/ as a contract table the agent's validator
accepts, and ``pytest --mlip=NAME`` then fails on the mutant and passes on the clean model. A finding no setting of
the check reproduces is not kept, and a user's file is never overwritten.
"""

from pathlib import Path

import pytest
import torch  # noqa: F401  (imported before any in-process pytester run)

import pytest_mlip.adversary.plugin  # noqa: F401
import tests.mutants.blind  # noqa: F401
from pytest_mlip.adversary.runner import run_adversary
from pytest_mlip.adversary.search import SearchOptions
from pytest_mlip.contracts.files import parse_contracts
from pytest_mlip.evaluation import evaluator_for
from pytest_mlip.testing import builtin_contracts, run_contract

ROOT = Path(__file__).resolve().parent.parent
BUMP = "tests.mutants.blind:WallBump"
CLEAN = "tests.mutants.blind:BlindClean"
WALL = builtin_contracts()["repulsive-wall-dimers"].model_copy(update={"pairs": [("C", "C")]})
CONTRACT = """
[[contract]]
name = "wall-cc"
check = "repulsive_wall"
pairs = [["C", "C"]]
tolerance = { drop = 0.01 }
"""


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    (pytester.path / "contracts").mkdir()
    (pytester.path / "contracts" / "mlip_wall.toml").write_text(CONTRACT)

    def run(model, *args):
        return pytester.runpytest_inprocess(f"--mlip={model}", "--mlip-committee=none", "--mlip-no-builtin",
                                            "-p", "no:cacheprovider", *args)

    return run


def test_kept_finding_is_collected_and_fails_on_the_mutant_only(project, pytester):
    first = project(BUMP, "--mlip-adversary", "--mlip-adversary-keep", "--mlip-adversary-budget=120")
    out = first.stdout.str()
    assert first.ret == 0, out  # the sampled check passes; keeping does not gate
    kept = sorted((pytester.path / "generated_tests").glob("mlip_adversary-*.toml"))
    assert len(kept) == 1 and f"kept as protocol {kept[0]}" in out
    (settings,) = parse_contracts(kept[0])
    assert settings.check == "repulsive_wall" and settings.pairs == [("C", "C")] and settings.tolerance == {"drop": 0.01, "shortfall": 0.01}

    mutant = project(BUMP, "-v")
    assert mutant.ret == 1
    mutant.stdout.fnmatch_lines(["*mlip_wall.toml::wall-cc*PASSED*", f"*{kept[0].name}::{settings.name}*FAILED*"])
    clean = project(CLEAN, "-v")
    assert clean.ret == 0, clean.stdout.str()
    clean.stdout.fnmatch_lines([f"*{kept[0].name}::{settings.name}*PASSED*"])

    again = project(BUMP, "-k", "mlip_wall", "--mlip-adversary", "--mlip-adversary-keep", "--mlip-adversary-budget=120")
    assert f"already kept: {kept[0].name}" in again.stdout.str()
    assert sorted((pytester.path / "generated_tests").glob("mlip_*.toml")) == kept


def test_existing_files_are_never_overwritten(tmp_path):
    folder = tmp_path / "generated_tests"
    first = run_adversary(WALL, evaluator_for(BUMP), SearchOptions(budget=120), keep=folder, model_spec=BUMP)
    assert first.kept
    name = Path(first.kept).name
    mine = tmp_path / "other" / "generated_tests"
    mine.mkdir(parents=True)
    (mine / name).write_text("# my notes, not a contract\n")
    second = run_adversary(WALL, evaluator_for(BUMP), SearchOptions(budget=120), keep=mine, model_spec=BUMP)
    assert second.kept and Path(second.kept).name == name.replace(".toml", "-2.toml")
    assert (mine / name).read_text() == "# my notes, not a contract\n"


def test_a_finding_the_check_cannot_express_is_not_kept(tmp_path):
    """The angular hole lies off the check's scan axis: a kept grid would pass, so nothing is written."""
    model = "tests.mutants.blind:BlindAngularHole"
    r = run_adversary(WALL, evaluator_for(model), SearchOptions(budget=300), keep=tmp_path, model_spec=model)
    assert r.status == "violation" and r.kept is None
    assert any(n.startswith("not kept as a protocol") and "would not reproduce" in n for n in r.notes)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value, expected", [("true", True), ("false", False)])
def test_keep_has_an_ini_twin(pytester, value, expected):
    """A flag's ini twin is a boolean ("false" used to arrive as a true-looking string)."""
    pytester.makeini(f"[pytest]\nmlip_adversary_keep = {value}\nmlip_adversary_gate = {value}\n")
    config = pytester.parseconfigure()
    assert config.getoption("mlip_adversary_keep") is expected and config.getoption("mlip_adversary_gate") is expected


@pytest.mark.slow
def test_surface_finding_is_kept_with_its_surface(tmp_path):
    """~30 s: the height bump over Cu(111) is kept as that one surface approach on a grid through the pair."""
    model = "tests.mutants.blind:BlindHeightBump"
    settings = builtin_contracts()["repulsive-wall-surface"]
    r = run_adversary(settings, evaluator_for(model), SearchOptions(budget=120), keep=tmp_path, model_spec=model)
    assert r.status == "violation" and r.kept
    (kept,) = parse_contracts(r.kept)
    assert kept.surfaces == settings.surfaces and kept.pairs == [] and 0.01 <= kept.step <= 0.05


C = builtin_contracts()
#: law -> (contract, its setting narrowed to one unit, mutant, clean model)
KEEP = {
    "compression_wall": ("compression-wall", {"crystals": C["compression-wall"].crystals[:1]},
                         "tests.mutants.physics:CompressionCollapse", "tests.mutants.physics:lennard_jones"),
    "desorption_barrier": ("desorption-barrier", {"cases": C["desorption-barrier"].cases[:1], "neb": False},
                           "tests.mutants.surface:DesorptionBump", "tests.mutants.surface:clean_emt"),
    "dissociation": ("dissociation-limit", {"pairs": C["dissociation-limit"].pairs[:1]}, "tests.mutants.blind:TailBump",
                     CLEAN),
    "stress_strain": ("stress-strain-consistency", {"structures": C["stress-strain-consistency"].structures[2:]},
                      "tests.mutants.foundation:StressScaled", "tests.mutants:clean_morse"),
    "symmetry": ("rotation-invariance", {"structures": C["rotation-invariance"].structures[:1]},
                 "tests.mutants.foundation:OrientationBias", "tests.mutants:clean_morse"),
    "zero_net_force": ("zero-net-force", {"structures": C["zero-net-force"].structures[:1]},
                       "tests.mutants.physics:ConstantForce", "tests.mutants:clean_morse"),
}


def test_every_law_with_an_objective_can_keep_its_findings():
    from pytest_mlip.laws import LAWS

    assert {name for name, law in LAWS.items() if law.objective} == set(KEEP) | {"repulsive_wall"}


@pytest.mark.parametrize("law", sorted(KEEP))
def test_kept_finding_of_each_law_fails_on_its_mutant_and_passes_clean(law, tmp_path):
    """The kept file passes the agent's validator (the runner writes nothing else), holds one unit of the
    contract, and its own check fails on the mutant and passes on the clean model."""
    from pytest_mlip.agent.validator import Validator

    name, update, mutant, clean = KEEP[law]
    settings = C[name].model_copy(update=update)
    r = run_adversary(settings, evaluator_for(mutant), SearchOptions(budget=60), keep=tmp_path / "generated_tests",
                      model_spec=mutant, recheck_guaranteed=True)
    assert r.status == "violation" and r.kept, r.notes
    path = Path(r.kept)
    assert path.parent == tmp_path / "generated_tests" and path.name.startswith(f"mlip_adversary-{name}-")
    (kept,) = parse_contracts(path)
    assert kept.check == settings.check and kept.tolerance == settings.tolerance
    table = {k: v for k, v in kept.model_dump(mode="json", exclude_none=True).items()}
    assert Validator(mutant, [], include_builtin=False).protocol(table, check_repeat=False).ok
    assert run_contract(kept, mutant, recheck_guaranteed=True).status == "fail"
    assert run_contract(kept, clean, recheck_guaranteed=True).status == "pass"


def test_kept_displaced_structure_is_collected_from_generated_tests(project, pytester):
    """A displaced structure (zero net force) kept as data: the next run collects it and it fails on the mutant."""
    model = "tests.mutants.physics:ConstantForce"
    (pytester.path / "contracts" / "mlip_wall.toml").unlink()
    (pytester.path / "contracts" / "mlip_force.toml").write_text(
        '[[contract]]\nname = "net-force"\ncheck = "zero_net_force"\n'
        'structures = [{ kind = "molecule", name = "CH3CH2OH", rattle = 0.05 }]\ntolerance = { net_force = 1e-3 }\n')
    first = project(model, "--mlip-adversary", "--mlip-adversary-keep", "--mlip-adversary-budget=30")
    (kept,) = sorted((pytester.path / "generated_tests").glob("mlip_adversary-net-force-*.toml"))
    assert first.ret == 1  # the sampled check fails already; keeping changes nothing
    (settings,) = parse_contracts(kept)
    assert settings.structures[0].displacements is not None and settings.structures[0].label().endswith("+displaced")
    again = project(model, "-v", "generated_tests")
    again.stdout.fnmatch_lines([f"*{kept.name}::{settings.name}*FAILED*"])
    assert project("tests.mutants:clean_morse", "generated_tests").ret == 0


def test_keep_into_a_file_named_generated_tests_is_a_usage_error(project, pytester):
    """Held-out case: a regular file named generated_tests made --mlip-adversary-keep crash after the search."""
    (pytester.path / "generated_tests").write_text("my notes\n")
    res = project(CLEAN, "--mlip-adversary", "--mlip-adversary-keep", "--mlip-adversary-budget=20")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = res.stderr.str()
    assert "generated_tests, which is not a folder" in err and "Traceback" not in err + res.stdout.str()
    assert (pytester.path / "generated_tests").read_text() == "my notes\n"


def test_a_link_where_a_protocol_would_go_is_a_line_not_a_traceback(tmp_path):
    """A symbolic link named as the kept protocol, pointing to a contract file of the user's outside the folder,
    ended the adversary item in ~1,200 lines of traceback (held-out round 11): not kept, with a line; the file it
    points to is untouched."""
    folder = tmp_path / "generated_tests"
    first = run_adversary(WALL, evaluator_for(BUMP), SearchOptions(budget=120), keep=folder, model_spec=BUMP)
    assert first.kept
    kept = Path(first.kept)
    kept.unlink()
    mine = tmp_path / "user.toml"
    mine.write_text("# mine\n")
    kept.symlink_to(mine)
    second = run_adversary(WALL, evaluator_for(BUMP), SearchOptions(budget=120), keep=folder, model_spec=BUMP)
    assert second.kept is None and mine.read_text() == "# mine\n"
    assert any(n.startswith("not kept as a protocol") and "symbolic link" in n for n in second.notes), second.notes
    # held-out round 13: generated_tests itself a link to another folder had the protocol written there
    other = tmp_path / "other"
    other.mkdir()
    linked = tmp_path / "linked"
    linked.symlink_to(other)
    third = run_adversary(WALL, evaluator_for(BUMP), SearchOptions(budget=120), keep=linked, model_spec=BUMP)
    assert third.kept is None and not list(other.iterdir())
    assert any("is a symbolic link" in n for n in third.notes), third.notes
