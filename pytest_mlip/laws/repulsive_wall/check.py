"""Repulsive wall: energy rises monotonically as atoms are pushed together."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .domain import DimerDomain
from ..base import Check, ContractSettings, Measurement, Probe


class SurfaceApproach(BaseModel):
    """One atom approaching a top site of a close-packed surface along its normal."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    element: str
    facet: Literal["fcc111", "hcp0001", "bcc110"] = "fcc111"
    adatom: str
    size: tuple[int, int, int] = (2, 2, 3)


class RepulsiveWallSettings(ContractSettings):
    check: Literal["repulsive_wall"] = "repulsive_wall"
    pairs: list[tuple[str, str]] = Field(default_factory=list, json_schema_extra={"element_symbols": True})
    surfaces: list[SurfaceApproach] = Field(default_factory=list)
    r_inner: float = Field(0.3, ge=0.1, le=3.0, description="innermost distance in Angstrom (not pm), 0.1 to 3, "
                                                         "capped at half the model's r_eq")
    window: tuple[float, float] = Field((0.5, 1.75), description="r_eq is searched in this range x (R_i+R_j)")
    step: float = Field(0.05, ge=0.001, le=0.5, description="grid spacing in Angstrom (not pm), 0.001 to 0.5")
    #: Z for --mlip-adversary (None: derived from this setting; see domain.py beside this module)
    adversary: DimerDomain | None = None

    default_tolerance = {"drop": 0.01, "shortfall": 0.01}


def _scan_grid(settings, rcov: float) -> np.ndarray:
    hi = settings.window[1] * rcov
    return np.round(np.arange(settings.r_inner, hi + 1e-9, settings.step), 6)


def wall_violation(r: np.ndarray, e: np.ndarray, r_eq_index: int) -> tuple[float, int]:
    """Largest fall in energy going inward from r_eq; returns (drop, index where it ends).

    Going from r_eq towards r -> 0 the energy must not decrease: the drop at a
    point is the highest energy met further out (up to r_eq) minus its energy.
    """
    worst, worst_i, running = 0.0, r_eq_index, e[r_eq_index]
    for i in range(r_eq_index - 1, -1, -1):
        running = max(running, e[i + 1])
        drop = running - e[i]
        if drop > worst:
            worst, worst_i = drop, i
    return float(worst), int(worst_i)


class RepulsiveWall(Check):
    name = "repulsive_wall"
    title = "Repulsive wall at short range"
    statement = ("Going inward from the equilibrium distance of a dimer (or of an atom above a close-packed "
                 "surface), the energy rises monotonically down to an inner distance of at most half r_eq.")
    rationale = ("Pauli and nuclear repulsion make compressed bonds costly. An MLIP trained on near-equilibrium "
                 "data has no data there; if the energy falls instead, MD and relaxations collapse atoms together.")
    procedure = ("Scan the separation on a uniform grid from r_inner to 1.75 (R_i+R_j) (covalent radii); take r_eq "
                 "as the model's lowest energy in the bonding window; walk inward from r_eq and record the largest "
                 "fall below the highest energy met further out; the shortfall is how far the innermost energy "
                 "(at most half r_eq) lies below the energy at the outer end (a flat or capped wall: no fall, and "
                 "no wall either). "
                 "Label-free: only the model's own energies.")
    threshold = ("drop <= tau_drop (default 0.01 eV); shortfall <= tau_shortfall (default 0.01 eV): a wall that "
                 "stops rising (a plateau) must still have climbed, at the innermost distance, above the energy at "
                 "the scan's outer end; also reported: whether E falls below E(r_eq) inside r_eq.")
    units = {"drop": "eV", "shortfall": "eV"}
    Settings = RepulsiveWallSettings

    def probes(self, settings):
        from ase import Atoms
        from ase.data import atomic_numbers, covalent_radii

        for a, b in settings.pairs:
            rcov = covalent_radii[atomic_numbers[a]] + covalent_radii[atomic_numbers[b]]
            atoms = Atoms([a, b], positions=[[0, 0, 0], [0, 0, rcov]])
            atoms.center(vacuum=10.0)
            yield Probe(id=f"{a}-{b}", atoms=atoms, params={"rcov": rcov, "kind": "dimer"})
        for s in settings.surfaces:
            from ase import build

            slab = getattr(build, s.facet)(s.element, size=s.size, vacuum=12.0)
            rcov = covalent_radii[atomic_numbers[s.element]] + covalent_radii[atomic_numbers[s.adatom]]
            top = slab.positions[slab.positions[:, 2].argmax()].copy()
            atoms = slab + Atoms(s.adatom, positions=[top + [0, 0, rcov]])
            yield Probe(id=f"{s.adatom}/{s.element}({s.facet[3:]})-top", atoms=atoms,
                        params={"rcov": rcov, "kind": "surface", "anchor": top})

    def measure(self, settings, evaluator, probe):
        rcov = probe.params["rcov"]
        r = _scan_grid(settings, rcov)
        configs = [self._place(probe, d) for d in r]
        e = np.array([evaluator.energy(c) for c in configs])
        lo = settings.window[0] * rcov
        window = np.where(r >= lo)[0]
        i_eq = int(window[np.argmin(e[window])])
        r_eq = float(r[i_eq])
        # the inner distance must be at most half of r_eq: stop the check there if needed
        inner_ok = r <= 0.5 * r_eq + 1e-9
        if not inner_ok.any():
            r_extra = np.round(np.arange(0.5 * r_eq, r[0], -settings.step)[::-1], 6)
            configs = [self._place(probe, d) for d in r_extra] + configs
            e = np.concatenate([[evaluator.energy(c) for c in configs[: len(r_extra)]], e])
            r = np.concatenate([r_extra, r])
            i_eq += len(r_extra)
        drop, i_worst = wall_violation(r, e, i_eq)
        # at most half r_eq, Pauli and nuclear repulsion put any real pair far above its stretched bond (H2 at
        # 0.3 A lies ~12 eV above H2 at 1.09 A); a plateau or cap below that is no wall, though it never falls
        shortfall = max(0.0, float(e[-1] - e[0]))
        tau = settings.tolerance
        if shortfall / tau["shortfall"] > drop / tau["drop"]:  # the worst configuration is the innermost one
            i_worst = 0
        inner = e[:i_eq]
        below = bool(inner.size and inner.min() < e[i_eq])
        obs = {
            "r_eq": r_eq,
            "E_eq": float(e[i_eq]),
            "r_worst": float(r[i_worst]),
            "E_worst": float(e[i_worst]),
            "E_inner": float(e[0]),
            "r_inner": float(r[0]),
            "falls_below_minimum": below,
            "curve_r": [float(x) for x in r],
            "curve_E": [float(x) for x in e],
        }
        return Measurement(violations={"drop": drop, "shortfall": shortfall}, observables=obs,
                           worst_atoms=configs[i_worst])

    @staticmethod
    def _place(probe: Probe, d: float):
        atoms = probe.atoms.copy()
        if probe.params["kind"] == "dimer":
            atoms.positions[1] = atoms.positions[0] + [0, 0, d]
        else:
            atoms.positions[-1] = probe.params["anchor"] + [0, 0, d]
        return atoms

    def setting_details(self, settings) -> str:
        return (f"{len(settings.pairs)} dimer(s), {len(settings.surfaces)} surface approach(es); "
                f"grid {settings.r_inner:g} A to {settings.window[1]:g}(R_i+R_j) step {settings.step:g} A")
