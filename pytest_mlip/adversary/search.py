"""The bounded search for a contract's largest violation, and two baselines.

``ascent`` (the adversary): evaluate the points of the sampled probes, then
run Adam ascent (with backtracking) from the best point known, one start
after another, each stopped on a plateau or in a basin an earlier start
already climbed; between starts, random admissible points keep at least a
quarter of the evaluations (and as many as finite-difference gradients
cost), so random search is part of the adversary. Where the model offers
no gradient (no autograd, and forces that are not, or not known to be,
-dE/dx for this objective: CHGNet, DIEP, any plain ASE calculator), every
gradient is a finite difference paid in evaluations, and a narrow defect's
tail is swamped by the clean part of v; there, on problems of at most
``scan_dim`` reduced coordinates (a dimer's distances and bond direction, an
adsorbate height, a fragment placement), each start first scans its
coordinates one by one, coarse to fine (``scan_points`` over the whole
range, then over the two cells around the best, down to ``scan_resolution``
of the range), moving to the best point after each (a problem's
``scan_first`` coordinates first, the separation along which every distance
between its parts moves; before the first start, the first level of those
scans runs on every such problem, so that the first start goes to the
problem where a narrow feature's tail shows); where v is one energy
difference along a line (the walls: an inner and an outer point, ``Problem.
additive``), it then scans that line point by point, coarse to fine, and
reads every pair of scanned points from single evaluations (``line_pairs``:
a narrow dip or bump anywhere on the line is met once the spacing reaches
its width, whatever gap the violation needs; a problem with no variable
beside the line's two, the compression wall's scales, skips the coordinate
scans, which the line covers); and it ascends from there. Differences of v
within float rounding (``FLAT``) count as none: they start no further sweep
and a finite-difference gradient made of them is zero.
Every trial point is projected back into Z first. ``random``: uniform admissible
points until the budget is spent. ``hypothesis``: Hypothesis generating
points with ``hypothesis.target(v)`` steering it. All three start from the
same sampled points and count evaluations the same way, so they compare at
equal budgets.

Budget accounting: one evaluation is one configuration the model computes:
through the Evaluator, each distinct configuration a search asks for counts
once (the cache answers repeats for free); through autograd, every forward
pass counts. The points of the sampled probes are setup, reported apart.
Results depend only on the seed, not on what the process cached before.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelEvaluationError
from .backends import AUTOGRAD, FINITE_DIFFERENCES, FORCES, EvaluatorBackend, gradient_backend
from .problem import tensor

METHODS = ("ascent", "random", "hypothesis")

#: default model evaluations per contract and model
DEFAULT_BUDGET = 200
#: a normalised violation above this is a violation (the sampled gate's threshold)
THRESHOLD = 1.0
#: a scan level whose normalised violations spread by no more than this carries no information (float64 rounding)
FLAT = 1e-9


class BudgetExhausted(Exception):
    """The next evaluation would exceed the budget."""


@dataclass
class SearchOptions:
    budget: int = DEFAULT_BUDGET
    seed: int = 0
    method: str = "ascent"
    explore: float = 0.25  # share of the evaluations kept for random admissible points between ascents
    lr: float = 0.02  # first Adam step, in units of each variable's range
    lr_max: float = 0.1  # the step grows by ``grow`` after each step that raised v, up to this
    grow: float = 1.5
    max_steps: int = 40
    patience: int = 4  # steps without improvement (the step halves each time) before a start ends
    fd_step: float = 1e-3  # finite-difference step, in units of each variable's range
    fd_directions: int = 8  # at most this many directions per finite-difference gradient
    basin: float = 0.01  # an ascent that comes this close (unit coordinates) to where another ended stops
    scan_dim: int = 6  # finite-difference-only problems with at most this many variables are scanned first
    scan_points: int = 9  # points per level of a coordinate scan
    scan_resolution: float = 2e-3  # a scan zooms until its cell is below this (unit coordinates)
    line_share: float = 0.5  # a line scan of pairs (additive problems) spends at most this of the budget left
    threshold: float = THRESHOLD

    def __post_init__(self):
        if not isinstance(self.budget, (int, np.integer)) or self.budget <= 0:
            raise ValueError(f"the adversary budget must be a positive number of model evaluations, got {self.budget}")
        if self.method not in METHODS:
            raise ValueError(f"unknown search method {self.method!r}; use one of {', '.join(METHODS)}")


@dataclass
class Found:
    value: float
    problem: int
    x: np.ndarray


@dataclass
class Search:
    """One search over a list of problems on one model (see the module docstring)."""

    problems: list
    evaluator: object
    options: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self):
        self.values = EvaluatorBackend(self.evaluator)
        self.autograd = gradient_backend(self.evaluator)
        self.rng = np.random.default_rng(self.options.seed)
        self.phase = "setup"
        self.spent = 0
        self.setup = 0
        self.seen: set[str] = set()
        self.best: Found | None = None
        self.first_exceed: int | None = None
        self.trace: list[tuple[int, float]] = []
        self.gradients: Counter = Counter()
        self.errors: list[tuple[int, np.ndarray, str]] = []
        self.nan_gradients = 0
        self.starts = 0
        self.stopped = ""
        self.ends: list[tuple[int, np.ndarray]] = []  # where earlier ascents ended (basin memory)
        self.fd_spent = 0  # evaluations spent on finite-difference gradients
        self.scans = 0  # coordinate scans run (finite-difference-only problems)
        self.lines: set = set()  # lines scanned for pairs (additive problems): (problem, the other variables)

    # --- accounting ----------------------------------------------------------------------
    def _charge(self, n: int):
        if self.phase == "setup":
            self.setup += n
            return
        if self.spent + n > self.options.budget:
            raise BudgetExhausted
        self.spent += n

    def _charge_configs(self, configs):
        from ..evaluation.evaluator import config_key, prepare

        keys = list(dict.fromkeys(config_key(self.evaluator.model_id, prepare(c.to_atoms())) for c in configs))
        new = [k for k in keys if k not in self.seen]
        self._charge(len(new))
        self.seen.update(new)

    def _record(self, v: float, pi: int, x: np.ndarray):
        if not math.isfinite(v):
            return
        if self.best is None or v > self.best.value:
            self.best = Found(v, pi, np.array(x, dtype=float))
            self.trace.append((self.spent, v))
        if v > self.options.threshold and self.first_exceed is None:
            self.first_exceed = self.spent

    # --- values and gradients ------------------------------------------------------------
    def value(self, pi: int, x) -> float:
        """Normalised violation at ``x`` through the Evaluator (cached, counted)."""
        p = self.problems[pi]
        xt = tensor(x)
        configs = p.configs(xt)
        self._charge_configs(configs)
        try:
            outs = self.values.outputs(configs)
        except ModelEvaluationError as err:
            self.errors.append((pi, np.array(x, dtype=float), str(err)))
            return -math.inf
        v = float(p.normalized(p.violations(outs, xt)))
        self._record(v, pi, x)
        return v

    def value_grad(self, pi: int, x) -> tuple[float, np.ndarray | None]:
        """(v, dv/du): the model's forces when v depends on energies only and the model is conservative
        (exact, one ordinary call); else autograd where the model allows; else finite differences."""
        import torch

        p = self.problems[pi]
        if self.autograd is not None and not (p.energy_only and self.values.conservative):
            xt = tensor(x, requires_grad=True)
            configs = p.configs(xt)
            self._charge(len(configs))
            try:
                vt = p.normalized(p.violations(self.autograd.outputs(configs), xt))
                (g,) = torch.autograd.grad(vt, xt, allow_unused=True)
                v = float(vt.detach())
            except RuntimeError:  # the model's graph cannot be differentiated here
                v, g = math.nan, None
            if math.isfinite(v) and g is not None and bool(torch.all(torch.isfinite(g))):
                self._record(v, pi, x)
                self.gradients[AUTOGRAD] += 1
                return v, g.numpy() * p.span
            self.nan_gradients += 1
            v = self.value(pi, x)
        else:
            xt = tensor(x, requires_grad=True)
            configs = p.configs(xt)
            self._charge_configs(configs)
            self.values.flags.clear()
            try:
                outs = self.values.outputs(configs)
            except ModelEvaluationError as err:
                self.errors.append((pi, np.array(x, dtype=float), str(err)))
                return -math.inf, None
            vt = p.normalized(p.violations(outs, xt))
            v = float(vt.detach())
            self._record(v, pi, x)
            try:
                (g,) = torch.autograd.grad(vt, xt, allow_unused=True)
            except RuntimeError:  # v does not depend on x through anything the forces can differentiate
                g = None
                self.values.flags.append("no graph")
            if not self.values.flags and g is not None and bool(torch.all(torch.isfinite(g))):
                self.gradients[FORCES] += 1
                return v, g.numpy() * p.span
            if g is not None and not bool(torch.all(torch.isfinite(g))):
                self.nan_gradients += 1
        if not math.isfinite(v):
            return v, None
        return v, self.fd_gradient(pi, x)

    def values_only(self, pi: int) -> bool:
        """Would a gradient of problem ``pi`` be a finite difference (no autograd, no usable forces)?"""
        return self.autograd is None and not (self.problems[pi].energy_only and self.values.conservative)

    def fd_gradient(self, pi: int, x) -> np.ndarray | None:
        """Central differences (in unit coordinates) through the Evaluator, along at most
        ``fd_directions`` directions (random orthonormal ones when Z has more dimensions)."""
        p = self.problems[pi]
        u = p.to_unit(x)
        active = np.where(p.span > 0)[0]
        if not len(active):
            return None
        k = min(len(active), self.options.fd_directions)
        if k == len(active):
            basis = np.eye(len(active))
        else:
            q, _ = np.linalg.qr(self.rng.normal(size=(len(active), k)))
            basis = q.T
        if 2 * k * max(1, len(p.roles)) > self.options.budget - self.spent:
            return None  # a partial gradient would waste the rest of the budget: leave it to exploration
        h = self.options.fd_step
        g = np.zeros(len(u))
        before = self.spent
        spread = 0.0
        for row in basis:
            d = np.zeros(len(u))
            d[active] = row
            xp = p.repair(p.from_unit(u + h * d))
            xm = p.repair(p.from_unit(u - h * d))
            denom = float(d @ (p.to_unit(xp) - p.to_unit(xm)))
            if abs(denom) < 1e-12:
                continue
            vp, vm = self.value(pi, xp), self.value(pi, xm)
            if math.isfinite(vp) and math.isfinite(vm):
                g += (vp - vm) / denom * d
                spread = max(spread, abs(vp - vm))
        self.gradients[FINITE_DIFFERENCES] += 1
        self.fd_spent += self.spent - before
        if spread <= FLAT:  # differences within float rounding: no direction to follow
            return np.zeros(len(u))
        return g * (len(active) / k)

    # --- the methods ---------------------------------------------------------------------
    def run(self) -> "Search":
        pool = []
        for pi, p in enumerate(self.problems):
            for x in p.seeds:
                pool.append((self.value(pi, x), pi, x))
        self.phase = "search"
        self.setup_calls = self.evaluator.stats.calls  # model calls made up to here (seeds included)
        try:
            getattr(self, f"_{self.options.method}")(pool)
            self.stopped = "search ended before the budget"
        except BudgetExhausted:
            self.stopped = "budget spent"
        return self

    def _random_point(self):
        pi = int(self.rng.integers(len(self.problems)))
        return pi, self.problems[pi].sample(self.rng)

    def _random(self, pool):
        idle = 0
        for _ in range(100 * self.options.budget):
            before = self.spent
            self.value(*self._random_point())
            idle = idle + 1 if self.spent == before else 0
            if idle > 1000:  # Z has no unevaluated point left
                return

    def _ascent(self, pool):
        # Ascend from the best point known; between starts, spend random admissible points until
        # they are ``explore`` of what was spent, and at least what finite-difference gradients cost
        # (so where gradients are expensive the adversary is never mostly a slower random search).
        explored = 0
        self.survey(pool)
        for _ in range(100 * self.options.budget):
            while explored < max(self.options.explore * self.spent, self.fd_spent) or not pool:
                before = self.spent
                pi, x = self._random_point()
                pool.append((self.value(pi, x), pi, x))
                explored += max(self.spent - before, 1)
            pool.sort(key=lambda t: -t[0] if math.isfinite(t[0]) else math.inf)
            v, pi, x = pool.pop(0)
            p = self.problems[pi]
            if self.values_only(pi) and p.dim <= self.options.scan_dim:
                if not (p.additive and not np.any(p.span[2:] > 0)):  # else the line is all of the problem
                    x, v = self.scan(pi, x, v)
                if p.additive:
                    x, v = self.line_pairs(pi, x, v)
            self.ascend(pi, x, v)

    def survey(self, pool):
        """Before any start: on every values-only problem that names ``scan_first`` coordinates, the first level of
        their scans through its best known point, each best point met joining the pool, so that the first start
        goes where a narrow feature shows (a tail seen at 1e-4 of tau), whichever problem holds it."""
        best: dict = {}
        for v, pi, x in pool:
            if math.isfinite(v) and (pi not in best or v > best[pi][0]):
                best[pi] = (v, x)
        for pi, (v, x) in best.items():
            p = self.problems[pi]
            if not (p.scan_first and self.values_only(pi) and p.dim <= self.options.scan_dim):
                continue
            for i in p.scan_first:
                if p.span[i] > 0:
                    x, v = self.line_scan(pi, x, v, int(i), levels=1)
            pool.append((v, pi, x))

    def line_pairs(self, pi: int, x, v: float):
        """The line through ``x`` (its other variables held) scanned point by point, coarse to fine, for a problem
        whose v is additive along it (:attr:`InwardProblem.additive`: v(a, c) = v(a, b) + v(b, c)): each level
        halves the spacing of the last (8 intervals first), its new points in a seeded random order, until the
        spacing is below ``scan_resolution`` of the range or ``line_share`` of the budget left at the start is
        spent. A new point costs one evaluation (paired with a known point at least the minimum gap away); since
        v is additive, every pair of scanned points is then known without another evaluation, and the best pair
        is evaluated (from the cache: free) whenever it beats the best known. A narrow defect anywhere on the
        line is met as soon as the spacing reaches its width, whatever the gap it needs. Returns the best point
        and its value."""
        import bisect

        p = self.problems[pi]
        opt = self.options
        lo, hi, gap = float(p.lower[0]), float(p.limit), float(p.lower[1])
        key = (pi, tuple(np.round(np.asarray(x, dtype=float)[2:], 9)))
        if key in self.lines or hi - lo < gap:
            return x, v
        self.lines.add(key)
        stop = self.spent + opt.line_share * (opt.budget - self.spent)
        known: list[float] = []  # scanned points, sorted
        height: dict[float, float] = {}  # point -> h, with v(a, b) = h(b) - h(a)

        def pair_value(a: float, b: float) -> float:
            y = p.pair(x, a, b)
            if np.max(np.abs(p.repair(y) - y)) > 1e-12 or p.admissible(y) is not None:
                return -math.inf
            return self.value(pi, y)

        first = pair_value(lo, hi)
        if not math.isfinite(first):
            return x, v
        known += [lo, hi]
        height.update({lo: 0.0, hi: first})
        if first > v:
            x, v = p.pair(x, lo, hi), first
        n = 8
        while 1.0 / n >= opt.scan_resolution and self.spent < stop:
            ks = [k for k in range(1, n) if n <= 8 or k % 2]
            for k in self.rng.permutation(ks):
                if self.spent >= stop:
                    break
                s = lo + (hi - lo) * int(k) / n
                i = bisect.bisect_left(known, s)
                below = bisect.bisect_right(known, s - gap) - 1
                above = bisect.bisect_left(known, s + gap)
                partners = ([known[below]] if below >= 0 else []) + ([known[above]] if above < len(known) else [])
                if not partners:
                    continue
                t = min(partners, key=lambda q: abs(q - s))
                vt = pair_value(min(s, t), max(s, t))
                if not math.isfinite(vt):
                    continue
                u = height[t] - vt if s < t else height[t] + vt
                known.insert(i, s)
                height[s] = u
                # the best pair with s: s as the inner point, then as the outer one
                outs = [q for q in known[bisect.bisect_left(known, s + gap):]]
                ins = [q for q in known[: bisect.bisect_right(known, s - gap)]]
                best_out = max(outs, key=lambda q: height[q], default=None)
                best_in = min(ins, key=lambda q: height[q], default=None)
                cands = []
                if best_out is not None:
                    cands.append((height[best_out] - u, s, best_out))
                if best_in is not None:
                    cands.append((u - height[best_in], best_in, s))
                for w, a, b in sorted(cands, reverse=True):
                    if w > v + FLAT:
                        got = pair_value(a, b)
                        if math.isfinite(got) and got > v:
                            x, v = p.pair(x, a, b), got
                    break
            n *= 2
        return x, v

    def scan(self, pi: int, x, v: float):
        """Coordinate sweeps from ``x`` (the problem's ``scan_first`` coordinates first, the others in a seeded
        random order), each a coarse-to-fine line scan, until a sweep no longer raises v; returns the best point
        and its value."""
        p = self.problems[pi]
        if any(e_pi == pi and np.max(np.abs(p.to_unit(x) - e_u)) < self.options.basin for e_pi, e_u in self.ends):
            return x, v  # an earlier start already scanned and climbed from here
        active = [int(i) for i in np.where(p.span > 0)[0]]
        first = [i for i in p.scan_first if i in active]
        for _ in range(len(active)):
            before = v
            for i in first + [int(i) for i in self.rng.permutation([i for i in active if i not in first])]:
                x, v = self.line_scan(pi, x, v, int(i))
            if not v > before + FLAT:  # a rise within float rounding is no reason for another sweep
                break
        return x, v

    def line_scan(self, pi: int, x, v: float, i: int, levels: int | None = None):
        """Coordinate ``i`` through ``x``: ``scan_points`` over its range, then over the two cells around
        the best, until a cell is below ``scan_resolution`` (or after ``levels`` levels); stops early on a level
        that is flat (no information along this coordinate). Returns the best point met and its value."""
        p = self.problems[pi]
        opt = self.options
        self.scans += 1
        u0 = p.to_unit(x)
        lo, hi = 0.0, 1.0
        level = 0
        while True:
            level += 1
            values = []
            for t in np.linspace(lo, hi, opt.scan_points):
                u = u0.copy()
                u[i] = t
                xt = p.repair(p.from_unit(u))
                vt = self.value(pi, xt)
                values.append(vt)
                if math.isfinite(vt) and vt > v:
                    x, v = xt, vt
            finite = [a for a in values if math.isfinite(a)]
            cell = (hi - lo) / (opt.scan_points - 1)
            if cell < opt.scan_resolution or not finite or max(finite) - min(finite) <= FLAT or \
                    (levels is not None and level >= levels):
                return x, v
            centre = p.to_unit(x)[i]
            lo, hi = max(0.0, centre - cell), min(1.0, centre + cell)
            u0 = p.to_unit(x)

    def ascend(self, pi: int, x, v: float):
        """Adam ascent from ``x`` with backtracking: a step is kept only if v rises (then the step
        grows), else it is halved and Adam's moments restart; every trial point is projected into Z first. Stops after
        ``patience`` failed trials in a row, at ``max_steps`` trials, or in a basin another start
        already climbed."""
        p = self.problems[pi]
        self.starts += 1
        opt = self.options
        b1, b2 = 0.9, 0.999
        u = p.to_unit(x)
        m = np.zeros_like(u)
        s = np.zeros_like(u)
        lr, stall, t = opt.lr, 0, 0
        try:
            v, g = self.value_grad(pi, x)
            for _ in range(opt.max_steps):
                if g is None or not math.isfinite(v) or not np.any(g):
                    return
                if any(e_pi == pi and np.max(np.abs(u - e_u)) < opt.basin for e_pi, e_u in self.ends):
                    return  # an earlier start already climbed this basin
                t += 1
                m1 = b1 * m + (1 - b1) * g
                s1 = b2 * s + (1 - b2) * g * g
                mh, sh = m1 / (1 - b1**t), np.sqrt(s1 / (1 - b2**t))
                step = lr * mh / (sh + 1e-12 * max(float(sh.max()), 1e-300))
                x_new = p.repair(p.from_unit(u + step))
                u_new = p.to_unit(x_new)
                if np.max(np.abs(u_new - u)) < 1e-9:  # the projection undid the step
                    t -= 1
                    stall, lr = stall + 1, lr * 0.5
                    if stall >= opt.patience:
                        return
                    continue
                v_new, g_new = self.value_grad(pi, x_new)
                if math.isfinite(v_new) and v_new > v:
                    x, u, v, g, m, s = x_new, u_new, v_new, g_new, m1, s1
                    stall, lr = 0, min(lr * opt.grow, opt.lr_max)
                else:  # restart the moments at the current point with half the step
                    t, m, s = 0, np.zeros_like(u), np.zeros_like(u)
                    stall, lr = stall + 1, lr * 0.5
                    if stall >= opt.patience:
                        return
        finally:
            self.ends.append((pi, u.copy()))

    def _hypothesis(self, pool):
        from hypothesis import HealthCheck, Phase, given, seed, settings, target
        from hypothesis import strategies as st

        from ..strategies import domain_points

        points = st.integers(0, len(self.problems) - 1).flatmap(
            lambda pi: domain_points(self.problems[pi]).map(lambda x: (pi, x)))

        @seed(self.options.seed)
        @settings(max_examples=100 * self.options.budget, database=None, deadline=None,
                  phases=[Phase.generate, Phase.target], suppress_health_check=list(HealthCheck),
                  report_multiple_bugs=False, print_blob=False)
        @given(points)
        def probe(point):
            v = self.value(*point)
            target(v if math.isfinite(v) else -1e300, label="normalized violation")

        probe()
