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
# its predicate on the artifacts it cites. Free text goes only into a ``comment`` note, rendered as visibly
# unverified commentary, and may hold no number, verdict word or model name.


ARTIFACT_ID = r"^[0-9a-f]{6,64}$"
#: ASCII digits only (the pattern engine reads \d as any Unicode digit: a Bengali 8 printed for a 4)
NUMBER_TEXT = r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
#: a model or contract name in a note: no spaces, backticks or markup (it is printed inside backticks)
NAME = r"^[A-Za-z0-9_.:+@=/~-]{1,120}$"
UNIT = r"^[A-Za-z0-9/^*.-]{0,20}$"
OPS = {"<": "is below", "<=": "is at most", ">": "is above", ">=": "is at least", "==": "equals"}
ROLES = ("target", "committee")
#: words that state an outcome or judge quality: a comment may not use them (nor the CORE_WORDS within one edit)
VERDICT_WORDS = ("pass", "passes", "passed", "passing", "fail", "fails", "failed", "failing", "failure", "failures",
                 "error", "errors", "skip", "skips", "skipped", "violate", "violates", "violated", "violating",
                 "violation", "violations", "obey", "obeys", "obeyed", "satisfy", "satisfies", "satisfied", "holds",
                 "hold", "held", "breaks", "break", "broken", "broke", "escalate", "escalated", "escalates", "reject",
                 "rejected", "rejects", "ok", "okay", "fine", "correct", "wrong", "good", "bad", "clean", "green", "red",
                 "succeed", "succeeds", "succeeded", "success", "regression", "regressed", "fixed", "gating", "gate",
                 "verdict", "worse", "worst", "better", "best", "above", "below", "exceeds", "within", "perfect",
                 "flawless", "robust", "collapse", "collapses", "collapsed", "unphysical", "physical", "catastrophic",
                 "problem", "problems", "issue", "issues", "bug", "bugs", "alright", "healthy", "sound", "safe",
                 "unsafe", "accurate", "inaccurate", "reliable", "unreliable", "valid", "invalid", "meets", "misses",
                 "complies", "conforms", "respects", "disobeys", "defies", "exceeded", "beyond", "large", "small",
                 "tiny", "huge", "negligible", "significant", "dangerous", "deviates", "agrees", "disagrees", "agree",
                 "disagree", "matches", "consistent", "inconsistent", "regress", "improved", "improves", "degraded",
                 "worsened", "stable", "unstable", "true", "false", "confirmed", "refuted", "verified", "unverified",
                 "approved", "flagged", "fabricated", "finding", "findings", "defect", "defects", "hard", "soft",
                 "target", "committee", "member", "members", "excellent", "great", "nice", "superb", "outstanding",
                 "impressive", "terrible", "awful", "poor", "solid", "sane", "sensible", "acceptable",
                 "unacceptable", "satisfactory", "passable", "adequate", "inadequate", "proper", "improper",
                 "flawed", "faulty", "buggy", "trustworthy", "strong", "weak", "suspicious", "questionable",
                 "dubious", "concerning", "worrying", "alarming", "pristine", "spotless", "immaculate", "nil",
                 "success", "successful", "unsuccessful", "fault", "faults", "flaw", "flaws", "ideal", "optimal",
                 "yes", "positive", "negative", "plus", "minus", "sign", "nan", "inf", "infinity", "infinite", "max",
                 "min", "maximum", "minimum", "exact", "exactly", "precise", "approximately", "roughly", "nearly",
                 "almost", "fulfil", "fulfill", "fulfills", "fulfils", "honors", "honours", "breach", "breaches",
                 "outlier", "anomaly", "anomalous", "suspect", "risky", "risk", "worry", "concern", "blocker",
                 "blocking", "blocks", "releasable", "approve", "accept",
                 "accepted", "deny", "denied", "refuse", "refused", "warning", "warn", "crash", "crashed", "crashes",
                 "wins", "win", "won", "lose", "loses", "lost", "beats", "beat", "outperforms", "underperforms",
                 # dismissals and release decisions: a comment may not wave a finding away or clear a model
                 "artefact", "artefacts", "artifact", "artifacts", "disregard", "disregarded", "dismiss",
                 "dismissed", "dismissible", "ignore", "ignored", "ignorable", "irrelevant", "spurious", "bogus",
                 "moot", "harmless", "benign", "superseded", "supersedes", "obsolete", "outdated", "stale",
                 "ship", "ships", "shipped", "shipping", "mergeable",
                 "approval", "signoff", "cleared", "clears", "ready", "trusted", "trust", "checks", "checked",
                 "works", "worked", "working", "expected", "unexpected", "normal", "noise", "noisy",
                 # decisions about using the model, and pointers to other results: the report's verdicts decide
                 "deploy", "deployed", "deploying", "deployment", "production", "recommend", "recommended",
                 "recommends", "endorse", "endorsed", "hesitation", "hesitate", "fit", "purpose", "happily",
                 "happier", "happy", "confident", "confidence", "reassuring", "closely", "rerun", "reruns",
                 "instead", "story", "usable", "unusable", "suitable", "unsuitable",
                 # review idioms that clear a change (held-out cases: "LGTM.", "Merge it.", "Rubber stamped.")
                 "lgtm", "merge", "merged", "merging", "signed", "sign", "stamp", "stamped", "rubber", "thumbs",
                 "thumb", "quirk", "quirks", "meaningless", "cosmetic", "glitch", "glitches", "nitpick", "nit",
                 "shipit", "greenlight", "greenlit", "blessed", "bless", "vetted", "sanctioned", "endorsement",
                 "audited", "cosmetics", "harmlessly", "innocuous", "trivial",
                 # the same in a few other languages written in ASCII (a comment is read as English)
                 "besteht", "bestanden", "freigegeben", "fehler", "fehlgeschlagen", "alle", "keine", "gut",
                 "reussi", "echec", "valide", "aprobado", "fallo", "correcto", "bueno", "superato", "fallito")
