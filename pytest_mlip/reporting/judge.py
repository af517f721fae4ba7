"""The judge's common parts: findings, the judgement, and a provenance store read for one run.

``pytest-mlip judge`` verifies generated reports from their sources: a run
report from its report.json (:mod:`.judge_report`), the detective's reports
from their records of typed claims (:mod:`.judge_agent`). Both read the store
through :class:`Judge`: an artifact is looked up by id or unique prefix, and
verified: its id still matches its content, its parents exist and hold, and
the cheap derivations are recomputed (v/tau = max v/tau over its keys, the
worst v/tau over probes, pass/fail/error from them).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MlipError
from ..provenance.artifact import DERIVED_KINDS, SHORT_ID, from_finite_or_str

HEX_RE = re.compile(r"^[0-9a-f]{6,64}$")


def folder_entries(base: Path) -> tuple[dict[str, Path], list[str]]:
    """Every entry under ``base`` that is not a folder (files, links, pipes, ...) by relative POSIX path, and the
    folders that hold none."""
    entries, dirs = {}, []
    for p in sorted(Path(base).rglob("*")):
        rel = p.relative_to(base).as_posix()
        if p.is_dir() and not p.is_symlink():
            dirs.append(rel)
        else:
            entries[rel] = p
    empty = [d for d in dirs if not any(r.startswith(d + "/") for r in entries)]
    return entries, empty


@dataclass
class Finding:
    ok: bool
    where: str
    text: str
    reasons: list[str] = field(default_factory=list)
    required: bool = False

    def line(self) -> str:
        head = f"{'ok  ' if self.ok else 'FAIL'}  {self.where}: {self.text}"
        return head if self.ok else head + " -- " + "; ".join(self.reasons)


@dataclass
class Judgement:
    report: str
    store: str
    run: str
    findings: list[Finding] = field(default_factory=list)
    required_total: int = 0
    required_present: int = 0
    #: what an approval does not say by itself: the judged run did not finish (the report says so)
    caveat: str | None = None

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        claims = [f for f in self.findings]
        return (f"judge: {len(claims)} check(s), {len(claims) - len(self.failed)} verified, {len(self.failed)} "
                f"failed; required claims present: {self.required_present} of {self.required_total}"
                + (f"\njudge: {self.caveat}" if self.caveat else ""))


class Judge:
    """Checks claims against one run of one store."""

    def __init__(self, store, run_id: str):
        self.store = store
        run = store.run(run_id)
        if run is None:
            raise MlipError(f"run {run_id!r} is not in the provenance store {store.path}; judge the report against "
                            "the store its run wrote (--store PATH)")
        if not run.get("artifact"):
            raise MlipError(f"run {run_id!r} in {store.path} never finished (no run artifact); re-run pytest and "
                            "regenerate the report")
        self.run = run
        self.closure = store.closure([run["artifact"]])
        self.arts = store.get_many(self.closure)
        self.run_art = self.arts.get(run["artifact"])
        self._verified: dict[str, list[str]] = {}
        self.probes = {a.params["probe"] for a in self.arts.values() if isinstance(a.params.get("probe"), str)}
        self.contracts = {a.params["contract"] for a in self.arts.values()
                          if isinstance(a.params.get("contract"), str)}

    def evidence_of_earlier_run(self, a) -> bool:
        """An artifact of an earlier run that this run cites as evidence (the run artifact names that run and the
        code version it recorded with): it holds to its own run's code version, not to this one."""
        evidence = ((self.run_art.value or {}).get("evidence_runs") or {}) if self.run_art is not None else {}
        return bool(a.run) and a.run != self.run["id"] and evidence.get(a.run) == a.code_version

    @property
    def models(self) -> dict:
        return self.run.get("models") or {}

    def get(self, aid: str):
        a = self.arts.get(aid)
        if a is None:
            a = self.store.get(aid)
            if a is not None:
                self.arts[aid] = a
        return a

    def resolve(self, ref: str) -> tuple[str | None, str | None]:
        ref = ref.lower()
        if not HEX_RE.match(ref):
            return None, f"{ref!r} is not an artifact id (6 to 64 hex digits)"
        hits = self.store.resolve(ref)
        if not hits:
            return None, f"no artifact {ref} in the store"
        if len(hits) > 1:
            return None, f"id prefix {ref} is ambiguous"
        return hits[0], None

    def verify(self, aid: str, depth: int = 0) -> list[str]:
        """Problems with an artifact's content and ancestry (memoized; empty list: it holds)."""
        if aid in self._verified:
            return self._verified[aid]
        self._verified[aid] = []  # cycle guard
        a = self.get(aid)
        if a is None:
            out = [f"parent {aid[:SHORT_ID]} is missing from the store"]
        else:
            out = self._verify(a, depth)
        self._verified[aid] = out
        return out

    def _verify(self, a, depth) -> list[str]:
        if not a.verifies():
            return [f"artifact {a.id[:SHORT_ID]} was altered after it was stored (its id no longer matches its "
                    "content)"]
        skip_verdict = a.kind == "verdict" and a.value == "skip"
        if a.kind in DERIVED_KINDS and not a.parents and not skip_verdict and not _empty_incomplete_run(a):
            return [f"{a.kind} {a.id[:SHORT_ID]} cites no parent: a derived value must cite what it was computed from"]
        parents = []
        for pid in a.parents:
            p = self.get(pid)
            if p is None:
                return [f"its parent {pid[:SHORT_ID]} is missing from the store"]
            problems = self.verify(pid, depth + 1)
            if problems:
                return [f"its parent {pid[:SHORT_ID]} ({p.kind}) does not hold: {problems[0]}"]
            if p.code_version != a.code_version and not self.evidence_of_earlier_run(p):
                return [f"its parent {pid[:SHORT_ID]} comes from code version {p.code_version}, "
                        f"not {a.code_version}"]
            if a.model is not None and p.model is not None and p.model != a.model:
                return [f"its parent {pid[:SHORT_ID]} comes from model {p.model.name} "
                        f"({p.model.version}, {p.model.weights_hash}), not {a.model.name}"]
            parents.append(p)
        return self._recompute(a, parents)

    def _recompute(self, a, parents) -> list[str]:
        def num(x):
            return from_finite_or_str(x) if isinstance(x, str) else x

        if a.kind == "normalized" and a.params.get("status", "ok") == "ok":
            tol = {p.params.get("key"): p.value for p in parents if p.kind == "tolerance"}
            viols = [p for p in parents if p.kind == "violation"]
            if not viols:
                return ["a normalized violation must cite the raw violations it divides"]
            want = 0.0
            for p in viols:
                tau = tol.get(p.params.get("key"))
                if tau is None:
                    return [f"no tolerance cited for key {p.params.get('key')!r}"]
                if p.params.get("probe") != a.params.get("probe") or p.params.get("contract") != a.params.get(
                        "contract"):
                    return ["it cites violations of another probe or contract"]
                v = num(p.value)
                want = max(want, (v / tau) if math.isfinite(v) else math.inf)
            if not _same(want, num(a.value)):
                return [f"recomputed v/tau from its parents is {want!r}, the artifact says {a.value!r}"]
        elif a.kind == "max_normalized":
            vals = [num(p.value) for p in parents if p.kind == "normalized"]
            if not vals or any(p.params.get("contract") != a.params.get("contract") for p in parents):
                return ["the worst v/tau must cite the per-probe values of its own contract"]
            if not _same(max(vals), num(a.value)):
                return [f"recomputed worst v/tau is {max(vals)!r}, the artifact says {a.value!r}"]
        elif a.kind == "verdict" and a.value != "skip":
            norms = [p for p in parents if p.kind == "normalized"]
            worst = [num(p.value) for p in parents if p.kind == "max_normalized"]
            if not worst:
                return ["a pass/fail verdict must cite its worst v/tau"]
            errors = any(p.params.get("status") == "error" for p in norms)
            want = "error" if errors else ("fail" if worst[0] > 1.0 else "pass")
            if a.value != want:
                return [f"the cited worst v/tau ({worst[0]!r}) gives {want.upper()}, the artifact says "
                        f"{str(a.value).upper()}"]
        return []

    # --- one claim -------------------------------------------------------------------------------------------

