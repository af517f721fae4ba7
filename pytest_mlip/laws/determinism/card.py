"""Reference card of determinism: what a reference can and cannot add (not run here).

Determinism is the model's own call-to-call repeatability: a reference energy of the structure says which of the
model's differing outputs is nearer the truth, never whether the model repeats itself, so it cannot settle the
finding. The card writes the structure's inputs (for a reader who wants that anchor) and decides nothing.
"""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig, Undecidable


class DeterminismCard(Card):
    check = "determinism"
    quantity = "energy"
    floor_tolerance = "energy"
    engines = "none: not run here"
    not_run_here = ("determinism is the model's call-to-call repeatability; a reference energy can only say which of "
                    "its differing outputs is nearer the truth, not whether the model repeats itself")
    table = (("no reference decides this law: the structure's inputs are written as an anchor only", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        return None if case.built is not None else "the probe is not in the contract's settings"

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        atoms = case.built.atoms.copy()
        atoms.calc = None
        return [RefConfig("structure", "the structure the model repeated differently", atoms)]

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        raise Undecidable(self.not_run_here)