#: words that count: a comment may not use them either (state counts with a count note)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
                "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
                "thousand", "million", "billion", "dozen", "dozens", "once", "twice", "thrice", "half", "quarter",
                "third", "thirds", "single", "double", "triple", "first", "second", "tenth", "percent", "per",
                "none", "all", "every", "most", "no", "nothing", "nobody", "several", "many", "few", "fewer",
                "majority", "minority", "handful", "nought", "naught", "null", "least", "mostly")
#: the words a disguise targets: matched also within one edit (a misspelling, a dropped or doubled letter)
CORE_WORDS = ("pass", "passes", "passed", "passing", "fail", "fails", "failed", "failing", "failure", "failures",
              "error", "errors", "skip", "skipped", "violate", "violates", "violated", "violation", "violations",
              "obey", "obeys", "obeyed", "escalate", "escalated", "reject", "rejected", "success", "succeed",
              "succeeded", "successful", "excellent", "perfect", "flawless", "broken", "correct", "okay", "healthy",
              "reliable", "accurate", "verdict", "approved", "flagged", "satisfied", "satisfies", "satisfactory",
              "acceptable", "unacceptable", "unphysical", "catastrophic", "outstanding", "terrible", "regression",
              "regressed", "inconsistent", "consistent", "trustworthy", "pristine", "flawed", "faulty", "defect")
#: units: a comment may not name them
UNIT_WORDS = ("ev", "mev", "kev", "gpa", "mpa", "kpa", "pa", "kbar", "angstrom", "angstroms", "ang", "bohr",
              "hartree", "rydberg", "ry", "kcal", "kj", "mol", "kelvin", "fs", "ps", "nm", "pm", "ev/a", "amu",
              "dalton", "joule", "joules", "newton", "pascal", "bar", "atm", "degree", "degrees", "rad", "radian")
COMMENT_CHARS = _re.compile(r"^[A-Za-z ,.;:'()?!/-]*$")
#: a comment's length at most (a sentence or two: longer prose belongs outside the report)
COMMENT_MAX = 240
_SPELLED = _re.compile(r"(?<![A-Za-z])(?:[A-Za-z][^A-Za-z]{1,3}){2,}[A-Za-z](?![A-Za-z])")
_ROMAN = _re.compile(r"^m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")


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
    text: str = Field(min_length=1, max_length=COMMENT_MAX)


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


