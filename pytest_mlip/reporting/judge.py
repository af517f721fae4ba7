"""The judge: re-verify every number of a report against the provenance store.

For each claim (a printed number or verdict followed by ``[a:ID]``) it checks,
deterministically:

1. the cited artifact exists (a unique id prefix) and its id still matches its
   content (no edit since it was stored);
2. it is not stale: same code version and same model identity (version,
   weights hash) as the run the report names;
3. it belongs to that run's record: reachable from the run artifact through
   parent links (a number registered afterwards to launder an invented value
   is not);
4. its ancestry holds: derived values cite parents that exist and verify, and
   the cheap derivations are recomputed (v/tau = max v/tau over its keys, the
   worst v/tau over probes, pass/fail/error from them);
5. the printed value equals the artifact's value at the printed precision, and
   is printed with at least the report's significant digits;
6. it is cited where it is printed: the contract, model, probe and quantity
   of the table cell or line match the artifact's.

Then the report as a whole: every number it prints carries a citation (apart
from identifiers the store knows: model, contract and probe names, versions,
settings), and every required claim (one per failed hard contract on the
target, named by the run artifact) is present with its status.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MlipError
from ..provenance.artifact import DERIVED_KINDS, SHORT_ID, from_finite_or_str
from .claims import SIG, number_mismatch, status_mismatch

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf(?:inity)?\b|nan\b"
STATUS = r"(?i:pass|fail|error|skip)\b"
CLAIM_RE = re.compile(rf"(?<![\w.])(?P<tok>{NUM}|{STATUS})\s*\[a:(?P<id>[^\]\s]*)\]")
REF_RE = re.compile(r"\[a:(?P<id>[^\]\s]*)\]")
BARE_NUM_RE = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
UPPER_STATUS_RE = re.compile(r"\b(PASS|FAIL|ERROR|SKIP)\b")
ANY_STATUS_RE = re.compile(r"(?i)\b(pass|fail|error|skip)\b")
HEX_RE = re.compile(r"^[0-9a-f]{6,64}$")
ON_RE = re.compile(r"`([^`]+)`\s+on\s+`([^`]+)`")
PER_PROBE_RE = re.compile(r"^`([^`]+)`:\s*(.+?)\s+per probe\s*$")
CODE_RE = re.compile(r"`([^`]*)`")
LINK_TARGET_RE = re.compile(r"\]\([^)]*\)")

NUMBER_KINDS = ("tolerance", "violation", "normalized", "max_normalized", "observable")


@dataclass
class Claim:
    where: str
    token: str  # printed number or status word; "" for a bare reference
    ref: str  # the id (or prefix) as printed
    context: dict = field(default_factory=dict)
    value: Any = None  # report.json: the full value it states
    has_value: bool = False


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

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        claims = [f for f in self.findings]
        return (f"judge: {len(claims)} check(s), {len(claims) - len(self.failed)} verified, {len(self.failed)} "
                f"failed; required claims present: {self.required_present} of {self.required_total}")


class Judge:
    """Checks claims against one run of one store."""

    def __init__(self, store, run_id: str, hypothesis: str | None = None):
        self.store = store
        self.hypothesis = hypothesis  # an agent's escalation report answers for the claims of its hypothesis
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
        self.known = self._known_strings()
        self.quantities = self._quantities()
        self.probes = {a.params["probe"] for a in self.arts.values() if isinstance(a.params.get("probe"), str)}
        self.contracts = {a.params["contract"] for a in self.arts.values()
                          if isinstance(a.params.get("contract"), str)}

    # --- store side ------------------------------------------------------------------------------------------
    def _known_strings(self) -> list[str]:
        out = {self.run["id"], self.run["code_version"], str(self.run.get("target") or ""),
               str(self.run.get("store") or "")}
        out.update(self.run.get("committee") or [])
        for name, m in (self.run.get("models") or {}).items():
            out.update([name, str(m.get("version") or ""), str(m.get("weights_hash") or ""), str(m.get("spec") or "")])
        for a in self.arts.values():
            for k in ("contract", "check", "probe", "key", "name", "setting", "reason", "units", "worst_probe"):
                v = a.params.get(k)
                if isinstance(v, str):
                    out.add(v)
            if isinstance(a.params.get("units"), dict):
                out.update(x for x in a.params["units"].values() if isinstance(x, str))
        if self.run_art is not None:
            for t in (self.run_art.value.get("texts") or {}).values():
                out.update(str(x) for x in t.values() if x)
        return sorted((s for s in out if s and not _is_float(s)), key=len, reverse=True)

    def _quantities(self) -> list[str]:
        names = {"max v/tau", "v/tau", "tau", "verdict"}
        for a in self.arts.values():
            for k in ("key", "name"):
                if isinstance(a.params.get(k), str):
                    names.add(a.params[k])
        return sorted(names, key=len, reverse=True)

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
            if p.code_version != a.code_version:
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
    def check(self, c: Claim) -> Finding:
        text = (f"{c.token} [a:{c.ref}]" if c.token else f"[a:{c.ref}]")
        shown = {k: v for k, v in c.context.items() if k in ("contract", "model", "probe", "quantity") and v}
        if shown:
            text += " as " + ", ".join(f"{k} {v}" for k, v in shown.items())
        f = Finding(True, c.where, text)
        aid, err = self.resolve(c.ref)
        if err:
            f.ok, f.reasons = False, [err]
            return f
        c.context["resolved"] = aid
        a = self.get(aid)
        reasons = []
        evidence = ((self.run_art.value or {}).get("evidence_runs") or {}) if self.run_art else {}
        if a.run and a.run != self.run["id"] and a.run in evidence:
            # evidence an agent run started from: current for the run that recorded it, as the run artifact declares
            if a.code_version != evidence[a.run]:
                reasons.append(f"stale: recorded by code version {a.code_version}, its evidence run {a.run} used "
                               f"{evidence[a.run]}")
        elif a.code_version != self.run["code_version"]:
            reasons.append(f"stale: recorded by code version {a.code_version}, the run used "
                           f"{self.run['code_version']}")
        if a.model is not None:
            m = self.models.get(a.model.name)
            if m is None:
                reasons.append(f"recorded for model {a.model.name}, which is not part of run {self.run['id']}")
            elif (m.get("version"), m.get("weights_hash")) != (a.model.version, a.model.weights_hash):
                reasons.append(f"stale: recorded for {a.model.name} version {a.model.version}, weights "
                               f"{a.model.weights_hash}; the run used version {m.get('version')}, weights "
                               f"{m.get('weights_hash')}")
        if aid not in self.closure:
            reasons.append(f"not part of run {self.run['id']}'s record: no verdict of the run derives from it")
        reasons += self.verify(aid)
        reasons += self._value(c, a)
        reasons += self._context(c, a)
        if reasons:
            f.ok, f.reasons = False, list(dict.fromkeys(reasons))
        return f

    def _value(self, c: Claim, a) -> list[str]:
        out = []
        if c.token:
            if re.fullmatch(STATUS, c.token):
                if a.kind != "verdict":
                    out.append(f"a status must cite a verdict artifact, this is a {a.kind}")
                else:
                    m = status_mismatch(c.token, a.value)
                    if m:
                        out.append(m)
            else:
                if a.kind not in NUMBER_KINDS:
                    out.append(f"a number must cite a stored number, this is a {a.kind}")
                else:
                    m = number_mismatch(c.token, a.value, SIG)
                    if m:
                        out.append(m)
        if c.has_value:
            want = a.value
            got = c.value
            if isinstance(want, float) or isinstance(got, str):
                got, want = from_finite_or_str(got), from_finite_or_str(want)
            if not (got == want or (_isnan(got) and _isnan(want))):
                out.append(f"the report states the value {c.value!r}, the artifact holds {a.value!r}")
        return out

    def _context(self, c: Claim, a) -> list[str]:
        ctx, p, out = c.context, a.params, []
        contract, model, probe, q = (ctx.get("contract"), ctx.get("model"), ctx.get("probe"), ctx.get("quantity"))
        if contract:
            if "contract" not in p:
                out.append(f"printed as a result of contract {contract} but the artifact ({a.kind}) belongs to none")
            elif p["contract"] != contract:
                out.append(f"printed under contract {contract} but the artifact is from contract {p['contract']}")
        if model:
            if a.model is None and a.kind != "tolerance":
                out.append(f"printed for model {model} but the artifact has no model")
            elif a.model is not None and a.model.name != model:
                out.append(f"printed for model {model} but the artifact is from model {a.model.name}")
        if probe and "probe" in p and p["probe"] != probe:
            out.append(f"printed for probe {probe} but the artifact is from probe {p['probe']}")
        elif probe and a.kind in ("violation", "normalized", "observable", "series") and "probe" not in p:
            out.append(f"printed for probe {probe} but the artifact has no probe")
        if q:
            want = None
            if q == "verdict":
                want = a.kind == "verdict"
            elif q == "max v/tau":
                want = a.kind == "max_normalized"
            elif q == "v/tau":  # a probe's v/tau, or the contract's (its worst) when no probe is named
                want = a.kind == "normalized" or (a.kind == "max_normalized" and not probe)
            elif q == "tau":
                want = a.kind == "tolerance"
            elif q.startswith("tau:"):
                want = a.kind == "tolerance" and p.get("key") == q[4:]
            else:
                want = a.kind in ("violation", "observable", "series") and q in (p.get("key"), p.get("name"))
            if not want:
                label = p.get("key") or p.get("name") or ""
                out.append(f"printed as {q} but the artifact is a {a.kind}" + (f" ({label})" if label else ""))
        return out

    # --- report-level checks ---------------------------------------------------------------------------------
    def header(self, declared: dict, where: str) -> list[Finding]:
        out = []
        code = declared.get("code_version")
        f = Finding(True, where, f"code version {code}")
        if code != self.run["code_version"]:
            f.ok = False
            f.reasons.append(f"the run recorded code version {self.run['code_version']}")
        out.append(f)
        for m in declared.get("models", []):
            f = Finding(True, where, f"model {m.get('name')} version {m.get('version')} weights "
                                     f"{m.get('weights_hash')}")
            rec = self.models.get(m.get("name"))
            if rec is None:
                f.ok, f.reasons = False, [f"model {m.get('name')} is not part of run {self.run['id']}"]
            elif (rec.get("version"), rec.get("weights_hash")) != (m.get("version"), m.get("weights_hash")):
                f.ok, f.reasons = False, [f"the run used version {rec.get('version')}, weights "
                                          f"{rec.get('weights_hash')}"]
            out.append(f)
        return out

    def required(self, findings_claims: list[tuple[Claim, Finding]]) -> tuple[list[Finding], int, int]:
        value = (self.run_art.value or {}) if self.run_art else {}
        required = list(value.get("required") or [])
        by_hypothesis = value.get("required_by_hypothesis") or {}
        if self.hypothesis is not None and self.hypothesis in by_hypothesis:
            required = list(by_hypothesis[self.hypothesis])  # an escalation report answers for its hypothesis
        present = 0
        out = []
        for vid in required:
            v = self.arts.get(vid)
            label = f"{v.params.get('contract')} on {v.model.name if v and v.model else '?'}" if v else vid
            hit = any(c.context.get("resolved") == vid and f.ok and c.token for c, f in findings_claims)
            if hit:
                present += 1
            out.append(Finding(hit, "required", f"{label}: {str(v.value).upper() if v else '?'} [a:{vid[:SHORT_ID]}]",
                               [] if hit else ["required claim missing: the report must state this failed hard "
                                               "contract on the target, citing its verdict"], required=True))
        return out, present, len(required)

    def completeness(self, content, fmt: str) -> list[Finding]:
        """A run that did not finish everything must say so: report.md's INCOMPLETE banner naming each item,
        report.json's ``incomplete`` block as the run recorded it."""
        value = (self.run_art.value or {}) if self.run_art else {}
        inc = value.get("incomplete")
        if not inc or self.hypothesis is not None:
            return []
        names = [n for k in ("errors", "crashed", "not_run", "deselected_hard") for n in inc.get(k) or []]
        if fmt == "json":
            declared = content.get("incomplete") or {}
            ok = declared.get("count") == inc.get("count") and all(
                sorted(declared.get(k) or []) == sorted(inc.get(k) or []) for k in ("errors", "crashed", "not_run",
                                                                                  "deselected_hard"))
        else:
            text = str(content)
            ok = "INCOMPLETE run" in text and all(f"`{n}`" in text for n in names)
        return [Finding(ok, "incomplete", "the run's incomplete block",
                        [] if ok else ["the run did not finish everything (the store records what did not), and the "
                                       "report hides it: it must state INCOMPLETE and name each item"],
                        required=True)]

    def uncited(self, text: str, where: str, table_cell: bool) -> list[Finding]:
        """Numbers (and status words) printed without a citation."""
        out = []
        cleaned = CLAIM_RE.sub(" ", text)
        cleaned = REF_RE.sub(" ", cleaned)
        cleaned = LINK_TARGET_RE.sub("] ", cleaned)
        for s in self.known:
            if s in cleaned:
                cleaned = cleaned.replace(s, " ")
        cleaned = cleaned.replace("`", " ")
        for m in BARE_NUM_RE.finditer(cleaned):
            out.append(Finding(False, where, m.group(0), ["number without a citation: every number in a report "
                                                          "must name the artifact it was read from"]))
        status_re = ANY_STATUS_RE if table_cell else UPPER_STATUS_RE
        for m in status_re.finditer(cleaned):
            out.append(Finding(False, where, m.group(0), ["verdict without a citation: a status must cite the "
                                                          "verdict artifact"]))
        return out


