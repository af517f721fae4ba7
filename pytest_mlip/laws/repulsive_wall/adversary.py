"""The repulsive wall's adversary objective: dimer (and surface-approach) pairs r_in < r_out <= r_eq."""

from __future__ import annotations

import math

import numpy as np

from ...adversary.objectives import Objective, _supported, _torch, model_error_note, register
from ...adversary.problem import Config, InwardProblem, direction, tensor
from ...errors import ModelEvaluationError
from .domain import DimerDomain

class DimerProblem(InwardProblem):
    """x = (r_in, gap, theta, phi): dimers at r_in and r_out = r_in + gap <= r_eq along one direction."""

    names = ("r_in", "gap", "theta", "phi")
    roles = ("inner", "outer")
    energy_only = True

    def __init__(self, probe, r_lo, r_eq, min_sep, orientation, tolerance, seeds, label):
        self.label = label
        self.atoms = probe.atoms.copy()
        self.r_eq = float(r_eq)
        hi_theta, hi_phi = (math.pi, 2 * math.pi) if orientation else (0.0, 0.0)
        super().__init__([r_lo, min_sep, 0.0, 0.0], [r_eq - min_sep, r_eq - r_lo, hi_theta, hi_phi],
                         tolerance, seeds)

    def sample(self, rng):
        x = super().sample(rng)
        if self.span[2] > 0:  # uniform on the sphere, not in theta
            x[2] = math.acos(rng.uniform(-1.0, 1.0))
        return self.repair(x)

    outer = ("r_out", "r_eq", " A")

    @property
    def limit(self):
        return self.r_eq

    def configs(self, x):
        torch = _torch()
        base = tensor(self.atoms.positions)
        n = direction(x[2], x[3])
        cell = tensor(self.atoms.cell.array)
        out = []
        for r in (x[0], x[0] + x[1]):
            pos = torch.stack([base[0], base[0] + r * n])
            out.append(Config(self.atoms.numbers, pos, cell, tuple(bool(p) for p in self.atoms.pbc)))
        return out

    def violations(self, outs, x):
        return {"drop": outs[1].energy - outs[0].energy}

    def parameters(self, x):
        p = super().parameters(x)
        p["r_out"] = float(x[0] + x[1])
        p["r_eq"] = self.r_eq
        return p

    def repro(self, x):
        return "viol = {'drop': out[1].energy - out[0].energy}  # E(r_out) - E(r_in), r_in < r_out <= r_eq"

    def kept_setting(self, settings, x):
        """The check's scan grid through r_in and r_out (steps 0.01-0.05 A, r_inner <= 1 A), with only this
        pair or surface. The check scans along its own axis (z): a finding elsewhere is kept only if the
        kept protocol reproduces it (the runner verifies)."""
        r_in, gap = float(x[0]), float(x[1])
        m = max(1, math.ceil(gap / 0.05 - 1e-9))
        step = gap / m
        if step < 0.01:
            return f"r_out - r_in = {gap:.3g} A, below the check's smallest grid step (0.01 A)"
        k = max(0, math.ceil((r_in - 1.0) / step - 1e-9))
        return {"r_inner": r_in - k * step, "step": step, **self._unit(settings)}

    def _unit(self, settings):
        a, b = self.atoms.get_chemical_symbols()
        return {"pairs": [(a, b)], "surfaces": []}


class SurfaceApproachProblem(DimerProblem):
    """x = (h_in, gap): the adatom at two heights above the contract's top site, h_out <= h_eq."""

    names = ("h_in", "gap", "theta", "phi")

    def __init__(self, probe, h_lo, h_eq, min_sep, tolerance, seeds, label):
        self.anchor = np.asarray(probe.params["anchor"], dtype=float)
        super().__init__(probe, h_lo, h_eq, min_sep, False, tolerance, seeds, label)

    def configs(self, x):
        torch = _torch()
        base = tensor(self.atoms.positions)
        anchor = tensor(self.anchor)
        cell = tensor(self.atoms.cell.array)
        out = []
        for h in (x[0], x[0] + x[1]):
            top = anchor + torch.stack([torch.zeros((), dtype=torch.float64)] * 2 + [h])
            pos = torch.cat([base[:-1], top.reshape(1, 3)])
            out.append(Config(self.atoms.numbers, pos, cell, tuple(bool(p) for p in self.atoms.pbc)))
        return out

    def parameters(self, x):
        return {"h_in": float(x[0]), "h_out": float(x[0] + x[1]), "h_eq": self.r_eq}

    def _unit(self, settings):
        from ...laws import CHECKS

        ids = [p.id for p in CHECKS[settings.check]().probes(settings.model_copy(update={"pairs": []}))]
        return {"pairs": [], "surfaces": [settings.surfaces[ids.index(self.label)]]}


