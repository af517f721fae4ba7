"""Judging the detective's reports: validate the record, evaluate every claim on the store, re-render, compare.

An escalation report (``escalation.json`` beside its report.md) and the run's
index report (``detective.json``) are records of typed claims
(:mod:`pytest_mlip.agent.record`). The judge

1. verifies the store: every artifact the run reaches still matches its content id and its recomputed derivations,
   and was recorded by the run's code version and models (or by the evidence run the run artifact names);
2. computes the run's root hash and, given ``--root``, requires it;
3. requires the record to be the one the run sealed (the run artifact keeps its SHA-256, the printed digits of
   its numbers aside);
4. evaluates every item: a number is re-read from its artifact (value at the printed precision, unit, quantity,
   contract, model, probe, and the names printed before it); a verdict word from its verdict; a decision, and
   whether each prediction held, recomputed from the probe verdicts by the fixed rules; a derived number from
   its parents; names against the run; phrases against the catalogue;
5. requires every claim the run artifact names for the hypothesis (its failed scope verdicts on the target);
6. checks the notes (typed records only: free text is refused);
7. renders report.md from the record and requires the given file to parse to the same structure and content;
8. re-runs a random sample of the stored model calls.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..errors import MlipError, loads_json
from ..provenance.artifact import SHORT_ID, from_finite_or_str
from .claims import number_mismatch
from .judge import Finding, Judge, Judgement


def record_path(path: Path) -> Path | None:
    """The record of an agent report (folder, report.md or the record itself); None when it is not one."""
    from ..agent.record import ESCALATION_FILE, INDEX_FILE

    folder = path if path.is_dir() else path.parent
    if path.name in (ESCALATION_FILE, INDEX_FILE):
        return path
    for name in (ESCALATION_FILE, INDEX_FILE):
        if (folder / name).is_file():
            return folder / name
    return None


def _load(rec: Path):
    import json

    from pydantic import ValidationError

    from ..agent.record import load_record
    from .report import DuplicateKeyError

    try:
        text = rec.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MlipError(f"cannot read {rec} ({exc}); pass the report folder the detective wrote") from None
    try:
        return load_record(text), None
    except DuplicateKeyError as exc:
        return None, f"{exc}"
    except json.JSONDecodeError as exc:
        raise MlipError(f"{rec} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); regenerate "
                        "it with pytest-mlip detect") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        return None, f"{'.'.join(map(str, first['loc']))}: {first['msg']}"


def _budget(budget: float | None) -> dict:
    return {} if budget is None else {"budget": budget}


def judge_agent_report(path, store: str | None = None, root: str | None = None, sample: int | None = 3,
                       seed: int | None = None, budget: float | None = None) -> Judgement:
    from .judge_report import compare_rendered, model_loader, pick_store, spot_check, store_findings

    path = Path(path)
    rec_path = record_path(path)
    folder = rec_path.parent
    record, problem = _load(rec_path)
    if record is None:
        j = Judgement(str(path), "-", "?")
        j.findings.append(Finding(False, "record", f"{rec_path.name} is not a record this tool writes", [problem]))
        return j
    st, label, tmp = pick_store(folder, store)
    try:
        judge = Judge(st, record.run.id)
        result = Judgement(str(path), label, record.run.id)
        result.findings += store_findings(label, tmp, st, record.run.id,
                                          single_run=store is None and record.kind == "escalation")
        result.findings += verify_closure(judge)
        from ..provenance.recorder import root_hash

        got = root_hash(st, record.run.id)
        f = Finding(True, "root", f"root hash {got}" + ("" if root else " (not compared: pass --root HASH)"))
        if root is not None and root.strip().lower() != got:
            f.ok, f.reasons = False, [f"the root given with --root is {root}: this store is not the one the run wrote"]
        result.findings.append(f)
        result.findings += check_record(record, judge, folder)
        result.findings += check_files(record, judge.run_art.value or {}, folder)
        md = path if path.suffix.lower() == ".md" else folder / "report.md"
        if md.is_file():
            from ..agent.render import render_markdown

            try:
                want = render_markdown(record)
            except (KeyError, ValueError, TypeError) as exc:
                result.findings.append(Finding(False, "render", "the record cannot be rendered",
                                               [f"{type(exc).__name__}: {exc}"]))
            else:
                given = md.read_text(encoding="utf-8", errors="replace").removeprefix("\ufeff")  # a BOM is no content
                result.findings.append(compare_rendered(given, want, md.name, True, rec_path.name))
        else:
            result.findings.append(Finding(False, "report.md", "missing", ["the record's rendering is not there"]))
        if sample != 0:
            result.findings += spot_check(judge, sample, seed, model_loader(judge), **_budget(budget))
        req = required_of(record, judge.run_art.value or {})
        result.required_total = len(req)
        result.required_present = sum(1 for f in result.findings if f.required and f.ok)
        if record.kind == "index":
            result.findings += judge_escalations(judge.run_art.value or {}, folder, root)
            result.caveat = _stopped_broken(folder)
        return result
    finally:
        st.close()
        if tmp:
            os.unlink(tmp)


def _stopped_broken(folder: Path) -> str | None:
    """A detect run that stopped on MODEL BROKEN (every evidence verdict an error) was approved with no word, and
    ``--require-complete`` exited 0 (held-out round 11): its honest report reports a run that checked nothing. Read
    from run.json, whose SHA-256 the run sealed (the file check above fails a run.json changed since)."""
    try:
        stopped = loads_json((folder / "run.json").read_text(encoding="utf-8")).get("stopped") or ""
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(stopped, str) and stopped.startswith("MODEL BROKEN"):
        return f"the detective run checked nothing: it stopped on {stopped[:300]}"
    return None


def judge_escalations(value: dict, folder: Path, root: str | None) -> list[Finding]:
    """Judging a run's folder judges every escalation report the run wrote there (records, claims, files)."""
    folders = (value.get("texts") or {}).get("folders") or {}
    out, n = [], 0
    for h, rel in sorted(folders.items()):
        sub = folder / rel
        if not sub.is_dir() or record_path(sub) is None:
            continue  # the index's own file check names the missing files
        try:
            j = judge_agent_report(sub, root=root, sample=0)
        except MlipError as exc:
            out.append(Finding(False, rel, "escalation report", [str(exc)]))
            continue
        n += 1
        out += [Finding(False, f"{rel}: {f.where}", f.text, f.reasons) for f in j.failed]
    if not out and n:
        out.append(Finding(True, "escalations", f"{n} escalation report(s) of the run hold (records, claims, files)"))
    return out