def _empty_incomplete_run(a) -> bool:
    """A run stopped before any verdict (Ctrl-C, a dead worker) honestly cites nothing: its value says so (no
    verdict, an incomplete block that fails the run)."""
    value = a.value if isinstance(a.value, dict) else {}
    inc = value.get("incomplete") or {}
    return (a.kind == "run" and value.get("verdicts") == 0 and not value.get("order") and not value.get("required")
            and isinstance(inc, dict) and bool(inc.get("fails_run")) and bool(inc.get("count") or inc.get("interrupted")))


def _is_float(s: str) -> bool:
    """A known string that reads as a plain number could hide an uncited one: such strings are not exempt."""
    try:
        float(s)
    except ValueError:
        return False
    return True


def _same(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, (int, float)):
        if math.isinf(x) or math.isinf(y):
            return x == y
        return math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0) or x == y
    return x == y


def _isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# --- reading reports ---------------------------------------------------------------------------------------------


def _strip_code(s: str) -> str:
    s = s.strip()
    return s[1:-1] if len(s) >= 2 and s.startswith("`") and s.endswith("`") else s


def _model_header(s: str) -> str:
    s = re.sub(r"\s*\((target|committee|extra)\)\s*$", "", s.strip())
    return _strip_code(s)


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def parse_markdown_header(text: str) -> dict:
    run = re.search(r"^- run: `([^`]+)`", text, re.M)
    code = re.search(r"^- code version: `([^`]+)`", text, re.M)
    store = re.search(r"^- provenance store: `([^`]+)`", text, re.M)
    hypothesis = re.search(r"^- hypothesis: (\S+)", text, re.M)
    if not run or not code:
        raise MlipError("the report has no pytest-mlip run header (lines '- run: `ID`' and '- code version: `V`'); "
                        "judge a report written by pytest --mlip=MODEL --mlip-report=DIR")
    return {"run": run.group(1), "code_version": code.group(1), "store": store.group(1) if store else None,
            "hypothesis": hypothesis.group(1) if hypothesis else None}


