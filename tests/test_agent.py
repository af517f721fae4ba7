"""The detective agent on planted defects: it escalates a real class of failure with a report whose every
number the judge re-verifies, writes a protocol that bites, rejects a hypothesis whose own pre-registered
prediction fails, narrows from the memory, and never rewrites the memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlip.agent.memory import EvidenceMemory
from pytest_mlip.errors import MlipError

DATA = Path(__file__).parent / "data" / "agent"
SUITE = str(DATA / "mlip_small_wall.toml")
TM_WALL = "tests.mutants.agent:TransitionMetalWall"
NI_WALL = "tests.mutants.agent:NickelOnlyWall"
CLEAN = "tests.mutants:clean_morse"
SECTIONS = ["## Finding", "## Type", "## Application failure and domain boundary", "## Figure",
            "## Minimal reproduction", "## DFT verification card", "## Confounds closed"]


def detect(*args) -> int:
    from pytest_mlip.cli import main

    return main(["detect", *args])


@pytest.fixture(scope="module")
def tm_run(tmp_path_factory):
    """One offline run on the transition-metal wall mutant (committee: clean Morse and Lennard-Jones)."""
    root = tmp_path_factory.mktemp("tm")
    rc = detect("--mlip", TM_WALL, "--mlip-committee", f"{CLEAN},lennard-jones", "--suite", SUITE,
                "--output", str(root / "out"), "--tests-dir", str(root / "generated_tests"), "--hypotheses", "2")
    assert rc == 0
    return root


def test_offline_planner_escalates_the_planted_class(tm_run):
    run = json.loads((tm_run / "out" / "run.json").read_text())
    h = run["hypotheses"][0]
    assert h["verdict"] == "escalate" and h["type"] == "exact-constraint violation"
    assert "transition-metal" in h["key"]
    probes = h["probes"]
    scope = next(p for p in probes.values() if p["kind"] == "scope")
    control = next(p for p in probes.values() if p["kind"] == "control")
    assert scope["outcomes"][TM_WALL]["status"] == "fail"  # unseen transition-metal pairs collapse
    assert scope["outcomes"][CLEAN]["status"] == "pass"
    assert control["outcomes"][TM_WALL]["status"] == "pass"  # unseen main-group pairs keep the wall
    assert all(c["held"] is not False for c in h["predictions"])
    assert run["model_evaluations"] > 0 and run["stopped"].startswith("escalation limit")


def test_escalation_report_has_seven_sections_and_the_judge_verifies_every_number(tm_run):
    from pytest_mlip.reporting.judge import judge_file

    folder = next((tm_run / "out" / "escalations").iterdir())
    text = (folder / "report.md").read_text()
    positions = [text.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert "[a:" in text and "confirm" not in text.split("## Finding")[0].replace("confirms or refutes", "")
    result = judge_file(folder / "report.md")
    assert result.ok, "\n".join(f.line() for f in result.failed)
    assert result.required_total >= 1 and result.required_present == result.required_total
    index = judge_file(tm_run / "out" / "report.md")
    assert index.ok, "\n".join(f.line() for f in index.failed)
    # figure, reproduction, DFT card
    assert (folder / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "run_contract" in (folder / "reproduce.py").read_text()
    from ase.io import read

    frames = read(folder / "dft" / "configurations.extxyz", index=":")
    assert len(frames) >= 2
    vasp = sorted((folder / "dft" / "vasp").iterdir())
    assert len(vasp) == len(frames)
    for d in vasp:
        assert {"POSCAR", "INCAR", "KPOINTS"} <= {p.name for p in d.iterdir()}
        assert len(read(d / "POSCAR", format="vasp")) == 2
    pwi = sorted((folder / "dft" / "qe").glob("*.pwi"))
    assert len(pwi) == len(frames) and "ATOMIC_SPECIES" in pwi[0].read_text()
    assert "| reference outcome | verdict |" in text and "refuted" in text


def test_escalation_report_is_a_record_the_judge_evaluates(tm_run, tmp_path):
    """report.md is rendered from escalation.json; a changed claim in the record, re-rendered, is refused; notes are
    added through `pytest-mlip render` and evaluated like a run report's."""
    import shutil

    from pytest_mlip.agent.record import load_record
    from pytest_mlip.agent.render import render_markdown
    from pytest_mlip.cli import main
    from pytest_mlip.reporting.judge import judge_file

    src = next((tm_run / "out" / "escalations").iterdir())
    folder = tmp_path / "esc"
    shutil.copytree(src, folder)
    record = json.loads((folder / "escalation.json").read_text())
    assert (folder / "report.md").read_text() == render_markdown(load_record(json.dumps(record)))

    def judged(data):
        (folder / "escalation.json").write_text(json.dumps(data))
        (folder / "report.md").write_text(render_markdown(load_record(json.dumps(data))))
        return judge_file(folder, sample=0)

    def first(data, kind):
        return next(it for b in data["blocks"] for it in b.get("items", []) if it["k"] == kind)

    forged = json.loads(json.dumps(record))
    first(forged, "decision").update(verdict="reject", type="none")
    r = judged(forged)
    assert not r.ok and {f.where for f in r.failed} >= {"record"}
    forged = json.loads(json.dumps(record))
    v = first(forged, "verdict")
    v["status"] = "pass" if v["status"] != "pass" else "fail"
    assert not judged(forged).ok
    verdict = first(record, "verdict")
    noted = json.loads(json.dumps(record))
    noted["notes"] = [{"kind": "verdict", "contract": verdict["contract"], "model": verdict["model"],
                       "status": verdict["status"]}]
    (folder / "escalation.json").write_text(json.dumps(noted))
    # the page as the run wrote it (the forgeries above rewrote it; render refuses to replace a page it did not render)
    (folder / "report.md").write_text(render_markdown(load_record(json.dumps(record))))
    assert main(["render", str(folder)]) == 0
    assert "Claim: " in (folder / "report.md").read_text()
    r = judge_file(folder, sample=0)
    assert r.ok, "\n".join(f.line() for f in r.failed)
    noted["notes"] = [{"kind": "comment", "text": "Sent to the surface group for another look."}]  # free text
    (folder / "escalation.json").write_text(json.dumps(noted))
    assert main(["render", str(folder)]) == 2  # refused; the page keeps the earlier notes
    r = judge_file(folder, sample=0)
    assert not r.ok and any("free text is not part of a judged report" in f.line() for f in r.failed), \
        [f.line() for f in r.failed]


