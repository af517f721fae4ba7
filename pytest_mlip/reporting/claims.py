"""How reports print numbers, and how a printed number is checked against its artifact.

Reports print three significant digits (trailing zeros kept, so the printed
precision is visible). A printed number matches an artifact when it equals
the artifact's value rounded at the printed precision *and* is printed at
least as precisely as the report's own format would print it: re-rounding a
value to fewer digits (0.00271 shown as 0.003) is a changed number, not a
rounding.
"""

from __future__ import annotations

import math
import re as _re
import unicodedata as _ud
from decimal import Decimal, InvalidOperation
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

#: significant digits every number in a report carries (at least)
SIG = 3
STATUS_WORDS = ("pass", "fail", "error", "skip")


def fmt_value(v, sig: int = SIG) -> str:
    """The report's printed form of a number: ``sig`` significant digits, trailing zeros kept."""
    if v is None:
        return "-"
    if isinstance(v, str):
        v = float(v) if v in ("inf", "-inf", "nan") else v
        if isinstance(v, str):
            return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    s = f"{v:#.{sig}g}"
    return s[:-1] if s.endswith(".") else s


def claim(value, artifact: str, sig: int = SIG) -> dict:
    """One cited number as stored in report.json."""
    from ..provenance.artifact import finite_or_str

    return {"value": finite_or_str(value) if isinstance(value, float) else value, "text": fmt_value(value, sig),
            "artifact": artifact}


def _as_float(value):
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def number_mismatch(text: str, value, min_sig: int = SIG) -> str | None:
    """None when ``text`` is a faithful print of ``value``; else why it is not."""
    v = _as_float(value)
    if v is None:
        return f"the artifact's value {value!r} is not a number"
    t = text.strip().lower().lstrip("+")
    if t in ("inf", "infinity", "-inf", "-infinity", "nan"):
        want = float(t.replace("infinity", "inf"))
        if (math.isnan(want) and math.isnan(v)) or want == v:
            return None
        return f"printed {text} but the artifact holds {fmt_value(v)}"
    try:
        d = Decimal(t)
    except InvalidOperation:
        return f"{text!r} is not a number"
    if not math.isfinite(v):
        return f"printed {text} but the artifact holds {fmt_value(v)}"
    exp = d.as_tuple().exponent
    canonical = fmt_value(v, min_sig)
    exp_c = Decimal(canonical).as_tuple().exponent
    half = Decimal(1).scaleb(exp) / 2
    if abs(Decimal(v) - d) > half:
        return f"printed {text} but the artifact holds {v!r} ({canonical} at {min_sig} significant digits)"
    if exp > exp_c:
        return (f"re-rounded: printed {text}, coarser than the report's {min_sig} significant digits "
                f"(the artifact gives {canonical})")
    return None


def status_mismatch(text: str, value) -> str | None:
    if not isinstance(value, str):
        return f"the artifact is not a verdict (value {value!r})"
    if text.strip().lower() != value.lower():
        return f"printed status {text} but the verdict artifact says {value.upper()}"
    return None


# --- typed claims: notes a person (or a summary) adds to report.json -----------------------------------------------
#
# A note is data, never free prose: the fixed renderer turns each record into a sentence, and the judge evaluates
# its predicate on the artifacts it cites. Free text goes only into a ``comment`` note, rendered as visibly
# unverified commentary, and may hold no number, verdict word or model name.