def markdown_claims(text: str, judge: Judge) -> tuple[list[Claim], list[Finding], dict]:
    """Claims of a report.md with their context, uncited numbers, and the declared header."""
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    claims: list[Claim] = []
    problems: list[Finding] = []
    declared = {"models": []}
    h2 = h3 = ""
    h3_ctx: dict = {}
    table = None
    in_fence = False
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"line {lineno}"
        s = line.strip()
        if s.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            claims += _line_claims(line, where, dict(h3_ctx), judge, prose=True)
            problems += judge.uncited(line, where, table_cell=False)
            continue
        if s.startswith("#"):
            table = None
            level = len(s) - len(s.lstrip("#"))
            title = s[level:].strip()
            if level <= 2:
                h2, h3, h3_ctx = title, "", {}
            else:
                h3, h3_ctx = title, {}
                m = ON_RE.fullmatch(title) or ON_RE.match(title)
                if m:
                    h3_ctx = {"contract": m.group(1), "model": m.group(2)}
                else:
                    m = PER_PROBE_RE.match(title)
                    if m:
                        h3_ctx = {"contract": m.group(1), "quantity": m.group(2)}
                    else:
                        m = re.match(r"^`([^`]+)`", title)
                        if m:
                            h3_ctx = {"contract": m.group(1)}
            for c in _line_claims(title, where, dict(h3_ctx), judge, prose=True):
                claims.append(c)
            problems += judge.uncited(title, where, table_cell=False)
            continue
        if s.startswith("|"):
            cells = _cells(s)
            if table is None:
                table = {"header": cells, "kind": _table_kind(cells, h2)}
                claims += _line_claims(s, where, dict(h3_ctx), judge, prose=True)
                problems += judge.uncited(s, where, table_cell=False)
                continue
            if all(re.fullmatch(r":?-{2,}:?", c or "--") for c in cells):
                continue
            header = table["header"]
            if table["kind"] == "models":
                row = dict(zip(header, cells))
                declared["models"].append({
                    "name": _strip_code(row.get("model", "")),
                    "version": None if _strip_code(row.get("version", "-")) in ("-", "") else _strip_code(
                        row.get("version", "")),
                    "weights_hash": None if _strip_code(row.get("weights hash", "-")) in ("-", "") else _strip_code(
                        row.get("weights hash", ""))})
            for j, cell in enumerate(cells):
                ctx = _cell_context(table, cells, j, h3_ctx)
                for c in _line_claims(cell, where, ctx, judge):
                    claims.append(c)
                problems += judge.uncited(cell, where, table_cell=True)
            continue
        table = None
        if s:
            ctx = dict(h3_ctx)
            claims += _line_claims(line, where, ctx, judge, prose=True)
            problems += judge.uncited(line, where, table_cell=False)
    return claims, problems, declared