def _verify_output(rel: str, have: dict, roots: list[str]) -> bool:
    """A regular file under an escalation's ``reference/`` folder that ``pytest-mlip verify`` sealed (its seal file is
    there): verify's output, written after the run and judged by its own pages (held-out round 17: the judge
    refused an untouched folder once its escalation was verified, as the README's workflow does)."""
    from ..reference.cli import SEAL, SEAL_HEAD

    path = have[rel]
    if path.is_symlink() or not path.is_file():
        return False
    for root in roots:
        if rel.startswith(f"{root}reference/"):
            seal = have.get(f"{root}reference/{SEAL}")
            try:
                return seal is not None and not seal.is_symlink() and seal.read_text(errors="replace").startswith(
                    SEAL_HEAD)
            except OSError:
                return False
    return False


def check_files(record, value: dict, folder: Path) -> list[Finding]:
    """The folder holds exactly the files the run wrote, unchanged: every file sealed in the run's manifest with
    its SHA-256; the files written after the seal (records, renderings, stores, run.json) and nothing else; the
    memory's sealed beginning (later runs append to it)."""
    import hashlib

    from ..agent.outputs import (ESCALATION_WRITTEN_LATER, STORE_FILES, file_hash,
                                 is_store_side_file, written_later)

    texts = value.get("texts") or {}
    man = texts.get("manifest")
    if not isinstance(man, dict):
        return [Finding(False, "files", "the run sealed no file list",
                        ["its run predates sealed files: run pytest-mlip detect again to judge its folder"])]
    folders = texts.get("folders") or {}
    sealed: dict = man.get("files") or {}
    if record.kind == "escalation":
        prefix = folders.get(record.hypothesis or "")
        if not prefix:
            return [Finding(False, "files", "the run names no folder for this report", [])]
        base = prefix + "/"
        want = {k[len(base):]: v for k, v in sealed.items() if k.startswith(base)}
        later = set(ESCALATION_WRITTEN_LATER)
        memory = None
    else:
        mem = man.get("memory") or {}
        memory = mem.get("file")
        want = dict(sealed)
        later = written_later(record.run.id, list(folders.values()), memory or "")
    from .judge import folder_entries

    have, empty = folder_entries(folder)
    problems = [f"{d}/: an empty folder the run did not write" for d in empty
                if d not in ("generated_tests", "runs", "escalations")]
    for rel, h in sorted(want.items()):
        p = have.get(rel)
        if p is None:
            problems.append(f"{rel}: missing (the run wrote it)")
        elif file_hash(p) != h:
            problems.append(f"{rel}: changed since the run wrote it")
    roots = [""] if record.kind == "escalation" else [f"{rel}/" for rel in folders.values()]
    for rel in sorted(set(have) - set(want)):
        if rel in later and have[rel].is_file() and not have[rel].is_symlink():
            continue
        if is_store_side_file(rel) or _verify_output(rel, have, roots):
            continue
        problems.append(f"{rel}: not written by the run")
    if record.kind == "index":
        for rel in ("run.json", f"runs/{record.run.id}.json"):
            p = have.get(rel)
            if p is None:
                problems.append(f"{rel}: missing (the run wrote it)")
            elif file_hash(p) != man.get("run_json"):
                problems.append(f"{rel}: changed since the run wrote it")
        md = have.get(f"runs/{record.run.id}.md")
        if md is None:
            problems.append(f"runs/{record.run.id}.md: missing (the run wrote it)")
        elif file_hash(md) != man.get("index_md"):
            problems.append(f"runs/{record.run.id}.md: changed since the run wrote it")
        if memory:
            p = have.get(memory)
            n, h = int((man.get("memory") or {}).get("bytes", 0)), (man.get("memory") or {}).get("sha256")
            data = p.read_bytes() if p is not None else b""
            if p is None:
                problems.append(f"{memory}: missing (the run wrote it)")
            elif hashlib.sha256(data[:n]).hexdigest() != h:
                problems.append(f"{memory}: its records up to this run's end changed")
            elif len(data) > n:
                problems.append(f"{memory}: holds {len(data) - n} byte(s) after this run's end (a later run in the "
                                "folder writes its own index; judge a copy taken when this run ended)")
        for rel in folders.values():
            for name in (ESCALATION_WRITTEN_LATER[:2]):
                if f"{rel}/{name}" not in have:
                    problems.append(f"{rel}/{name}: missing (the run wrote it)")
            if not any(f"{rel}/{s}" in have for s in STORE_FILES):
                problems.append(f"{rel}: its store snapshot is missing")
    if problems:
        return [Finding(False, "files", f"{len(problems)} file(s) differ from what the run sealed", problems[:8])]
    return [Finding(True, "files", f"{len(want)} file(s) as the run sealed them, and nothing added")]


