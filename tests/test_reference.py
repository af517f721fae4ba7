"""Reference calculations (--mlip-reference): decision table, cache, artifacts, budget, engines, report, verify.

A fake engine (an analytic Morse pair energy, counting its calls) stands in for DFT in the fast tests;
one small real PySCF calculation (H2 at PBE/def2-SVP, about a second) runs when pyscf is installed,
and the GPAW test skips with the reason when gpaw is not.
"""

import importlib.util
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from ase import Atoms

from pytest_mlip.laws import CHECKS
from pytest_mlip.errors import MlipError
from pytest_mlip.reference import engines as E
from pytest_mlip.reference.cards import CONFIRMED, REFUTED, UNDECIDED, Band, ProbeCase, card_for
from pytest_mlip.reference.settle import Budget, Cache, config_key, settle
from pytest_mlip.testing import builtin_contracts

ROOT = Path(__file__).resolve().parent.parent
CLEAN = "tests.mutants:clean_morse"
R0, A = 2.05, 1.0  # the fake reference: bond length (A), Morse width (1/A)


class FakeEngine(E.Engine):
    """Morse pairs (D 2 eV, width A, bond length R0) plus -10 eV per atom; 1 s per point; counts calls."""

    name = "fake"
    module = "json"
    extra = "nothing to install"
    periodic = False
    calls = 0
    unconverged: set = set()

    @classmethod
    def default_method(cls):
        return E.Method(engine="fake", functional="PBE", basis="morse")

    def compute(self, atoms, deadline=None):
        type(self).calls += 1
        e = -10.0 * len(atoms)
        for i in range(len(atoms)):
            for j in range(i + 1, len(atoms)):
                r = atoms.get_distance(i, j)
                x = math.exp(-A * (r - R0))
                e += 2.0 * (x * x - 2 * x)
        if round(float(atoms.get_all_distances().max()), 3) in self.unconverged:
            return E.Result(None, False, 1.0, E.unpaired(atoms), {"strategy": "fake"})
        return E.Result(e, True, 1.0, E.unpaired(atoms), {"strategy": "fake"})


@pytest.fixture
def fake(monkeypatch):
    FakeEngine.calls = 0
    FakeEngine.unconverged = set()
    monkeypatch.setitem(E.ENGINES, "fake", FakeEngine)
    return FakeEngine()


def tail_case(f_model: float, r_eq: float = 2.1):
    settings = builtin_contracts()["dimer-tail"]
    probe = next(p for p in CHECKS["dimer_tail"]().probes(settings) if p.id.startswith("Cu2"))
    return settings, ProbeCase("dimer-tail", probe.id, probe, {"tail_fraction": f_model, "r_eq": r_eq,
                                                               "tail": abs(f_model)}, tolerance={"tail": 0.1})


def fake_f_ref() -> float:
    x = lambda r: math.exp(-A * (r - R0))  # noqa: E731
    return (x(4.5) ** 2 - 2 * x(4.5)) / -1.0


# --- the decision table ------------------------------------------------------------------------------------------


def test_band_is_floor_or_three_times_the_measured_spread():
    card = card_for("dimer_tail")
    settings, case = tail_case(0.2)
    band = card.band(settings, case, 0.05)
    assert band.spread == card.spread["Cu"] and math.isclose(band.half_width, 3 * card.spread["Cu"])
    assert "GPAW" in band.spread_source and "PySCF" in band.spread_source
    # an element without a measured spread gets the largest measured one, and says so
    other = ProbeCase("dimer-tail", "W2@4.5A", None, {}, tolerance={})
    b2 = card.band(settings, other, 0.05)
    assert b2.spread == max(card.spread.values()) and "not measured for W" in b2.spread_source
    # the desorption card's floor is the law's tau
    des = card_for("desorption_barrier")
    s = builtin_contracts()["desorption-barrier"]
    assert des.band(s, ProbeCase("d", "CO", None, {}, tolerance={"barrier": 0.05}), 0.02).half_width == 0.05