def _table_kind(header: list[str], h2: str) -> str:
    first = header[0].strip().lower() if header else ""
    low = [h.strip().lower() for h in header]
    if first == "model":
        return "models"
    if first == "contract":
        return "matrix"
    if first == "probe" and "quantity" in low:
        return "detail"
    if first == "probe":
        return "per_probe"
    return "other"


def _cell_context(table, cells, j, h3_ctx) -> dict:
    header = table["header"]
    col = header[j].strip() if j < len(header) else ""
    kind = table["kind"]
    ctx = dict(h3_ctx)
    if kind == "matrix":
        ctx.update(contract=_strip_code(cells[0]), model=_model_header(col), quantity="max v/tau")
    elif kind == "detail":
        quantity = cells[1].strip() if len(cells) > 1 else ""
        ctx.update(probe=_strip_code(cells[0]))
        if col.lower() == "value":
            ctx["quantity"] = quantity
        elif col.lower() == "tau":
            ctx["quantity"] = f"tau:{quantity}"
        else:
            ctx["quantity"] = "none"
    elif kind == "per_probe":
        ctx.update(probe=_strip_code(cells[0]), model=_model_header(col))
        ctx.setdefault("quantity", "v/tau")
    return ctx


def _line_claims(text: str, where: str, ctx: dict, judge: Judge, prose: bool = False) -> list[Claim]:
    """Claims in one line or cell; prose takes its quantity and probe from the nearest label before each claim."""
    out = []
    last = 0
    line_ctx = dict(ctx)
    claim_spans = [(m.start(), m.end(), m.group("tok"), m.group("id")) for m in CLAIM_RE.finditer(text)]
    spans = sorted(claim_spans + [(m.start(), m.end(), "", m.group("id")) for m in REF_RE.finditer(text)
                                  if not any(a <= m.start() < b for a, b, _, _ in claim_spans)])
    for start, end, tok, ref in spans:
        before = text[last:start]
        full_before = text[:start]
        c_ctx = dict(line_ctx)
        on = list(ON_RE.finditer(full_before))
        if on:
            c_ctx.update(contract=on[-1].group(1), model=on[-1].group(2))
        if "quantity" not in ctx or ctx.get("quantity") in (None, ""):
            q = _nearest_label(before, judge.quantities)
            if tok and re.fullmatch(STATUS, tok):
                q = "verdict"
            if q:
                c_ctx["quantity"] = q
        elif tok and re.fullmatch(STATUS, tok):
            c_ctx["quantity"] = "verdict"
        if c_ctx.get("quantity") == "none":
            c_ctx.pop("quantity")
        if not tok:
            c_ctx.pop("quantity", None)
        # in prose, a probe or model named (in backticks) before the claim is what the claim is about
        codes = [_strip_code(x.group(0)) for x in CODE_RE.finditer(full_before)]
        probes = [x for x in codes if x in judge.probes]
        if probes and (prose or "probe" not in ctx):
            c_ctx["probe"] = probes[-1]
        models = [x for x in codes if x in judge.models]
        if models and (prose or "model" not in ctx):
            c_ctx["model"] = max(models, key=lambda m: full_before.rfind(f"`{m}`"))
        contracts = [x for x in codes if x in judge.contracts]
        if contracts and prose:
            c_ctx["contract"] = max(contracts, key=lambda c: full_before.rfind(f"`{c}`"))
        out.append(Claim(where, tok, ref, c_ctx))
        last = end
    return out


