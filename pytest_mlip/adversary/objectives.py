"""Search objectives: which checks the adversary can search, and over what Z.

:data:`OBJECTIVES` maps a check name to an :class:`Objective`; a check without
an entry is listed by the adversary as "no search objective" and never
searched. An objective turns one contract's settings (its ``adversary``
domain, or defaults derived from its sampled setting) into
:class:`~pytest_mlip.adversary.problem.Problem` s: a box of search variables,
the configurations they build, and the violation v(z) computed from the
model's own outputs only, normalised by the contract's tolerances exactly as
the sampled check does. Every problem is seeded from the sampled probes.

Other checks opt in without editing their own module: register an
:class:`Objective` subclass here (or from any module) with :func:`register`.
Slab + adsorbate contracts can build on :class:`AdsorbateProblem`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..errors import MlipError, ModelEvaluationError
from .domains import DimerDomain, DisplacementDomain, FragmentDomain, StrainDomain
from .problem import Config, DisplacedProblem, Problem, direction, min_distance, rotation_matrix, tensor

OBJECTIVES: dict[str, type["Objective"]] = {}


class DomainError(MlipError):
    """Z of a contract has no admissible point (or cannot be built for this model)."""


def register(cls):
    """Class decorator: make ``cls`` the search objective of the check ``cls.check``."""
    OBJECTIVES[cls.check] = cls
    return cls


def objective_for(check: str) -> "Objective | None":
    cls = OBJECTIVES.get(check)
    return cls() if cls is not None else None


class Objective:
    """Builds the search problems of one contract on one model."""

    check: ClassVar[str] = ""
    Domain: ClassVar[type] = object

    def domain(self, settings):
        dom = getattr(settings, "adversary", None)
        return dom if dom is not None else self.Domain()

    def problems(self, settings, evaluator) -> tuple[list[Problem], list[str]]:
        """(problems, notes): notes say which parts of Z were left out and why."""
        raise NotImplementedError

    def describe(self, settings, evaluator) -> str:
        """Z in one line (the verification setting of the adversary report)."""
        return str(self.domain(settings))


def _supported(evaluator, symbols) -> str | None:
    missing = evaluator.model.info.supports(list(symbols))
    return f"element(s) {', '.join(missing)} not supported by {evaluator.name}" if missing else None


def _torch():
    import torch

    return torch


# ----------------------------------------------------------------------------------------------
# repulsive wall
# ----------------------------------------------------------------------------------------------
class DimerProblem(Problem):
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

    def constraint(self, x):
        if x[0] + x[1] > self.r_eq + 1e-9:
            return f"r_out = {x[0] + x[1]:.6g} A beyond r_eq = {self.r_eq:.6g} A"
        return None

    def repair(self, x):
        x = super().repair(x)
        if x[0] + x[1] > self.r_eq:
            x[1] = max(self.lower[1], self.r_eq - x[0])
        return x

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
        from ..contracts import CHECKS

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
        from ..contracts import CHECKS

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
                notes.append(f"{probe.id}: model error on the contract's own scan ({exc})")
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
                notes.append(f"{probe.id}: model error refining r_eq ({exc})")
                continue
            if r_ref - r_lo < 2 * dom.min_separation:
                notes.append(f"{probe.id}: no admissible pair (r_min {r_lo:g} A, refined r_eq {r_ref:g} A)")
                continue
            problem = make(r_ref)
            problems.append(problem)
        return problems, notes


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

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        pairs = dom.pairs if dom.pairs is not None else settings.pairs
        r_min = dom.r_min if dom.r_min is not None else settings.r_inner
        return (f"Z: {len(pairs)} dimer pair(s){' + surface approaches' if dom.surfaces and settings.surfaces else ''}, "
                f"r_min {r_min:g} A <= r_in < r_out <= model r_eq, r_out - r_in >= {dom.min_separation:g} A, "
                f"{'any bond direction' if dom.orientation else 'bond along z'}")


# ----------------------------------------------------------------------------------------------
# symmetry
# ----------------------------------------------------------------------------------------------
def _random_cluster(spec, min_dist: float, tries: int = 20000):
    """A seeded packing of ``spec.symbols`` in a cube, every pair at least ``min_dist`` apart."""
    from ase import Atoms

    atoms = Atoms(spec.symbols)
    n = len(atoms)
    if n > 1 and min_dist > spec.box * math.sqrt(3):
        raise DomainError(f"no admissible point: {n} atoms at least {min_dist:g} A apart do not fit in a "
                          f"{spec.box:g} A box (diagonal {spec.box * math.sqrt(3):.3g} A); enlarge box or lower "
                          "min_distance")
    rng = np.random.default_rng(spec.seed)
    pos: list[np.ndarray] = []
    for _ in range(tries):
        if len(pos) == n:
            break
        trial = rng.uniform(0.0, spec.box, 3)
        if all(np.linalg.norm(trial - p) >= min_dist for p in pos):
            pos.append(trial)
    if len(pos) < n:
        raise DomainError(f"no admissible point found: could not place {n} atoms {min_dist:g} A apart in a "
                          f"{spec.box:g} A box after {tries} tries; enlarge box or lower min_distance")
    atoms.positions = np.array(pos)
    atoms.center(vacuum=10.0)
    atoms.pbc = False
    return atoms


class SymmetryProblem(DisplacedProblem):
    """x = (displacements, transformation parameters): E and F of T(x) against the mapped E, F of x."""

    roles = ("transformed", "reference")

    def __init__(self, base, transform, dom, tolerance, seeds, label, perm=None, supercell=(2, 1, 1),
                 stress: bool = False):
        self.label = label
        self.transform = transform
        self.perm = None if perm is None else np.asarray(perm, dtype=int)
        self.supercell = tuple(int(s) for s in supercell)
        self.with_stress = stress
        extra_names: tuple[str, ...] = ()
        if transform == "rotation":
            a = math.radians(dom.max_angle)
            lo, hi, extra_names = [-a] * 3, [a] * 3, ("rot_x", "rot_y", "rot_z")
        elif transform == "translation":
            lo, hi, extra_names = [-dom.max_shift] * 3, [dom.max_shift] * 3, ("shift_x", "shift_y", "shift_z")
        else:
            lo, hi = [], []
        self.names = self.displacement_names(len(base)) + extra_names
        super().__init__(base, dom.delta, dom.min_distance, lo, hi, tolerance, seeds)

    def sample(self, rng):
        x = super().sample(rng)
        if self.transform == "rotation" and self.span[-1] >= 2 * math.pi - 1e-9:
            from scipy.spatial.transform import Rotation  # uniform over SO(3)

            x[-3:] = Rotation.random(random_state=int(rng.integers(2**31))).as_rotvec()
        return self.repair(x)

    def _reference(self, x):
        torch = _torch()
        n3 = 3 * self.n
        pos = tensor(self.base.positions) + x[:n3].reshape(self.n, 3)
        return pos, tensor(self.base.cell.array), torch

    def configs(self, x):
        pos, cell, torch = self._reference(x)
        pbc = tuple(bool(p) for p in self.base.pbc)
        numbers = self.base.numbers
        ref = Config(numbers, pos, cell, pbc)
        periodic = all(pbc) and self.base.cell.rank == 3
        t = self.transform
        if t == "rotation":
            rot = rotation_matrix(x[-3:])
            new = Config(numbers, pos @ rot.T, cell @ rot.T if periodic else cell, pbc)
        elif t == "translation":
            new = Config(numbers, pos + x[-3:], cell, pbc)
        elif t == "permutation":
            new = Config(numbers[self.perm], pos[self.perm], cell, pbc)
        elif t == "inversion":
            center = pos.mean(dim=0)
            new = Config(numbers, 2 * center - pos, cell, pbc)
        elif t == "periodic_image":
            n0, n1, n2 = self.supercell
            blocks, nums = [], []
            for m0 in range(n0):
                for m1 in range(n1):
                    for m2 in range(n2):
                        blocks.append(pos + (m0 * cell[0] + m1 * cell[1] + m2 * cell[2]))
                        nums.append(numbers)
            scale = tensor(np.diag([n0, n1, n2]).astype(float))
            new = Config(np.concatenate(nums), torch.cat(blocks), scale @ cell, pbc)
        else:  # pragma: no cover - validated by the settings
            raise ValueError(t)
        return [new, ref]

    def violations(self, outs, x):
        torch = _torch()
        new, ref = outs
        f, s, factor = ref.forces, ref.stress, 1.0
        t = self.transform
        if t == "rotation":
            rot = rotation_matrix(x[-3:])
            f = f @ rot.T
            if s is not None:
                from .backends import _voigt_to_tensor

                m = rot @ _voigt_to_tensor(s) @ rot.T
                s = torch.stack([m[0, 0], m[1, 1], m[2, 2], m[1, 2], m[0, 2], m[0, 1]])
        elif t == "permutation":
            f = f[self.perm]
        elif t == "inversion":
            f = -f
        elif t == "periodic_image":
            factor = float(np.prod(self.supercell))
            f = f.repeat(int(factor), 1)
        natoms = new.forces.shape[0]
        out = {"energy": torch.abs(new.energy - factor * ref.energy) / natoms,
               "forces": torch.abs(new.forces - f).max()}
        if new.stress is not None and s is not None and "stress" in self.tolerance:
            out["stress"] = torch.abs(new.stress - s).max()
        return out

    def repro(self, x):
        lines = ["new, ref = out", "f, s, factor = ref.forces, ref.stress, 1.0"]
        t = self.transform
        if t == "rotation":
            rot = rotation_matrix(tensor(x[-3:])).numpy()
            lines += [f"R = np.array({rot.tolist()!r})",
                      "f = f @ R.T",
                      "if s is not None:",
                      "    from pytest_mlip.contracts.symmetry import tensor_to_voigt, voigt_to_tensor",
                      "    s = tensor_to_voigt(R @ voigt_to_tensor(s) @ R.T)"]
        elif t == "permutation":
            lines += [f"perm = {self.perm.tolist()!r}", "f = f[perm]"]
        elif t == "inversion":
            lines += ["f = -f"]
        elif t == "periodic_image":
            k = int(np.prod(self.supercell))
            lines += [f"factor = {float(k)!r}", f"f = np.tile(f, ({k}, 1))"]
        lines += ["viol = {'energy': abs(new.energy - factor * ref.energy) / len(frames[0]),",
                  "        'forces': float(np.abs(new.forces - f).max())}",
                  "if new.stress is not None and s is not None and 'stress' in tau:",
                  "    viol['stress'] = float(np.abs(new.stress - s).max())"]
        return "\n".join(lines)


@register
class SymmetryObjective(Objective):
    check = "symmetry"
    Domain = DisplacementDomain

    def problems(self, settings, evaluator):
        from scipy.spatial.transform import Rotation

        from ..contracts import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        info = evaluator.model.info
        bases: list[tuple[str, object]] = []
        notes: list[str] = []
        if dom.contract_structures:
            bases += [(p.id, p.atoms) for p in check.probes(settings)]
        for i, spec in enumerate(dom.clusters):
            try:
                bases.append((f"{spec.symbols}-random/s{spec.seed}", _random_cluster(spec, dom.min_distance)))
            except DomainError as exc:
                notes.append(f"cluster {spec.symbols} in {spec.box:g} A box: {exc}")
        problems = []
        t = settings.transform
        for label, atoms in bases:
            reason = _supported(evaluator, atoms.get_chemical_symbols())
            periodic = bool(np.all(atoms.pbc)) and atoms.cell.rank == 3
            if reason is None and t == "periodic_image" and not periodic:
                reason = "not periodic"
            if reason:
                notes.append(f"{label}: {reason}")
                continue
            stress = periodic and "stress" in info.implemented_properties
            tol = {k: v for k, v in settings.tolerance.items() if k != "stress" or stress}
            rng = np.random.default_rng(settings.seed)  # the sampled check's transformations
            nsamp = settings.samples if t != "periodic_image" else 1
            zero = np.zeros(3 * len(atoms))
            if t in ("rotation", "translation"):
                seeds = []
                for _ in range(nsamp):
                    if t == "rotation":
                        rv = Rotation.random(random_state=int(rng.integers(2**31))).as_rotvec()
                    else:
                        rv = rng.uniform(-3.0, 3.0, 3)
                    seeds.append(np.concatenate([zero, rv]))
                specs = [(label, None, seeds)]
            elif t == "permutation":
                specs = []
                for k in range(nsamp):
                    perm = np.arange(len(atoms))
                    for z in np.unique(atoms.numbers):
                        idx = np.where(atoms.numbers == z)[0]
                        perm[idx] = rng.permutation(idx)
                    specs.append((f"{label}/perm{k}", perm, [zero]))
            else:
                specs = [(label, None, [zero])]
            for plabel, perm, seeds in specs:
                prob = SymmetryProblem(atoms, t, dom, tol, seeds, plabel, perm=perm, supercell=settings.supercell,
                                       stress=stress)
                why = prob.base_reason()
                if why:
                    notes.append(why)
                    continue
                problems.append(prob)
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        t = settings.transform
        extra = {"rotation": f", any rotation up to {dom.max_angle:g} deg per axis",
                 "translation": f", shifts up to {dom.max_shift:g} A per axis"}.get(t, "")
        return (f"Z: {t} of the contract's structures{' + random clusters' if dom.clusters else ''} displaced "
                f"<= {dom.delta:g} A per coordinate, atoms >= {dom.min_distance:g} A apart{extra}")


# ----------------------------------------------------------------------------------------------
# dissociation
# ----------------------------------------------------------------------------------------------
class FragmentProblem(Problem):
    """x = (gap, theta, phi, rot_x, rot_y, rot_z): B rotated, placed along a direction from A, gap apart."""

    names = ("gap", "theta", "phi", "rot_x", "rot_y", "rot_z")
    roles = ("AB", "A", "B")

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
        from ..contracts import CHECKS

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
            problems.append(FragmentProblem(probe.params["a"], probe.params["b"], lo, hi, dom.rotate, tol, [seed],
                                            label=probe.id))
        return problems, notes

    def describe(self, settings, evaluator):
        lo, hi = self.bounds(settings, evaluator)
        dom = self.domain(settings)
        return (f"Z: the contract's fragment pairs, closest gap {lo:g} to {hi:g} A"
                f"{', any orientation of B and direction from A' if dom.rotate else ' along +x'}")


# ----------------------------------------------------------------------------------------------
# stress-strain
# ----------------------------------------------------------------------------------------------
_VOIGT = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]


def _strain_matrix(e, scale=None):
    """I + eps for Voigt strain ``e`` (torch, engineering shears), as in Bulk.strain and stress_strain."""
    torch = _torch()
    rows = [[e[0], e[5] / 2, e[4] / 2], [e[5] / 2, e[1], e[3] / 2], [e[4] / 2, e[3] / 2, e[2]]]
    return torch.eye(3, dtype=torch.float64) + torch.stack([torch.stack(r) for r in rows])


class StrainProblem(DisplacedProblem):
    """x = (displacements, 6 Voigt strains): the model's stress against central differences of its energy."""

    def __init__(self, base, dom, h, tolerance, seeds, label):
        self.label = label
        self.h = float(h)
        self.names = self.displacement_names(len(base)) + tuple(f"strain_{k}" for k in ("xx", "yy", "zz", "yz", "xz", "xy"))
        self.roles = ("cell",) + tuple(f"{s}{k}" for k in ("xx", "yy", "zz", "yz", "xz", "xy") for s in "+-")
        e = dom.max_strain
        super().__init__(base, dom.delta, dom.min_distance, [-e] * 6, [e] * 6, tolerance, seeds)

    def strained_base(self, x):
        m = _strain_matrix(x[-6:])
        pos = tensor(self.base.positions) @ m + x[: 3 * self.n].reshape(self.n, 3)
        return pos, tensor(self.base.cell.array) @ m

    def constraint(self, x):
        pos, cell = self.strained_base(tensor(x))
        dmin = min_distance(pos.numpy(), cell.numpy(), self.base.pbc)
        if dmin < self.min_distance - 1e-9:
            return f"atoms {dmin:.4g} A apart (< min_distance {self.min_distance:g} A)"
        return None

    def configs(self, x):
        torch = _torch()
        pos, cell = self.strained_base(x)
        pbc = (True, True, True)
        out = [Config(self.base.numbers, pos, cell, pbc)]
        for k, (i, j) in enumerate(_VOIGT):
            for sign in (1.0, -1.0):
                eps = torch.zeros((3, 3), dtype=torch.float64)
                if i == j:
                    eps[i, i] = sign * self.h
                else:
                    eps[i, j] = eps[j, i] = sign * self.h / 2
                m = torch.eye(3, dtype=torch.float64) + eps
                out.append(Config(self.base.numbers, pos @ m, cell @ m, pbc))
        return out

    def violations(self, outs, x):
        torch = _torch()
        volume = torch.abs(torch.det(self.strained_base(x)[1]))
        fd = torch.stack([(outs[1 + 2 * k].energy - outs[2 + 2 * k].energy) / (2 * self.h) / volume for k in range(6)])
        return {"stress": torch.abs(outs[0].stress - fd).max()}

    def repro(self, x):
        return (f"h = {self.h!r}\n"
                "volume = frames[0].get_volume()\n"
                "fd = np.array([(out[1 + 2 * k].energy - out[2 + 2 * k].energy) / (2 * h) / volume for k in range(6)])\n"
                "viol = {'stress': float(np.abs(out[0].stress - fd).max())}")


