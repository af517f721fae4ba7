"""The judge holds a detective folder to the files its run sealed: later memory records must continue the chain, a
second run in the same folder keeps the first run's files, and judging the index judges every escalation."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from pytest_mlip.reporting.judge import judge_file

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("mlip_judge_bench_files", ROOT / "benchmarks" / "judge_bench.py")
    B = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = B
    spec.loader.exec_module(B)
    reports = B.make_agent_reports("tm-wall", B.AGENT_RUNS["tm-wall"], tmp_path_factory.mktemp("files"))
    index = [r for r in reports if r.name.endswith("/index")][0]
    return index.folder, index.root


def copy(run_dir, tmp_path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(run_dir, out)
    return out


def failed(result) -> str:
    return "\n".join(f.line() for f in result.failed)


def test_a_fresh_run_folder_holds_exactly_its_sealed_files(run_dir):
    folder, root = run_dir
    r = judge_file(folder, root=root, sample=0)
    assert r.ok, failed(r)
    assert any(f.where == "files" and f.ok for f in r.findings)
    assert any(f.where == "escalations" and f.ok for f in r.findings)


def test_the_detective_keeps_its_model_calls_so_the_judge_re_runs_a_sample(run_dir):
    """Every escalation snapshot keeps the configurations of the run's model calls, as a pytest run's store does."""
    folder, root = run_dir
    esc = sorted((folder / "escalations").iterdir())[0]
    r = judge_file(esc, root=root, sample=2, seed=0)
    assert r.ok, failed(r)
    calls = [f for f in r.findings if f.where == "model calls"]
    assert calls and all("re-ran 2 of" in f.text for f in calls), [f.line() for f in calls]


def test_memory_records_appended_later_continue_the_chain(run_dir, tmp_path):
    from pytest_mlip.agent.memory import EvidenceMemory

    out = copy(run_dir[0], tmp_path)
    EvidenceMemory(out / "memory.jsonl").append("run", {"event": "start", "target": "x"}, run="later")
    assert judge_file(out, root=run_dir[1], sample=0).ok
    with open(out / "memory.jsonl", "a") as fh:
        fh.write(json.dumps({"seq": 99, "type": "note", "run": None, "prev": None,
                             "data": "reviewed: the model obeys the law"}) + "\n")
    r = judge_file(out, root=run_dir[1], sample=0)
    assert not r.ok and "hash chain" in failed(r)


def test_an_edited_escalation_file_is_caught_from_the_index(run_dir, tmp_path):
    out = copy(run_dir[0], tmp_path)
    esc = sorted((out / "escalations").iterdir())[0]
    (esc / "reproduce.py").write_text((esc / "reproduce.py").read_text().replace("1", "2", 1))
    r = judge_file(out, root=run_dir[1], sample=0)
    assert not r.ok and f"escalations/{esc.name}/reproduce.py: changed" in failed(r)
    r = judge_file(esc, root=run_dir[1], sample=0)
    assert not r.ok and "reproduce.py: changed since the run wrote it" in failed(r)


def test_run_json_and_the_runs_copy_are_sealed(run_dir, tmp_path):
    out = copy(run_dir[0], tmp_path)
    data = json.loads((out / "run.json").read_text())
    data["model_evaluations"] = 10
    (out / "run.json").write_text(json.dumps(data, indent=1) + "\n")
    r = judge_file(out, root=run_dir[1], sample=0)
    assert not r.ok and "run.json: changed" in failed(r)


def test_a_run_without_a_sealed_file_list_is_refused(run_dir, tmp_path):
    """A run whose artifact names no files (an older format) cannot have its folder verified: refused, with the fix."""
    from pytest_mlip.reporting.judge_agent import check_files

    out = copy(run_dir[0], tmp_path)
    from pytest_mlip.agent.record import load_record

    record = load_record((out / "detective.json").read_text())
    found = check_files(record, {"texts": {}}, out)
    assert not found[0].ok and "run pytest-mlip detect again" in found[0].reasons[0]
