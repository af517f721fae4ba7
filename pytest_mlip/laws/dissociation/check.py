"""Dissociation limit / size consistency: far-apart fragments do not interact."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ...structures import StructureSpec
from .domain import FragmentDomain
from ..base import Check, ContractSettings, Measurement, Probe


class DissociationSettings(ContractSettings):
    check: Literal["dissociation"] = "dissociation"
    pairs: list[tuple[StructureSpec, StructureSpec]] = Field(default_factory=list)
    gap: float = Field(12.0, ge=4.0, le=50.0, description="closest distance in Angstrom (not pm) between the two "
                                                          "fragments; raised to cutoff + 2 A for models with a "
                                                          "longer cutoff")
    #: Z for --mlip-adversary (None: derived from this setting; see domain.py beside this module)
    adversary: FragmentDomain | None = None

    default_tolerance = {"energy": 1e-3, "forces": 1e-3}


def combine(a, b, gap: float):
    """Fragment B placed along +x so that its closest atom is ``gap`` from A's."""
    b = b.copy()
    shift = a.positions[:, 0].max() - b.positions[:, 0].min() + gap
    b.positions += [shift, 0.0, 0.0]
    b.positions[:, 1:] += a.positions[:, 1:].mean(axis=0) - b.positions[:, 1:].mean(axis=0)
    ab = a.copy() + b
    ab.cell = [0, 0, 0]
    ab.pbc = False
    return ab, b


class Dissociation(Check):
    name = "dissociation"
    title = "Dissociation limit and size consistency"
    statement = ("For fragments A and B farther apart than the model's cutoff, E(A+B) = E(A) + E(B) and the "
                 "forces on A are the forces of A alone (no ghost interaction); a dimer at large R has the "
                 "energy of two isolated atoms.")
    rationale = ("Energies of local models are sums of atomic terms with finite range; a dependence on a distant "
                 "fragment means an unphysical long-range leak (wrong reaction and binding energies).")
    procedure = ("Place B at a fixed closest gap from A (default 12 A, at least cutoff + 2 A) in an open box; "
                 "evaluate A+B, A alone and B alone at the same absolute positions; compare energies and forces.")
    threshold = "|E(A+B) - E(A) - E(B)| <= tau_E (1e-3 eV) and max |dF| <= tau_F (1e-3 eV/A)"
    units = {"energy": "eV", "forces": "eV/A"}
    Settings = DissociationSettings

    def probes(self, settings):
        for spec_a, spec_b in settings.pairs:
            a, b = spec_a.build(), spec_b.build()
            a.cell, a.pbc = [0, 0, 0], False
            b.cell, b.pbc = [0, 0, 0], False
            ab, _ = combine(a, b, settings.gap)
            yield Probe(id=f"{spec_a.label()}+{spec_b.label()}", atoms=ab, params={"a": a, "b": b})

    def measure(self, settings, evaluator, probe):
        cutoff = evaluator.model.info.cutoff or 0.0
        gap = max(settings.gap, cutoff + 2.0)
        a = probe.params["a"]
        ab, b_placed = combine(a, probe.params["b"], gap)
        e_ab, e_a, e_b = evaluator.evaluate(ab), evaluator.evaluate(a), evaluator.evaluate(b_placed)
        d_e = abs(e_ab.energy - e_a.energy - e_b.energy)
        f_ref = np.vstack([e_a.forces, e_b.forces])
        d_f = float(np.abs(e_ab.forces - f_ref).max())
        return Measurement(
            violations={"energy": float(d_e), "forces": d_f},
            observables={"E_AB": e_ab.energy, "E_A": e_a.energy, "E_B": e_b.energy, "gap": gap},
            worst_atoms=ab,
        )

    def setting_details(self, settings) -> str:
        return f"{len(settings.pairs)} fragment pair(s), gap >= max({settings.gap:g} A, cutoff + 2 A)"
