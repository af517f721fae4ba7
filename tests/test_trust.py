"""Garbage in is an error out, and nothing is lost: usage errors, incomplete runs, the user's files, the store.

Each case runs the plugin in-process on the clean Morse reference or a garbage calculator
(tests/mutants/garbage.py). The bench with ~150 such cases is benchmarks/bad_inputs.py.
"""

import json
import sqlite3
from pathlib import Path

import pytest

import pytest_mlip.provenance.plugin  # noqa: F401  (kept in pytester's module snapshot)
import jinja2  # noqa: F401
import matplotlib.backends.backend_agg  # noqa: F401
import matplotlib.figure  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
CLEAN = "tests.mutants:clean_morse"
SMALL = ('[[contract]]\nname = "{name}"\ncheck = "symmetry"\ntransform = "translation"\nsamples = 1\n'
         'structures = [ {{ kind = "molecule", name = "NH3" }} ]\n')


@pytest.fixture
def run(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))

    def _run(*args, model=CLEAN):
        return pytester.runpytest_inprocess(f"--mlip={model}", "--mlip-committee=none", "-p", "no:cacheprovider",
                                            *args)

    return _run


def fresh_garbage_model():
    """tests.mutants.garbage:from_env reads its corruption when it loads: forget any earlier load."""
    from pytest_mlip.evaluation import evaluator as ev_mod
    from pytest_mlip.models import registry as reg_mod

    ev_mod._EVALUATORS.pop("tests.mutants.garbage:from_env", None)
    reg_mod._LOADED.pop("tests.mutants.garbage:from_env", None)


def contracts(pytester, **files):
    for rel, text in files.items():
        p = pytester.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def one_line_usage_error(res, *needles):
    assert res.ret == pytest.ExitCode.USAGE_ERROR, res.stdout.str()[-2000:]
    err = [ln for ln in res.stderr.str().strip().splitlines() if ln.strip()]
    assert len(err) == 1, err
    for n in needles:
        assert n in err[0], err[0]
    return err[0]


@pytest.mark.parametrize("structure, needles", [
    ('{ kind = "atom", element = "Xx" }', ["unknown element symbol 'Xx'"]),
    ('{ kind = "bulk", name = "Cu", a = 0.361 }', ["0.361", "Angstrom"]),
    ('{ kind = "bulk", name = "Cu", a = -3.6 }', ["lattice constant"]),
    ('{ kind = "bulk", name = "Cu", cubic = true, repeat = [20, 20, 20] }', ["32000 atoms", "max_atoms"]),
    ('{ kind = "file", path = "../../outside.xyz" }', ["outside the project"]),
    ('{ kind = "file", path = "missing.xyz" }', ["does not exist"]),
])
def test_contract_file_mistakes_are_usage_errors_before_any_model_call(run, pytester, structure, needles):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x").replace(
        '{ kind = "molecule", name = "NH3" }', structure)})
    one_line_usage_error(run("--mlip-no-builtin"), *needles)


@pytest.mark.parametrize("line, needles", [
    ('hard = "yes"', ["hard", "valid boolean", "'yes'"]),
    ("hard = 1", ["hard", "valid boolean"]),
    ("samples = \"2\"", ["samples"]),
    ("tolerance = { energy = 1e-9 }", ["noise floor", "use tolerance energy >="]),
])
def test_strict_values_and_the_noise_floor(run, pytester, line, needles):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x").replace("samples = 1\n", "samples = 1\n"
                                                                                     if "samples" in line else
                                                                                     "samples = 1\n" + line + "\n")
              .replace("samples = 1\n", line + "\n" if "samples" in line else "samples = 1\n", 1)})
    one_line_usage_error(run("--mlip-no-builtin"), *needles)


@pytest.mark.parametrize("text, needles", [
    ('[[contract]]\nname = "w"\ncheck = "repulsive_wall"\npairs = [["Cu", "Qq"]]\n', ["pairs", "unknown element", "'Qq'"]),
    ('[[contract]]\nname = "t"\ncheck = "dimer_tail"\nelements = ["Cu", "cu"]\n', ["elements", "'cu'"]),
    ('[[contract]]\nname = "c"\ncheck = "compression_wall"\nsearch = [1.6, 0.6]\n', ["search", "low < high"]),
])
def test_symbols_and_ranges_outside_structure_specs(run, pytester, text, needles):
    """Element symbols in dimer pairs and tail elements, and an ordered search window, are checked when read."""
    contracts(pytester, **{"contracts/mlip_x.toml": text})
    one_line_usage_error(run("--mlip-no-builtin"), *needles)


