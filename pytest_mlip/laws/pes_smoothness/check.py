"""PES smoothness: energies and forces along dimer curves and rigid paths have no jumps or kinks.

How the measures relate to other suites:

- MLIP Arena (homonuclear diatomics) scores each model's own curve with
  reference-free statistics: *force flips* (sign changes of the bond force,
  |F| < 10 meV/A ignored; ideal 1), *energy jump* (the |dE| summed around
  points where the energy slope changes sign), *tortuosity* (total variation
  of E over |E_near - E_min| + |E_far - E_min|; ideal 1) and a mean
  conservation deviation. Those are totals for ranking; ours are local,
  thresholded laws: an ``energy_jump`` is an energy change between
  neighbouring points that the forces at the two points do not explain
  (a step, not a legitimate extremum, so real wells never count), a
  ``flip_force`` is a sign flip of the path force where the energy does not
  turn (a flip *not* at an extremum; Arena's count also counts genuine
  extrema), and we report Arena's flip count and tortuosity as observables.
- OpenKIM's DimerContinuityC1 verification check asks for a C1 dimer curve
  from half r_eq to the cutoff and tests continuity across the cutoff. Our
  ``cutoff_energy`` / ``cutoff_force`` compare E and F just inside and just
  outside the model's declared cutoff (r_c -+ 1e-4 A), and ``curvature_spike``
  (a force change over one interval that its neighbours' do not explain, i.e.
  a second-difference outlier of E'' times the spacing) finds C1 breaks (kinks)
  inside the range. Like KIM we refine: a suspect interval is re-sampled 5x
  finer, twice, and only what survives refinement counts, since a true
  discontinuity keeps its size while a steep but smooth wall shrinks as a
  power of the spacing (~625x per level for curvature_spike).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..base import Check, ContractSettings, Measurement, Probe


class SurfacePath(BaseModel):
    """An adatom moved rigidly at fixed height across a surface cell (top -> hollows -> next top)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    element: str
    facet: Literal["fcc111", "fcc100", "bcc110", "hcp0001"] = "fcc111"
    adatom: str
    height: float = Field(2.0, gt=0.5, le=6.0, description="A above the top layer")
    size: tuple[int, int, int] = (2, 2, 2)


class PesSmoothnessSettings(ContractSettings):
    check: Literal["pes_smoothness"] = "pes_smoothness"
    pairs: list[tuple[str, str]] = Field(default_factory=list, json_schema_extra={"element_symbols": True})
    surfaces: list[SurfacePath] = Field(default_factory=list)
    step: float = Field(0.025, ge=0.001, le=0.2, description="dimer grid spacing (A), 0.001 to 0.2")
    path_step: float = Field(0.1, ge=0.001, le=0.5, description="surface path grid spacing (A), 0.001 to 0.5")
    inner: float = Field(0.8, gt=0.3, le=1.0, description="dimer scan starts at inner x r_eq")
    beyond_cutoff: float = Field(0.3, ge=0.0, le=3.0, description="dimer scan ends this far past the cutoff (A)")
    r_max: float = Field(6.0, gt=1.0, le=15.0, description="scan end (A) for models with no declared cutoff")
    cutoff_delta: float = Field(1e-4, gt=0.0, le=0.05, description="r_c -+ delta brackets the cutoff (A)")
    refine: int = Field(5, ge=2, le=20, description="suspect intervals are re-sampled this many times finer")
    max_refinements: int = Field(16, ge=0, le=100, description="most intervals re-sampled per curve and measure")
    levels: int = Field(2, ge=1, le=4, description="refinement levels: the worst sub-interval is re-sampled again")
    flip_floor: float = Field(0.01, ge=0.0, description="|F| below this (eV/A) is no sign (MLIP Arena's 10 meV/A)")
    energy_margin: float = Field(1e-4, ge=0.0, description="energy noise allowance (eV) when testing for a turn")

    default_tolerance = {"energy_jump": 1e-2, "curvature_spike": 5e-2, "flip_force": 5e-2,
                         "cutoff_energy": 1e-3, "cutoff_force": 5e-3}


# ---------------------------------------------------------------- curve measures (pure functions)