@pytest.mark.parametrize("model,expected", [(0.2, CONFIRMED), (-0.1, CONFIRMED), (0.06, REFUTED), (0.03, REFUTED)])
def test_decision_table(model, expected):
    card = card_for("dimer_tail")
    band = Band(center=0.05, half_width=0.03, floor=0.0, spread=0.01, spread_source="test")
    decision, reason = card.decide(model, band)
    assert decision == expected
    assert ("outside" if expected == CONFIRMED else "inside") in reason
    rows = [d for _, d in card.table_rows()]
    assert rows[-3:] == [CONFIRMED, REFUTED, UNDECIDED]


def test_settle_confirms_refutes_and_records_artifacts(fake, tmp_path):
    card = card_for("dimer_tail")
    f_ref = fake_f_ref()
    settings, case = tail_case(f_ref + 0.2)
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(None), parents={"tail_fraction": "m" * 32})
    assert st.decision == CONFIRMED and math.isclose(st.observables["tail_fraction"], f_ref, rel_tol=0.01)
    assert st.observables["r_eq"] == pytest.approx(R0, abs=0.03)
    # every point is an artifact recording engine, version, functional, basis, spin, convergence, seconds
    points = [a for a in st.artifacts if a.kind == "reference"]
    assert len(points) == 5 == FakeEngine.calls
    for a in points:
        assert {"engine", "version", "functional", "basis"} <= set(a.params)
        assert {"energy", "converged", "seconds", "spin"} <= set(a.value) and a.value["converged"] is True
        assert a.verifies()
    atom = next(a for a in points if a.params["config"] == "atom")
    assert atom.value["spin"] == 1  # Cu atom: one unpaired electron
    obs = {a.params["name"]: a for a in st.artifacts if a.kind == "observable"}
    assert set(obs) >= {"tail_fraction", "well_depth", "r_eq"}  # named as the model's observables
    assert set(obs["tail_fraction"].parents) == {a.id for a in points}
    dec = next(a for a in st.artifacts if a.kind == "reference_decision")
    assert dec.value == CONFIRMED and "m" * 32 in dec.parents and obs["tail_fraction"].id in dec.parents
    assert dec.params["band"]["lo"] < f_ref < dec.params["band"]["hi"]
    assert st.ids["decision"] == dec.id and st.ids["observables"]["tail_fraction"] == obs["tail_fraction"].id
    # a model inside the band is refuted (same reference: all five points from the cache)
    _, inside = tail_case(f_ref + 0.005)
    st2 = settle(card, settings, inside, fake, Cache(tmp_path), Budget(None))
    assert st2.decision == REFUTED and FakeEngine.calls == 5


def test_an_edited_cache_entry_is_computed_again(fake, tmp_path):
    """Held-out round 14: a cache entry whose energy was shifted by hand (valid JSON) was trusted and flipped the
    decision with 0 points computed. An entry whose digest does not match its values is computed again."""
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)
    first = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    calls = FakeEngine.calls
    entry = next(tmp_path.glob("*.json"))
    data = json.loads(entry.read_text())
    data["energy"] += 0.03
    entry.write_text(json.dumps(data))
    again = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    assert FakeEngine.calls == calls + 1 and sum(not p["cached"] for p in again.points) == 1
    assert [a.id for a in first.artifacts] == [a.id for a in again.artifacts]  # the true value, computed again
    assert json.loads(entry.read_text())["energy"] == data["energy"] - 0.03


def test_cache_by_configuration_and_method(fake, tmp_path):
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)
    first = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    second = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    assert FakeEngine.calls == 5 and all(p["cached"] for p in second.points)
    assert [a.id for a in first.artifacts] == [a.id for a in second.artifacts]  # a rerun cites the same artifacts
    assert second.seconds == 0.0
    other = FakeEngine(E.Method(engine="fake", functional="PBE0", basis="morse"))
    atoms = Atoms("Cu2", positions=[[0, 0, 0], [0, 0, R0]])
    assert config_key(atoms, fake) != config_key(atoms, other)
    moved = atoms.copy()
    moved.positions[1, 2] += 1e-3
    assert config_key(atoms, fake) != config_key(moved, fake)
    settle(card, settings, case, other, Cache(tmp_path), Budget(None))
    assert FakeEngine.calls == 10  # another method is another reference


