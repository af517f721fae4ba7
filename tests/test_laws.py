"""One home per law: the registry, the coverage table, and engines that name no law."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from pytest_mlip.cli import main
from pytest_mlip.laws import CHECKS, ENGINES, LAWS, Law
from pytest_mlip.laws.law import LawRecordError, coverage_text

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "pytest_mlip"


def test_every_check_has_a_law_folder_with_a_record():
    assert set(LAWS) == set(CHECKS)
    folders = {p.name for p in (PKG / "laws").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAWS)
    for name, law in LAWS.items():
        assert law.package == f"pytest_mlip.laws.{name}"
        assert law.check.__module__ == f"pytest_mlip.laws.{name}.check"


def test_each_engine_is_served_or_opted_out_with_a_reason():
    for name, law in LAWS.items():
        cov = law.coverage()
        assert set(cov) == set(ENGINES), name
        for engine, (served, detail) in cov.items():
            assert detail.strip(), (name, engine)
        if law.objective:
            cls = law.objective_class()
            assert cls.check == name
        if law.playbook:
            assert law.playbook_class().check == name
        if law.card:
            assert law.card_object().check == name
        if law.calibration:
            assert callable(law.calibration_function())
        module, _, attr = law.mutant.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), law.mutant


def test_a_record_without_an_engine_or_a_reason_is_refused():
    check = CHECKS["zero_net_force"]
    with pytest.raises(LawRecordError, match="no adversary"):
        Law(check=check, mutant="m:x", opt_out={"detective": "x", "reference": "x", "figure": "x",
                                                "calibration": "x"})
    with pytest.raises(LawRecordError, match="unknown engine"):
        Law(check=check, mutant="m:x", opt_out={"adversry": "typo"})
    with pytest.raises(LawRecordError, match="opts out"):
        Law(check=check, mutant="m:x", objective="adversary:X", opt_out={
            "adversary": "why", "detective": "x", "reference": "x", "figure": "x", "calibration": "x"})


def test_laws_command_prints_the_coverage_table_with_reasons(capsys):
    assert main(["laws"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == coverage_text(LAWS).strip()
    for name, law in LAWS.items():
        assert re.search(rf"^{name}\s", out, re.M), name
        for engine, reason in law.opt_out.items():
            assert f"- {name} / {ENGINES[engine]}: {reason}" in out
    assert main(["laws", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["repulsive_wall"]["adversary"]["served"] is True
    assert data["born_stability"]["adversary"]["served"] is False
    assert data["born_stability"]["adversary"]["detail"] == LAWS["born_stability"].opt_out["adversary"]


def test_engines_read_the_adversary_detective_reference_and_validator_from_the_records():
    from pytest_mlip.adversary.objectives import OBJECTIVES
    from pytest_mlip.agent.validator import open_checks
    from pytest_mlip.reference.cards import card_for, why_no_card

    assert set(OBJECTIVES) == {n for n, law in LAWS.items() if law.objective}
    assert set(open_checks()) == {n for n, law in LAWS.items() if law.playbook}
    for name, law in LAWS.items():
        assert (card_for(name) is not None) == bool(law.card)
        assert why_no_card(name) == law.opt_out.get("reference", "")


#: engine modules: none may name a law (a law's knowledge lives in its folder)
ENGINE_FILES = sorted(
    [p for sub in ("adversary", "agent", "reference", "reporting", "evaluation", "provenance", "models")
     for p in (PKG / sub).rglob("*.py")]
    + [PKG / "plugin.py", PKG / "laws" / "base.py", PKG / "laws" / "law.py", ROOT / "benchmarks" / "calibrate_noise.py"])
#: (file, law) pairs still naming a law, each with the reason it is still there
NOT_YET_MOVED = {
    ("agent/chemistry.py", "symmetry"): "ASE's reference_states key (a crystal structure), not the law",
}


def test_engines_name_no_law():
    named = set()
    for path in ENGINE_FILES:
        text = path.read_text()
        rel = str(path.relative_to(PKG if PKG in path.parents else ROOT))
        for name in LAWS:
            if re.search(rf"""["']{name}["']""", text):
                named.add((rel, name))
    assert named <= set(NOT_YET_MOVED), sorted(named - set(NOT_YET_MOVED))


class _Desk:
    """What a playbook reads of the detective's desk: element support, the target, the memory (unused here)."""

    def __init__(self, target="sevennet-0"):
        from pytest_mlip.agent.validator import Validator

        self.target = self.target_name = target
        self.committee = ["chgnet-0.3.0"]
        self.validator = Validator(target, self.committee, include_builtin=True)
        self.evidence, self.suite = [], {}

    def supported(self, elements) -> bool:
        from pytest_mlip.models.registry import resolve

        return not any(resolve(m).info.supports(list(elements)) for m in [self.target] + self.committee)



def _first_failing(check):
    """A hypothesis about the built-in contract of ``check`` whose first probe failed and the others passed."""
    from pytest_mlip.agent.playbook import _units_by_probe, playbook_for
    from pytest_mlip.agent.protocols import table_of
    from pytest_mlip.agent.schema import Hypothesis, Scope
    from pytest_mlip.testing import builtin_contracts

    settings = next(s for s in builtin_contracts().values() if s.check == check)
    table = table_of(settings)
    book = playbook_for(check)
    units = list(_units_by_probe(table).values())
    assert units, check
    failing, passing = units[:1], units[1:]
    claim = {book.signature(f, u) for f, u in failing}
    clean = {book.signature(f, u) for f, u in passing} - claim
    h = Hypothesis(id="H1", key=f"{settings.name}:x", statement="s", check=check, contract=settings.name,
                   basis=settings.basis, scope=Scope(), mechanism=book.mechanism_of(settings), importance=0.5,
                   severity=1.0, breadth=0.5, origin=[])
    return book, settings, table, failing, passing, claim, clean, h


@pytest.mark.parametrize("check", sorted(n for n, law in LAWS.items() if law.playbook))
def test_every_playbook_preregisters_valid_protocols(check):
    """Each law's playbook maps its contract's probes back onto units and pre-registers a mechanism protocol (and
    scope/control/impact where neighbours exist) that the validator admits: data only, fixed checks."""
    book, settings, table, failing, passing, claim, clean, h = _first_failing(check)
    desk = _Desk()
    preds = book.predictions(desk, h, table, settings, failing, passing, claim, clean, f"h1-{check}", False)
    kinds = {p.kind for p in preds}
    assert "mechanism" in kinds, (check, kinds)
    for p in preds:
        gate = desk.validator.protocol(p.protocol, where=p.name)
        assert gate.ok, (check, p.name, gate.errors)
        # a mechanism probe may run another law's check on the same structures (the symmetry laws' attribution:
        # energy-force consistency and the force Jacobian); every other protocol is the law's own
        assert gate.settings[0].check == check or p.kind == "mechanism", (check, p.name)
    if check == "symmetry":
        assert {"energy_force", "jacobian_symmetry"} <= {p.protocol["check"] for p in preds}
    assert book.mechanism_of(settings) != "unknown" and 0 < book.importance_of(settings) <= 1


def test_zero_net_force_objective_finds_a_net_force_and_clears_a_clean_model(tmp_path):
    """The law's new adversary objective bites: a planted constant force is found at its full size (v/tau
    > 1), a model whose energy is translation invariant stays at rounding noise; both results recompute."""
    from pytest_mlip.adversary.runner import run_adversary
    from pytest_mlip.adversary.search import SearchOptions
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.testing import builtin_contracts

    settings = builtin_contracts()["zero-net-force"]
    settings = settings.model_copy(update={"structures": settings.structures[:1]})
    bad = run_adversary(settings, evaluator_for(LAWS["zero_net_force"].mutant), SearchOptions(budget=12),
                        output=tmp_path / "bad")
    good = run_adversary(settings, evaluator_for("tests.mutants:clean_morse"), SearchOptions(budget=12),
                         output=tmp_path / "good")
    assert bad.status == "violation" and bad.value > 1.0, (bad.status, bad.reason, bad.value)
    assert good.status != "violation" and good.value < 1e-3, (good.status, good.reason, good.value)


def test_a_law_read_against_another_names_the_root_on_the_same_structure():
    """The summary's cross-reference comes from the symmetry law's record, not from a name in the reporting code."""
    from pytest_mlip.reporting.verdicts import crossref

    vs = [{"model": "m", "check": "symmetry", "contract": "rotation-invariance", "status": "fail", "worst_probe": "X"},
          {"model": "m", "check": "energy_force", "contract": "ef", "status": "fail",
           "probes": [{"probe": "X", "status": "ok", "normalized": 203.0}]},
          {"model": "n", "check": "symmetry", "contract": "rotation-invariance", "status": "fail", "worst_probe": "X"}]
    lines = crossref(vs)
    assert lines[0] == "symmetry failures read against energy-force consistency on the same structure:"
    assert "rotation-invariance on m fails on X: energy-force consistency BROKEN there (v/tau 203;" in lines[1]
    assert lines[2].endswith("energy-force consistency not measured (energy-force contract not run)")


def test_compression_objective_finds_the_collapse_and_clears_a_clean_crystal(tmp_path):
    """The compression wall's objective (any two scales inside the model's equilibrium) bites on the planted
    collapse and reports nothing on Lennard-Jones copper; both numbers recompute from the saved cells."""
    from pytest_mlip.adversary.runner import run_adversary
    from pytest_mlip.adversary.search import SearchOptions
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.testing import builtin_contracts

    settings = builtin_contracts()["compression-wall"].model_copy(
        update={"crystals": builtin_contracts()["compression-wall"].crystals[:1]})  # fcc Cu
    bad = run_adversary(settings, evaluator_for(LAWS["compression_wall"].mutant), SearchOptions(budget=16),
                        output=tmp_path / "bad")
    good = run_adversary(settings, evaluator_for("lennard-jones"), SearchOptions(budget=16), output=tmp_path / "good")
    assert bad.status == "violation" and bad.value > 1.0, (bad.status, bad.reason, bad.value)
    assert good.status != "violation", (good.status, good.reason, good.value)


def test_every_law_folder_is_packaged():
    """A wheel holds only the packages pyproject.toml lists (setuptools' find could not also map contracts/ to
    pytest_mlip.builtin_contracts): a law folder missing there would work in a checkout and vanish when installed."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert {law.package for law in LAWS.values()} | {"pytest_mlip.laws"} <= listed


def test_the_detective_escalates_a_law_it_gained_a_playbook_for(tmp_path):
    """End to end on a law the detective did not cover before: a planted constant force is widened from the
    zero-net-force evidence into pre-registered protocols on new structures, escalated, and written up with a
    DFT card and a decision table from the law's playbook; the judge verifies the report."""
    from pytest_mlip.reporting.judge import judge_file

    mutant = LAWS["zero_net_force"].mutant
    rc = main(["detect", "--mlip", mutant, "--mlip-committee", "tests.mutants:clean_morse", "--contracts",
               "zero-net-force", "--output", str(tmp_path / "out"), "--tests-dir", str(tmp_path / "gen"),
               "--hypotheses", "1"])
    assert rc == 0
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    h = run["hypotheses"][0]
    assert h["verdict"] == "escalate" and h["key"].startswith("zero-net-force:"), h
    folder = next((tmp_path / "out" / "escalations").iterdir())
    text = (folder / "report.md").read_text()
    assert "Decision table" in text and "the reference obeys the law" in text
    result = judge_file(folder / "report.md")
    assert result.ok, "\n".join(f.line() for f in result.failed)


@pytest.mark.parametrize("check", sorted(n for n, law in LAWS.items() if law.playbook))
def test_every_playbook_names_the_configurations_a_dft_card_computes(check):
    from pytest_mlip.agent.playbook import playbook_for
    from pytest_mlip.testing import builtin_contracts

    settings = next(s for s in builtin_contracts().values() if s.check == check)
    probe = next(iter(CHECKS[check]().probes(settings)))
    series = {"r": [0.5, 1.0, 1.5], "E": [3.0, 1.0, 0.0], "r_eq": 1.5, "ids": []}  # a scan, for laws that use one
    configs = playbook_for(check).reference_configs(CHECKS[check](), settings, probe, series, 4)
    assert configs and all(len(atoms) >= 1 and role for role, atoms, _, _ in configs), check