def test_written_protocol_fails_on_the_mutant_and_passes_on_the_clean_model(tm_run):
    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.testing import run_contract

    files = sorted((tm_run / "generated_tests").glob("mlip_*.toml"))
    assert len(files) == 1
    text = files[0].read_text()
    assert "{{" not in text and "import" not in text
    contracts = parse_contracts(files[0])
    assert contracts
    for settings in contracts:
        assert run_contract(settings, TM_WALL).status == "fail"
        assert run_contract(settings, CLEAN).status == "pass"


def test_written_protocol_is_collected_by_pytest(tm_run, pytester):
    src = next((tm_run / "generated_tests").glob("mlip_*.toml"))
    (pytester.path / "generated_tests").mkdir()
    (pytester.path / "generated_tests" / src.name).write_text(src.read_text())
    bad = pytester.runpytest_inprocess(f"--mlip={TM_WALL}", "--mlip-committee=none", "--mlip-no-builtin",
                                       "-p", "no:cacheprovider")
    assert bad.ret == 1
    from pytest_mlip.contracts.files import parse_contracts

    bad.assert_outcomes(failed=len(parse_contracts(src)))
    good = pytester.runpytest_inprocess(f"--mlip={CLEAN}", "--mlip-committee=none", "--mlip-no-builtin",
                                        "-p", "no:cacheprovider")
    assert good.ret == 0


def test_memory_records_the_whole_search(tm_run):
    mem = EvidenceMemory(tm_run / "out" / "memory.jsonl")
    assert not mem.broken
    types = [r["type"] for r in mem]
    for t in ("run", "evidence", "hypothesis", "preregistration", "probe", "verdict", "status", "protocol_file"):
        assert t in types
    assert types.index("preregistration") < types.index("probe")  # declared before any probe ran
    h = mem.hypotheses()["H1"]
    assert h["status"] == "escalated"


