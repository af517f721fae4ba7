"""The law record: what every engine reads about one law, from the law's own folder.

A law lives in ``pytest_mlip/laws/<law>/``; its ``__init__.py`` defines one
``LAW = Law(...)``. The record names, by module and attribute inside that
folder, what each engine needs (imported lazily, so reading the registry
never imports torch or the agent):

- ``check``: the :class:`~pytest_mlip.laws.base.Check` subclass (the sampled suite);
- ``objective``: the adversary's search objective over the law's admissible domain;
- ``playbook``: how the detective widens this law's evidence into hypotheses and protocols;
- ``card``: the reference card (what a reference calculation must produce to settle a finding);
- ``figure``: what the report draws for it, with the axis quantities of its scans;
- ``calibration``: the function that measures its tolerance keys' float32 noise (benchmarks/calibrate_noise.py);
- ``mutant``: the planted-defect calculator that must fail it (the clean model must pass).

An engine a law does not serve is named in ``opt_out`` with the reason, and
the reason appears in output (``pytest-mlip laws``, the adversary's list of
contracts it cannot search, the reference report). A record that neither
provides an engine nor states why it opts out is an error at import.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

#: the engines a law can serve, in the order of the coverage table (engine -> column title)
ENGINES = {
    "suite": "sampled suite",
    "adversary": "adversary objective",
    "detective": "detective playbook",
    "reference": "reference card",
    "figure": "figure",
    "calibration": "calibration entry",
    "mutant": "mutant",
}
#: engine -> the record field that provides it
_FIELD = {"adversary": "objective", "detective": "playbook", "reference": "card", "figure": "figure",
          "calibration": "calibration", "mutant": "mutant"}


class LawRecordError(ValueError):
    """A law's record is incomplete: an engine neither provided nor opted out of with a reason."""


@dataclass
class Law:
    """One law's record (see the module docstring). ``package`` is filled in by the registry."""

    check: type
    objective: str | None = None
    playbook: str | None = None
    card: str | None = None
    #: what the report draws (None: no figure, say why in opt_out)
    figure: str | None = None
    #: series name (without its curve_/scan_/path_ prefix) -> (quantity in words, unit), for this law's figures
    axes: dict[str, tuple[str, str]] = field(default_factory=dict)
    calibration: str | None = None
    #: where the planted-defect calculator lives (a path::name a maintainer can open)
    mutant: str | None = None
    opt_out: dict[str, str] = field(default_factory=dict)
    #: laws a failure of this one is read against on the same model and structure (the summary's cross-reference):
    #: other law -> (its words, what a failure of it there suggests, what a pass there says)
    read_against: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    package: str = ""

    def __post_init__(self):
        unknown = set(self.opt_out) - set(_FIELD)
        if unknown:
            raise LawRecordError(f"{self.name}: unknown engine(s) {sorted(unknown)} in opt_out; engines: "
                                 f"{sorted(_FIELD)}")
        for engine, attr in _FIELD.items():
            given, reason = getattr(self, attr), self.opt_out.get(engine, "").strip()
            if given and reason:
                raise LawRecordError(f"{self.name}: provides the {engine} engine and opts out of it")
            if not given and not reason:
                raise LawRecordError(f"{self.name}: no {engine} ({attr}=...) and no stated reason in opt_out")

    @property
    def name(self) -> str:
        return self.check.name

    def module(self, ref: str | None) -> str | None:
        """The full module name of a reference (``module:attr`` inside the law's folder, or ``pytest_mlip.x.y:attr``
        for a shared one)."""
        if not ref:
            return None
        module = ref.partition(":")[0]
        return module if module.startswith("pytest_mlip.") else f"{self.package}.{module}"

    def _load(self, ref: str | None):
        if not ref:
            return None
        return getattr(importlib.import_module(self.module(ref)), ref.partition(":")[2])

    def objective_class(self):
        """The adversary objective's class (its module registers it), or None with ``opt_out['adversary']``."""
        return self._load(self.objective)

    def playbook_class(self):
        return self._load(self.playbook)

    def card_object(self):
        return self._load(self.card)

    def calibration_function(self):
        return self._load(self.calibration)

    def reason(self, engine: str) -> str:
        """Why this law does not serve ``engine`` ('' when it does)."""
        return self.opt_out.get(engine, "")

    def coverage(self) -> dict[str, tuple[bool, str]]:
        """engine -> (served, what serves it or why not)."""
        out: dict[str, tuple[bool, str]] = {"suite": (True, f"{self.check.__module__}.{self.check.__name__}")}
        for engine, attr in _FIELD.items():
            given = getattr(self, attr)
            if given:
                full = given if given.startswith("pytest_mlip.") else f"{self.package}.{given}"
                detail = given if engine in ("figure", "mutant") else full.replace(":", ".")
                out[engine] = (True, detail)
            else:
                out[engine] = (False, self.opt_out[engine])
        return out


def observed_noise(settings, ctx) -> dict:
    """A calibration entry shared by laws that every shipped model satisfies by construction (autograd forces and
    stress, a deterministic forward pass): the law's own raw worst violation on the built-in contract is rounding
    (and finite-difference truncation) noise."""
    return ctx.observed(settings)


#: the record's reference to :func:`observed_noise`
OBSERVED_NOISE = "pytest_mlip.laws.law:observed_noise"


def coverage_rows(laws: dict[str, Law]) -> list[dict[str, Any]]:
    """The law x engine table as rows: {'law': name, engine: (served, detail), ...}."""
    return [{"law": name, **law.coverage()} for name, law in sorted(laws.items())]


def coverage_text(laws: dict[str, Law], reasons: bool = True) -> str:
    """The coverage table as aligned text, then every opt-out with its reason."""
    cols = list(ENGINES)
    rows = coverage_rows(laws)
    width = max(len(r["law"]) for r in rows) + 2
    head = "law".ljust(width) + "  ".join(ENGINES[c] for c in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = [("yes" if r[c][0] else "no").ljust(len(ENGINES[c])) for c in cols]
        lines.append(r["law"].ljust(width) + "  ".join(cells).rstrip())
    totals = [sum(1 for r in rows if r[c][0]) for c in cols]
    lines.append("-" * len(head))
    lines.append("laws served".ljust(width) + "  ".join(f"{t}/{len(rows)}".ljust(len(ENGINES[c]))
                                                        for t, c in zip(totals, cols)).rstrip())
    if reasons:
        lines.append("")
        lines.append("Opt-outs (a law may leave an engine out only with a stated reason):")
        for r in rows:
            for c in cols:
                if not r[c][0]:
                    lines.append(f"- {r['law']} / {ENGINES[c]}: {r[c][1]}")
        cards = [(name, law.card_object()) for name, law in sorted(laws.items()) if law.card]
        if cards:
            lines.append("")
            lines.append("Reference cards (the engine here that computes each, or why it is not run here; a card not "
                         "run here writes its inputs for an external code):")
            for name, card in cards:
                why = getattr(card, "not_run_here", "")
                lines.append(f"- {name}: " + (f"not run here: {why}" if why else getattr(card, "engines", "")))
    return "\n".join(lines)
