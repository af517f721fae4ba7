"""The compression wall's adversary objective: any two uniform scales inside the equilibrium, continuous where the
sampled scan takes a grid."""

from __future__ import annotations

import numpy as np

from ...adversary.objectives import Objective, _supported, model_error_note, register
from ...adversary.problem import Config, InwardProblem, admitted, tensor
from ...errors import ModelEvaluationError
from .domain import ScaleDomain


class ScaleProblem(InwardProblem):
    """x = (s_in, gap): the crystal uniformly scaled to s_in and s_out = s_in + gap <= s_eq."""

    names = ("s_in", "gap")
    roles = ("inner", "outer")
    energy_only = True

    def __init__(self, atoms, s_lo, s_eq, min_sep, tolerance, seeds, label):
        self.label = label
        self.atoms = atoms.copy()
        self.atoms.calc = None
        self.n = len(atoms)
        self.s_eq = float(s_eq)
        super().__init__([s_lo, min_sep], [s_eq - min_sep, s_eq - s_lo], tolerance, seeds)

    outer = ("s_out", "the equilibrium scale", "")

    @property
    def limit(self):
        return self.s_eq

    def configs(self, x):
        pos, cell = tensor(self.atoms.positions), tensor(self.atoms.cell.array)
        pbc = tuple(bool(p) for p in self.atoms.pbc)
        return [Config(self.atoms.numbers, pos * s, cell * s, pbc) for s in (x[0], x[0] + x[1])]

    def violations(self, outs, x):
        return {"drop": (outs[1].energy - outs[0].energy) / self.n}

    def parameters(self, x):
        p = super().parameters(x)
        p["s_out"] = float(x[0] + x[1])
        p["s_eq"] = self.s_eq
        return p

    def repro(self, x):
        return (f"viol = {{'drop': (out[1].energy - out[0].energy) / {self.n}}}  "
                "# E/atom(s_out) - E/atom(s_in), s_in < s_out <= s_eq")

    def kept_setting(self, settings, x):
        """This crystal alone, its inward scan starting at s_in (scale_min = s_in / s_eq) with as many points
        (within the range the validator admits) as put one nearest s_out; the check finds the same s_eq (same search grid), and the runner keeps
        the file only if the check under it fails."""
        r_in, r_out = float(x[0]) / self.s_eq, float(x[0] + x[1]) / self.s_eq
        if not 0.05 < r_in < 1.0:
            return f"s_in / s_eq = {r_in:.3g} is outside the check's scale_min range (0.05, 1)"

        def off(n):  # how far s_out / s_eq lies from the nearest point of an n-point inward grid from r_in
            step = (1.0 - r_in) / (n - 1)
            k = max(1, round((r_out - r_in) / step))
            return abs(r_in + k * step - r_out), n

        lo, hi = admitted("compression_wall", "inward_points", (4, 200))
        points = min(off(n) for n in range(int(lo), int(hi) + 1))[1]
        crystal = next(c for c in settings.crystals if f"{c.element}-{c.structure}" == self.label)
        return {"crystals": [crystal], "scale_min": r_in, "inward_points": points}


@register
class CompressionWallObjective(Objective):
    check = "compression_wall"
    Domain = ScaleDomain

    def problems(self, settings, evaluator):
        from ...laws import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        tol = {"drop": settings.tolerance["drop"]}
        problems, notes = [], []
        for probe in check.probes(settings):
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            try:
                obs = check.measure(settings, evaluator, probe).observables  # the sampled scan (cached)
            except ModelEvaluationError as exc:
                notes.append(model_error_note(probe.id, "on the contract's own scan", exc))
                continue
            s_eq = float(obs["eq_over_reference"])
            s_lo = s_eq * (dom.scale_min if dom.scale_min is not None else settings.scale_min)
            if s_eq - s_lo < 2 * dom.min_separation:
                notes.append(f"{probe.id}: no admissible pair (s_min {s_lo:g}, s_eq {s_eq:g})")
                continue
            rel, e = np.asarray(obs["curve_scale"]), np.asarray(obs["curve_E"])
            inside = [i for i in range(len(rel) - 1) if rel[i + 1] <= 1.0 + 1e-9]
            seeds = [(rel[i] * s_eq, (rel[i + 1] - rel[i]) * s_eq) for i in inside]  # the sampled scan's intervals
            if obs["s_worst"] < 1.0:  # the sampled worst point against the highest point outside it
                i_w = int(np.argmin(np.abs(rel - obs["s_worst"])))
                j = i_w + 1 + int(np.argmax(e[i_w + 1: len(inside) + 1]))
                seeds.insert(0, (rel[i_w] * s_eq, (rel[j] - rel[i_w]) * s_eq))
            problems.append(ScaleProblem(probe.atoms, s_lo, s_eq, dom.min_separation, tol,
                                         [s for s in seeds if s[0] >= s_lo - 1e-9], probe.id))
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        smin = dom.scale_min if dom.scale_min is not None else settings.scale_min
        return (f"Z: {len(settings.crystals)} crystal(s), any two uniform scales {smin:g} s_eq <= s_in < s_out <= "
                f"s_eq (model's own equilibrium), s_out - s_in >= {dom.min_separation:g}")