def test_rejects_a_hypothesis_whose_prediction_fails_then_narrows_from_memory(tmp_path):
    out, tests = tmp_path / "out", tmp_path / "generated_tests"
    common = ["--mlip", NI_WALL, "--mlip-committee", CLEAN, "--suite", SUITE, "--output", str(out),
              "--tests-dir", str(tests)]
    assert detect(*common, "--hypotheses", "1") == 0
    mem_path = out / "memory.jsonl"
    h1 = EvidenceMemory(mem_path).hypotheses()["H1"]
    assert h1["status"] == "rejected"
    assert any("prediction failed" in r and "scope" in r for r in h1["reasons"])
    assert not tests.exists() or not list(tests.glob("*.toml"))
    before = mem_path.read_bytes()
    # a second run reads only the memory: no new evidence gathering, H1 is settled, H2 narrows it
    assert detect(*common, "--hypotheses", "1") == 0
    after = mem_path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # appended, never rewritten
    mem = EvidenceMemory(mem_path)
    assert not mem.broken
    assert len({r["run"] for r in mem.records("evidence")}) == 1
    h2 = mem.hypotheses()["H2"]
    assert h2["parent"] == "H1" and h2["key"].startswith("narrow:") and h2["status"] == "escalated"
    written = list(tests.glob("mlip_*.toml"))
    assert len(written) == 1
    from pytest_mlip.contracts.files import parse_contracts
    from pytest_mlip.testing import run_contract

    for settings in parse_contracts(written[0]):
        assert run_contract(settings, NI_WALL).status == "fail"
        assert run_contract(settings, CLEAN).status == "pass"


@pytest.mark.parametrize("committee, verdict", [
    ("tests.mutants.agent:MildTransitionMetalWall", "escalate"),  # violates it too, but a decade less
    ("tests.mutants.agent:same_defect_wall", "reject"),  # the same anomaly in every model
])
def test_committee_that_violates_the_law_too(tmp_path, committee, verdict):
    out = tmp_path / "out"
    assert detect("--mlip", TM_WALL, "--mlip-committee", committee, "--suite", SUITE, "--output", str(out),
                  "--tests-dir", "none", "--hypotheses", "1") == 0
    run = json.loads((out / "run.json").read_text())
    h = run["hypotheses"][0]
    assert h["verdict"] == verdict, h["reasons"]
    decades = [c for c in h["predictions"] if "decade" in c["expected"]]
    assert decades and decades[0]["held"] is (verdict == "escalate")  # pre-registered, not post hoc
    if verdict == "reject":
        assert any("protocol suspect" in r for r in h["reasons"])
    else:
        assert any("stands out by its size" in r for r in h["reasons"])


def test_memory_is_append_only_and_detects_edits(tmp_path):
    path = tmp_path / "memory.jsonl"
    m = EvidenceMemory(path)
    m.append("hypothesis", {"id": "H1", "key": "k", "statement": "s", "status": "open"})
    m.append("status", {"hypothesis": "H1", "status": "rejected", "reasons": ["r"]})
    first = path.read_bytes()
    m2 = EvidenceMemory(path)
    assert m2.hypotheses()["H1"]["status"] == "rejected" and m2.next_hypothesis_id() == "H2"
    m2.append("verdict", {"hypothesis": "H1", "verdict": "reject", "x": float("inf")})
    assert path.read_bytes().startswith(first)
    assert json.loads(path.read_text().splitlines()[-1])["data"]["x"] == "inf"  # strict JSON
    path.write_text(path.read_text().replace('"r"', '"edited"'))  # someone edits an earlier record
    edited = EvidenceMemory(path)
    edited.records()
    assert any("hash chain" in b for b in edited.broken)


