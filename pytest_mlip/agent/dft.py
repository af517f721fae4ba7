"""The DFT verification card of an escalation report: configurations to compute, ready-to-run inputs, cost.

Configurations are the law's reference card's (``pytest_mlip/laws/<law>/card.py``),
built from the pre-registered protocol with the check's own probe construction
(so the reference sees exactly what the models saw) and the target's scan where
the law has one. A card that needs the model's own worst configuration or
observables, which an escalation does not carry, gives way to the law's
playbook (``reference_configs``). The inputs (extxyz, VASP, Quantum ESPRESSO)
are written by :mod:`pytest_mlip.reference.inputs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the input writers live with the reference (every card's inputs are written by them); named here for the report
from ..reference.inputs import CORE_H, core_hours, incar, kpoints, write_inputs  # noqa: E402,F401


@dataclass
class Config:
    name: str
    probe: str
    role: str  # what the configuration is in the protocol
    atoms: object
    distance: float | None = None
    parents: list[str] = field(default_factory=list)


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = LETTERS[r] + s
    return s


def configurations(settings, probes: list[str], series: dict[str, dict], points: int = 6) -> list[Config]:
    """The configurations a reference must compute for ``probes`` of a protocol.

    ``series`` maps probe -> {"r": [...], "E": [...], "ids": [...], "r_eq": r} (the target's scan, when the law
    has one). Which configurations settle a finding is the law's reference card's to say.
    """
    from ..laws import CHECKS
    from ..reference.cards import ProbeCase, card_for
    from .playbook import playbook_for

    check = CHECKS[settings.check]()
    card = card_for(settings.check)
    book = playbook_for(settings.check)
    out: list[Config] = []
    for probe in check.probes(settings):
        if probe.id not in probes:
            continue
        scan = series.get(probe.id)
        rows = None
        if card is not None:
            values = {}
            if scan:
                values = {"r_inner": float(min(scan["r"])), "r_eq": float(scan.get("r_eq", max(scan["r"]))),
                          "curve_E": list(scan["E"])}
            case = ProbeCase(settings.name, probe.id, probe, values, tolerance=dict(settings.tolerance))
            if card.domain_error(settings, case) is None:
                ids = list((scan or {}).get("ids", []))
                rows = [(c.role, c.atoms, c.distance, ids if c.distance is not None else [])
                        for c in card.configurations(settings, case)]
        if rows is None and book is not None:
            rows = book.reference_configs(check, settings, probe, scan, points)
        for role, atoms, distance, parents in rows or []:
            out.append(Config(f"config-{_letters(len(out))}", probe.id, role, atoms, distance, parents))
    return out
