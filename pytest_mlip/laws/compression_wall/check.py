"""Compression wall: a crystal's energy and pressure rise monotonically under uniform compression."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..base import Check, ContractSettings, Measurement, Probe
from ..repulsive_wall.check import wall_violation
from .domain import ScaleDomain

EV_PER_A3_TO_GPA = 160.21766208
PROTOTYPES = ("sc", "bcc", "fcc", "hcp", "diamond")


class Crystal(BaseModel):
    """One element in one prototype lattice (primitive cell: 1 atom, 2 for hcp and diamond)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    element: str
    structure: Literal["sc", "bcc", "fcc", "hcp", "diamond"]


class CompressionWallSettings(ContractSettings):
    check: Literal["compression_wall"] = "compression_wall"
    crystals: list[Crystal] = Field(default_factory=list)
    search: tuple[float, float] = Field((0.6, 1.6), description="equilibrium searched in this range x reference size")
    search_step: float = Field(0.1, ge=0.001, le=0.2, description="scan step of the compression scale, 0.001 to 0.2")

    @field_validator("search")
    @classmethod
    def _ordered(cls, v):
        if not (0.0 < v[0] < v[1]):
            raise ValueError(f"search = {list(v)} must be [low, high] with 0 < low < high (fractions of the reference "
                             "size, e.g. [0.6, 1.6])")
        return v
    scale_min: float = Field(0.4, gt=0.05, lt=1.0, description="innermost linear size / equilibrium size")
    scale_max: float = Field(3.0, gt=1.0, le=5.0, description="outermost linear size / equilibrium size")
    inward_points: int = Field(12, ge=4, le=200, description="points from scale_min to the equilibrium")
    outward_points: int = Field(4, ge=0, le=100, description="points from the equilibrium to scale_max")

    #: Z for --mlip-adversary (None: the contract's own scale range; see domain.py beside this module)
    adversary: ScaleDomain | None = None

    default_tolerance = {"drop": 1e-2, "shortfall": 1e-2}


def nearest_neighbour_reference(element: str) -> float:
    """Nearest-neighbour distance (A) of the element's ASE reference crystal, else twice its covalent radius."""
    from ase.data import atomic_numbers, covalent_radii, reference_states

    z = atomic_numbers[element]
    ref = reference_states[z] or {}
    a = ref.get("a")
    sym = ref.get("symmetry")
    if a is not None:
        if sym == "fcc":
            return a / np.sqrt(2)
        if sym == "bcc":
            return a * np.sqrt(3) / 2
        if sym in ("sc", "hcp"):
            return a
        if sym == "diamond":
            return a * np.sqrt(3) / 4
    return 2.0 * float(covalent_radii[z])


def prototype(element: str, structure: str, nn: float):
    """Primitive cell of ``structure`` with nearest-neighbour distance ``nn`` (ideal c/a for hcp)."""
    from ase.build import bulk

    if structure == "fcc":
        return bulk(element, "fcc", a=nn * np.sqrt(2))
    if structure == "bcc":
        return bulk(element, "bcc", a=2 * nn / np.sqrt(3))
    if structure == "sc":
        return bulk(element, "sc", a=nn)
    if structure == "hcp":
        return bulk(element, "hcp", a=nn, c=nn * np.sqrt(8 / 3))
    if structure == "diamond":
        return bulk(element, "diamond", a=4 * nn / np.sqrt(3))
    raise ValueError(structure)


def local_minimum(grid, e, start: float) -> int:
    """Index of the local minimum reached walking downhill on ``e`` from the grid point nearest ``start``.

    The equilibrium is the minimum nearest the reference size, not the lowest
    energy of the window: a collapsed dense state may lie lower (that is what
    the inward scan must then find, not take as the equilibrium).
    """
    k = int(np.argmin(np.abs(np.asarray(grid) - start)))
    while True:
        nxt = min((j for j in (k - 1, k + 1) if 0 <= j < len(e)), key=lambda j: e[j])
        if e[nxt] >= e[k]:
            return k
        k = nxt


def scaled(atoms, s: float):
    new = atoms.copy()
    new.set_cell(atoms.cell.array * s, scale_atoms=True)
    return new


