"""What a law says in an escalation report: the interface a playbook offers the report writer.

A law's playbook names its report text with ``escalation_report`` (a
:class:`LawReport` subclass in ``laws/<law>/report.py``); a law that names
none gets this generic one, which still gives a full report: every failing
probe's raw violations with their units, and the application setting of the
impact probes as the domain boundary. A law's report class may override

- ``phrases``: its fixed wording, by key (printed as ``law:<check>:<key>``);
- ``observable_units``: units of the observables its check records without one;
- ``impact(w, r, probes)``: the lines of the section "Application failure and domain boundary" for the worst
  failing probes of the scope protocol ``r``, and the domain-boundary items; numbers it derives are artifacts
  (``w.derive``/``w.ratio``) whose rule the judge recomputes;
- ``figure(w, fig)``: draw the figure (default: v/tau per probe, bars) and return its caption's phrase item.

Everything it returns is items of :mod:`.record` (phrases, names, values): no sentence is free text.
"""

from __future__ import annotations

from typing import ClassVar

#: thermal energy at room temperature, eV (the scale errors in energies are read against)
K_B = 8.617333262e-5
KT_300 = K_B * 300.0
#: a common relaxation force threshold, eV/A
RELAX_FMAX = 0.05
EV_A3_TO_GPA = 160.21766208


class LawReport:
    """The generic report text of a law (see the module docstring)."""

    phrases: ClassVar[dict[str, str]] = {
        "impact": ": the raw violation at the worst probes of the scope protocol (the law's own measure, in its "
                  "units).",
    }
    observable_units: ClassVar[dict[str, str]] = {}

    def impact(self, w, r, probes: list[str]) -> tuple[list[list], list[list]]:
        """(lines, boundary items) of the impact section for the worst failing ``probes`` of scope protocol ``r``."""
        t = r.target
        lines = []
        for p in probes:
            vals = [w.value(a) for a in w.probe_ids(t, p).get("violations", {}).values()]
            if not vals:
                continue
            lines.append(w.where(r.name, t.model, p) + w.join(vals) + [w.law_phrase("impact")])
        return lines, []

    def figure(self, w, fig):
        """Draw the escalation figure on ``fig``; returns the caption (a phrase item)."""
        w.bars(fig)
        return w.P("fig.bars")


def law_report(check: str) -> LawReport:
    """The report text of the law whose check is ``check`` (its playbook's ``escalation_report``, else generic)."""
    from .playbook import playbook_for

    book = playbook_for(check)
    cls = getattr(book, "escalation_report", None) if book is not None else None
    return (cls or LawReport)()


def law_phrases(check: str) -> dict[str, str]:
    """A law's phrases: its report's ``phrases`` and its playbook's decision-table outcomes (``outcome.0/1``)."""
    from .playbook import playbook_for

    rep = law_report(check)
    out = {**LawReport.phrases, **rep.phrases}
    book = playbook_for(check)
    if book is not None:
        for i, text in enumerate(book.reference_outcomes):
            out[f"outcome.{i}"] = text
    return out
