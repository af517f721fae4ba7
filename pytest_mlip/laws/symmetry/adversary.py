"""The symmetry laws' adversary objective: displaced structures under any transformation of the contract's kind."""

from __future__ import annotations

import math

import numpy as np

from ...adversary.objectives import DomainError, Objective, _supported, _torch, register
from ...adversary.problem import Config, DisplacedProblem, rotation_matrix, tensor
from .check import random_permutation
from .domain import DisplacementDomain

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
                from ...adversary.backends import _voigt_to_tensor

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

    def kept_setting(self, settings, x):
        """The displaced structure, written as its spec with the displacements, under the contract's own
        transformations (its seed and samples: a permutation is the same draw; a rotation or translation is the
        check's, not the one found, so the runner keeps the file only if the check under it fails)."""
        pos, _, _ = self._reference(tensor(x))
        spec = self.kept_structure(settings, pos.numpy())
        return spec if isinstance(spec, str) else {"structures": [spec]}

    def repro(self, x):
        lines = ["new, ref = out", "f, s, factor = ref.forces, ref.stress, 1.0"]
        t = self.transform
        if t == "rotation":
            rot = rotation_matrix(tensor(x[-3:])).numpy()
            lines += [f"R = np.array({rot.tolist()!r})",
                      "f = f @ R.T",
                      "if s is not None:",
                      "    from pytest_mlip.laws.symmetry.check import tensor_to_voigt, voigt_to_tensor",
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

        from ...laws import CHECKS

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
                    perm = random_permutation(atoms.numbers, rng)
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