@register
class StressStrainObjective(Objective):
    check = "stress_strain"
    Domain = StrainDomain

    def problems(self, settings, evaluator):
        from ..contracts import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        problems, notes = [], []
        if "stress" not in evaluator.model.info.implemented_properties:
            raise DomainError(f"stress not implemented by {evaluator.name}")
        for probe in check.probes(settings):
            atoms = probe.atoms
            reason = _supported(evaluator, atoms.get_chemical_symbols())
            if reason is None and not (np.all(atoms.pbc) and atoms.cell.rank == 3):
                reason = "cell not fully periodic: stress undefined"
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            zero = np.zeros(3 * len(atoms) + 6)
            prob = StrainProblem(atoms, dom, settings.strain_step, dict(settings.tolerance), [zero], probe.id)
            why = prob.base_reason()
            if why:
                notes.append(why)
                continue
            problems.append(prob)
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        return (f"Z: the contract's cells under Voigt strains in [-{dom.max_strain:g}, {dom.max_strain:g}], atoms "
                f"displaced <= {dom.delta:g} A, >= {dom.min_distance:g} A apart; finite-difference step "
                f"{settings.strain_step:g}")


# ----------------------------------------------------------------------------------------------
# generic: an adsorbate over a slab; the desorption barrier opts in
# ----------------------------------------------------------------------------------------------
class AdsorbateProblem(Problem):
    """x = (dz, da, db): the adsorbate (atoms ``n_slab:``), rigid, lifted by dz along the normal and
    shifted by da, db of the first two cell vectors, over its frozen slab.

    ``configs`` is ``[system(x)] + references`` (configurations that do not depend on x, such as the
    desorbed asymptote). Subclasses give :meth:`violations` and :meth:`repro`.
    """

    names = ("dz", "da", "db")

    def __init__(self, atoms, n_slab: int, height, lateral: float, references, tolerance, seeds=(), label=""):
        self.label = label
        self.atoms = atoms.copy()
        self.atoms.calc = None
        self.atoms.set_constraint()
        self.n_slab = int(n_slab)
        self.references = [r.copy() for r in references]
        self.roles = ("system",) + tuple(f"reference{i}" for i in range(len(references)))
        super().__init__([height[0], -lateral, -lateral], [height[1], lateral, lateral], tolerance, seeds)

    def configs(self, x):
        torch = _torch()
        pos = tensor(self.atoms.positions)
        cell = tensor(self.atoms.cell.array)
        lift = torch.stack([torch.zeros((), dtype=torch.float64)] * 2 + [x[0]]) + x[1] * cell[0] + x[2] * cell[1]
        moved = torch.cat([pos[: self.n_slab], pos[self.n_slab:] + lift])
        pbc = tuple(bool(p) for p in self.atoms.pbc)
        out = [Config(self.atoms.numbers, moved, cell, pbc)]
        for r in self.references:
            out.append(Config(r.numbers, tensor(r.positions), tensor(r.cell.array), tuple(bool(p) for p in r.pbc)))
        return out


