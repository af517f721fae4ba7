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
from decimal import Decimal, InvalidOperation
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

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


#: a number as printed: ASCII only (a Unicode digit or space reads as another number to a person and as the same to
#: Decimal)
_PRINTED_NUMBER = _re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)",
                             _re.ASCII | _re.IGNORECASE)


def number_mismatch(text: str, value, min_sig: int = SIG) -> str | None:
    """None when ``text`` is a faithful print of ``value``; else why it is not."""
    v = _as_float(value)
    if v is None:
        return f"the artifact's value {value!r} is not a number"
    if not isinstance(text, str) or not _PRINTED_NUMBER.fullmatch(text):
        return (f"{text!r} is not a number as the tool prints one (ASCII digits, an optional sign, decimal point and "
                "exponent, nothing else)")
    t = text.lower().lstrip("+")
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
    # an exact zero is exact however many zeros it is printed with; and the report's own rounding with its trailing
    # zeros dropped (0.3 for 0.300) is the same number (a held-out-6 legitimate note was refused)
    if exp > exp_c and not (v == 0 and d == 0) and d != Decimal(canonical):
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
# its predicate on the artifacts it cites. A judged report holds no free text: a word list can always be talked
# around ("reviewers agreed it behaves as it should"), so commentary belongs outside the report (the pull request).


ARTIFACT_ID = r"^[0-9a-f]{6,64}$"
#: ASCII digits only (the pattern engine reads \d as any Unicode digit: a Bengali 8 printed for a 4)
NUMBER_TEXT = r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
#: a model or contract name in a note: no spaces, backticks or markup (it is printed inside backticks)
NAME = r"^[A-Za-z0-9_.:+@=/~-]{1,120}$"
UNIT = r"^[A-Za-z0-9/^*.-]{0,20}$"
OPS = {"<": "is below", "<=": "is at most", ">": "is above", ">=": "is at least", "==": "equals"}
ROLES = ("target", "committee")


class _Note(BaseModel):
    #: strict: types as written ("3" is not a count, "yes" not a boolean, 3.0 not an integer)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


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
    """Free text, which a judged report does not hold: always refused, with the reason and the fix."""
    kind: Literal["comment"]
    text: str = ""

    @model_validator(mode="after")
    def _refused(self):
        raise ValueError("free text is not part of a judged report (no word list can tell commentary from a claim); "
                         "state outcomes, numbers, counts and names as typed notes (value, comparison, count, verdict, "
                         "role, exists) and keep discussion outside the report, e.g. in the pull request")


Note = Annotated[Union[ValueNote, ComparisonNote, CountNote, VerdictNote, RoleNote, ExistsNote, CommentNote],
                 Field(discriminator="kind")]
NOTES = TypeAdapter(list[Note])


def parse_notes(raw) -> list:
    """Validated notes (pydantic); raises ``pydantic.ValidationError`` on a malformed record."""
    return NOTES.validate_python(raw if raw is not None else [])


def note_error(exc) -> tuple[str, str]:
    """(where, why) of a :func:`parse_notes` ``ValidationError``: ``notes[i]`` (or ``notes[i].field``) and the first
    error's message, without pydantic's type names."""
    first = exc.errors()[0]
    loc = [x for x in first["loc"] if x not in {"comment", "value", "comparison", "count", "verdict", "role",
                                                  "exists"}]
    where = "notes" + "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc)
    return where, first["msg"].removeprefix("Value error, ")


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
    return f"Claim: `{note.model}` {'ran' if note.ran else 'did not run'} in this run."


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