def _near(word: str, vocab: frozenset) -> str | None:
    """The vocabulary word ``word`` equals or is within one edit of (Damerau: insert, delete, substitute,
    transpose); a substitution counts only for words of five letters or more (``past`` is not ``pass``)."""
    if word in vocab:
        return word
    if len(word) < 3:
        return None
    letters = "abcdefghijklmnopqrstuvwxyz"
    cands = {word[:i] + word[i + 1:] for i in range(len(word))}
    cands |= {word[:i] + c + word[i:] for i in range(len(word) + 1) for c in letters}
    cands |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    hit = next((c for c in sorted(cands) if c in vocab and len(c) >= 4), None)
    if hit:
        return hit
    if len(word) >= 5:
        return next((c for c in sorted(word[:i] + x + word[i + 1:] for i in range(len(word)) for x in letters)
                     if c in vocab and len(c) >= 5), None)
    return None


#: common words one edit from a core word, not a disguise of it
NEAR_EXEMPT = frozenset(("falls", "sailed", "mailed", "nailed", "hailed", "railed", "tailed", "wailed", "jailed",
                         "parsed", "parses", "massed", "masses", "pauses", "paused", "slipped", "shipped", "flogged",
                         "detect", "deflect", "eject", "deject", "broker", "tails", "nails", "mails", "rails",
                         "sails", "hails", "fairs", "prefect", "bypass", "compass", "trespass", "skipper",
                         "passage", "impasse", "assess", "errand", "terror", "mirror", "obese", "kipper"))
_VOCAB = frozenset(VERDICT_WORDS) | frozenset(NUMBER_WORDS) | frozenset(CORE_WORDS)
_CORE = frozenset(CORE_WORDS)
_SUFFIXES = ("ed", "d", "ing", "s", "es", "ly", "ness", "ful", "fully", "ment", "y", "ish", "able")
_UNITS = frozenset(u.replace("/", "") for u in UNIT_WORDS)


#: words of the laws' titles and the models' descriptions that say nothing of a finding (kept out of the topics)
TOPIC_EXEMPT = frozenset(("with", "from", "that", "this", "known", "along", "curves", "paths", "short", "range",
                          "size", "rigid", "analytic", "reference", "fitted", "form", "model", "models", "potential",
                          "trained", "data", "version", "pretrained", "universal", "interatomic", "graph", "network",
                          "neural", "machine", "learning", "learned", "release", "default", "images", "lead",
                          "direct", "layers", "outputs", "parameter", "foundation",
                          # what probes are made of, not what a law says of them ("see the dimer curves")
                          "dimer", "dimers", "crystals", "species", "element", "surface", "slab"))


def topic_words() -> frozenset:
    """What a report is about, as words a comment may not use (see :func:`comment_problems`): every law's name
    and title, the built-in contracts' names, the registered models' descriptions and the chemical elements'
    names. A comment that names them ("the adsorption row can be set aside", "effective medium theory behaves on
    nickel") speaks of a finding without a claim the judge could check (held-out cases)."""
    global _TOPICS
    if _TOPICS is None:
        from ase.data import atomic_names

        text = [n for n in atomic_names if n]
        try:
            from ..laws import LAWS

            text += [k + " " + law.check.title for k, law in LAWS.items()]
        except Exception:  # noqa: BLE001 - a law that fails to import must not make comments unreadable
            pass
        try:
            from ..contracts.suite import builtin_contracts_dir

            text += [f.stem.removeprefix("mlip_") for f in builtin_contracts_dir().glob("mlip_*.toml")]
        except Exception:  # noqa: BLE001
            pass
        words = {w for t in text for w in _re.findall(r"[a-z]+", t.casefold()) if len(w) >= 4}
        try:  # the models' descriptions: their longer words only ("effective medium theory"), not "only", "file"
            from ..models.registry import registry

            words |= {w for e in registry().values() for w in _re.findall(r"[a-z]+", (e.info.description or "")
                                                                          .casefold()) if len(w) >= 6}
        except Exception:  # noqa: BLE001
            pass
        _TOPICS = frozenset(words - TOPIC_EXEMPT)
    return _TOPICS