ARTIFACT_ID = r"^[0-9a-f]{6,64}$"
NUMBER_TEXT = r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$"
#: a model or contract name in a note: no spaces, backticks or markup (it is printed inside backticks)
NAME = r"^[A-Za-z0-9_.:+@=/~-]{1,120}$"
UNIT = r"^[A-Za-z0-9/^*.-]{0,20}$"
OPS = {"<": "is below", "<=": "is at most", ">": "is above", ">=": "is at least", "==": "equals"}
ROLES = ("target", "committee")
#: words that state an outcome: a comment may not use them (state the outcome with a typed note)
VERDICT_WORDS = ("pass", "passes", "passed", "passing", "fail", "fails", "failed", "failing", "failure", "failures",
                 "error", "errors", "skip", "skips", "skipped", "violate", "violates", "violated", "violating",
                 "violation", "violations", "obey", "obeys", "obeyed", "satisfy", "satisfies", "satisfied", "holds",
                 "hold", "held", "breaks", "break", "broken", "broke", "escalate", "escalated", "escalates", "reject",
                 "rejected", "rejects", "ok", "okay", "fine", "correct", "wrong", "good", "bad", "clean", "green", "red",
                 "succeed", "succeeds", "succeeded", "success", "regression", "regressed", "fixed", "gating", "gate",
                 "verdict", "worse", "worst", "better", "best", "above", "below", "exceeds", "within", "none", "all",
                 "every", "no", "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "once", "twice", "half", "most", "hard", "soft", "target", "committee", "member", "members",
                 "perfect", "flawless", "robust", "collapse", "collapses", "collapsed", "unphysical", "physical",
                 "catastrophic", "problem", "problems", "issue", "issues", "bug", "bugs", "alright", "healthy",
                 "sound", "safe", "unsafe", "accurate", "inaccurate", "reliable", "unreliable", "valid", "invalid",
                 "meets", "misses", "complies", "conforms", "respects", "disobeys", "defies", "exceeded", "beyond",
                 "large", "small", "tiny", "huge", "negligible", "significant", "dangerous", "deviates", "agrees",
                 "disagrees", "agree", "disagree", "matches", "consistent", "inconsistent", "regress", "improved",
                 "improves", "degraded", "worsened", "stable", "unstable", "true", "false", "confirmed", "refuted",
                 "verified", "unverified", "approved", "flagged", "fabricated", "finding", "findings", "defect")
COMMENT_CHARS = _re.compile(r"^[A-Za-z ,.;:'()?!/-]*$")
_SPELLED = _re.compile(r"(?<![A-Za-z])(?:[A-Za-z][^A-Za-z]{1,3}){2,}[A-Za-z](?![A-Za-z])")