def _empty_incomplete_run(a) -> bool:
    """A run stopped before any verdict (Ctrl-C, a dead worker) honestly cites nothing: its value says so (no
    verdict, an incomplete block that fails the run)."""
    value = a.value if isinstance(a.value, dict) else {}
    inc = value.get("incomplete") or {}
    return (a.kind == "run" and value.get("verdicts") == 0 and not value.get("order") and not value.get("required")
            and isinstance(inc, dict) and bool(inc.get("fails_run")) and bool(inc.get("count") or inc.get("interrupted") or inc.get("dead_workers")))


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, (int, float)):
        if math.isinf(x) or math.isinf(y):
            return x == y
        return math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0) or x == y
    return x == y


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# --- reading reports ---------------------------------------------------------------------------------------------



def _read_report(path: Path) -> tuple[str, Any]:
    if not path.is_file():
        raise MlipError(f"report {path} does not exist; pass the report.md or report.json that "
                        "pytest --mlip-report=DIR wrote")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise MlipError(f"report {path} is not UTF-8 text; pass the report.md or report.json that "
                        "pytest --mlip-report=DIR wrote") from None
    except OSError as exc:
        raise MlipError(f"cannot read report {path} ({exc.strerror})") from None
    if path.suffix.lower() == ".json":
        from .report import DuplicateKeyError, loads_strict

        try:
            data = loads_strict(text)
        except DuplicateKeyError as exc:
            raise MlipError(f"report {path} is not a report this tool writes: {exc}") from None
        except json.JSONDecodeError as exc:
            raise MlipError(f"report {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                            "regenerate it with pytest --mlip=MODEL --mlip-report=DIR") from None
        from .report import FORMAT, VERSION

        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise MlipError(f"{path} is not a pytest-mlip report (no \"format\": \"{FORMAT}\"); regenerate it with "
                            "pytest --mlip=MODEL --mlip-report=DIR")
        if data.get("version") != VERSION:
            raise MlipError(f"report {path} has format version {data.get('version')!r}, this judge reads {VERSION}; "
                            "regenerate it with this pytest-mlip")
        if not isinstance((data.get("run") or {}).get("id"), str):
            raise MlipError(f"report {path} names no run (run.id); regenerate it with pytest --mlip-report=DIR")
        return "json", data
    return "md", text




def judge_file(report, store: str | None = None, root: str | None = None, sample: int | None = 3,
               seed: int | None = None, replay: int | None = 3, budget: float | None = None) -> Judgement:
    """Judge a report from its source: a run report (a folder holding report.json) by :mod:`.judge_report`, a
    detective report (escalation.json or detective.json beside its report.md) by :mod:`.judge_agent`."""
    from .judge_agent import judge_agent_report, record_path

    path = Path(report)
    folder = path if path.is_dir() else path.parent
    if not path.exists():
        raise MlipError(f"report {path} does not exist; pass the report folder (or its report.md) that "
                        "pytest --mlip-report=DIR or pytest-mlip detect wrote")
    if (folder / "report.json").is_file():
        from .judge_report import judge_report

        return judge_report(path, store=store, root=root, sample=sample, seed=seed, replay=replay, budget=budget)
    if record_path(path) is not None:
        return judge_agent_report(path, store=store, root=root, sample=sample, seed=seed, budget=budget)
    if path.suffix.lower() == ".json":
        _read_report(path)  # names what is wrong with it
    raise MlipError(f"{path} is not a report this tool generates: a run report has report.json beside its "
                    "report.md, a detective report escalation.json or detective.json; judge the folder "
                    "pytest --mlip-report=DIR or pytest-mlip detect wrote")
