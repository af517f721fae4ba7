"""The dissociation limit's adversary objective: fragment B placed anywhere beyond the cutoff from A."""

from __future__ import annotations

import math

import numpy as np

from ...adversary.objectives import DomainError, Objective, _supported, _torch, register
from ...adversary.problem import Config, Problem, direction, rotation_matrix, tensor
from .domain import FragmentDomain

class FragmentProblem(Problem):
    """x = (gap, theta, phi, rot_x, rot_y, rot_z): B rotated, placed along a direction from A, gap apart."""

    names = ("gap", "theta", "phi", "rot_x", "rot_y", "rot_z")
    roles = ("AB", "A", "B")
    scan_first = (0,)  # the gap: every A-B distance follows it (a spurious tail is a function of distance)

    def __init__(self, a, b, gap_lo, gap_hi, rotate, tolerance, seeds, label):
        self.label = label
        self.a, self.b = a.copy(), b.copy()
        self.gap_lo = float(gap_lo)
        ang = (math.pi, 2 * math.pi, math.pi) if rotate else (0.0, 0.0, 0.0)
        lo = [gap_lo, 0.0 if rotate else math.pi / 2, 0.0, -ang[2], -ang[2], -ang[2]]
        hi = [gap_hi, ang[0] if rotate else math.pi / 2, ang[1], ang[2], ang[2], ang[2]]
        super().__init__(lo, hi, tolerance, seeds)

    def sample(self, rng):
        x = super().sample(rng)
        if self.span[1] > 0:
            from scipy.spatial.transform import Rotation

            x[1] = math.acos(rng.uniform(-1.0, 1.0))
            x[3:] = Rotation.random(random_state=int(rng.integers(2**31))).as_rotvec()
        return self.repair(x)

    def placed_b(self, x):
        torch = _torch()
        a = tensor(self.a.positions)
        b = tensor(self.b.positions)
        cb = b.mean(dim=0)
        b = (b - cb) @ rotation_matrix(x[3:6]).T + cb
        n = direction(x[1], x[2])
        shift = (a @ n).max() - (b @ n).min() + x[0]
        b = b + shift * n
        perp = torch.eye(3, dtype=torch.float64) - torch.outer(n, n)
        return a, b + perp @ (a.mean(dim=0) - b.mean(dim=0))

    def configs(self, x):
        torch = _torch()
        a, b = self.placed_b(x)
        zero = torch.zeros((3, 3), dtype=torch.float64)
        na, nb = self.a.numbers, self.b.numbers
        pbc = (False, False, False)
        return [Config(np.concatenate([na, nb]), torch.cat([a, b]), zero, pbc), Config(na, a, zero, pbc),
                Config(nb, b, zero, pbc)]

    def constraint(self, x):
        a, b = self.placed_b(tensor(x))
        d = np.sqrt(((a.numpy()[:, None, :] - b.numpy()[None, :, :]) ** 2).sum(-1)).min()
        if d < self.gap_lo - 1e-6:
            return f"fragments {d:.4g} A apart, closer than {self.gap_lo:g} A"
        return None

    def violations(self, outs, x):
        torch = _torch()
        ab, a, b = outs
        return {"energy": torch.abs(ab.energy - a.energy - b.energy),
                "forces": torch.abs(ab.forces - torch.cat([a.forces, b.forces])).max()}

    def kept_setting(self, settings, x):
        """This fragment pair alone at the found closest gap. The check places B along +x unrotated (the
        search's theta = 90 deg, phi = 0, no rotation) at a gap of at least cutoff + 2 A: a finding nearer, or
        in another orientation, is kept only when the check reproduces it (the runner verifies)."""
        gap = float(x[0])
        floor = getattr(self, "cutoff", 0.0) + 2.0
        if gap < floor - 1e-9:
            return f"gap {gap:.4g} A is below cutoff + 2 A = {floor:g} A, where the check raises the gap"
        i = next(i for i, (a, b) in enumerate(settings.pairs) if f"{a.label()}+{b.label()}" == self.label)
        return {"pairs": [settings.pairs[i]], "gap": gap}

    def repro(self, x):
        return ("ab, a, b = out\n"
                "viol = {'energy': abs(ab.energy - a.energy - b.energy),\n"
                "        'forces': float(np.abs(ab.forces - np.vstack([a.forces, b.forces])).max())}")


@register
class DissociationObjective(Objective):
    check = "dissociation"
    Domain = FragmentDomain

    def bounds(self, settings, evaluator):
        dom = self.domain(settings)
        cutoff = evaluator.model.info.cutoff
        lo = (cutoff + dom.margin) if cutoff else settings.gap
        hi = dom.gap_max if dom.gap_max is not None else lo + 8.0
        return lo, hi

    def problems(self, settings, evaluator):
        from ...laws import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        lo, hi = self.bounds(settings, evaluator)
        if hi < lo:
            raise DomainError(f"no admissible point: gap_max {hi:g} A is below cutoff + margin = {lo:g} A")
        cutoff = evaluator.model.info.cutoff or 0.0
        sampled_gap = min(max(max(settings.gap, cutoff + 2.0), lo), hi)
        problems, notes = [], []
        tol = dict(settings.tolerance)
        for probe in check.probes(settings):
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            seed = [sampled_gap, math.pi / 2, 0.0, 0.0, 0.0, 0.0]
            problem = FragmentProblem(probe.params["a"], probe.params["b"], lo, hi, dom.rotate, tol, [seed],
                                      label=probe.id)
            problem.cutoff = cutoff
            problems.append(problem)
        return problems, notes

    def describe(self, settings, evaluator):
        lo, hi = self.bounds(settings, evaluator)
        dom = self.domain(settings)
        return (f"Z: the contract's fragment pairs, closest gap {lo:g} to {hi:g} A"
                f"{', any orientation of B and direction from A' if dom.rotate else ' along +x'}")
