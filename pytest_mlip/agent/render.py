"""report.md of the detective's reports, rendered from their records (:mod:`.record`) by one template.

The same function writes the file and, in ``pytest-mlip judge``, the rendering
the given file is compared with: no sentence exists outside a record.
"""

from __future__ import annotations

from ..provenance.artifact import SHORT_ID
from .record import Decision, Expect, Held, LawText, Name, Phrase, Record, Text, Value, Verdict, phrase_text

WORDS = {"fail": "violates", "pass": "obeys", "any": "either (informational)"}
LAW_FORM = {"fail": "violates the law", "error": "violates the law (error)", "pass": "obeys the law",
            "skip": "was skipped"}


def value_text(v: Value) -> str:
    unit = f" {v.unit}" if v.unit not in ("", "1") else ""
    head = f"{v.quantity} " if v.label else ""
    return f"{head}{v.text} [a:{v.artifact[:SHORT_ID]}]{unit}"


def item_text(it) -> str:
    """One item as Markdown (names in backticks, numbers with their citation and unit)."""
    if isinstance(it, Phrase):
        return phrase_text(it.id)
    if isinstance(it, Name):
        return f"`{it.name}`"
    if isinstance(it, Value):
        return value_text(it)
    if isinstance(it, Verdict):
        cite = f"[a:{it.artifact[:SHORT_ID]}]"
        if it.form == "law":
            return f"{LAW_FORM[it.status]} {cite}"
        return f"{'verdict ' if it.form == 'verdict' else ''}{it.status} {cite}"
    if isinstance(it, Decision):
        return it.verdict + (f" ({it.type})" if it.type != "none" else "")
    if isinstance(it, Held):
        return it.held
    if isinstance(it, Expect):
        if it.who == "kind":
            return it.expect
        from .judgement import spell

        out = WORDS[it.expect]
        if it.decades is not None:
            out += f"; target at least {spell(it.decades)} above its median"
        return out
    if isinstance(it, Text):
        return it.text
    if isinstance(it, LawText):
        words = phrase_text(f"law:{it.law}:{it.key}")
        return words.format_map(_Fill({k: value_text(v) if v is not None else "-" for k, v in it.fill.items()}))
    raise TypeError(f"unknown item {it!r}")


class _Fill(dict):
    def __missing__(self, key):
        return "-"


def artifact_index(record: Record) -> dict:
    """What the record says about each artifact it cites (for the sentences of notes)."""
    from .record import items_of

    out = {}
    for _, it in items_of(record):
        if isinstance(it, Value):
            out[it.artifact] = {"contract": it.contract or "?", "model": it.model or "?", "probe": it.probe,
                                "quantity": it.quantity, "unit": it.unit}
    return out


def render_markdown(record: Record) -> str:
    import jinja2

    from ..reporting.claims import note_sentence, parse_notes

    env = jinja2.Environment(loader=jinja2.PackageLoader("pytest_mlip.agent", "templates"), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False)
    env.filters["items"] = lambda xs: "".join(item_text(x) for x in xs)
    index = artifact_index(record)
    notes = [note_sentence(n, index) for n in parse_notes(record.notes)]
    text = env.get_template("agent_report.md.j2").render(record=record, notes=notes)
    return text.rstrip() + "\n"


def rerender_record(folder) -> list:
    """Re-render report.md of a detective report folder from its record (after adding notes): the record and its
    notes validated (typed records only: free text is refused)."""
    from pathlib import Path

    from pydantic import ValidationError

    from ..errors import MlipError
    from ..reporting.claims import parse_notes
    from ..reporting.judge_agent import record_path
    from .record import load_record

    folder = Path(folder)
    src = record_path(folder)
    try:
        record = load_record(src.read_text(encoding="utf-8"))
    except (ValueError, ValidationError) as exc:
        raise MlipError(f"{src}: {str(exc).splitlines()[0]}; fix the edit or regenerate the report") from None
    try:
        parse_notes(record.notes)
    except ValidationError as exc:
        from ..reporting.claims import note_error

        where, why = note_error(exc)
        raise MlipError(f"{src}: {where}: {why}") from None
    out = folder / "report.md"
    if out.exists():  # the page as a render of this record (notes are appended: any earlier list of them) is ours
        try:
            page = out.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            page = None
        notes = list(getattr(record, "notes", None) or [])
        if not any(page == render_markdown(record.model_copy(update={"notes": notes[:k]}))
                   for k in range(len(notes) + 1)):
            raise MlipError(f"{out} is not as pytest-mlip wrote it (edited since?): render would replace it; move it "
                            "aside or undo the edit, then render again (notes go in the record)")
    out.write_text(render_markdown(record))
    return [out]
