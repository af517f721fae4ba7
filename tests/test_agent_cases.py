"""The source's case studies on planted defects: the detective carries each from evidence to a pre-registered
hypothesis, probes and an escalation (the +U-block adsorption anomaly, the spurious desorption barrier, the dimer
mid-range tail against the committee band), and attributes a broken symmetry to the forces or the energy.

Analytic models only (EMT, Morse, Lennard-Jones with planted terms): the shipped-model runs of the same paths are
docs/case-studies.md (benchmarks/case_studies.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = str(Path(__file__).parent / "data" / "agent" / "mlip_cases.toml")
EMT = "tests.mutants.surface:clean_emt"
MORSE = "tests.mutants:clean_morse"


def detect(root: Path, target: str, committee: str, contract: str, tests_dir: str = "none") -> dict:
    from pytest_mlip.cli import main

    rc = main(["detect", "--mlip", target, "--mlip-committee", committee, "--suite", SUITE, "--contracts", contract,
               "--output", str(root), "--tests-dir", tests_dir, "--hypotheses", "1"])
    assert rc == 0
    return json.loads((root / "run.json").read_text())


def predictions(root: Path) -> dict:
    from pytest_mlip.agent.memory import EvidenceMemory

    mem = EvidenceMemory(root / "memory.jsonl")
    return {p["name"]: p for r in mem.records("preregistration") for p in r["data"]["predictions"]}


@pytest.fixture(scope="module")
def adsorption(tmp_path_factory):
    root = tmp_path_factory.mktemp("ads")
    run = detect(root / "out", "tests.mutants.surface:u_block_shift", EMT, "case-adsorption", str(root / "kept"))
    return root, run


def test_adsorption_sign_widens_to_the_u_block(adsorption):
    from pytest_mlip.structures.adsorbates import u_block

    root, run = adsorption
    h = run["hypotheses"][0]
    assert h["key"] == "case-adsorption:u-block" and h["verdict"] == "escalate", h["reasons"]
    preds = predictions(root / "out")
    scope = next(p for p in preds.values() if p["kind"] == "scope")
    cells = [(m, a) for m in scope["protocol"]["metals"] for a in scope["protocol"]["adsorbates"]]
    assert cells and all(u_block(m, a) for m, a in cells)  # unseen cells inside the block
    # the clean committee fails H/Ni and H/Pt (EMT leaves H unbound there), outside the claimed class: that says
    # nothing about the block, so the scope keeps a plain committee prediction (no decade of disagreement needed)
    assert scope["committee"] == "pass" and scope["excess_decades"] is None
    controls = [p for p in preds.values() if p["kind"] == "control"]
    assert len(controls) == 2  # both halves of the boundary: the adsorbate without U, the U metal without O/F
    for c in controls:
        cells = [(m, a) for m in c["protocol"]["metals"] for a in c["protocol"]["adsorbates"]]
        assert cells and not any(u_block(m, a) for m, a in cells)
    kinds = {p["kind"] for p in preds.values()}
    assert {"scope", "control", "mechanism", "impact"} <= kinds
    probes = h["probes"]
    for name, c in ((n, p) for n, p in preds.items() if p["kind"] == "control"):
        assert probes[name]["outcomes"]["tests.mutants.surface:u_block_shift"]["status"] == "pass"
    # calls and seconds per probe (a probe whose configurations another already evaluated costs cache hits only)
    assert all(p["seconds"] > 0 and p["evaluations"] >= 0 for p in probes.values())
    assert sum(p["evaluations"] for p in probes.values()) > 0


def judged(out: Path) -> None:
    """The escalation report passes the judge: every number cites an artifact that holds it."""
    from pytest_mlip.reporting.judge import judge_file

    folder = next((out / "escalations").iterdir())
    result = judge_file(folder / "report.md")
    assert result.ok, "\n".join(f.line() for f in result.failed)


def test_adsorption_escalation_report_passes_the_judge(adsorption):
    judged(adsorption[0] / "out")


def test_adsorption_kept_protocol_bites(adsorption):
    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.testing import run_contract

    root, _ = adsorption
    kept = list((root / "kept").glob("mlip_*.toml"))
    assert len(kept) == 1
    for settings in parse_contracts(kept[0]):
        assert run_contract(settings, "tests.mutants.surface:u_block_shift").status == "fail"
        assert run_contract(settings, EMT).status == "pass"


def test_desorption_barrier_scope_on_unseen_molecule_facet_pairs_and_neb(tmp_path):
    run = detect(tmp_path / "out", "tests.mutants.surface:desorption_bump", EMT, "case-desorption")
    h = run["hypotheses"][0]
    assert h["verdict"] == "escalate", h["reasons"]
    preds = predictions(tmp_path / "out")
    scope = next(p for p in preds.values() if p["kind"] == "scope")["protocol"]["cases"]
    assert any(c["adsorbate"] == "NO" for c in scope)  # the other molecule
    assert any(c.get("facet") == "fcc100" for c in scope)  # the other facet
    finer = next(p for p in preds.values() if p["name"].endswith("-finer"))
    assert finer["protocol"]["neb"] is True and finer["kind"] == "mechanism"  # CI-NEB confirms the rigid rise
    assert {p["protocol"]["neb_images"] for p in preds.values()} == {17}  # the evidence's setting, carried
    assert h["probes"][finer["name"]]["outcomes"]["tests.mutants.surface:desorption_bump"]["status"] == "fail"


def test_dimer_tail_escalates_against_the_committee_band(tmp_path):
    run = detect(tmp_path / "out", "tests.mutants.physics:long_tail", f"{MORSE},lennard-jones", "case-dimer-tail")
    h = run["hypotheses"][0]
    assert h["verdict"] == "escalate" and h["type"] == "cross-model disagreement", h["reasons"]
    band = [c for c in h["predictions"] if "committee band" in c["expected"]]
    assert band and all(c["held"] for c in band)  # pre-registered, then held
    preds = predictions(tmp_path / "out")
    scope = next(p for p in preds.values() if p["kind"] == "scope")
    assert scope["above_band"] and scope["excess_decades"] is None  # a tail fraction never stands a decade out
    other = next(p for p in preds.values() if p["name"].endswith("-nearer"))["protocol"]["distance"]
    assert other == 4.0  # inside the planted model's 5 A cutoff (4.5 A + 0.5 A would measure nothing)
    judged(tmp_path / "out")  # the judge recomputes the band decision from the recorded inputs


@pytest.mark.parametrize("target, defect", [
    ("tests.mutants.agent:ShearForce", "a force defect"),  # forces not the gradient: rotation broken in them alone
    ("tests.mutants.foundation:OrientationBias", "an energy defect"),  # an orientation-dependent energy
])
def test_symmetry_failure_is_attributed_to_forces_or_energy(tmp_path, target, defect):
    run = detect(tmp_path / "out", target, f"{MORSE},lennard-jones", "case-rotation")
    h = run["hypotheses"][0]
    assert h["verdict"] == "escalate", h["reasons"]
    attribution = [r for r in h["reasons"] if r.startswith("mechanism attribution:")]
    assert len(attribution) == 1 and defect in attribution[0]
    assert any(n.endswith("-energy-force") for n in h["probes"]) and any(n.endswith("-jacobian") for n in h["probes"])
    ef = h["probes"][next(n for n in h["probes"] if n.endswith("-energy-force"))]["outcomes"]
    assert ef[target]["status"] == ("fail" if defect == "a force defect" else "pass")
    assert ef[MORSE]["status"] == "pass"  # the clean model's forces are its energy's gradient
    judged(tmp_path / "out")  # the attribution cites verdicts, never a bare number


def test_case_study_document_is_generated_from_the_run_and_cites_artifacts(adsorption, tmp_path):
    import importlib.util
    import re
    import shutil

    path = Path(__file__).parent.parent / "benchmarks" / "case_studies.py"
    spec = importlib.util.spec_from_file_location("case_studies", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root, run = adsorption
    shutil.copytree(root / "out", tmp_path / "adsorption")
    doc = tmp_path / "case-studies.md"
    mod.render(tmp_path, doc)
    text = doc.read_text()
    assert "### H1 `case-adsorption:u-block`: escalate" in text
    assert "Pre-registered before any probe ran" in text and "| scope |" in text
    import sqlite3

    ids = set(re.findall(r"\[a:([0-9a-f]{12})\]", text))
    assert ids
    con = sqlite3.connect(tmp_path / "adsorption" / "provenance.sqlite")
    known = {r[0][:12] for r in con.execute("select id from artifacts")}
    assert ids <= known  # every cited artifact is in the run's store
    assert "mlip_u-block-shift-case-adsorption-h1.toml" in text