def energy_jumps(s, e, f) -> np.ndarray:
    """Per interval: |E_{k+1} - E_k - (work of F)|, the energy change the forces do not explain (eV).

    The work integrates the cubic through four neighbouring forces (F_{k-1}..F_{k+2};
    one-sided at the two end intervals; error ~ ds^5) on a uniform grid, so a
    steep but smooth wall leaves almost nothing while a step keeps its size.
    """
    ds = np.diff(s)
    work = -0.5 * (f[1:] + f[:-1]) * ds  # trapezoid: only for grids shorter than four points
    if len(f) >= 4:
        work[1:-1] = -ds[1:-1] * (-f[:-3] + 13 * f[1:-2] + 13 * f[2:-1] - f[3:]) / 24
        work[0] = -ds[0] * (9 * f[0] + 19 * f[1] - 5 * f[2] + f[3]) / 24
        work[-1] = -ds[-1] * (f[-4] - 5 * f[-3] + 19 * f[-2] + 9 * f[-1]) / 24
    return np.abs(np.diff(e) - work)


def curvature_spikes(f) -> np.ndarray:
    """Per interval k: |dF_k - dF_k predicted from its neighbours| (eV/A), a second-difference outlier.

    The prediction is the cubic through dF_{k-2}, dF_{k-1}, dF_{k+1}, dF_{k+2}
    (the mean of dF_{k-1} and dF_{k+1} next to the ends; 0 at the end
    intervals). A force step J inside interval k shows as J there; a smooth
    curve leaves ~ ds^4 of the fourth derivative.
    """
    df = np.diff(f)
    out = np.zeros_like(df)
    if len(df) >= 3:
        out[1:-1] = np.abs(df[1:-1] - 0.5 * (df[:-2] + df[2:]))
    if len(df) >= 5:
        out[2:-2] = np.abs(df[2:-2] - (-df[:-4] + 4 * df[1:-3] + 4 * df[3:-1] - df[4:]) / 6)
    return out


def force_flips(s, e, f, floor: float, margin: float):
    """Sign flips of F (|F| < floor ignored): (count, [(s, wrong-way force) of flips where E does not turn])."""
    idx = np.where(np.abs(f) >= floor)[0]
    n, count, spurious = len(e), 0, []
    for a, b in zip(idx[:-1], idx[1:]):
        if np.sign(f[a]) == np.sign(f[b]):
            continue
        count += 1
        lo, hi = max(a - 1, 0), min(b + 1, n - 1)
        inside = e[a:b + 1]
        if f[a] > 0:  # E falls then rises: a minimum must lie in [a, b]
            turns = inside.min() <= min(e[lo], e[hi]) + margin
        else:  # E rises then falls: a maximum
            turns = inside.max() >= max(e[lo], e[hi]) - margin
        if not turns:
            spurious.append((float(0.5 * (s[a] + s[b])), float(min(abs(f[a]), abs(f[b])))))
    return count, spurious


def tortuosity(e) -> float:
    """MLIP Arena's tortuosity: total variation of E over the direct descent and ascent to its minimum."""
    direct = abs(e[0] - e.min()) + abs(e[-1] - e.min())
    return float(np.abs(np.diff(e)).sum() / direct) if direct > 0 else 1.0


# ---------------------------------------------------------------- the check