class DesorptionProblem(AdsorbateProblem):
    """v = E(lifted by dz) - E(lifted by dz_max): the energy may never pass above the desorbed asymptote."""

    energy_only = True

    def violations(self, outs, x):
        return {"barrier": outs[0].energy - outs[1].energy}

    def repro(self, x):
        return "viol = {'barrier': out[0].energy - out[1].energy}  # E(dz) - E(asymptote at dz_max)"


@register
class DesorptionBarrierObjective(Objective):
    """The desorption barrier's Z: the relaxed adsorbate lifted rigidly to any height in [0, dz_max)
    (continuous, where the sampled scan steps by dz_step), optionally shifted laterally."""

    check = "desorption_barrier"

    def domain(self, settings):
        from .domains import AdsorbateDomain

        dom = getattr(settings, "adversary", None)
        return dom if dom is not None else AdsorbateDomain()

    def problems(self, settings, evaluator):
        from ..contracts import CHECKS
        from ..contracts.desorption_barrier import lifted
        from ..structures.adsorbates import build_slab, classify, place, relax

        dom = self.domain(settings)
        lo, hi = dom.height if dom.height is not None else (0.0, settings.dz_max)
        hi = min(hi, settings.dz_max - 1e-6)  # the asymptote itself is the reference
        if hi < lo:
            raise DomainError(f"no admissible point: height range ({lo:g}, {hi:g}) A is empty below dz_max")
        check = CHECKS[self.check]()
        problems, notes = [], []
        tol = {"barrier": settings.tolerance["barrier"]}
        for probe in check.probes(settings):
            case = probe.params["case"]
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            # the adsorbed state exactly as the sampled check prepares it (cached when it ran first)
            cutoff = evaluator.model.info.cutoff or 6.0
            vacuum = max(settings.vacuum, 0.5 * (settings.dz_max + 4.0 + cutoff + 2.0))
            slab = build_slab(case.metal, size=settings.size, facet=case.surface, vacuum=vacuum, free_layers=0)
            n = len(slab)
            rel = relax(place(slab, case.adsorbate, case.site), evaluator, fmax=settings.fmax, steps=settings.steps)
            outcome = classify(rel.atoms, n, case.site, settings.gamma)
            if outcome.status in ("dissociated", "desorbed") or not rel.converged:
                notes.append(f"{probe.id}: no bound, relaxed adsorbed state to lift (left out)")
                continue
            grid = np.round(np.arange(0.0, settings.dz_max + 1e-9, settings.dz_step), 6)
            seeds = [(d, 0.0, 0.0) for d in grid if lo <= d <= hi]
            problems.append(DesorptionProblem(rel.atoms, n, (lo, hi), dom.lateral,
                                              [lifted(rel.atoms, n, settings.dz_max)], tol, seeds, probe.id))
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        lo, hi = dom.height if dom.height is not None else (0.0, settings.dz_max)
        lat = f", lateral shifts up to {dom.lateral:g} of the cell vectors" if dom.lateral else ", at the relaxed site"
        return (f"Z: each relaxed adsorbate lifted rigidly by {lo:g} to {hi:g} A (asymptote {settings.dz_max:g} A){lat}; "
                "a rise on this rigid path is an upper bound on the barrier: the sampled check's CI-NEB is what "
                "confirms or dismisses it on the minimum-energy path")


__all__ = ["OBJECTIVES", "Objective", "register", "objective_for", "DomainError", "AdsorbateProblem",
           "DimerProblem", "SurfaceApproachProblem", "SymmetryProblem", "FragmentProblem", "StrainProblem"]