def verify_closure(judge: Judge) -> list[Finding]:
    """Every artifact the run reaches holds (content id, recomputed derivations) and was recorded by this run's code
    version and models, or by an evidence run the run artifact names, with that run's code version."""
    evidence = (judge.run_art.value or {}).get("evidence_runs") or {}
    bad = []
    for aid in sorted(judge.closure):
        a = judge.get(aid)
        problems = judge.verify(aid) if a is not None else ["missing"]
        if a is not None and not problems:
            other = bool(a.run) and a.run != judge.run["id"]
            want = evidence.get(a.run) if other else judge.run["code_version"]
            if other and a.run not in evidence:
                problems = [f"recorded by run {a.run}, which this run's artifact does not name (with its code "
                            "version) as an earlier run it draws on"]
            elif a.code_version != want:
                problems = [f"recorded by code version {a.code_version}, its run used {want}"]
            elif a.model is not None and a.run in (None, judge.run["id"]):
                m = judge.models.get(a.model.name)
                if m is None or (m.get("version"), m.get("weights_hash")) != (a.model.version, a.model.weights_hash):
                    problems = [f"recorded for {a.model.name} {a.model.version}/{a.model.weights_hash}, not a model "
                                "of the run"]
        if problems:
            bad.append(Finding(False, "store", f"{a.kind if a else 'artifact'} {aid[:SHORT_ID]}", problems[:1]))
    if bad:
        return bad[:20]
    return [Finding(True, "store", f"{len(judge.closure)} artifact(s) of run {judge.run['id']} hold (content ids, "
                                   "recomputed derivations)")]