def test_factory_elements_are_probed_after_every_usage_check(run, pytester, monkeypatch):
    """A factory model without declared elements is not called before the contract files are read: a mistake in
    them stops the run with no model call (the element probe runs on first use)."""
    calls = pytester.path / "calls.log"
    pytester.makepyfile(countmodel=f'''
from ase.calculators.emt import EMT


class Counting(EMT):
    def calculate(self, *a, **k):
        with open({str(calls)!r}, "a") as fh:
            fh.write("call\\n")
        super().calculate(*a, **k)


def factory():
    return Counting()
''')
    monkeypatch.syspath_prepend(str(pytester.path))
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x") + 'hard = "yes"\n'})
    one_line_usage_error(run("--mlip-no-builtin", model="countmodel:factory"), "hard")
    assert not calls.exists()
    (pytester.path / "contracts" / "mlip_x.toml").write_text(SMALL.format(name="x"))
    assert run("--mlip-no-builtin", model="countmodel:factory").ret == 0
    assert calls.exists()


def test_missing_mlip_paths_folder_is_a_usage_error(run, pytester):
    pytester.makeini("[pytest]\nmlip_paths = nosuchdir\n")
    one_line_usage_error(run("--mlip-no-builtin"), "mlip_paths", "nosuchdir", "not a folder")


def test_non_utf8_contract_file(run, pytester):
    (pytester.path / "contracts").mkdir()
    (pytester.path / "contracts" / "mlip_x.toml").write_bytes(b'[[contract]]\nname = "caf\xe9"\n')
    one_line_usage_error(run("--mlip-no-builtin"), "not UTF-8", "save the file as UTF-8")


def test_duplicate_names_across_files_name_both(run, pytester):
    contracts(pytester, **{"contracts/mlip_a.toml": SMALL.format(name="same"),
                           "contracts/mlip_b.toml": SMALL.format(name="same")})
    msg = one_line_usage_error(run("--mlip-no-builtin"), "duplicate contract name 'same'")
    assert "mlip_a.toml" in msg and "mlip_b.toml" in msg


def test_near_miss_file_names_warn(run, pytester):
    contracts(pytester, **{"contracts/mlip_ok.toml": SMALL.format(name="ok"),
                           "contracts/mlip-gap.toml": SMALL.format(name="gap")})
    res = run("--mlip-no-builtin")
    assert res.ret == 0
    assert "mlip-gap.toml looks like a contract file but is not collected" in res.stdout.str()


def test_generated_tests_pass_the_agent_validator(run, pytester):
    contracts(pytester, **{"generated_tests/mlip_gen.toml": SMALL.format(name="gen").replace(
        "samples = 1\n", "samples = 1\ntolerance = { energy = 1e-5 }\n")})
    one_line_usage_error(run("--mlip-no-builtin"), "generated_tests/", "agent validator refuses it",
                         "tighter than the calibrated default")


def test_factory_that_raises_and_bad_environment(run, pytester, monkeypatch):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x"),
                           "myfactory.py": "def make():\n    raise RuntimeError('no weights at /x')\n"})
    monkeypatch.syspath_prepend(str(pytester.path))
    one_line_usage_error(run("--mlip-no-builtin", model="myfactory:make"), "raised RuntimeError: no weights at /x",
                         "--mlip-debug")
    monkeypatch.setenv("PYTEST_MLIP_THREADS", "abc")
    one_line_usage_error(run("--mlip-no-builtin"), "PYTEST_MLIP_THREADS='abc'")