def test_non_convergence_is_undecided(fake, tmp_path):
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)
    FakeEngine.unconverged = {4.5}
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(None), parents={"tail_fraction": "m" * 32})
    assert st.decision == UNDECIDED and "did not converge on tail" in st.reason
    assert not st.observables
    bad = [a for a in st.artifacts if a.kind == "reference" and not a.value["converged"]]
    assert len(bad) == 1 and bad[0].value["energy"] is None
    dec = next(a for a in st.artifacts if a.kind == "reference_decision")
    assert dec.value == UNDECIDED and bad[0].id in dec.parents


def test_an_unbracketed_reference_minimum_is_undecided(fake, tmp_path):
    """Points around a model r_eq far from the reference's give only bounds: no decision on them."""
    settings, case = tail_case(0.3, r_eq=2.6)
    st = settle(card_for("dimer_tail"), settings, case, fake, Cache(tmp_path), Budget(None))
    assert st.decision == UNDECIDED and "not bracketed" in st.reason and "2.45" in st.reason


def test_a_crashed_engine_is_undecided_and_not_cached(fake, tmp_path, monkeypatch):
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)

    def crash(self, atoms, deadline=None):
        raise E.EngineFailure("fake exited 1: segmentation fault")

    monkeypatch.setattr(FakeEngine, "compute", crash)
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    assert st.decision == UNDECIDED and "engine failed" in st.reason and not list(tmp_path.iterdir())

    def refuse(self, atoms, deadline=None):  # the engine's own error (held-out round 11: PySCF's RuntimeError
        raise RuntimeError("Electron number 6 and spin 1 are not consistent")  # made the item crash)

    monkeypatch.setattr(FakeEngine, "compute", refuse)
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    assert st.decision == UNDECIDED and "engine crashed" in st.reason and "RuntimeError: Electron number" in st.reason


def test_a_lone_atom_starts_from_a_spin_of_its_parity():
    """A carbon asked for a moment of 1 made PySCF refuse the broken-symmetry guess (held-out round 11)."""
    assert [E.atom_spin(6, 1.0), E.atom_spin(1, 1.0), E.atom_spin(1, 0.0), E.atom_spin(8, 2.0),
            E.atom_spin(7, 2.0), E.atom_spin(26, -4.0)] == [0, 1, 1, 2, 1, 4]


def test_outside_the_engine_domain_is_undecided(fake, tmp_path):
    from ase.build import fcc111

    settings = builtin_contracts()["desorption-barrier"]
    slab = fcc111("Cu", (2, 2, 3), vacuum=10.0)
    peak = slab + Atoms("CO", positions=slab.positions[-1] + [[0, 0, 3.0], [0, 0, 4.15]])
    case = ProbeCase("desorption-barrier", "CO/Cu(111)-ontop", None,
                     {"rise": 0.2, "dz_at_max": 1.0, "adsorbate": "CO"}, worst_atoms=peak,
                     tolerance={"barrier": 0.05})
    card = card_for("desorption_barrier")
    configs = card.configurations(settings, case)
    assert [c.name for c in configs] == ["peak", "asymptote"]
    assert configs[1].atoms.positions[-1, 2] - peak.positions[-1, 2] == pytest.approx(settings.dz_max - 1.0)
    assert np.allclose(configs[1].atoms.positions[:12], peak.positions[:12])  # the slab stays
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(None))
    assert st.decision == UNDECIDED and "outside the engine's domain" in st.reason and "gpaw" in st.reason
    assert FakeEngine.calls == 0
    # no interior maximum in the model's scan: nothing to settle
    flat = ProbeCase("desorption-barrier", "x", None, {"rise": 0.0, "dz_at_max": None, "adsorbate": "CO"},
                     worst_atoms=peak)
    assert "no interior maximum" in settle(card, settings, flat, fake, None, Budget(None)).reason


def test_budget_stops_computing_but_not_cache_hits(fake, tmp_path):
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)
    budget = Budget(2.5)  # fake points cost 1 s each: three computed, then the budget is spent
    st = settle(card, settings, case, fake, Cache(tmp_path), budget)
    assert st.decision == UNDECIDED and "budget spent" in st.reason and FakeEngine.calls == 3
    st = settle(card, settings, case, fake, Cache(tmp_path), Budget(10))
    assert st.decision == CONFIRMED and FakeEngine.calls == 5  # the three cached points were free


