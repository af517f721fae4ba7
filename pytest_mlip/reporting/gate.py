"""The CI gate: compare a run's verdicts with a stored baseline.

Per (model, contract) the baseline keeps the status and the worst normalized
violation v/tau. Against it, a failed hard contract on the target is
- *new* when the baseline did not record it as failing: it fails the run;
- a *regression* when it failed before but v/tau grew by more than the margin
  (relative: v/tau > (1 + margin) x baseline), or it now errors: it fails the run;
- *known* otherwise: reported, but it does not fail the run.
A contract that failed in the baseline and passes now is *fixed*; a known
failure whose v/tau shrank below baseline / (1 + margin) is *improved*.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MlipError, loads_json
from .folder import special_file

FORMAT = "pytest-mlip-baseline"
VERSION = 1
DEFAULT_MARGIN = 0.2

FAILING = ("fail", "error")


class BaselineError(MlipError):
    pass


def _num(x):
    if isinstance(x, str) and x in ("inf", "-inf", "nan"):
        return float(x)
    return x


def load_baseline(path) -> dict[tuple[str, str], dict]:
    """Entries by (model, contract); a one-line error naming the fix when the file is missing or broken."""
    return read_baseline(path)[0]


def recorded_targets(entries: dict, target: str | None) -> set[str]:
    """The target model(s) a baseline was recorded for: the models of its target entries (as verdicts name them,
    what the gate matches on), else the ``target`` the file records (a baseline with no target entry)."""
    names = {e["model"] for e in entries.values() if e.get("role", "target") == "target"}
    return names or ({target} if target else set())


def read_baseline(path) -> tuple[dict[tuple[str, str], dict], str | None]:
    """:func:`load_baseline`, with the target the file records (None when it records none)."""
    path = Path(path)
    # --mlip-update-baseline never overwrites a file it cannot read as a baseline: the fix says to move it first
    fix = (f"restore it from version control, or move it aside and regenerate it with pytest --mlip=MODEL "
           f"--mlip-baseline={path} --mlip-update-baseline")
    if path.is_dir():
        raise BaselineError(f"{path} is a folder, not a baseline file; pass a file with --mlip-baseline=FILE")
    kind = special_file(path)
    if kind:
        raise BaselineError(f"{path} is {kind}, not a baseline file; pass a file with --mlip-baseline=FILE")
    if not path.is_file():
        raise BaselineError(f"baseline file {path} does not exist: run with --mlip-update-baseline first "
                            f"(pytest --mlip=MODEL --mlip-baseline={path} --mlip-update-baseline) and commit it")
    try:
        data = loads_json(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline file {path} ({exc}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                            f"{exc.msg}); {fix}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(f"{path} is not a pytest-mlip baseline (no \"format\": \"{FORMAT}\"); {fix}")
    if data.get("version") != VERSION:
        raise BaselineError(f"baseline file {path} has version {data.get('version')!r}, this pytest-mlip reads "
                            f"{VERSION}; {fix}")
    out = {}
    try:
        for e in data["entries"]:
            entry = {"model": str(e["model"]), "contract": str(e["contract"]), "status": str(e["status"]),
                     "max_normalized": _num(e.get("max_normalized")), "role": e.get("role", "target"),
                     "hard": bool(e.get("hard", True)), "artifact": e.get("artifact")}
            if entry["status"] not in ("pass", "fail", "skip", "error"):
                raise ValueError(f"unknown status {entry['status']!r}")
            mn = entry["max_normalized"]
            if mn is not None and (isinstance(mn, bool) or not isinstance(mn, (int, float))):
                raise ValueError(f"max_normalized must be a number, got {mn!r}")
            if mn is not None and not mn >= 0 and entry["status"] != "error":  # v/tau: NaN or negative is a hand edit, not a measurement
                raise ValueError(f"max_normalized of {entry['contract']}[{entry['model']}] must be >= 0 (it is "
                                 f"v/tau), got {mn!r}")
            out[(entry["model"], entry["contract"])] = entry
    except (KeyError, TypeError, ValueError) as exc:
        raise BaselineError(f"baseline file {path} has a malformed entry ({exc}); {fix}") from None
    target = data.get("target")
    return out, (str(target) if target not in (None, "") else None)


def kept_entries(old: dict, verdicts: list[dict], partial) -> list[dict]:
    """Of the baseline being replaced, the entries of contracts a partial run (--mlip-partial) deselected: an
    update from ``-k one-contract`` rewrites that contract's entries and keeps the others (it used to drop them)."""
    ran = {(v["model"], v["contract"]) for v in verdicts}
    partial = set(partial or [])
    return [dict(e) for key, e in sorted(old.items()) if key not in ran and e["contract"] in partial]