def test_report_folder_of_the_user_is_refused_and_ours_is_replaced(run, pytester):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x"), "docs/figures/mine.png": "user",
                           "docs/worst/notes.txt": "user"})
    one_line_usage_error(run("--mlip-no-builtin", "--mlip-report=docs"), "not empty", ".pytest-mlip-report")
    assert (pytester.path / "docs/figures/mine.png").read_text() == "user"
    assert run("--mlip-no-builtin", "--mlip-report=rep").ret == 0
    assert (pytester.path / "rep" / ".pytest-mlip-report").is_file()
    assert run("--mlip-no-builtin", "--mlip-report=rep").ret == 0  # a folder we wrote is replaced


def test_foreign_and_damaged_stores_are_refused_untouched(run, pytester):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x")})
    app = pytester.path / "app.db"
    db = sqlite3.connect(app)
    db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    db.commit()
    db.close()
    before = app.read_bytes()
    one_line_usage_error(run("--mlip-no-builtin", f"--mlip-store={app}"), "another program", "customers")
    assert app.read_bytes() == before
    assert run("--mlip-no-builtin", "--mlip-store=s.sqlite").ret == 0
    store = pytester.path / "s.sqlite"
    raw = bytearray(store.read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 2048] = b"\xab" * 2048
    store.write_bytes(bytes(raw))
    one_line_usage_error(run("--mlip-no-builtin", "--mlip-store=s.sqlite"), "s.sqlite", "move it aside")
    assert store.read_bytes() == bytes(raw)


def test_timeout_is_an_error_verdict_and_the_run_goes_on(run, pytester, monkeypatch):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x") + SMALL.format(name="y").replace(
        "NH3", "H2O")})
    monkeypatch.setenv("MLIP_TEST_CORRUPTION", "hang:3")
    monkeypatch.setenv("MLIP_TEST_CORRUPTION_MIN_ATOMS", "4")  # NH3 hangs, H2O does not
    fresh_garbage_model()
    res = run("--mlip-no-builtin", "--mlip-timeout=1", model="tests.mutants.garbage:from_env")
    assert res.ret == 1
    out = res.stdout.str()
    assert "timed out after 1 s (--mlip-timeout)" in out and "y[tests.mutants.garbage:from_env] PASSED" not in out
    assert "error verdicts: x[tests.mutants.garbage:from_env]" in out


def test_crashed_item_makes_the_run_incomplete(run, pytester, monkeypatch):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x")})
    monkeypatch.setattr("pytest_mlip.laws.symmetry.check.Symmetry.measure",
                        lambda *a, **k: (_ for _ in ()).throw(ZeroDivisionError("boom")))
    res = run("--mlip-no-builtin", "--mlip-summary-md=s.md", "--mlip-report=rep")
    assert res.ret == 1
    out = res.stdout.str()
    assert "did not finish: ZeroDivisionError: boom" in out and "Traceback" not in out
    data = json.loads((pytester.path / "rep" / "report.json").read_text())
    assert data["incomplete"]["crashed"] == ["x[tests.mutants:clean_morse]"]
    assert (pytester.path / "s.md").read_text().startswith("### pytest-mlip on `tests.mutants:clean_morse`: "
                                                             "INCOMPLETE run")


def test_skipping_guaranteed_laws_is_an_explicit_opt_out(run, pytester):
    res = run("-k", "energy-force-consistency or jacobian-symmetry", "--mlip-skip-guaranteed",
              "--mlip-summary-md=s.md")
    out = res.stdout.str()
    assert "OPT-OUT: --mlip-skip-guaranteed" in out and "energy-force-consistency  - skip" in out
    assert "Opt-out: `--mlip-skip-guaranteed`" in (pytester.path / "s.md").read_text()


def test_a_model_broken_everywhere_gets_one_line(run, pytester, monkeypatch):
    contracts(pytester, **{"contracts/mlip_x.toml": SMALL.format(name="x") + SMALL.format(name="y")})
    monkeypatch.setenv("MLIP_TEST_CORRUPTION", "energy:string")
    monkeypatch.setenv("MLIP_TEST_CORRUPTION_MIN_ATOMS", "0")
    fresh_garbage_model()
    res = run("--mlip-no-builtin", model="tests.mutants.garbage:from_env")
    assert res.ret == 1
    broken = [ln for ln in res.stdout.lines if ln.startswith("MODEL BROKEN:")]
    assert len(broken) == 1 and "invalid energy: got a str ('0.0')" in broken[0]