def test_the_budget_stops_a_long_point(tmp_path):
    """A single point cannot outlive the budget: the engine gets the deadline and is stopped, nothing cached."""
    if importlib.util.find_spec("pyscf") is None:
        pytest.skip("pyscf not installed: pip install 'pytest-mlip[reference]'")
    card = card_for("dimer_tail")
    settings, case = tail_case(0.3)
    budget = Budget(0.01)
    st = settle(card, settings, case, E.engine("pyscf"), Cache(tmp_path), budget)
    assert st.decision == UNDECIDED and "budget spent during configuration atom" in st.reason
    assert "pyscf stopped after" in st.reason and not list(tmp_path.iterdir())
    assert budget.exhausted


def test_missing_engine_is_one_line_naming_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("pyscf", "gpaw")
                        else real(name, *a))
    with pytest.raises(E.MissingEngine) as err:
        E.engine("pyscf")
    assert "\n" not in str(err.value) and "pip install 'pytest-mlip[reference]'" in str(err.value)
    with pytest.raises(E.MissingEngine) as err:
        E.engine("gpaw")
    assert "pip install gpaw gpaw-data" in str(err.value) and "README" in str(err.value)
    with pytest.raises(MlipError, match="unknown reference engine 'vasp'"):
        E.engine("vasp")


def test_engines_name_no_law():
    src = (ROOT / "pytest_mlip" / "reference" / "engines.py").read_text()
    assert "contracts" not in src and "cards" not in src
    for check in CHECKS:
        if "_" in check:
            assert check not in src, f"engines.py names the law {check}"


def test_pyscf_refuses_periodic_cells():
    if importlib.util.find_spec("pyscf") is None:
        pytest.skip("pyscf not installed: pip install 'pytest-mlip[reference]'")
    from ase.build import fcc111

    why = E.PySCF().domain_error(fcc111("Cu", (1, 1, 2), vacuum=5.0))
    assert "periodic" in why and "gpaw" in why


# --- the plugin, the report, the judge, verify ---------------------------------------------------------------------

TAIL_TOML = """
[[contract]]
name = "tail-cu"
check = "dimer_tail"
hard = false
elements = ["Cu"]
distance = 4.5
tolerance = { tail = 1e-6 }
"""


@pytest.fixture
def run(pytester, monkeypatch, fake):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makefile(".toml", mlip_tail=TAIL_TOML)

    def _run(*args):
        return pytester.runpytest_inprocess(f"--mlip={CLEAN}", "--mlip-committee=none", "mlip_tail.toml",
                                            "-p", "no:cacheprovider", *args)

    return _run


def test_plugin_settles_failing_probes_into_the_report_and_the_judge_passes(run, pytester):
    res = run("--mlip-reference=fake", "--mlip-report=rep")
    assert res.ret == 0, res.stdout.str()
    out = res.stdout.str()
    assert "mlip reference" in out and "tail-cu Cu2@4.5A: CONFIRMED" in out
    data = json.loads((pytester.path / "rep" / "report.json").read_text())
    probe = data["verdicts"][0]["probes"][0]
    ref = probe["reference"]
    assert ref["engine"] == "fake" and ref["decision"]["text"] == CONFIRMED
    assert set(ref["observables"]) <= set(probe["observables"]) | set(probe["violations"])
    assert math.isclose(ref["observables"]["tail_fraction"]["value"], fake_f_ref(), rel_tol=0.02)
    assert len(ref["points"]) == 5 and all(p["value"]["converged"] for p in ref["points"].values())
    # reference points on the model's tail curve, anchored like it (zero at the tail distance), drawn in its figure
    assert ref["curve"]["x"]["values"][-1] == 4.5 and ref["curve"]["y"]["values"][-1] == 0.0
    assert "curve_r" in probe["series"] and list((pytester.path / "rep" / "figures").glob("curves-tail-cu-*.png"))
    from pytest_mlip.reporting.figures import curve_sets

    assert curve_sets(data)[0]["probes"][0]["reference"]["label"] == "fake PBE/morse"
    md = (pytester.path / "rep" / "report.md").read_text()
    assert "Reference" in md and "confirmed" in md
    from pytest_mlip.reporting.judge import judge_file

    for fmt in ("report.md", "report.json"):
        result = judge_file(pytester.path / "rep" / fmt)
        assert result.ok, "\n".join(f.line() for f in result.failed)
    # a rerun computes nothing (cache by configuration and method)
    calls = FakeEngine.calls
    assert run("--mlip-reference=fake").ret == 0 and FakeEngine.calls == calls