def check_record(record, judge: Judge, folder: Path) -> list[Finding]:
    from ..agent.record import Line, Table, seal

    out = []
    value = judge.run_art.value or {}
    key = record.hypothesis if record.kind == "escalation" else "index"
    sealed = ((value.get("texts") or {}).get("records") or {}).get(key or "")
    s = seal(record)
    out.append(Finding(sealed == s, "record", f"the run sealed this record ({key})",
                       [] if sealed == s else ["its words, names, claims or order differ from the record the run "
                                               "wrote (the run artifact keeps its SHA-256)"]))
    if record.run.code_version != judge.run["code_version"] or record.run.store != "provenance.sqlite":
        out.append(Finding(False, "record", "run header", ["its code version or store is not the run's"]))
    ctx = _Context(judge, folder, record)
    for i, b in enumerate(record.blocks):
        if isinstance(b, Line):
            out += ctx.line(f"block {i}", b.items)
        elif isinstance(b, Table):
            out += ctx.table(f"block {i}", b)
        elif b.t == "models":
            out += ctx.models(f"block {i}", b.models)
        elif b.t == "image":
            if not (folder / b.file).is_file():
                out.append(Finding(False, f"block {i}", b.file, ["the figure is missing"]))
    req = required_of(record, value)
    for vid in req:
        ok = vid in ctx.verdicts
        out.append(Finding(ok, "required", f"failed scope verdict {vid[:SHORT_ID]} on the target",
                           [] if ok else ["the report does not state it"], required=True))
    out += check_notes(record, judge)
    failed = [f for f in out if not f.ok]
    n = ctx.count
    if not failed:
        out.append(Finding(True, "claims", f"{n} claim(s) hold on the store (values, units, verdicts, decisions, "
                                           "names, phrases)"))
    return [f for f in out if not f.ok] + [f for f in out if f.ok and f.where in ("record", "claims", "required")]


def required_of(record, value: dict) -> list[str]:
    """The claims a report must make: an escalation report, its hypothesis' failed scope verdicts on the target;
    the index, every escalation's."""
    if record.kind == "escalation":
        return list((value.get("required_by_hypothesis") or {}).get(record.hypothesis or "", []))
    return list(value.get("required") or [])


def check_notes(record, judge: Judge) -> list[Finding]:
    from pydantic import ValidationError

    from .claims import parse_notes
    from .judge_report import _note_problems

    try:
        notes = parse_notes(record.notes)
    except ValidationError as exc:
        from .claims import note_error

        where, why = note_error(exc)
        return [Finding(False, where, "malformed note", [why])]
    from ..agent.escalation import unit_of

    verdicts = [a for a in (judge.get(p) for p in judge.run_art.parents) if a is not None and a.kind == "verdict"]
    checks = {a.params.get("contract"): a.params.get("check") for a in judge.arts.values() if a.kind == "verdict"}

    def unit(a):
        return unit_of(a, a.params.get("check") or checks.get(a.params.get("contract")))

    return [Finding(not (r := _note_problems(n, judge, verdicts, unit)), f"notes[{i}]", f"{n.kind} note", r)
            for i, n in enumerate(notes)]


