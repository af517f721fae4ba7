"""Dimer mid-range tail: how much of its own well depth a model still binds well past r_eq.

Soft and disagreement-based. There is no exact law that says a dimer must be
unbound at 4.5 A; what the contract can say label-free is how a model's tail
compares with its committee's. A check sees one model at a time, so each
verdict gives the tail fraction itself as the violation against a stated
tolerance, and the fraction is kept in the observables: the run summary's
committee spread (v/tau of every model at the target's worst element) is the
disagreement that the contract is really about. It never fails a run.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ..base import Check, ContractSettings, Measurement, Probe


class DimerTailSettings(ContractSettings):
    check: Literal["dimer_tail"] = "dimer_tail"
    hard: bool = False
    basis: Literal["exact", "disagreement"] = "disagreement"
    bases: ClassVar[tuple[str, ...]] = ("exact", "disagreement")
    elements: list[str] = Field(default_factory=list, description="homonuclear dimers",
                                json_schema_extra={"element_symbols": True})
    distance: float = Field(4.5, gt=1.0, le=12.0, description="tail distance (A); must lie inside the cutoff")
    window: tuple[float, float] = Field((0.5, 1.5), description="r_eq searched in this range x 2 R_cov")
    grid_step: float = Field(0.1, ge=0.001, le=0.5, description="coarse r_eq grid (A, 0.001 to 0.5), refined by a bounded search")

    default_tolerance = {"tail": 0.1}


class DimerTail(Check):
    name = "dimer_tail"
    title = "Dimer mid-range tail (soft, committee disagreement)"
    statement = ("At a stated distance inside the cutoff (default 4.5 A), well beyond r_eq, a homonuclear dimer "
                 "holds only a small fraction of the model's own well depth: f = (E(d) - E_inf) / (E(r_eq) - E_inf), "
                 "with E_inf the energy of two isolated atoms.")
    rationale = ("MLIP Detective found SevenNet-Omni keeping 17 % (Sb2), 11 % (Mo2) and 9 % (W2) of its well depth "
                 "at 4.5 A, while four committee models kept at most 4 %: a spurious mid-range attraction that "
                 "aggregate diatomic scores miss and that distorts gas-phase association (0.73 eV for Sb2, about "
                 "7 kT at 1200 K). Real dimers can have long tails too (Cr2 is notoriously odd), so this is a "
                 "disagreement signal, not a law.")
    procedure = ("For each element: E_inf = 2 E(isolated atom); r_eq = the model's own minimum, located on a grid "
                 "over 0.5-1.5 x 2 R_cov and refined by a bounded scalar search; E at the tail distance (and at "
                 "d - 0.5 A for the tail's decay length). Violation = |f| (a repulsive tail is just as anomalous); the "
                 "signed f and the well depth are observables. Skipped when the tail distance is not inside the "
                 "model's cutoff. Label-free.")
    threshold = ("|f| <= tau (0.1): 2.5x the largest committee tail (4 %) in the source study. Soft and "
                 "disagreement-based: the committee spread in the summary, not tau, is the evidence; never gating. "
                 "Shipped models reach 0.16 (diep, Cr2), 0.11 (sevennet-0, Cr2), 0.095 (chgnet-0.3.0, Sb2).")
    units = {"tail": "1"}
    Settings = DimerTailSettings

    def probes(self, settings):
        from ase import Atoms
        from ase.data import atomic_numbers, covalent_radii

        for el in settings.elements:
            rcov = 2 * float(covalent_radii[atomic_numbers[el]])
            atoms = Atoms([el, el], positions=[[0, 0, 0], [0, 0, rcov]])
            atoms.center(vacuum=10.0)
            yield Probe(id=f"{el}2@{settings.distance:g}A", atoms=atoms, params={"element": el, "rcov": rcov})

    def applicable(self, settings, model_info):
        if model_info.cutoff is not None and settings.distance >= model_info.cutoff:
            return (f"tail distance {settings.distance:g} A is not inside {model_info.name}'s cutoff "
                    f"({model_info.cutoff:g} A): nothing to measure there")
        return None

    @staticmethod
    def _dimer(probe, r: float):
        atoms = probe.atoms.copy()
        atoms.positions[1] = atoms.positions[0] + [0, 0, r]
        return atoms

    def measure(self, settings, evaluator, probe):
        from ase import Atoms
        from scipy.optimize import minimize_scalar

        el, rcov = probe.params["element"], probe.params["rcov"]
        single = Atoms(el, positions=[[0, 0, 0]])
        single.center(vacuum=10.0)
        e_inf = 2.0 * evaluator.energy(single)

        def energy(r):
            return evaluator.energy(self._dimer(probe, round(float(r), 6)))

        lo, hi = settings.window[0] * rcov, min(settings.window[1] * rcov, settings.distance - 0.2)
        grid = np.arange(lo, hi + 1e-9, settings.grid_step)
        e_grid = np.array([energy(r) for r in grid])
        curve = {round(float(r), 6): float(x - e_inf) for r, x in zip(grid, e_grid)}
        k = int(np.argmin(e_grid))
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        r_eq, e_eq = float(grid[k]), float(e_grid[k])
        if b > a:
            res = minimize_scalar(energy, bounds=(a, b), method="bounded", options={"xatol": 1e-3})
            if res.fun < e_eq:
                r_eq, e_eq = float(res.x), float(res.fun)
        d = settings.distance
        e_tail = energy(d)
        depth = e_eq - e_inf  # negative when bound
        curve[round(float(d), 6)] = float(e_tail - e_inf)
        obs = {"r_eq": r_eq, "well_depth": float(-depth), "E_tail_minus_inf": float(e_tail - e_inf),
               "distance": d, "cutoff": evaluator.model.info.cutoff,
               "r_eq_at_window_edge": bool(k in (0, len(grid) - 1))}
        obs["curve_r"] = sorted(curve)  # the model's curve E(r) - E_inf as evaluated (the report draws it)
        obs["curve_E"] = [curve[r] for r in obs["curve_r"]]
        if depth >= -1e-3:
            obs.update(tail_fraction=None, unbound=True)
            return Measurement(violations={"tail": 0.0}, observables=obs, worst_atoms=self._dimer(probe, d))
        f = (e_tail - e_inf) / depth
        near = energy(d - 0.5) - e_inf  # the tail's decay length over [d - 0.5, d] (d + 0.5 may be the cutoff)
        far = e_tail - e_inf
        curve[round(float(d - 0.5), 6)] = float(near)
        obs["curve_r"] = sorted(curve)
        obs["curve_E"] = [curve[r] for r in obs["curve_r"]]
        if near * far > 0 and abs(near) > abs(far) > 0:
            obs["decay_length"] = float(0.5 / np.log(near / far))
        obs.update(tail_fraction=float(f), unbound=False)
        return Measurement(violations={"tail": float(abs(f))}, observables=obs, worst_atoms=self._dimer(probe, d))

    def setting_details(self, settings) -> str:
        return (f"{len(settings.elements)} homonuclear dimer(s), tail at {settings.distance:g} A, "
                f"E_inf = 2 isolated atoms; soft, disagreement-based (compare the committee spread)")