def test_evidence_from_a_pytest_report_and_budget_exhaustion(tmp_path, pytester):
    """Evidence read from ``pytest --mlip-report``; with no evaluation budget the hypothesis is exhausted."""
    FRESH = "tests.mutants.agent:transition_metal_wall"  # own evaluator: no cache hits from other tests
    (pytester.path / "mlip_small_wall.toml").write_text(Path(SUITE).read_text())
    res = pytester.runpytest_inprocess(f"--mlip={FRESH}", f"--mlip-committee={CLEAN}", "--mlip-no-builtin",
                                       "--mlip-report=rep", "mlip_small_wall.toml", "-p", "no:cacheprovider")
    assert res.ret == 1 and (pytester.path / "rep" / "report.json").is_file()
    # the same run's artifact store gives the same evidence
    from pytest_mlip.agent.evidence import from_report, from_store

    by_store = {(e.contract, e.model): e for e in from_store(pytester.path / ".mlip" / "provenance.sqlite", FRESH)}
    by_report = {(e.contract, e.model): e for e in from_report(pytester.path / "rep")}
    assert by_store.keys() == by_report.keys()
    for k, e in by_report.items():
        assert (by_store[k].status, by_store[k].max_normalized, by_store[k].artifacts["verdict"]) == (
            e.status, e.max_normalized, e.artifacts["verdict"])
        assert sorted(by_store[k].failing_probes()) == sorted(e.failing_probes())
    out = tmp_path / "out"
    rc = detect("--mlip", FRESH, "--mlip-committee", CLEAN, "--suite", SUITE, "--mlip-report", str(pytester.path / "rep"),
                "--output", str(out), "--tests-dir", "none", "--budget", "1", "--hypotheses", "1")
    assert rc == 0
    mem = EvidenceMemory(out / "memory.jsonl")
    ev = [r["data"] for r in mem.records("evidence")]
    assert {e["model"] for e in ev} == {FRESH, CLEAN} and all(e["source"].startswith("report:") for e in ev)
    target = next(e for e in ev if e["model"] == FRESH)
    assert target["status"] == "fail" and target["artifacts"]["max_normalized"]
    h = mem.hypotheses()["H1"]
    assert h["status"] == "exhausted" and any("budget" in r for r in h["reasons"])
    # a committed report keeps its snapshot gzipped: the detective adopts the evidence from it, escalates, and
    # the judge approves every report of the run (the evidence's numbers are in the run's own store)
    import gzip
    import shutil

    snap = pytester.path / "rep" / "provenance.sqlite"
    with open(snap, "rb") as src, gzip.open(str(snap) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    snap.unlink()
    out2 = tmp_path / "out2"
    assert detect("--mlip", FRESH, "--mlip-committee", CLEAN, "--suite", SUITE, "--mlip-report",
                  str(pytester.path / "rep"), "--output", str(out2), "--tests-dir", "none", "--hypotheses", "1") == 0
    assert EvidenceMemory(out2 / "memory.jsonl").hypotheses()["H1"]["status"] == "escalated"
    from pytest_mlip.reporting.judge import judge_file

    result = judge_file(out2, sample=0)
    assert result.ok, "\n".join(f.line() for f in result.failed)
    # held-out case: a report of another target was taken as evidence about this one
    with pytest.raises(MlipError, match=f"is a report on {FRESH}, not on the target {CLEAN}"):
        from_report(pytester.path / "rep", target=CLEAN)
    assert detect("--mlip", CLEAN, "--mlip-committee", FRESH, "--suite", SUITE, "--mlip-report",
                  str(pytester.path / "rep"), "--output", str(tmp_path / "out3"), "--tests-dir", "none") == 2
    # held-out round 11: the report of an interrupted run gave 'no hypothesis' and exit 0 on its partial evidence
    data = json.loads((pytester.path / "rep" / "report.json").read_text())
    data["incomplete"] = {"count": 2, "interrupted": "interrupted (Ctrl-C)", "fails_run": True}
    (pytester.path / "rep" / "report.json").write_text(json.dumps(data))
    with pytest.raises(MlipError, match="is the report of an INCOMPLETE run .the run was interrupted"):
        from_report(pytester.path / "rep", target=FRESH)
    assert from_report(pytester.path / "rep", target=FRESH, named=True)


def test_unknown_model_is_a_one_line_error(tmp_path, capsys):
    rc = detect("--mlip", "no-such-model", "--mlip-committee", CLEAN, "--output", str(tmp_path / "o"))
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown model" in err[0]


def test_evidence_from_an_older_code_version_is_judged_against_its_own_run(tmp_path, pytester, monkeypatch):
    """Evidence recorded by an earlier version of the tool stays citable: the run artifact names the
    evidence run and its code version, and the judge holds each cited artifact to the run that made it."""
    import pytest_mlip.provenance.artifact as artifact
    from pytest_mlip.reporting.judge import judge_file

    FRESH = "tests.mutants.agent:transition_metal_wall"
    (pytester.path / "mlip_small_wall.toml").write_text(Path(SUITE).read_text())
    monkeypatch.setattr(artifact, "code_version", lambda: "0.0.1+older")
    res = pytester.runpytest_inprocess(f"--mlip={FRESH}", f"--mlip-committee={CLEAN}", "--mlip-no-builtin",
                                       "mlip_small_wall.toml", "-p", "no:cacheprovider")
    assert res.ret == 1
    monkeypatch.undo()
    out = tmp_path / "out"
    rc = detect("--mlip", FRESH, "--mlip-committee", CLEAN, "--suite", SUITE,
                "--mlip-store", str(pytester.path / ".mlip" / "provenance.sqlite"), "--output", str(out),
                "--tests-dir", "none", "--hypotheses", "2", "--escalations", "2")
    assert rc == 0
    reports = sorted((out / "escalations").glob("*/report.md"))
    assert reports
    for path in reports + [out / "report.md"]:
        result = judge_file(path)
        assert result.ok, "\n".join(f.line() for f in result.failed)
        assert result.required_present == result.required_total >= 1
    # the run artifact declares where the older numbers come from
    from pytest_mlip.provenance.store import Store

    st = Store(out / "provenance.sqlite")
    run = st.run(json.loads((out / "run.json").read_text())["run"])
    value = st.get(run["artifact"]).value
    assert value["evidence_runs"] and all(v == "0.0.1+older" for v in value["evidence_runs"].values())
    st.close()


def test_a_second_run_into_the_same_folder_is_judged(tmp_path, pytester, capsys):
    """The same command twice into one output folder (memory appended, earlier run kept): the second run reuses
    model calls the first run stored (a call with the same content id keeps the first run's row) without citing
    that run. Its run artifact names the earlier run with its code version (sealed under its root), so the judge
    approves the folder against the root the second run printed, and still holds each reused artifact to that
    run's own version."""
    import dataclasses
    import re

    from pytest_mlip.provenance.store import Store
    from pytest_mlip.reporting.judge import Judge, judge_file
    from pytest_mlip.reporting.judge_agent import verify_closure

    (pytester.path / "mlip_small_wall.toml").write_text(Path(SUITE).read_text())
    res = pytester.runpytest_inprocess(f"--mlip={NI_WALL}", f"--mlip-committee={CLEAN}", "--mlip-no-builtin",
                                       "mlip_small_wall.toml", "-p", "no:cacheprovider")
    assert res.ret == 1
    out = tmp_path / "out"
    command = ["--mlip", NI_WALL, "--mlip-committee", CLEAN, "--suite", SUITE, "--mlip-store",
               str(pytester.path / ".mlip" / "provenance.sqlite"), "--output", str(out), "--tests-dir", "none",
               "--hypotheses", "1"]
    roots, runs = [], []
    for _ in range(2):
        capsys.readouterr()
        assert detect(*command) == 0
        roots.append(re.search(r"mlip root: ([0-9a-f]{64})", capsys.readouterr().out).group(1))
        runs.append(json.loads((out / "run.json").read_text())["run"])
    assert runs[0] != runs[1] and (out / "runs" / f"{runs[0]}.json").is_file()
    st = Store(out / "provenance.sqlite", readonly=True)
    try:
        run = st.run(runs[1])
        reached = dict(st.runs_of(st.closure([run["artifact"]])))
        assert runs[0] in reached  # the second run reaches artifacts the first one stored
        assert st.get(run["artifact"]).value["evidence_runs"][runs[0]] == reached[runs[0]]
    finally:
        st.close()
    result = judge_file(out, root=roots[1], sample=2, seed=0)
    assert result.ok, "\n".join(f.line() for f in result.failed)
    assert any(f.where == "escalations" and f.ok for f in result.findings)
    # a run artifact that names the earlier run with another code version, or not at all, is refused
    st = Store(out / "provenance.sqlite", readonly=True)
    try:
        for named, needle in [({runs[0]: "0.0.1+other"}, "its run used 0.0.1+other"),
                              ({}, f"recorded by run {runs[0]}, which this run's artifact does not name")]:
            judge = Judge(st, runs[1])
            value = {**judge.run_art.value, "evidence_runs": {**judge.run_art.value["evidence_runs"], **named}}
            if not named:
                del value["evidence_runs"][runs[0]]
            judge.run_art = dataclasses.replace(judge.run_art, value=value)
            bad = [f for f in verify_closure(judge) if not f.ok]
            assert bad and all(needle in f.reasons[0] for f in bad), [f.line() for f in bad[:3]]
    finally:
        st.close()


def test_a_run_that_forms_no_hypothesis_is_approved_and_cites_its_evidence(tmp_path, capsys):
    """A clean model gives no hypothesis; the same command again reads its evidence from the memory and makes no
    model call. Each run's report lists the verdicts it rests on, cited, and the judge approves both (a held-out
    case: the run artifact cited nothing and named no model, and the judge refused an honest folder)."""
    import re

    from pytest_mlip.reporting.judge import judge_file

    out = tmp_path / "out"
    command = ["--mlip", CLEAN, "--mlip-committee", "lennard-jones", "--suite", SUITE, "--output", str(out),
               "--tests-dir", "none", "--hypotheses", "1"]
    for _ in range(2):
        capsys.readouterr()
        assert detect(*command) == 0
        text = capsys.readouterr().out
        assert "0 hypothesis(es)" in text
        root = re.search(r"mlip root: ([0-9a-f]{64})", text).group(1)
        md = (out / "report.md").read_text()
        assert "## Evidence checked" in md and f"`small-wall` on `{CLEAN}`: verdict pass [a:" in md
        result = judge_file(out, root=root, sample=2, seed=0)
        assert result.ok, "\n".join(f.line() for f in result.failed)


@pytest.mark.parametrize("ini", ["pytest.ini", "pyproject.toml"])
def test_detect_finds_a_factory_where_pytest_would(tmp_path, monkeypatch, capsys, ini):
    """Held-out case: ``pytest --mlip=mymodels:make`` worked in a project, ``pytest-mlip detect`` in the same
    folder said the module could not be imported (it looked in neither the folder nor the ini's pythonpath)."""
    mod = f"mymodels_{ini.split('.')[0]}"  # one module per case: a module imported once stays in sys.modules
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / f"{mod}.py").write_text(
        "from tests.mutants.agent import TransitionMetalWall as make\n")
    (tmp_path / ini).write_text("[pytest]\npythonpath = src\n" if ini == "pytest.ini"
                                else '[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    monkeypatch.chdir(tmp_path)
    rc = detect("--mlip", f"{mod}:make", "--mlip-committee", CLEAN, "--suite", SUITE, "--output", "out",
                "--tests-dir", "none", "--budget", "1", "--hypotheses", "1")
    assert rc == 0, capsys.readouterr().err
    assert rc == 0 and (tmp_path / "out" / "memory.jsonl").is_file()
    rc = detect("--mlip", f"{mod}:nothing", "--mlip-committee", CLEAN, "--output", "out2")
    err = capsys.readouterr().err
    assert rc == 2 and "has no attribute 'nothing'" in err and f"{mod}.py" in err


def test_detect_on_a_model_whose_every_output_is_garbage_says_so(tmp_path, capsys):
    """Held-out case (round 9): detect on a model whose every energy is NaN read each error verdict as an infinite
    violation and wrote a hypothesis that the model violates a law on a class of configurations (exit 0). Garbage
    is not a law's violation: no hypothesis, MODEL BROKEN in the report and on stderr, exit 1."""
    import re

    from pytest_mlip.reporting.judge import judge_file

    out = tmp_path / "out"
    rc = detect("--mlip", "tests.mutants:NanEverywhere", "--mlip-committee", CLEAN, "--suite", SUITE, "--output",
                str(out), "--tests-dir", "none", "--budget", "50", "--hypotheses", "2")
    captured = capsys.readouterr()
    assert rc == 1 and "MODEL BROKEN: all 1 evidence verdict(s) on the target are errors" in captured.err, captured
    assert "0 hypothesis(es)" in captured.out and "non-finite energy" in captured.err
    root = re.search(r"mlip root: ([0-9a-f]{64})", captured.out).group(1)
    md = (out / "report.md").read_text()
    assert "MODEL BROKEN" in md and "violates the law" not in md
    result = judge_file(out, root=root, sample=0, seed=0)  # an honest account of a broken model
    assert result.ok, "\n".join(f.line() for f in result.failed)


def test_detect_never_writes_over_a_users_folder_or_file(tmp_path, capsys):
    """Held-out cases (round 7): --output naming a folder of the user's overwrote its report.md, run.json and
    detective.json; --memory naming a user's text file got records appended."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my report\n")
    rc = detect("--mlip", TM_WALL, "--mlip-committee", CLEAN, "--suite", SUITE, "--output", str(mine),
                "--tests-dir", "none", "--budget", "1", "--hypotheses", "1")
    err = capsys.readouterr().err
    assert rc == 2 and "did not write" in err and (mine / "report.md").read_text() == "my report\n"
    notes = tmp_path / "notes.txt"
    notes.write_text("my memory\n")
    rc = detect("--mlip", TM_WALL, "--mlip-committee", CLEAN, "--suite", SUITE, "--output", str(tmp_path / "o"),
                "--memory", str(notes), "--tests-dir", "none", "--budget", "1", "--hypotheses", "1")
    err = capsys.readouterr().err
    assert rc == 2 and "not a pytest-mlip evidence memory" in err and notes.read_text() == "my memory\n"
    assert not (tmp_path / "o").exists()
    out = tmp_path / "out"  # a folder detect wrote is reused by the next run
    for _ in range(2):
        assert detect("--mlip", TM_WALL, "--mlip-committee", CLEAN, "--suite", SUITE, "--output", str(out),
                      "--tests-dir", "none", "--budget", "1", "--hypotheses", "1") == 0


@pytest.mark.parametrize("body, words", [("raise RuntimeError('factory broke')", "raised RuntimeError: factory broke"),
                                         ("import sys\n    sys.exit(3)", "raised SystemExit: 3")])
def test_detect_on_a_factory_that_fails_is_one_line(tmp_path, monkeypatch, capsys, body, words):
    """Held-out cases (round 10): detect on a factory that raised printed a 29-line traceback; one that called
    sys.exit(3) ended detect with exit 3 and no output. As in pytest: one line naming the factory, exit 2."""
    mod = f"broken_factory_{abs(hash(body)) % 10**6}"
    (tmp_path / f"{mod}.py").write_text(f"def make():\n    {body}\n")
    monkeypatch.chdir(tmp_path)
    rc = detect("--mlip", f"{mod}:make", "--mlip-committee", "none", "--output", "out")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and words in err[0] and "fix the factory" in err[0], err
    assert not (tmp_path / "out").exists()


def test_a_suite_of_laws_outside_the_default_evidence_is_run(tmp_path, capsys):
    """detect --suite naming a zero-net-force file ran none of it (only the laws of the built-in default evidence
    were taken) and said 'no hypothesis', exit 0, on a NaN model (held-out round 11): a named suite runs every
    contract a planner can widen."""
    suite = tmp_path / "mlip_mine.toml"
    suite.write_text('[[contract]]\nname = "my-znf"\ncheck = "zero_net_force"\n'
                     'structures = [ { kind = "molecule", name = "H2O" } ]\n')
    rc = detect("--mlip", "tests.mutants:NanEverywhere", "--mlip-committee", "none", "--suite", str(suite),
                "--output", str(tmp_path / "out"), "--tests-dir", str(tmp_path / "generated_tests"))
    assert rc == 1 and "MODEL BROKEN" in capsys.readouterr().err
    # its honest folder is approved with a line saying it checked nothing; --require-complete exits 1 on it
    from pytest_mlip.cli import main

    assert main(["judge", str(tmp_path / "out"), "--sample", "0"]) == 0
    assert "the detective run checked nothing: it stopped on MODEL BROKEN" in capsys.readouterr().out
    assert main(["judge", str(tmp_path / "out"), "--sample", "0", "--require-complete"]) == 1
    rc = detect("--mlip", CLEAN, "--mlip-committee", "none", "--suite", str(suite), "--output",
                str(tmp_path / "clean"), "--tests-dir", str(tmp_path / "generated_tests"))
    assert rc == 0
    assert "my-znf" in (tmp_path / "clean" / "report.md").read_text()


def test_detect_refuses_links_special_files_and_a_repeated_model_before_any_call(tmp_path, capsys):
    """Held-out round 11: a symbolic link swapped in for out/report.md (run.json, detective.json) had a rerun
    overwrite the user's file it pointed to; --tests-dir naming a file or a FIFO ended in a traceback after every
    probe; a committee naming the target ran without a word. Each is one line, exit 2, nothing touched."""
    import os

    suite = tmp_path / "mlip_mine.toml"
    suite.write_text('[[contract]]\nname = "my-znf"\ncheck = "zero_net_force"\n'
                     'structures = [ { kind = "molecule", name = "H2O" } ]\n')
    out = tmp_path / "out"
    common = ["--mlip", CLEAN, "--mlip-committee", "none", "--suite", str(suite), "--output", str(out)]
    assert detect(*common, "--tests-dir", str(tmp_path / "gt")) == 0
    capsys.readouterr()
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(mine)
    assert detect(*common, "--tests-dir", str(tmp_path / "gt")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a symbolic link" in err[0] and "report.md" in err[0], err
    assert mine.read_text() == "my notes\n"
    (out / "report.md").unlink()
    for name, make in (("file", lambda p: p.write_text("x\n")), ("fifo", os.mkfifo)):
        path = tmp_path / name
        make(path)
        assert detect(*common, "--tests-dir", str(path)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is not a folder" in err[0], err
    assert detect("--mlip", CLEAN, "--mlip-committee", CLEAN, "--suite", str(suite), "--output",
                  str(tmp_path / "o2")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "which is the target" in err[0], err
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / ".pytest-mlip-report").write_text("written by pytest-mlip\n")  # a report folder's marker
    assert detect("--mlip", CLEAN, "--mlip-committee", "none", "--suite", str(suite), "--output",
                  str(tmp_path / "rep" / "det")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lies inside the report folder" in err[0], err
    assert not (tmp_path / "rep" / "det").exists()


def test_the_judge_approves_a_protocol_the_run_preregistered_and_never_ran(tmp_path):
    """An untouched detective folder was refused: its escalation names a mechanism protocol the budget never ran
    ('not run'), which has no verdict in the store (held-out round 11). A protocol the run pre-registered is one of
    the run's."""
    from pytest_mlip.reporting.judge import judge_file

    suite = tmp_path / "mlip_mine.toml"
    suite.write_text('[[contract]]\nname = "my-rot"\ncheck = "symmetry"\ntransform = "rotation"\n'
                     'structures = [ { kind = "molecule", name = "H2O" }, { kind = "molecule", name = "NH3" } ]\n')
    out = tmp_path / "out"
    assert detect("--mlip", "tests.mutants.foundation:OrientationBias", "--mlip-committee", "none", "--suite",
                  str(suite), "--budget", "60", "--output", str(out), "--tests-dir", "none") == 0
    reports = list((out / "escalations").glob("*/report.md"))
    assert reports and any("| not run |" in r.read_text() for r in reports), "no protocol left unrun: no test"
    result = judge_file(out, sample=0)
    assert result.ok, "\n".join(f.line() for f in result.failed)


def test_detect_on_a_model_whose_outputs_change_between_calls_says_so(tmp_path, capsys):
    """Held-out round 13: detect on a model with random noise on every call found every evidence verdict a pass
    and ended 'no hypothesis left to pursue', exit 0. The sampled determinism check names it: MODEL BROKEN,
    exit 1."""
    rc = detect("--mlip", "tests.mutants.foundation:CallToCallNoise", "--mlip-committee", CLEAN, "--suite", SUITE,
                "--output", str(tmp_path / "out"), "--tests-dir", "none", "--budget", "50", "--hypotheses", "2")
    err = capsys.readouterr().err
    assert rc == 1 and "MODEL BROKEN: the outputs of tests.mutants.foundation:CallToCallNoise differ between " \
                       "identical calls" in err, err


def test_detect_on_a_suite_file_that_does_not_parse_is_one_line_and_writes_nothing(tmp_path, capsys):
    """Held-out round 14: a --suite file of the user's with one bad field was skipped as a 'built-in contract file'
    and the detective then said no contract was of a law it widens. The user's file is refused with its line."""
    bad = tmp_path / "mlip_bad.toml"
    bad.write_text(Path(SUITE).read_text().replace('"Cu"', '"cu"', 1))
    assert bad.read_text() != Path(SUITE).read_text()
    rc = detect("--mlip", CLEAN, "--mlip-committee", "none", "--suite", str(bad), "--output", str(tmp_path / "out"),
                "--tests-dir", "none", "--budget", "20")
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and "mlip_bad.toml" in err[0] and "built-in" not in err[0], err
    assert not (tmp_path / "out").exists()