class _Context:
    """Evaluates items against the store."""

    def __init__(self, judge: Judge, folder: Path, record):
        self.judge, self.folder, self.record = judge, folder, record
        self.verdicts: set[str] = set()
        self.count = 0
        self._decisions: dict[str, tuple] = {}
        value = judge.run_art.value or {}
        self.files = set(((value.get("texts") or {}).get("files") or {}).values())
        self.checks = {str(a.params.get("check")) for a in judge.arts.values() if a.kind == "verdict"}
        decisions = [a for a in judge.arts.values() if a.kind == "observable" and a.params.get("name") == "decision"]
        self.hypotheses = {a.params.get("hypothesis") for a in decisions}
        #: protocols the run pre-registered: one the budget never ran has no verdict, and the report names it as
        #: 'not run' (an honest report was refused for it: held-out round 11)
        self.preregistered = {p.get("name") for a in decisions for p in a.params.get("predictions", [])
                              if isinstance(p, dict)}

    def art(self, aid):
        if aid not in self.judge.closure:
            return None, f"artifact {aid[:SHORT_ID]} is not part of run {self.judge.run['id']}"
        return self.judge.get(aid), None

    # --- one line --------------------------------------------------------------------------------------------------
    def line(self, where, items, names=None) -> list[Finding]:
        from ..agent.record import LawText, Name

        out = []
        last = dict(names or {})
        for it in items:
            self.count += 1
            reasons = self.item(it, last)
            if reasons:
                out.append(Finding(False, where, _show(it), reasons))
            if isinstance(it, Name) and it.role in ("model", "protocol", "contract", "probe"):
                last["contract" if it.role == "protocol" else it.role] = it.name
                if it.role in ("model", "protocol", "contract"):
                    last.pop("probe", None)
            if isinstance(it, LawText):
                for v in it.fill.values():
                    if v is not None:
                        self.count += 1
                        r = self.item(v, {})
                        if r:
                            out.append(Finding(False, where, _show(v), r))
        return out

    def table(self, where, t) -> list[Finding]:
        from ..agent.record import Name

        out = []
        cols = []
        for cell in t.head:
            out += self.line(where, cell)
            m = [x.name for x in cell if isinstance(x, Name) and x.role == "model"]
            cols.append({"model": m[0]} if m else {})
        for row in t.rows:
            if len(row) != len(t.head):
                out.append(Finding(False, where, "table row", [f"{len(row)} cells under {len(t.head)} columns"]))
            first = [x for x in (row[0] if row else []) if isinstance(x, Name) and x.role == "probe"]
            for j, cell in enumerate(row):
                names = dict(cols[j]) if j < len(cols) else {}
                if first and j:
                    names["probe"] = first[0].name
                out += self.line(where, cell, names)
        return out

    def models(self, where, rows) -> list[Finding]:
        run = self.judge.models
        got = {m.name: (m.role, m.version, m.weights_hash) for m in rows}
        want = {n: (m.get("role"), m.get("version"), m.get("weights_hash")) for n, m in run.items()}
        self.count += len(rows)
        if got == want and len(rows) == len(got):
            return []
        diff = sorted(set(got.items()) ^ set(want.items()))
        return [Finding(False, where, "models table", [f"the run's models are {want}; first difference {diff[0]}"
                                                       if diff else "a model is listed twice"])]

    # --- one item --------------------------------------------------------------------------------------------------
    def item(self, it, last: dict) -> list[str]:
        k = it.k
        return getattr(self, f"_{k}")(it, last)

    def _phrase(self, it, last):
        from ..agent.record import phrase_text

        try:
            phrase_text(it.id)
        except (KeyError, ValueError):
            return [f"no phrase {it.id!r} in the catalogue"]
        if it.id.startswith("law:") and it.id.split(":")[1] not in self.checks:
            return [f"a phrase of the law {it.id.split(':')[1]}, which no verdict of the run is about"]
        return []

    def _law(self, it, last):
        from ..agent.lawreport import law_phrases

        if it.law not in self.checks:
            return [f"a phrase of the law {it.law}, which no verdict of the run is about"]
        return [] if it.key in law_phrases(it.law) else [f"the law {it.law} has no phrase {it.key!r}"]

    def _name(self, it, last):
        from ..agent.record import CODE_NAMES

        j, n = self.judge, it.name
        ok = {"model": lambda: n in j.models, "run": lambda: n == j.run["id"],
              "code_version": lambda: n == j.run["code_version"], "store": lambda: n == "provenance.sqlite",
              "protocol": lambda: n in j.contracts or n in self.preregistered, "contract": lambda: n in j.contracts,
              "probe": lambda: n in j.probes, "code": lambda: n in CODE_NAMES,
              "hypothesis": lambda: n in self.hypotheses,
              "file": lambda: n in self.files or (self.folder / n).exists()}.get(it.role, lambda: True)()
        return [] if ok else [f"{it.role} {n!r} is not one of the run's"]

    def _value(self, it, last):
        from ..agent.escalation import quantity_of, unit_of

        a, err = self.art(it.artifact)
        if err:
            return [err]
        if a.kind not in ("tolerance", "violation", "normalized", "max_normalized", "observable"):
            return [f"a number must cite a stored number, this is a {a.kind}"]
        out = []
        m = number_mismatch(it.text, a.value)
        if m:
            out.append(m)
        check = self._check_of(a)
        if it.unit != unit_of(a, check):
            out.append(f"unit {it.unit!r}, the artifact's unit is {unit_of(a, check)!r}")
        if it.quantity != quantity_of(a):
            out.append(f"printed as {it.quantity}, the artifact is {quantity_of(a)}")
        model = a.model.name if a.model else None
        for field, want in (("contract", a.params.get("contract")), ("model", model),
                            ("probe", a.params.get("probe"))):
            if getattr(it, field) != want:
                out.append(f"its {field} is {want!r}, the record says {getattr(it, field)!r}")
            elif field in last and want is not None and last[field] != want:
                out.append(f"printed after {field} {last[field]!r}, the artifact's {field} is {want!r}")
        out += self._derived(a, check)
        return out

    def _check_of(self, a):
        if a.params.get("check"):
            return a.params["check"]
        c = a.params.get("contract")
        for v in self.judge.arts.values():
            if v.kind == "verdict" and v.params.get("contract") == c:
                return v.params.get("check")
        return None

    def _derived(self, a, check) -> list[str]:
        """A number the detective derived, recomputed from its parents by its recorded rule."""
        from ..agent.escalation import DERIVE_PREFIX

        if a.kind != "observable" or not a.routine.startswith(DERIVE_PREFIX):
            return []
        parents = [self.judge.get(p) for p in a.parents]
        want = None
        if "scale" in a.params and len(parents) == 1:
            want = float(from_finite_or_str(parents[0].value)) / float(a.params["scale"])
        elif check:
            from ..agent.lawreport import law_report

            rec = getattr(law_report(check), "recompute", None)
            want = rec(a.params.get("name"), a.params, parents) if rec else None
        if want is None:
            return []
        got = from_finite_or_str(a.value)
        if not math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12):
            return [f"recomputed from its parents by its rule it is {want!r}, the artifact says {got!r}"]
        return []

    def _verdict(self, it, last):
        a, err = self.art(it.artifact)
        if err:
            return [err]
        if a.kind != "verdict":
            return [f"a verdict must cite a verdict artifact, this is a {a.kind}"]
        self.verdicts.add(a.id)
        out = []
        if it.status != a.value:
            out.append(f"printed {it.status.upper()}, the verdict is {str(a.value).upper()}")
        model = a.model.name if a.model else "?"
        if it.contract != a.params.get("contract") or it.model != model:
            out.append(f"the verdict is of {a.params.get('contract')} on {model}")
        for field, want in (("contract", a.params.get("contract")), ("model", model)):
            if field in last and last[field] != want:
                out.append(f"printed after {field} {last[field]!r}, the verdict is on {want!r}")
        return out

    def decision(self, aid):
        """(artifact, recomputed {verdict, type, held}, problems) of a decision artifact."""
        if aid in self._decisions:
            return self._decisions[aid]
        from ..agent.judgement import decide

        a, err = self.art(aid)
        if err or a.kind != "observable" or a.params.get("name") != "decision":
            res = (None, None, [err or "not a decision artifact"])
        else:
            statuses = {p: self.judge.get(p).value for p in a.parents if self.judge.get(p).kind == "verdict"}
            params = a.params
            problems = []
            vids = [o["verdict"] for r in params.get("probes", {}).values() for o in r["outcomes"] if o["verdict"]]
            if any(v not in statuses for v in vids):
                problems.append("its inputs name verdicts it does not cite")
            got = decide(params, statuses)
            v = a.value or {}
            if params.get("unregistered"):
                ok = v.get("verdict") == "exhausted"
            else:
                ok = v.get("verdict") == got["verdict"] or v.get("verdict") == "reject"
                ok = ok and (v.get("type") == got["type"] or v.get("verdict") == "reject")
                ok = ok and v.get("held") == got["held"]
            if not ok:
                problems.append(f"the rules give {got['verdict']} ({got['type']}), held {got['held']}; the artifact "
                                f"says {v.get('verdict')} ({v.get('type')}), held {v.get('held')}")
            res = (a, got, problems)
        self._decisions[aid] = res
        return res

    def _decision(self, it, last):
        a, got, problems = self.decision(it.artifact)
        if a is None:
            return problems
        v = a.value or {}
        out = list(problems)
        if (it.verdict, it.type) != (v.get("verdict"), v.get("type")):
            out.append(f"printed {it.verdict} ({it.type}), the decision is {v.get('verdict')} ({v.get('type')})")
        if it.hypothesis != a.params.get("hypothesis") or (self.record.kind == "escalation" and
                                                             it.hypothesis != self.record.hypothesis):
            out.append(f"the decision is of {a.params.get('hypothesis')}")
        return out

    def _held(self, it, last):
        a, got, problems = self.decision(it.artifact)
        if a is None:
            return problems
        want = (a.value or {}).get("held", {}).get(it.prediction, "n/a")
        return problems + ([] if it.held == want else [f"printed held {it.held}, the decision gives {want}"])

    def _expect(self, it, last):
        a, got, problems = self.decision(it.artifact)
        if a is None:
            return problems
        p = next((p for p in a.params.get("predictions", []) if p["name"] == it.prediction), None)
        if p is None:
            return problems + [f"no pre-registered prediction {it.prediction}"]
        want = {"kind": p["kind"], "target": p["target"], "committee": p["committee"]}[it.who]
        out = list(problems)
        if it.expect != want:
            out.append(f"pre-registered {it.who} {want}, printed {it.expect}")
        if it.who == "committee" and it.decades != p.get("excess_decades"):
            out.append(f"pre-registered {p.get('excess_decades')} decades, printed {it.decades}")
        return out

    def _text(self, it, last):
        """Planner words (sealed by the run); a number cited inside must be its artifact's."""
        from ..agent.ledger import CITED_NUMBER_RE

        out = []
        for m in CITED_NUMBER_RE.finditer(it.text):
            aid, err = self.judge.resolve(m.group("ref"))
            if err or aid not in self.judge.closure:
                out.append(err or f"{m.group('ref')} is not part of the run")
                continue
            bad = number_mismatch(m.group("num"), self.judge.get(aid).value)
            if bad:
                out.append(bad)
        return out


def _show(it) -> str:
    d = it.model_dump(exclude_none=True)
    s = " ".join(f"{k}={v}" for k, v in d.items() if k not in ("k", "fill"))
    return f"{it.k} {s}"[:100]