def test_plugin_options_are_ini_settable_and_checked(run, pytester):
    pytester.makeini("[pytest]\nmlip_reference = fake\nmlip_reference_budget = 0.5\n")
    res = run()
    assert res.ret == 0 and "budget spent" in res.stdout.str() and FakeEngine.calls == 1
    res = run("--mlip-reference-budget=-1")
    assert res.ret == 4 and "--mlip-reference-budget='-1' is not a number of engine seconds (a finite number > 0)" in res.stderr.str()


def test_missing_engine_is_a_usage_error(run, monkeypatch):
    monkeypatch.setattr(FakeEngine, "module", "no_such_module_here")
    res = run("--mlip-reference=fake")
    assert res.ret == 4
    err = [line for line in res.stderr.lines if "no_such_module_here" in line]
    assert len(err) == 1 and "nothing to install" in err[0]


def test_verify_an_escalation_folder(fake, tmp_path, monkeypatch):
    from pytest_mlip.cli import main

    monkeypatch.syspath_prepend(str(ROOT))
    folder = tmp_path / "h1-tail"
    folder.mkdir()
    (folder / "mlip_tail.toml").write_text(TAIL_TOML)
    (folder / "reproduce.py").write_text(f"MODELS = [{CLEAN!r}, 'lennard-jones']\n"
                                         "PROTOCOL = Path(__file__).with_name('mlip_tail.toml')\nTABLES = None\n")
    import pytest_mlip.reference.cli as cli

    monkeypatch.setattr(cli, "add_parser", _fake_choices(cli.add_parser))
    assert main(["verify", str(folder), "--engine", "fake"]) == 0
    out = json.loads((folder / "reference" / "verification.json").read_text())
    assert out["target"] == CLEAN and out["decisions"][0]["decision"] == CONFIRMED
    assert "confirmed" in (folder / "reference" / "verification.md").read_text()
    assert main(["verify", str(tmp_path), "--engine", "fake"]) == 2  # not an escalation folder: one-line error
    # the detective's other form: the protocol inline as TABLES (JSON)
    inline = tmp_path / "h2-inline"
    inline.mkdir()
    table = {"name": "h2-tail-scope", "check": "dimer_tail", "hard": False, "basis": "disagreement",
             "elements": ["Cu"], "distance": 4.5, "tolerance": {"tail": 1e-6}}
    (inline / "reproduce.py").write_text(f"MODELS = [{CLEAN!r}]\nPROTOCOL = None\nTABLES = {json.dumps([table])}\n")
    assert main(["verify", str(inline), "--engine", "fake"]) == 0
    out = json.loads((inline / "reference" / "verification.json").read_text())
    assert out["decisions"][0]["protocol"] == "h2-tail-scope" and out["decisions"][0]["decision"] == CONFIRMED
    # held-out round 11: a module:factory target in the project (found through its ini file's pythonpath, as pytest
    # finds it) was not found by verify, whose message advised that very setting; and its store was made first
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "mymodel.py").write_text("from tests.mutants import clean_morse as factory\n")
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    mine = project / "h3-tail"
    mine.mkdir()
    (mine / "mlip_tail.toml").write_text(TAIL_TOML)
    (mine / "reproduce.py").write_text("MODELS = ['mymodel:factory']\n"
                                       "PROTOCOL = Path(__file__).with_name('mlip_tail.toml')\nTABLES = None\n")
    monkeypatch.chdir(project)
    assert main(["verify", str(mine), "--engine", "fake"]) == 0
    (mine / "reproduce.py").write_text("MODELS = ['nomodel:factory']\n"
                                       "PROTOCOL = Path(__file__).with_name('mlip_tail.toml')\nTABLES = None\n")
    import shutil

    shutil.rmtree(mine / "reference")
    assert main(["verify", str(mine), "--engine", "fake"]) == 2
    assert not (mine / "reference").exists()
    # held-out round 13: reference/ a link to a folder of the user's had verification.md written through it
    users = tmp_path / "users"
    users.mkdir()
    (users / "verification.md").write_text("my notes\n")
    (folder / "reference").rename(tmp_path / "old-reference")
    (folder / "reference").symlink_to(users)
    assert main(["verify", str(folder), "--engine", "fake"]) == 2
    assert (users / "verification.md").read_text() == "my notes\n" and sorted(p.name for p in users.iterdir()) == [
        "verification.md"]
    (folder / "reference").unlink()
    (tmp_path / "old-reference").rename(folder / "reference")
    assert main(["verify", str(folder), "--engine", "fake"]) == 0  # its own pages: replaced
    page = folder / "reference" / "verification.md"
    page.write_text(page.read_text() + "my note\n")  # edited since, or a file of the user's at that name: kept
    assert main(["verify", str(folder), "--engine", "fake"]) == 2
    assert page.read_text().endswith("my note\n")
    (inline / "reproduce.py").write_text("MODELS = ['tests.mutants:NanEverywhere']\nPROTOCOL = None\n"
                                         f"TABLES = {json.dumps([table])}\n")  # round 13: exit 0, an empty table
    assert main(["verify", str(inline), "--engine", "fake"]) == 1
    assert "**error**" in (inline / "reference" / "verification.md").read_text()
    (tmp_path / "cache.txt").write_text("mine\n")  # --cache naming a file of the user's: one line, not a traceback
    assert main(["verify", str(inline), "--engine", "fake", "--cache", str(tmp_path / "cache.txt")]) == 2
    assert (tmp_path / "cache.txt").read_text() == "mine\n"