def _wall_seeds(obs):
    """Points of the sampled scan (free: already computed): its worst pair and every grid interval inside r_eq."""
    r, e = np.asarray(obs["curve_r"]), np.asarray(obs["curve_E"])
    i_eq = int(np.argmin(np.abs(r - obs["r_eq"])))
    seeds = []
    i_worst = int(np.argmin(np.abs(r - obs["r_worst"])))
    if i_worst < i_eq:
        j = i_worst + 1 + int(np.argmax(e[i_worst + 1: i_eq + 1]))
        seeds.append((r[i_worst], r[j] - r[i_worst]))
    seeds += [(r[i], r[i + 1] - r[i]) for i in range(i_eq)]
    return seeds


@register
class RepulsiveWallObjective(Objective):
    check = "repulsive_wall"
    Domain = DimerDomain

    def problems(self, settings, evaluator):
        from ...laws import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        tol = {"drop": settings.tolerance["drop"]}
        pairs = [tuple(p) for p in (dom.pairs if dom.pairs is not None else settings.pairs)]
        wanted = settings.model_copy(update={"pairs": pairs, "surfaces": settings.surfaces if dom.surfaces else []})
        problems, notes = [], []
        for probe in check.probes(wanted):
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            try:
                obs = check.measure(settings, evaluator, probe).observables  # the sampled scan (cached)
            except ModelEvaluationError as exc:
                notes.append(model_error_note(probe.id, "on the contract's own scan", exc))
                continue
            r_eq = float(obs["r_eq"])
            r_lo = float(dom.r_min) if dom.r_min is not None else float(obs["r_inner"])
            if r_eq - r_lo < 2 * dom.min_separation:
                notes.append(f"{probe.id}: no admissible pair (r_min {r_lo:g} A, r_eq {r_eq:g} A)")
                continue
            seeds = [(a, b, 0.0, 0.0) for a, b in _wall_seeds(obs) if a >= r_lo - 1e-9]

            def make(r_eq, seeds=seeds, probe=probe, r_lo=r_lo):
                if probe.params["kind"] == "dimer":
                    return DimerProblem(probe, r_lo, r_eq, dom.min_separation, dom.orientation, tol, seeds,
                                        label=probe.id)
                return SurfaceApproachProblem(probe, r_lo, r_eq, dom.min_separation, tol, seeds, label=probe.id)

            try:
                r_ref = refine_minimum(make(r_eq), evaluator, r_lo, r_eq, settings.step)
            except ModelEvaluationError as exc:
                notes.append(model_error_note(probe.id, "refining r_eq", exc))
                continue
            if r_ref - r_lo < 2 * dom.min_separation:
                notes.append(f"{probe.id}: no admissible pair (r_min {r_lo:g} A, refined r_eq {r_ref:g} A)")
                continue
            problem = make(r_ref)
            problems.append(problem)
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        pairs = dom.pairs if dom.pairs is not None else settings.pairs
        r_min = dom.r_min if dom.r_min is not None else settings.r_inner
        return (f"Z: {len(pairs)} dimer pair(s){' + surface approaches' if dom.surfaces and settings.surfaces else ''}, "
                f"r_min {r_min:g} A <= r_in < r_out <= model r_eq, r_out - r_in >= {dom.min_separation:g} A, "
                f"{'any bond direction' if dom.orientation else 'bond along z'}")


def refine_minimum(problem: DimerProblem, evaluator, r_lo: float, r_grid: float, step: float) -> float:
    """The continuous minimum of E(r) around the grid's r_eq (bounded Brent search over one grid step each side).

    The wall objective compares energies inside r_eq: with r_eq taken from the grid, the true minimum can lie
    between grid points, and the pair (r_true, r_grid) would read as a fall in energy going inward that is
    only the bottom of the well (a false alarm on a clean model).
    """
    from scipy.optimize import minimize_scalar

    def energy(r):
        return evaluator.energy(problem.configs(tensor(np.array([r_lo, r - r_lo, 0.0, 0.0])))[1].to_atoms())

    lo, hi = max(r_lo + 1e-6, r_grid - step), r_grid + step
    res = minimize_scalar(energy, bounds=(lo, hi), method="bounded", options={"xatol": 1e-5})
    best = min([(energy(r_grid), r_grid), (float(res.fun), float(res.x))])
    return best[1]
