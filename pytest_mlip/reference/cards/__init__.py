"""Reference cards: what a reference calculation must produce for one law, and its decision table.

A card is a small self-contained object keyed by the name of the check it
settles (``CARDS[check]``); it lives in its law's folder
(``pytest_mlip/laws/<law>/card.py``, named by the law's record), and a law
without one states why in its record. It says

- which configurations to compute for a probe (built from the probe and the
  model's own observables, so the reference sees the geometry the model saw),
- which observable it derives from their energies, under the same name as the
  model's observable (``quantity``),
- the band around the reference value: ``max(floor, 3 x method spread)``, the
  spread being what two engines or basis sets were measured to disagree by,
  stated in the card,
- and the pre-registered decision table: **confirmed** (the model lies outside
  the band), **refuted** (inside it), **undecided** (a reference point did not
  converge, the case is outside the engine's domain, or the budget ran out).
- which engine here runs it (``engines``, in words) or, where none fits the
  budget or a reference cannot decide the law, why it is not run here
  (``not_run_here``): such a card still builds its configurations, the settle
  step writes them as inputs for an external code (extxyz, VASP, Quantum
  ESPRESSO) and the decision is **undecided** with that reason.

Cards name no engine internals and engines name no law: a card gives atoms
(with ``info['spin']`` and initial moments as the spin start), an engine gives
energies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

CARDS: dict[str, "Card"] = {}

CONFIRMED, REFUTED, UNDECIDED = "confirmed", "refuted", "undecided"
#: a displacement's direction in a configuration's role (roles carry no numbers: a report cites every number)
WORD = {"plus": "forward", "minus": "backward"}


class Undecidable(Exception):
    """Raised by a card's ``observables`` when the reference points cannot give the quantity (the reason)."""


@dataclass
class RefConfig:
    """One configuration a card asks the engine for."""

    name: str
    role: str
    atoms: Any
    #: the scan coordinate of this configuration on the model's curve (A), when it is a point of one
    distance: float | None = None


@dataclass
class ProbeCase:
    """What a card sees of one failing probe: its id, the rebuilt probe, the model's numbers, the worst atoms."""

    contract: str
    probe: str
    built: Any  # pytest_mlip.laws.base.Probe (rebuilt from the settings), or None
    values: dict[str, Any]  # the model's violations and observables, by name
    worst_atoms: Any = None
    tolerance: dict[str, float] = field(default_factory=dict)


@dataclass
class Band:
    center: float
    half_width: float
    floor: float
    spread: float
    spread_source: str

    @property
    def lo(self) -> float:
        return self.center - self.half_width

    @property
    def hi(self) -> float:
        return self.center + self.half_width

    def as_dict(self) -> dict:
        return {"center": self.center, "half_width": self.half_width, "lo": self.lo, "hi": self.hi,
                "floor": self.floor, "spread": self.spread, "spread_source": self.spread_source,
                "rule": "half_width = max(floor, 3 x method spread)"}


class Card:
    """Base of the reference cards. Subclasses set ``check``, ``quantity`` and implement two methods."""

    check: ClassVar[str] = ""
    #: the observable (or violation) the decision compares, named as the model's
    quantity: ClassVar[str] = ""
    #: measured method spread of ``quantity`` per probe key (two engines or basis sets), with its source
    spread: ClassVar[dict[str, float]] = {}
    spread_source: ClassVar[str] = ""
    #: the reference outcome -> decision rows, pre-registered (printed in reports and cards)
    table: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: which engine here computes the card, in words (e.g. "pyscf (molecules), gpaw (slabs)")
    engines: ClassVar[str] = "pyscf (isolated systems), gpaw (isolated and periodic)"
    #: why the card is not computed here ('' when it is): its inputs are written and the decision is undecided
    not_run_here: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.check:
            CARDS[cls.check] = cls()

    # --- what a card implements ------------------------------------------------------------------------------------
    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:  # pragma: no cover
        raise NotImplementedError

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        """Reference observables (named as the model's) from the energies of the configurations, by name."""
        raise NotImplementedError  # pragma: no cover

    def curve(self, settings, case: ProbeCase, energies: dict[str, float]) -> tuple[list, list] | None:
        """Reference points (x, y) on the model's curve of this probe, y anchored as the report draws that curve
        (relative to its value at the largest x); None when the law has no curve."""
        return None

    #: the law's tolerance key that is the band's smallest half-width (None: no floor)
    floor_tolerance: str | None = None

    def floor(self, settings, case: ProbeCase) -> float:
        """The smallest half-width of the band (before the method spread): the law's own tau where it has one."""
        if self.floor_tolerance is None:
            return 0.0
        key = self.floor_tolerance
        return float(case.tolerance.get(key, settings.tolerance[key]))

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        """Why this probe cannot be settled at all (before any engine is asked), or None."""
        return None

    def spread_key(self, case: ProbeCase) -> str:
        return case.probe

    # --- the fixed decision table ----------------------------------------------------------------------------------
    def band(self, settings, case: ProbeCase, reference: float) -> Band:
        known = self.spread.get(self.spread_key(case))
        spread = known if known is not None else (max(self.spread.values()) if self.spread else 0.0)
        src = self.spread_source + ("" if known is not None or not self.spread else
                                    f" (largest measured spread; not measured for {self.spread_key(case)})")
        floor = self.floor(settings, case)
        return Band(reference, max(floor, 3.0 * spread), floor, spread, src)

    def decide(self, model_value: float, band: Band) -> tuple[str, str]:
        inside = band.lo <= model_value <= band.hi
        q = self.quantity
        if inside:
            return REFUTED, (f"model {q} {model_value:.4g} lies inside the reference band "
                             f"[{band.lo:.4g}, {band.hi:.4g}]")
        return CONFIRMED, (f"model {q} {model_value:.4g} lies outside the reference band "
                           f"[{band.lo:.4g}, {band.hi:.4g}]")

    def table_rows(self) -> list[tuple[str, str]]:
        return list(self.table) + [
            ("the model's value lies outside the band", CONFIRMED),
            ("the model's value lies inside the band", REFUTED),
            ("a reference point did not converge, the case is outside the engine's domain, or the budget ran out",
             UNDECIDED)]


def card_for(check: str) -> Card | None:
    """The reference card of the law whose check is ``check`` (it lives in the law's folder), or None."""
    from ...laws import law_for

    law = law_for(check)
    cls = law.card_object() if law is not None else None
    return CARDS.get(check) if cls is not None else None


def why_no_card(check: str) -> str:
    """The reason a law states for having no reference card ('' when it has one)."""
    from ...laws import law_for

    law = law_for(check)
    return law.reason("reference") if law is not None else f"no law {check!r}"