def baseline_document(verdicts: list[dict], target: str, run_id: str, code_version: str,
                      artifacts: dict[tuple[str, str], str], kept: list[dict] = ()) -> dict:
    """The baseline file's content: every verdict of this run, and ``kept`` entries of the previous baseline
    (contracts a partial run left out), marked ``"kept": true``."""
    from ..provenance.artifact import finite_or_str

    entries = []
    for v in sorted(verdicts, key=lambda v: (v["model"], v["contract"])):
        entries.append({"model": v["model"], "contract": v["contract"], "role": v["role"], "hard": v["hard"],
                        "status": v["status"], "max_normalized": finite_or_str(v.get("max_normalized")),
                        "artifact": artifacts.get((v["model"], v["contract"]))})
    entries += [{**e, "max_normalized": finite_or_str(e.get("max_normalized")), "kept": True} for e in kept]
    entries.sort(key=lambda e: (e["model"], e["contract"]))
    return {"format": FORMAT, "version": VERSION, "target": target, "run": run_id, "code_version": code_version,
            "entries": entries}


def write_atomic(path, text: str):
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename (no partial file). A link is
    written through: its target is replaced and the link kept (a held-out case: baseline.json -> baselines/v1.json
    became a file of its own, and the file it named was never updated)."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    kind = special_file(path)
    if kind:  # never replaced by a regular file (the options refuse it before any model call too)
        raise MlipError(f"{path} is {kind}, not a regular file: pytest-mlip writes only regular files; pass a file "
                        "name")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        # mkstemp makes the file 0600: give it the existing file's mode, or what the umask gives a new file
        if path.is_file():
            mode = path.stat().st_mode & 0o7777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def missing_from_run(baseline: dict, verdicts: list[dict], deselected: set[str]) -> list[str]:
    """The baseline's hard contracts on its target that this run neither ran nor deselected: a removed contract
    file, or a renamed contract, would otherwise drop a known failure out of the gate without a word."""
    ran = {v["contract"] for v in verdicts}
    targets = {v["model"] for v in verdicts if v.get("role") == "target"}
    out = set()
    for (model, contract), entry in baseline.items():
        if entry.get("role", "target") != "target" or not entry.get("hard", True):
            continue
        if targets and model not in targets:
            continue  # a baseline of another target: its entries are all "new" or absent, said by the gate lines
        if contract not in ran and contract not in deselected:
            out.add(contract)
    return sorted(out)


def is_gating(v: dict) -> bool:
    """Gating, for a verdict as report.json holds it (the definition is :func:`pytest_mlip.laws.base.gates`)."""
    from ..laws.base import gates

    return gates(v["role"], v["hard"], v["status"])


@dataclass
class Change:
    kind: str  # new | regression | known | improved | fixed
    model: str
    contract: str
    now: float | None
    before: float | None
    status: str
    before_status: str | None
    note: str = ""