class _Note(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueNote(_Note):
    """``quantity`` of the cited artifact is ``value`` ``unit`` (printed as given; the judge re-reads it)."""
    kind: Literal["value"]
    artifact: str = Field(pattern=ARTIFACT_ID)
    value: str = Field(pattern=NUMBER_TEXT)
    unit: str = Field(pattern=UNIT)


class ComparisonNote(_Note):
    """artifact ``a`` op artifact ``b`` (or op the number ``b_value`` in ``unit``)."""
    kind: Literal["comparison"]
    a: str = Field(pattern=ARTIFACT_ID)
    op: Literal["<", "<=", ">", ">=", "=="]
    b: str | None = Field(default=None, pattern=ARTIFACT_ID)
    b_value: str | None = Field(default=None, pattern=NUMBER_TEXT)
    unit: str | None = Field(default=None, pattern=UNIT)


class CountNote(_Note):
    """``n`` of the ``m`` verdicts selected by (model, role, hard) have ``status``."""
    kind: Literal["count"]
    n: int = Field(ge=0)
    m: int = Field(ge=0)
    status: Literal["pass", "fail", "error", "skip"]
    model: str | None = Field(default=None, pattern=NAME)
    role: Literal["target", "committee"] | None = None
    hard: bool | None = None


class VerdictNote(_Note):
    """``contract`` on ``model`` has ``status`` (the judge finds the run's verdict)."""
    kind: Literal["verdict"]
    contract: str = Field(pattern=NAME)
    model: str = Field(pattern=NAME)
    status: Literal["pass", "fail", "error", "skip"]


class RoleNote(_Note):
    """``model`` took part in the run as ``role``."""
    kind: Literal["role"]
    model: str = Field(pattern=NAME)
    role: Literal["target", "committee"]


class ExistsNote(_Note):
    """``model`` ran (``ran`` true) or did not run (false) in this run."""
    kind: Literal["exists"]
    model: str = Field(pattern=NAME)
    ran: bool = True


class CommentNote(_Note):
    """Free text: rendered as unverified commentary; no number, verdict word or model name."""
    kind: Literal["comment"]
    text: str = Field(min_length=1, max_length=500)


Note = Annotated[Union[ValueNote, ComparisonNote, CountNote, VerdictNote, RoleNote, ExistsNote, CommentNote],
                 Field(discriminator="kind")]
NOTES = TypeAdapter(list[Note])


def parse_notes(raw) -> list:
    """Validated notes (pydantic); raises ``pydantic.ValidationError`` on a malformed record."""
    return NOTES.validate_python(raw if raw is not None else [])


def _quantity(c: dict | None) -> str:
    return c.get("quantity", "?") if c else "?"


def note_sentence(note, index: dict) -> str:
    """The one sentence the renderer prints for a note (Markdown; inline code in backticks).

    ``index`` maps artifact ids of report.json to what it says about them
    (contract, model, probe, quantity, unit); see :func:`artifact_index`.
    """
    def subject(aid):
        c = index.get(aid) or _prefix(index, aid) or {}
        where = f"`{c.get('contract', '?')}` on `{c.get('model', '?')}`"
        if c.get("probe"):
            where += f", probe `{c['probe']}`"
        return f"{_quantity(c)} of {where}"

    def unit(u):
        return "" if u in (None, "", "1") else f" {u}"

    if note.kind == "value":
        return f"Claim: {subject(note.artifact)} is {note.value}{unit(note.unit)} [a:{note.artifact[:12]}]."
    if note.kind == "comparison":
        rhs = (f"{subject(note.b)} [a:{note.b[:12]}]" if note.b else f"{note.b_value}{unit(note.unit)}")
        return f"Claim: {subject(note.a)} [a:{note.a[:12]}] {OPS[note.op]} {rhs}."
    if note.kind == "count":
        sel = " ".join(x for x in (f"`{note.model}`" if note.model else "", note.role or "",
                                   {True: "hard", False: "soft", None: ""}[note.hard]) if x)
        return f"Claim: {note.n} of {note.m} {sel + ' ' if sel else ''}verdicts are {note.status.upper()}."
    if note.kind == "verdict":
        return f"Claim: `{note.contract}` on `{note.model}` is {note.status.upper()}."
    if note.kind == "role":
        return f"Claim: `{note.model}` is the {note.role}" + (" model." if note.role == "target" else " member.")
    if note.kind == "exists":
        return f"Claim: `{note.model}` {'ran' if note.ran else 'did not run'} in this run."
    return f"Unverified commentary (not checked by the judge): {note.text}"


def _prefix(index: dict, aid: str):
    hits = [v for k, v in index.items() if k.startswith(aid)]
    return hits[0] if len(hits) == 1 else None


def artifact_index(data: dict) -> dict:
    """What report.json says about each artifact it cites: contract, model, probe, quantity, unit."""
    out: dict = {}

    def put(c, **ctx):
        if isinstance(c, dict) and c.get("artifact"):
            out[c["artifact"]] = ctx

    for v in data.get("verdicts", []):
        base = {"contract": v.get("contract"), "model": v.get("model")}
        units = v.get("units") or {}
        put(v.get("status"), **base, quantity="verdict", unit="")
        put(v.get("max_normalized"), **base, quantity="max v/tau", unit="1")
        for k, c in (v.get("tolerance") or {}).items():
            put(c, **base, quantity=f"tau {k}", unit=units.get(k, ""))
        for p in v.get("probes", []):
            pc = {**base, "probe": p.get("probe")}
            put(p.get("normalized"), **pc, quantity="v/tau", unit="1")
            for k, c in (p.get("violations") or {}).items():
                put(c, **pc, quantity=k, unit=units.get(k, ""))
            for k, c in (p.get("observables") or {}).items():
                put(c, **pc, quantity=k, unit="")
    return out


def comment_problems(text: str, names: list[str]) -> list[str]:
    """Why a comment's free text is not allowed (empty: it is allowed)."""
    out = []
    t = _ud.normalize("NFKC", text)
    if t != text or any(_ud.category(ch) in ("Cf", "Co", "Cn", "Cs") for ch in text):
        out.append("it holds invisible or compatibility characters")
    if any(ch.isdigit() or _ud.numeric(ch, None) is not None for ch in t):
        out.append("it holds a number (state numbers with a value, comparison or count note)")
    if not COMMENT_CHARS.match(t):
        out.append("it holds characters other than ASCII letters, spaces and , . ; : ' ( ) ? ! / -")
    words = set(_re.findall(r"[^\W\d_]+", t.lower()))
    # letters spelled apart ("p-a-s-s", "f a i l") are read as the word they spell
    words |= {_re.sub(r"[^a-z]", "", m.group(0).lower()) for m in _SPELLED.finditer(t)}
    bad = sorted(words & set(VERDICT_WORDS))
    if bad:
        out.append(f"it uses verdict or count words ({', '.join(bad)}); state outcomes with a typed note")
    tokens = " " + " ".join(_re.findall(r"[^\W_]+", t.lower())) + " "
    flat = _re.sub(r"[\W_]", "", t.lower())
    for n in names:
        n = n.lower()
        parts = [x for x in _re.findall(r"[^\W\d_]+", n)]
        key = "".join(parts)
        if parts and (f" {' '.join(parts)} " in tokens or (len(key) >= 6 and key in flat) or key in words):
            out.append(f"it names a model ({n}); name models in a typed note")
            break
    return out
