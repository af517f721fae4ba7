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
    ("agent/report.py", "repulsive_wall"): "escalation-report text per law (owned by the judge work this round)",
    ("agent/report.py", "symmetry"): "escalation-report text per law (owned by the judge work this round)",
    ("agent/report.py", "dissociation"): "escalation-report text per law (owned by the judge work this round)",
    ("agent/report.py", "stress_strain"): "escalation-report text per law (owned by the judge work this round)",
    ("reporting/verdicts.py", "energy_force"): "the energy-force x symmetry cross-reference of the summary",
    ("reporting/verdicts.py", "symmetry"): "the energy-force x symmetry cross-reference of the summary",
    ("agent/detective.py", "symmetry"): "the transformations the target obeyed (a symmetry control)",
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