def _fake_choices(add_parser):
    def wrapped(sub):
        p = add_parser(sub)
        for a in p._actions:
            if a.dest == "engine":
                a.choices = ("pyscf", "gpaw", "fake")
        return p

    return wrapped


# --- real engines --------------------------------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("pyscf") is None,
                    reason="pyscf not installed: pip install 'pytest-mlip[reference]'")
def test_pyscf_h2_tail_is_tiny_and_a_long_tail_is_confirmed(tmp_path):
    """Real PySCF, PBE/def2-SVP: H2 keeps essentially none of its 4.5 eV well at 4.5 A (about a second)."""
    eng = E.engine("pyscf")
    settings = builtin_contracts()["dimer-tail"]
    settings = type(settings).model_validate({**settings.model_dump(), "elements": ["H"]})
    probe = next(iter(CHECKS["dimer_tail"]().probes(settings)))
    case = ProbeCase("dimer-tail", probe.id, probe, {"tail_fraction": 0.2, "r_eq": 0.75}, tolerance={"tail": 0.1})
    st = settle(card_for("dimer_tail"), settings, case, eng, Cache(tmp_path), Budget(60))
    assert all(p["converged"] for p in st.points), st.points
    assert st.observables["well_depth"] == pytest.approx(4.5, abs=0.4)  # PBE De of H2 ~ 4.5 eV
    assert st.observables["r_eq"] == pytest.approx(0.75, abs=0.05)  # a parabola through three points
    assert abs(st.observables["tail_fraction"]) < 0.01
    assert st.decision == CONFIRMED
    point = next(a for a in st.artifacts if a.kind == "reference")
    assert point.params["engine"] == "pyscf" and point.params["basis"] == "def2-SVP"
    assert point.params["version"] == importlib.import_module("pyscf").__version__


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gpaw") is None,
                    reason="gpaw not installed (system libraries and pip install gpaw gpaw-data: see the README)")
def test_gpaw_co_single_point():
    r = E.engine("gpaw").compute(Atoms("CO", positions=[[0, 0, 0], [0, 0, 1.14]]))
    assert r.converged and r.energy == pytest.approx(-14.8, abs=1.5) and r.details["kpts"] == [1, 1, 1]