def classify(v: dict, entry: dict | None, margin: float) -> Change | None:
    """The gate's view of one verdict against its baseline entry (None: nothing to say)."""
    now = _num(v.get("max_normalized"))
    before = entry.get("max_normalized") if entry else None
    before_status = entry.get("status") if entry else None
    mk = lambda kind, note="": Change(kind, v["model"], v["contract"], now, before, v["status"], before_status, note)
    if is_gating(v):
        if entry is None or before_status not in FAILING:
            return mk("new", "not failing in the baseline" if entry else "not in the baseline")
        if v["status"] == "error" and before_status != "error":
            return mk("regression", "the model now fails to evaluate (error)")
        if now is None and v["status"] == "fail" and before is not None and math.isfinite(before):
            # the stored verdict keeps no number for an infinite v/tau: not shown to be within the margin (a
            # held-out case printed "gate passed" while the item, reading inf, failed the run)
            return mk("regression", "v/tau is no longer a finite number (the baseline had one)")
        if now is not None and before is not None and math.isfinite(before) and now > before * (1 + margin):
            return mk("regression", "v/tau grew beyond the regression margin over the baseline")
        if now is not None and before is not None and math.isfinite(now) and now < before / (1 + margin):
            return mk("improved", "v/tau shrank beyond the margin below the baseline (still failing)")
        return mk("known")
    if entry is not None and before_status in FAILING and v["status"] == "pass":
        return mk("fixed")
    return None


@dataclass
class GateResult:
    margin: float
    changes: list[Change] = field(default_factory=list)
    #: report.json's incomplete block: a gate over a run that did not finish everything does not pass
    incomplete: dict = field(default_factory=dict)

    def of(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def failing(self) -> list[Change]:
        return self.of("new") + self.of("regression")

    @property
    def complete(self) -> bool:
        return not (self.incomplete.get("count") or self.incomplete.get("interrupted")
                    or self.incomplete.get("dead_workers"))

    @property
    def passed(self) -> bool:
        return not self.failing and self.complete


def compare(verdicts: list[dict], baseline: dict, margin: float) -> GateResult:
    result = GateResult(margin)
    for v in verdicts:
        c = classify(v, baseline.get((v["model"], v["contract"])), margin)
        if c is not None:
            result.changes.append(c)
    return result


def gate_lines(result: GateResult) -> list[str]:
    from .claims import fmt_value as f

    lines = [f"gate (regression margin {result.margin:g} relative): "
             + ("passed" if result.passed else f"FAILED: {len(result.of('new'))} new failure(s), "
                                               f"{len(result.of('regression'))} regression(s)"
               + ("" if result.complete else f", run INCOMPLETE ({result.incomplete.get('count', 0)} item(s) did "
                                             "not finish)"))
             + f"; {len(result.of('known')) + len(result.of('improved'))} known failure(s), "
               f"{len(result.of('fixed'))} fixed"]
    for name in result.incomplete.get("missing") or []:
        lines.append(f"  {'missing':<10} {name}: a hard contract of the baseline that this run did not collect (its "
                     "file removed or the contract renamed?); restore it, or rerun with --mlip-update-baseline to "
                     "drop it")
    for c in result.changes:
        before = f" (baseline {c.before_status} {f(c.before)})" if c.before_status else ""
        lines.append(f"  {c.kind:<10} {c.contract} on {c.model}: {c.status} v/tau {f(c.now)}{before}"
                     + (f"; {c.note}" if c.note else ""))
    return lines


def update_lines(result: GateResult, path, doc: dict | None) -> list[str]:
    """What a --mlip-update-baseline run wrote, and how it differs from the baseline it replaced."""
    from .claims import fmt_value as f

    if doc is None:
        return [f"baseline {path} was not written (see the error below)"]
    entries = doc["entries"]
    known = [e for e in entries if e["role"] == "target" and e["hard"] and e["status"] in FAILING]
    kept = sum(1 for e in entries if e.get("kept"))
    lines = [f"wrote {path}: {len(entries)} entries (every contract x model of this run"
             + (f", and {kept} of the previous baseline for contracts this partial run left out" if kept else "")
             + "), "
             f"{len(known)} hard failure(s) on the target now recorded as known; "
             "later runs with --mlip-baseline fail only on new failures and regressions"]
    changed = [c for c in result.changes if c.kind != "known"]
    if changed:
        lines.append("changed since the previous baseline:")
        for c in changed:
            before = f" (was {c.before_status} {f(c.before)})" if c.before_status else " (not in it)"
            lines.append(f"  {c.kind:<10} {c.contract} on {c.model}: {c.status} v/tau {f(c.now)}{before}")
    return lines