def _nearest_label(before: str, labels: list[str]) -> str | None:
    best, pos = None, -1
    for lab in labels:
        for m in re.finditer(rf"(?<![\w/]){re.escape(lab)}(?![\w/])", before):
            if m.end() > pos or (m.end() == pos and best is not None and len(lab) > len(best)):
                best, pos = lab, m.end()
    return best


def json_claims(data: dict) -> tuple[list[Claim], list[Finding], dict]:
    """Claims of a report.json: every {text, artifact} object, with its context from its position."""
    claims: list[Claim] = []
    problems: list[Finding] = []

    def add(obj, where, ctx, status=False):
        if obj is None:
            return
        if not isinstance(obj, dict) or not obj.get("artifact"):
            problems.append(Finding(False, where, json.dumps(obj)[:60],
                                    ["claim without a citation: it names no artifact"]))
            return
        tok = str(obj.get("text", ""))
        c = Claim(where, tok, str(obj["artifact"]), dict(ctx))
        if "value" in obj:
            c.value, c.has_value = obj["value"], True
        if status:
            c.context["quantity"] = "verdict"
        claims.append(c)

    for i, v in enumerate(data.get("verdicts", [])):
        base = {"contract": v.get("contract"), "model": v.get("model")}
        w = f"verdicts[{i}] {v.get('contract')} on {v.get('model')}"
        add(v.get("status"), f"{w} status", base, status=True)
        add(v.get("max_normalized"), f"{w} max v/tau", {**base, "quantity": "max v/tau"})
        for k, t in (v.get("tolerance") or {}).items():
            add(t, f"{w} tau {k}", {**base, "quantity": f"tau:{k}"})
        for p in v.get("probes", []):
            pc = {**base, "probe": p.get("probe")}
            pw = f"{w} probe {p.get('probe')}"
            add(p.get("normalized"), f"{pw} v/tau", {**pc, "quantity": "v/tau"})
            for k, c in (p.get("violations") or {}).items():
                add(c, f"{pw} {k}", {**pc, "quantity": k})
            for k, c in (p.get("observables") or {}).items():
                add(c, f"{pw} {k}", {**pc, "quantity": k})
            for k, c in (p.get("flags") or {}).items():
                if isinstance(c, dict) and c.get("artifact"):
                    cl = Claim(f"{pw} {k}", "", str(c["artifact"]), {**pc, "quantity": k}, c.get("value"), True)
                    claims.append(cl)
                else:
                    add(c, f"{pw} {k}", pc)
            for k, s in (p.get("series") or {}).items():
                if isinstance(s, dict) and s.get("artifact"):
                    claims.append(Claim(f"{pw} {k}", "", str(s["artifact"]), {**pc, "quantity": k},
                                        s.get("values"), True))
                else:
                    add(s, f"{pw} {k}", pc)
    run = data.get("run") or {}
    declared = {"run": run.get("id"), "code_version": run.get("code_version"), "store": run.get("store"),
                "models": [{"name": m.get("name"), "version": m.get("version"), "weights_hash": m.get("weights_hash")}
                           for m in data.get("models", [])]}
    return claims, problems, declared