_TOPICS: frozenset | None = None


def comment_problems(text: str, names: list[str]) -> list[str]:
    """Why a comment's free text is not allowed (empty: it is allowed). See the README's rule for comments."""
    out = []
    t = _ud.normalize("NFKC", text)
    if t != text or any(_ud.category(ch) in ("Cf", "Co", "Cn", "Cs") for ch in text):
        out.append("it holds invisible or compatibility characters")
    if any(ch.isdigit() or _ud.numeric(ch, None) is not None for ch in t):
        out.append("it holds a number (state numbers with a value, comparison or count note)")
    if not COMMENT_CHARS.match(t):
        out.append("it holds characters other than ASCII letters, spaces and , . ; : ' ( ) ? ! / -")
    if len(text) > COMMENT_MAX:
        out.append(f"it is longer than {COMMENT_MAX} characters")
    low = t.casefold()
    # words: runs of letters once every other character is dropped inside a word ("p.a.s.s" is "pass")
    raw = [w for w in _re.split(r"\s+", low) if w]
    words = [_re.sub(r"[^a-z]", "", w) for w in raw]
    parts = [x for w in raw for x in _re.findall(r"[a-z]+", w)]
    spelled = [_re.sub(r"[^a-z]", "", m.group(0)) for m in _SPELLED.finditer(low)]
    seq = [w for w in words if w]
    # two or three neighbouring words joined ("pas sed" is "passed")
    joined = ["".join(seq[i:i + k]) for k in (2, 3) for i in range(len(seq) - k + 1)]
    bad = set()
    for w in set(words) | set(parts) | set(spelled) | set(joined):
        if w in _VOCAB:
            bad.add(w)
        elif w and w not in joined and w not in NEAR_EXEMPT:
            # the word, or its stem once an inflection is dropped ("errored" is "error")
            stems = [w] + [w[:-len(x)] for x in _SUFFIXES if w.endswith(x) and len(w) - len(x) >= 4]
            hit = next((h for h in (_near(x, _CORE) for x in stems) if h), None)
            if hit:
                bad.add(hit)
    flat = "".join(ch for ch in low if "a" <= ch <= "z")
    bad |= {v for v in _CORE if len(v) >= 6 and v in flat}
    if bad:
        out.append(f"it uses verdict, quality or count words ({', '.join(sorted(bad))}); state outcomes with a "
                   "typed note")
    if any(w in _UNITS for w in set(words) | set(parts)):
        out.append("it names a unit; units belong to a value note")
    topics = sorted({w for w in set(words) | set(parts) if w in topic_words()}
                    | {w[:-1] for w in set(words) | set(parts) if w.endswith("s") and w[:-1] in topic_words()})
    if topics:
        out.append(f"it names what the report checks ({', '.join(topics[:3])}: a law, contract, element or model); "
                   "state what you mean with a typed note")
    if any(len(w) >= 2 and _ROMAN.match(w) for w in set(words) | set(parts)) or \
            any(w in ("v", "x", "l", "c", "d", "m") for w in parts):
        out.append("it holds a roman numeral")
    if any(len(w) >= 6 and set(w) <= set("abcdef") for w in set(words) | set(parts)):
        out.append("it holds what reads as an artifact id (hex letters); cite artifacts with a typed note")
    tokens = " " + " ".join(parts) + " "
    for n in names:
        n = n.lower()
        nparts = [x for x in _re.findall(r"[^\W\d_]+", n)]
        key = "".join(nparts)
        if not key:
            continue
        if f" {' '.join(nparts)} " in tokens or (len(key) >= 5 and key in flat) or key in words or \
                key in joined or key in spelled or (len(key) >= 5 and _near_name(key, set(words) | set(joined))):
            out.append(f"it names a model ({n}); name models in a typed note")
            break
    return out


def _near_name(key: str, words: set) -> bool:
    return any(_near(w, frozenset((key,))) for w in words if abs(len(w) - len(key)) <= 1)