class PesSmoothness(Check):
    name = "pes_smoothness"
    title = "PES smoothness along dimer curves and rigid paths"
    statement = ("Along a dimer curve (from 0.8 r_eq to past the cutoff) and along a rigid path of an adatom across "
                 "a surface, the energy is continuous and continuously differentiable: no energy steps, no force "
                 "steps (kinks), no force sign flips where the energy does not turn, and E and F continuous "
                 "across the model's cutoff radius.")
    rationale = ("Discontinuities make MD lose energy at every crossing, stall optimisers and NEB, and give spurious "
                 "barriers and phonon artefacts; a cutoff without a smooth envelope is the classic cause. Curves of "
                 "a model's own E and F are enough to see them, with no reference data.")
    procedure = ("Dimers: locate r_eq on a coarse grid, then scan from 0.8 r_eq to r_c + 0.3 A every 0.025 A; "
                 "surfaces: move the adatom at fixed height from a top site along a1 + a2 of the surface cell "
                 "(over both hollows to the next top site) every 0.1 A. Along the path coordinate s, with "
                 "F_s = -dE/ds from the model's own forces: energy_jump = |dE - work of F_s| per interval "
                 "(four-point quadrature); curvature_spike = the force change over an interval minus the cubic "
                 "prediction from its neighbours' (a second-difference outlier); flip_force = the smaller |F_s| "
                 "at a sign flip of F_s that the energy does not follow (no extremum there). The worst interval "
                 "of each measure is re-sampled 5x finer and its worst part 5x finer again (two levels), until "
                 "the worst value is a refined one (at most 16 intervals); refined values count. Dimers also get "
                 "E and F at r_c -+ 1e-4 A (cutoff_energy, cutoff_force: a C1 envelope whose force goes linearly "
                 "to zero, as SevenNet's, leaves only its slope x 1e-4 A there). MLIP Arena's flip count and "
                 "tortuosity are observables. Label-free.")
    threshold = ("energy_jump <= 0.01 eV, curvature_spike <= 0.05 eV/A, flip_force <= 0.05 eV/A, cutoff_energy <= "
                 "1e-3 eV, cutoff_force <= 5e-3 eV/A. On curves that are smooth (sevennet-0's dimers and path, "
                 "diep's dimers) the largest values are 2.4e-3 eV, 0.014 eV/A, 0, 4.5e-7 eV and 2.5e-4 eV/A: each "
                 "tau is >= 3.5x that floor. Hard, exact.")
    units = {"energy_jump": "eV", "curvature_spike": "eV/A", "flip_force": "eV/A", "cutoff_energy": "eV",
             "cutoff_force": "eV/A"}
    Settings = PesSmoothnessSettings

    def probes(self, settings):
        from ase import Atoms, build
        from ase.data import atomic_numbers, covalent_radii

        for a, b in settings.pairs:
            rcov = covalent_radii[atomic_numbers[a]] + covalent_radii[atomic_numbers[b]]
            atoms = Atoms([a, b], positions=[[0, 0, 0], [0, 0, rcov]])
            atoms.center(vacuum=10.0)
            yield Probe(id=f"{a}-{b}", atoms=atoms, params={"kind": "dimer", "rcov": rcov})
        for p in settings.surfaces:
            slab = getattr(build, p.facet)(p.element, size=p.size, vacuum=10.0)
            top = slab.positions[np.argmax(slab.positions[:, 2])].copy()
            atoms = slab + Atoms(p.adatom, positions=[top + [0, 0, p.height]])
            a1 = slab.cell[0] / p.size[0]
            a2 = slab.cell[1] / p.size[1]
            vec = a1 + a2
            vec[2] = 0.0
            yield Probe(id=f"{p.adatom}/{p.element}({p.facet[3:]})-path@{p.height:g}A", atoms=atoms,
                        params={"kind": "path", "start": top + [0, 0, p.height], "vector": vec})

    # --- geometry along the path -----------------------------------------------------------------
    @staticmethod
    def _place(probe, s: float):
        atoms = probe.atoms.copy()
        if probe.params["kind"] == "dimer":
            atoms.positions[1] = atoms.positions[0] + [0, 0, s]
        else:
            vec = probe.params["vector"]
            atoms.positions[-1] = probe.params["start"] + vec / np.linalg.norm(vec) * s
        return atoms

    def _direction(self, probe):
        if probe.params["kind"] == "dimer":
            return np.array([0.0, 0.0, 1.0])
        vec = probe.params["vector"]
        return vec / np.linalg.norm(vec)

    def _point(self, evaluator, probe, s: float):
        """(E, F_s = -dE/ds) at path coordinate s."""
        ev = evaluator.evaluate(self._place(probe, float(s)))
        return ev.energy, float(ev.forces[-1] @ self._direction(probe))

    def _curve(self, evaluator, probe, grid):
        pts = [self._point(evaluator, probe, s) for s in grid]
        return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])

    # --- measurement --------------------------------------------------------------------------
    def measure(self, settings, evaluator, probe):
        obs: dict = {}
        if probe.params["kind"] == "dimer":
            rcov = probe.params["rcov"]
            coarse = np.round(np.arange(0.5 * rcov, 1.6 * rcov + 1e-9, 0.1), 6)
            e_coarse, _ = self._curve(evaluator, probe, coarse)
            r_eq = float(coarse[int(np.argmin(e_coarse))])
            cutoff = evaluator.model.info.cutoff
            r_end = (cutoff if cutoff else settings.r_max) + settings.beyond_cutoff
            grid = np.round(np.arange(settings.inner * r_eq, r_end + 1e-9, settings.step), 6)
            obs.update(r_eq=r_eq, cutoff=cutoff)
            step = settings.step
        else:
            length = float(np.linalg.norm(probe.params["vector"]))
            grid = np.round(np.arange(0.0, length + 1e-9, settings.path_step), 6)
            step = settings.path_step
            cutoff = None
        e, f = self._curve(evaluator, probe, grid)

        jumps = energy_jumps(grid, e, f)
        spikes = curvature_spikes(f)
        tau = settings.tolerance
        refined_e, done_e = self._refine(settings, evaluator, probe, grid, step, jumps, energy_jumps,
                                         0.3 * tau["energy_jump"])
        refined_c, done_c = self._refine(settings, evaluator, probe, grid, step, spikes, None,
                                         0.3 * tau["curvature_spike"])
        count, spurious = force_flips(grid, e, f, settings.flip_floor, settings.energy_margin)
        k_e, k_c = int(np.argmax(refined_e)), int(np.argmax(refined_c))
        violations = {
            "energy_jump": float(refined_e[k_e]),
            "curvature_spike": float(refined_c[k_c]),
            "flip_force": max((w for _, w in spurious), default=0.0),
        }
        obs.update(
            s_energy_jump=float(0.5 * (grid[k_e] + grid[k_e + 1])),
            s_curvature_spike=float(0.5 * (grid[k_c] + grid[k_c + 1])),
            coarse_energy_jump=float(jumps.max()), coarse_curvature_spike=float(spikes.max()),
            # False: the worst value is a coarse one, an upper bound left unrefined (below 0.3 tau or cap reached)
            energy_jump_refined=k_e in done_e, curvature_spike_refined=k_c in done_c,
            refinements=len(done_e) + len(done_c),
            force_flips=count, spurious_flips=[s for s, _ in spurious],
            points=len(grid), spacing=step,
            curve_s=[float(x) for x in grid], curve_E=[float(x) for x in e], curve_F=[float(x) for x in f],
        )
        where = {"energy_jump": grid[k_e], "curvature_spike": grid[k_c],
                 "flip_force": spurious[0][0] if spurious else grid[0]}
        if cutoff:
            d = settings.cutoff_delta
            e_in, f_in = self._point(evaluator, probe, cutoff - d)
            e_out, f_out = self._point(evaluator, probe, cutoff + d)
            violations["cutoff_energy"] = float(abs(e_out - e_in + 0.5 * (f_in + f_out) * 2 * d))
            violations["cutoff_force"] = float(abs(f_out - f_in))
            where["cutoff_energy"] = where["cutoff_force"] = cutoff - d
            obs.update(E_inside=e_in, E_outside=e_out, F_inside=f_in, F_outside=f_out)
        worst_key = max(violations, key=lambda key: violations[key] / tau[key])
        if probe.params["kind"] == "dimer":
            obs["tortuosity"] = tortuosity(e)  # meaningless on a periodic path (equal ends)
        return Measurement(violations=violations, observables=obs,
                           worst_atoms=self._place(probe, float(where[worst_key])))

    def _refine(self, settings, evaluator, probe, grid, step, values, measure, floor):
        """Re-sample the worst interval ``refine`` x finer, again, until the worst value is a refined one.

        Coarse values bound the refined ones from above (a smooth curve's
        residual shrinks with the spacing, a discontinuity keeps its size), so
        intervals below ``floor`` are never worth a look.
        """
        refined, done = values.copy(), set()
        for _ in range(settings.max_refinements):
            k = int(np.argmax(refined))
            if k in done or refined[k] < floor:
                break
            refined[k] = self._resolve(settings, evaluator, probe, grid[k], step, measure, floor, settings.levels)
            done.add(k)
        return refined, done

    def _resolve(self, settings, evaluator, probe, start, step, measure, floor, levels):
        """The measure on [start, start + step] re-sampled ``refine`` x finer, recursing into its worst part."""
        n = settings.refine
        # two extra points each side for the predictors; rounded so neighbouring intervals share calls
        sub = np.round(start + step * np.arange(-2, n + 3) / n, 7)
        e_sub, f_sub = self._curve(evaluator, probe, sub)
        fine = (measure(sub, e_sub, f_sub) if measure is not None else curvature_spikes(f_sub))[2:n + 2]
        j = int(np.argmax(fine))
        if fine[j] < floor or levels <= 1:
            return float(fine[j])
        return self._resolve(settings, evaluator, probe, sub[j + 2], step / n, measure, floor, levels - 1)

    def setting_details(self, settings) -> str:
        return (f"{len(settings.pairs)} dimer(s) from {settings.inner:g} r_eq to r_c + {settings.beyond_cutoff:g} A "
                f"every {settings.step:g} A, {len(settings.surfaces)} surface path(s) every {settings.path_step:g} A; "
                f"suspect intervals refined x{settings.refine}, {settings.levels} level(s), up to "
                f"{settings.max_refinements} per measure; cutoff bracket +-{settings.cutoff_delta:g} A")