# --- entry point -------------------------------------------------------------------------------------------------


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


def _pick_store(path: Path, declared_store: str | None, store: str | None):
    """The store to judge against: --store, else the snapshot next to the report (also gzipped), else the
    store the report names. Returns (store, temporary file to delete or None)."""
    from ..provenance.store import Store

    if store:
        return Store(Path(store), readonly=True), None
    from .report import SNAPSHOT

    snap = path.parent / SNAPSHOT
    gz = snap.with_name(SNAPSHOT + ".gz")
    if snap.is_file() and gz.is_file():
        raise MlipError(f"two provenance stores next to {path}: {snap} and {gz}; exactly one may go with a report: "
                        "remove the other")
    if snap.is_file():
        return Store(snap, readonly=True), None
    if gz.is_file():
        from .judge_report import open_gzipped

        return open_gzipped(gz)
    if declared_store and Path(declared_store).is_file():
        return Store(Path(declared_store), readonly=True), None
    raise MlipError(f"no provenance store for {path}: neither {snap} nor the store the report names "
                    f"({declared_store}) exists; pass it with --store PATH")


def judge_file(report, store: str | None = None, root: str | None = None, sample: int | None = 3,
               seed: int | None = None, replay: int | None = 3) -> Judgement:
    """Judge a report. A run report (a folder holding report.json) is verified from its source
    (:mod:`.judge_report`); a report without one (an escalation report) claim by claim."""
    path = Path(report)
    folder = path if path.is_dir() else path.parent
    if (folder / "report.json").is_file() or path.is_dir():
        from .judge_report import judge_report

        return judge_report(path, store=store, root=root, sample=sample, seed=seed, replay=replay)
    fmt, content = _read_report(path)
    if fmt == "json":
        declared_run, declared_store = content["run"]["id"], content["run"].get("store")
    else:
        head = parse_markdown_header(content)
        declared_run, declared_store = head["run"], head["store"]
    st, tmp = _pick_store(path, declared_store, store)
    try:
        judge = Judge(st, declared_run, hypothesis=None if fmt == "json" else head["hypothesis"])
        if fmt == "json":
            claims, problems, declared = json_claims(content)
        else:
            claims, problems, declared = markdown_claims(content, judge)
            declared.update(parse_markdown_header(content))
        label = str(path.parent / "provenance.sqlite.gz") if tmp else str(st.path)
        result = Judgement(str(path), label, declared_run)
        result.findings += judge.header(declared, "header")
        pairs = []
        for c in claims:
            f = judge.check(c)
            pairs.append((c, f))
            result.findings.append(f)
        result.findings += problems
        req, present, total = judge.required(pairs)
        result.findings += req
        result.findings += judge.completeness(content, fmt)
        result.required_present, result.required_total = present, total
        return result
    finally:
        st.close()
        if tmp:
            os.unlink(tmp)
