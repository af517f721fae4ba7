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
    assert calls and all("(2 at random" in f.text for f in calls), [f.line() for f in calls]


def test_the_memory_ends_with_the_run(run_dir, tmp_path):
    """The run's last memory record is its end; a record appended after it, even one that continues the hash
    chain, is not part of the run the index reports."""
    from pytest_mlip.agent.memory import EvidenceMemory

    out = copy(run_dir[0], tmp_path)
    last = json.loads((out / "memory.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "run" and last["data"]["event"] == "finish"
    EvidenceMemory(out / "memory.jsonl").append("status", {"hypothesis": "H1", "status": "rejected"}, run="x")
    r = judge_file(out, root=run_dir[1], sample=0)
    assert not r.ok and "after this run's end" in failed(r)


@pytest.mark.parametrize("edit, needle", [
    ("pipe", "reviewed-all-pass: changed"),  # a named pipe is not a file the run wrote
    ("empty-dir", "ALL-PASS/: an empty folder"),
    ("store-suffix", "provenance.sqlite-review.md: not written by the run"),
    ("no-record", "escalation.json: missing"),
])
def test_entries_the_run_did_not_write_are_refused(run_dir, tmp_path, edit, needle):
    import os

    out = copy(run_dir[0], tmp_path)
    esc = sorted((out / "escalations").iterdir())[0]
    if edit == "pipe":
        os.mkfifo(out / "reviewed-all-pass")
        needle = "reviewed-all-pass: not written by the run"
    elif edit == "empty-dir":
        (out / "ALL-PASS").mkdir()
    elif edit == "store-suffix":
        (out / "provenance.sqlite-review.md").write_text("reviewed\n")
    else:
        (esc / "escalation.json").unlink()
    r = judge_file(out, root=run_dir[1], sample=0)
    assert not r.ok and needle in failed(r), failed(r)


@pytest.mark.parametrize("sealed", [True, False])
def test_verify_output_in_an_escalation_folder_is_not_the_runs(run_dir, tmp_path, sealed):
    """Held-out round 17: after the README's workflow (detect, then verify on an escalation), the judge refused the
    untouched folder: verify's reference/ pages were 'not written by the run'. Files under an escalation's
    reference/ that verify's seal marks as its output are passed over; without the seal they are refused."""
    from pytest_mlip.reference.cli import SEAL, SEAL_HEAD

    out = copy(run_dir[0], tmp_path)
    ref = sorted((out / "escalations").iterdir())[0] / "reference"
    (ref / "cache").mkdir(parents=True)
    (ref / "verification.md").write_text("# verification\n")
    (ref / "cache" / "k.json").write_text("{}")
    if sealed:
        (ref / SEAL).write_text(SEAL_HEAD + "0" * 64 + "  verification.md\n")
    r = judge_file(out, root=run_dir[1], sample=0)
    assert r.ok is sealed, failed(r)
    if not sealed:
        assert "reference/verification.md: not written by the run" in failed(r)


@pytest.mark.parametrize("edit", ["reason", "table", "meta", "orphan", "trailing", "gz-comment", "gz-member"])
def test_a_store_edited_outside_the_content_ids_is_refused(run_dir, tmp_path, edit):
    """What the content ids leave out (a reason, a context) is in the root; what no artifact holds (tables, meta
    rows, unreachable artifacts, bytes after the database, gzip header fields and members) is refused."""
    import gzip
    import sqlite3

    out = copy(run_dir[0], tmp_path)
    esc = sorted((out / "escalations").iterdir())[0]
    db = next(p for p in esc.iterdir() if p.name.startswith("provenance.sqlite"))
    if db.suffix == ".gz":
        plain = esc / "provenance.sqlite"
        plain.write_bytes(gzip.decompress(db.read_bytes()))
        db.unlink()
        db = plain
    if edit in ("reason", "table", "meta", "orphan"):
        con = sqlite3.connect(db)
        if edit == "reason":
            con.execute("UPDATE artifacts SET reason='manual override: the verdict is pass' WHERE kind='verdict'")
        elif edit == "table":
            con.execute("CREATE TABLE review (text TEXT)")
        elif edit == "meta":
            con.execute("INSERT INTO meta VALUES ('review', 'approved')")
        else:
            row = con.execute("SELECT * FROM artifacts WHERE kind='verdict' LIMIT 1").fetchone()
            con.execute("INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", ("f" * 64,) + row[1:])
        con.commit()
        con.close()
    elif edit == "trailing":
        with open(db, "ab") as fh:
            fh.write(b"reviewed: all contracts pass\n")
    else:
        data = db.read_bytes()
        gz = esc / "provenance.sqlite.gz"
        if edit == "gz-comment":
            import zlib

            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            body = c.compress(data) + c.flush()
            header = b"\x1f\x8b\x08" + bytes([16]) + b"\0\0\0\0\0\xff" + b"reviewed: all pass\0"
            gz.write_bytes(header + body + zlib.crc32(data).to_bytes(4, "little")
                           + (len(data) & 0xFFFFFFFF).to_bytes(4, "little"))
        else:
            gz.write_bytes(gzip.compress(data) + gzip.compress(b"reviewed: all contracts pass\n"))
        db.unlink()
    r = judge_file(esc, root=run_dir[1], sample=0)
    assert not r.ok, edit
    where = {f.where for f in r.failed}
    assert where & {"root", "store file"}, failed(r)


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


def test_render_takes_a_report_file_as_its_help_says(run_dir, tmp_path, capsys):
    """`pytest-mlip render` given an escalation's report.md (or its record, or the index's report.md) renders the
    folder the file lies in, and the judge still approves it; a file that is not a report file is a one-line usage
    error naming what to pass (exit 2), never a traceback."""
    from pytest_mlip.cli import main

    out = copy(run_dir[0], tmp_path)
    esc = sorted((out / "escalations").iterdir())[0]
    before = (esc / "report.md").read_text()
    for path in (esc / "report.md", esc / "escalation.json", out / "report.md", out / "detective.json", esc):
        capsys.readouterr()
        assert main(["render", str(path)]) == 0, capsys.readouterr().err
        folder = path if path.is_dir() else path.parent
        assert capsys.readouterr().out.strip() == f"render: wrote {folder / 'report.md'}"
    assert (esc / "report.md").read_text() == before
    r = judge_file(out, root=run_dir[1], sample=0)
    assert r.ok, failed(r)
    assert main(["render", str(esc / "reproduce.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a report file; pass the report folder" in err[0], err


def test_render_never_replaces_a_detective_page_the_user_edited(run_dir, tmp_path, capsys):
    """Held-out case (round 10), for the detective's pages: an edited report.md is refused, not replaced."""
    from pytest_mlip.cli import main

    out = copy(run_dir[0], tmp_path)
    esc = sorted((out / "escalations").iterdir())[0]
    edited = (esc / "report.md").read_text() + "\nMY ANALYSIS NOTES\n"
    (esc / "report.md").write_text(edited)
    capsys.readouterr()
    assert main(["render", str(esc)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not as pytest-mlip wrote it" in err[0], err
    assert (esc / "report.md").read_text() == edited