class CompressionWall(Check):
    name = "compression_wall"
    title = "Compression wall for crystals"
    statement = ("Compressing a crystal uniformly from the model's own equilibrium size down to scale_min of it "
                 "(default 0.4, i.e. 16x the density), the energy per atom rises monotonically; so does the "
                 "pressure.")
    rationale = ("Squeezing atoms together costs Pauli and nuclear repulsion at every density. Models trained near "
                 "equilibrium have no data at strong compression; an energy that turns down there lets MD under "
                 "shock, high temperature or high pressure collapse a crystal into a fictitious dense phase.")
    procedure = ("Primitive sc, bcc, fcc, hcp (ideal c/a) and diamond cells of each listed element are built at the "
                 "nearest-neighbour distance of the element's ASE reference crystal. The model's own equilibrium "
                 "is the local energy minimum reached walking downhill from that size on a grid of 0.6-1.6 x it "
                 "(step 0.1), refined by a bounded scalar search (a deeper collapsed minimum in the window is "
                 "flagged, never taken as the equilibrium). From there the linear size is scanned inward to "
                 "scale_min = 0.4 x equilibrium (12 points) and outward to 3.0 x (4 points). The violation is the "
                 "largest fall of E/atom going inward below the highest energy met further out (eV/atom), and the "
                 "shortfall of E/atom at scale_min below E/atom at 3.0 x (a flat or capped wall never falls, yet "
                 "is no wall: at 16x the density a crystal lies far above its nearly free atoms); the "
                 "largest fall of the pressure going inward (GPa, from the model's stress, or -dE/dV where it has "
                 "none) is reported alongside. Label-free. Cost grows with the neighbour count (s^-3, s^-6 for "
                 "three-body terms): at 0.25 x a one-atom fcc cell exhausted 23 GB of memory in CHGNet and DIEP, "
                 "so the default stops at 0.4; set scale_min lower in a contract file to go deeper.")
    threshold = ("drop <= tau (0.01 eV/atom) and shortfall <= tau (0.01 eV/atom), as the dimer repulsive wall. "
                 "Float32 rounding (~6e-8 relative) stays below 1e-3 eV/atom up to |E| ~ 1e4 eV/atom; beyond that neighbouring grid energies differ by far "
                 "more than tau, so rounding cannot fake a drop. Pressure non-monotonicity is reported, not gated. "
                 "Hard, exact.")
    units = {"drop": "eV/atom", "shortfall": "eV/atom"}
    Settings = CompressionWallSettings
    needs_periodic = True

    def probes(self, settings):
        for c in settings.crystals:
            nn = nearest_neighbour_reference(c.element)
            yield Probe(id=f"{c.element}-{c.structure}", atoms=prototype(c.element, c.structure, nn),
                        params={"nn_ref": nn})

    def measure(self, settings, evaluator, probe):
        ref = probe.atoms
        n = len(ref)
        lo, hi = settings.search
        search = np.round(np.arange(lo, hi + 1e-9, settings.search_step), 6)
        e_search = np.array([evaluator.energy(scaled(ref, s)) for s in search]) / n
        k = local_minimum(search, e_search, start=1.0)
        s_eq = float(search[k])
        if 0 < k < len(search) - 1:  # refine between the neighbours of the grid minimum
            from scipy.optimize import minimize_scalar

            res = minimize_scalar(lambda s: evaluator.energy(scaled(ref, round(float(s), 6))) / n,
                                  bounds=(search[k - 1], search[k + 1]), method="bounded", options={"xatol": 1e-3})
            if res.fun < e_search[k]:
                s_eq = round(float(res.x), 6)
        inward = np.round(s_eq * np.linspace(settings.scale_min, 1.0, settings.inward_points), 6)
        outward = np.round(s_eq * np.linspace(1.0, settings.scale_max, settings.outward_points + 1)[1:], 6)
        grid = np.concatenate([inward, outward])
        evals = [evaluator.evaluate(scaled(ref, s)) for s in grid]
        e = np.array([ev.energy for ev in evals]) / n
        i_eq = settings.inward_points - 1  # the refined search minimum: a collapse may lie lower, inward
        drop, i_worst = wall_violation(grid, e, i_eq)
        shortfall = max(0.0, float(e[-1] - e[0]))  # the innermost (scale_min) below the outermost (3.0 x)
        tau = settings.tolerance
        if shortfall / tau["shortfall"] > drop / tau["drop"]:  # the worst configuration is the innermost one
            i_worst = 0

        volume = np.array([ref.get_volume() * s**3 / n for s in grid])
        if all(ev.stress is not None for ev in evals):
            p = np.array([-np.mean(ev.stress[:3]) for ev in evals]) * EV_PER_A3_TO_GPA
            p_source = "model stress"
        else:
            p = -np.gradient(e, volume) * EV_PER_A3_TO_GPA
            p_source = "-dE/dV of the scan"
        p_drop, i_p = wall_violation(grid, p, i_eq)  # the same walk: P must not fall going inward
        obs = {
            "eq_over_reference": float(grid[i_eq]),
            "nn_eq": float(probe.params["nn_ref"] * grid[i_eq]),
            "E_eq": float(e[i_eq]),
            "s_worst": float(grid[i_worst] / s_eq),
            "E_worst": float(e[i_worst]),
            "E_inner": float(e[0]),
            "eq_at_search_edge": bool(k in (0, len(search) - 1)),
            "deeper_minimum_in_search": bool(e_search.min() < e_search[k] - settings.tolerance["drop"]),
            "pressure_drop_GPa": float(p_drop),
            "s_pressure_drop": float(grid[i_p] / s_eq),
            "pressure_source": p_source,
            "curve_scale": [float(x / s_eq) for x in grid],
            "curve_E": [float(x) for x in e],
            "curve_P_GPa": [float(x) for x in p],
        }
        return Measurement(violations={"drop": drop, "shortfall": shortfall}, observables=obs,
                           worst_atoms=scaled(ref, float(grid[i_worst])))

    def setting_details(self, settings) -> str:
        return (f"{len(settings.crystals)} crystal(s); equilibrium searched over {settings.search[0]:g}-"
                f"{settings.search[1]:g} x reference; scan {settings.scale_min:g}-{settings.scale_max:g} x equilibrium "
                f"({settings.inward_points} inward, {settings.outward_points} outward points)")

