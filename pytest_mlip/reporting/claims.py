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
from decimal import Decimal, InvalidOperation

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
