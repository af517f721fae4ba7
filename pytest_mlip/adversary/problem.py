"""One search problem: a parameterised piece of Z and the violation v(z) on it.

A :class:`Problem` maps a point ``x`` of a box (physical units: A, radians,
strain) to the configurations a contract compares, and the model's outputs on
those configurations to raw violations keyed like the contract's tolerances.
Both maps are written once, in torch (float64), so the same code gives the
value through the cached :class:`~pytest_mlip.evaluation.Evaluator` and the
gradient through autograd. Constraints beyond the box (a minimum interatomic
distance, r_in < r_out <= r_eq) are kept by :meth:`Problem.repair`, a
retraction onto Z, and checked by :meth:`Problem.admissible`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: slack on box bounds when deciding admissibility (float rounding only)
BOX_SLACK = 1e-9
#: a retraction toward an admissible base halves the step at most this often
RETRACTION_HALVINGS = 30
ANGLE_PREFIXES = ("theta", "phi", "rot")


@dataclass
class Config:
    """A configuration whose positions/cell are torch tensors (possibly carrying a graph)."""

    numbers: np.ndarray
    positions: Any  # torch (N, 3) float64
    cell: Any  # torch (3, 3) float64 (zeros for an isolated system)
    pbc: tuple[bool, bool, bool]

    def to_atoms(self):
        from ase import Atoms

        return Atoms(numbers=self.numbers, positions=self.positions.detach().cpu().numpy().astype(np.float64),
                     cell=self.cell.detach().cpu().numpy().astype(np.float64), pbc=self.pbc)


@dataclass
class Outputs:
    """The model's energy, forces and (fully periodic cells) stress for one configuration, as tensors."""

    energy: Any
    forces: Any
    stress: Any = None


def tensor(values, requires_grad: bool = False):
    import torch

    return torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float64, requires_grad=requires_grad)


def rotation_matrix(rotvec):
    """Rodrigues' formula for a torch rotation vector; exact identity at zero, smooth elsewhere."""
    import torch

    theta2 = (rotvec * rotvec).sum()
    kx, ky, kz = rotvec[0], rotvec[1], rotvec[2]
    zero = torch.zeros((), dtype=rotvec.dtype)
    k = torch.stack([torch.stack([zero, -kz, ky]), torch.stack([kz, zero, -kx]), torch.stack([-ky, kx, zero])])
    if float(theta2) < 1e-12:  # second-order series: exact identity at 0, gradients still flow
        return torch.eye(3, dtype=rotvec.dtype) + k + 0.5 * (k @ k)
    theta = torch.sqrt(theta2)
    a = torch.sin(theta) / theta
    b = (1 - torch.cos(theta)) / theta2
    return torch.eye(3, dtype=rotvec.dtype) + a * k + b * (k @ k)


def direction(theta, phi):
    """Unit vector at polar angle ``theta`` and azimuth ``phi`` (torch); exactly +z at theta = 0."""
    import torch

    return torch.stack([torch.sin(theta) * torch.cos(phi), torch.sin(theta) * torch.sin(phi), torch.cos(theta)])


def min_distance(positions: np.ndarray, cell: np.ndarray, pbc) -> float:
    """Smallest interatomic distance, periodic images included where the cell is periodic."""
    positions = np.asarray(positions, dtype=float)
    n = len(positions)
    if n < 2 and not np.any(pbc):
        return math.inf
    if np.any(pbc):
        from ase import Atoms
        from ase.neighborlist import neighbor_list

        atoms = Atoms(numbers=np.ones(n, dtype=int), positions=positions, cell=cell, pbc=pbc)
        probe = 4.0
        while True:
            d = neighbor_list("d", atoms, probe, self_interaction=False)
            if len(d):
                return float(d.min())
            if probe > 50:
                return math.inf
            probe *= 2
    diff = positions[:, None, :] - positions[None, :, :]
    dist = np.sqrt((diff**2).sum(-1))
    iu = np.triu_indices(n, 1)
    return float(dist[iu].min())


def admitted(check: str, key: str, default: tuple[float, float]) -> tuple[float, float]:
    """The range the agent's validator admits for a numeric setting of ``check`` (a kept finding passes the same
    gate), else ``default``."""
    from ..agent.validator import open_checks

    return tuple(open_checks().get(check, {}).get(key, default))


class Problem:
    """A box of search variables, a constraint, and the violation on the configurations they build.

    Subclasses set ``label``, ``names``, ``lower``, ``upper``, ``tolerance``,
    ``roles`` (what each configuration is) and implement :meth:`configs`,
    :meth:`violations` and :meth:`repro`; constrained ones override
    :meth:`constraint` and :meth:`repair`.
    """

    label: str = ""
    names: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    primary: int = 0  # index of the configuration saved first ("the worst configuration")
    #: see InwardProblem.additive
    additive: bool = False
    #: v depends on energies only: a conservative model's forces then give its exact gradient in one call
    energy_only: bool = False
    #: coordinates a values-only search scans first in each sweep (Search.scan), before the others in a seeded
    #: random order: one every interatomic distance between the parts follows (a separation), along which a
    #: narrow feature of the model shows first
    scan_first: tuple[int, ...] = ()

    def __init__(self, lower, upper, tolerance: dict[str, float], seeds=()):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        if np.any(self.upper < self.lower):
            raise ValueError(f"{self.label}: empty box")
        self.tolerance = dict(tolerance)
        self.seeds = [self.repair(np.asarray(s, dtype=float)) for s in seeds]

    # --- geometry of Z ---------------------------------------------------------
    @property
    def span(self) -> np.ndarray:
        return self.upper - self.lower

    @property
    def dim(self) -> int:
        return int(np.sum(self.span > 0))

    def to_unit(self, x: np.ndarray) -> np.ndarray:
        span = np.where(self.span > 0, self.span, 1.0)
        return np.where(self.span > 0, (x - self.lower) / span, 0.0)

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        return self.lower + np.clip(u, 0.0, 1.0) * self.span

    def sample(self, rng) -> np.ndarray:
        """A random admissible point, uniform in the box before the retraction."""
        return self.repair(self.from_unit(rng.uniform(0.0, 1.0, len(self.lower))))

    def constraint(self, x: np.ndarray) -> str | None:
        """Why ``x`` (inside the box) is not in Z, or None."""
        return None

    def repair(self, x: np.ndarray) -> np.ndarray:
        """Map any point of the box's neighbourhood into Z (projection onto the box by default)."""
        return np.clip(np.asarray(x, dtype=float), self.lower, self.upper)

    def admissible(self, x: np.ndarray) -> str | None:
        x = np.asarray(x, dtype=float)
        if x.shape != self.lower.shape or not np.all(np.isfinite(x)):
            return "not a finite point of the search box"
        tol = BOX_SLACK * (1.0 + np.abs(self.lower) + np.abs(self.upper))
        out = np.where((x < self.lower - tol) | (x > self.upper + tol))[0]
        if len(out):
            i = int(out[0])
            return f"{self.names[i] if i < len(self.names) else i}={x[i]:.6g} outside [{self.lower[i]:.6g}, {self.upper[i]:.6g}]"
        return self.constraint(x)

    # --- the violation -----------------------------------------------------------
    def configs(self, x) -> list[Config]:  # pragma: no cover - abstract
        raise NotImplementedError

    def violations(self, outs: list[Outputs], x) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def normalized(self, raw: dict):
        """max_k v_k / tau_k as a torch scalar (keeps the graph)."""
        import torch

        return torch.stack([raw[k] / self.tolerance[k] for k in raw]).max()

    def parameters(self, x: np.ndarray) -> dict[str, float]:
        """The searched variables of ``x`` in readable units (degrees for angles)."""
        out = {}
        for i, (name, value) in enumerate(zip(self.names, np.asarray(x, dtype=float))):
            if self.span[i] == 0:
                continue
            out[name] = float(np.degrees(value)) if name.startswith(ANGLE_PREFIXES) else float(value)
        return out

    def repro(self, x: np.ndarray) -> str:  # pragma: no cover - abstract
        """Python lines computing ``viol`` (dict) from ``out`` (Evaluations of the saved frames)."""
        raise NotImplementedError

    def kept_setting(self, settings, x: np.ndarray) -> dict | str:
        """Updates to the contract's settings under which its own sampled check evaluates the point ``x``
        (so a finding can be kept as a protocol file), or why no setting of the check can."""
        return f"no setting of the {settings.check} check evaluates a searched point of {self.label}"


class InwardProblem(Problem):
    """x[0] = the inner point, x[1] = the gap to the outer one, which may not pass the equilibrium ``self.limit``
    (a wall: r_in < r_out <= r_eq; a compression: s_in < s_out <= s_eq). Subclasses set ``limit`` and ``outer``
    (how the outer point and the limit are named in a message, with their unit)."""

    limit: float
    outer: tuple[str, str, str] = ("out", "the equilibrium", "")
    #: v is one energy difference along a line, v(a, c) = v(a, b) + v(b, c) for a < b < c (the other variables
    #: held): a scan of single points along the line tests every pair of them (see Search.line_pairs)
    additive: bool = True

    def pair(self, x, s_in: float, s_out: float) -> np.ndarray:
        """``x`` with its inner and outer points moved to ``s_in`` < ``s_out`` (the other variables kept)."""
        y = np.array(x, dtype=float)
        y[0], y[1] = s_in, s_out - s_in
        return y

    def constraint(self, x):
        if x[0] + x[1] > self.limit + 1e-9:
            name, eq, unit = self.outer
            return f"{name} = {x[0] + x[1]:.6g}{unit} beyond {eq} = {self.limit:.6g}{unit}"
        return None

    def repair(self, x):
        x = super().repair(x)
        if x[0] + x[1] > self.limit:
            x[1] = max(self.lower[1], self.limit - x[0])
        return x


class DisplacedProblem(Problem):
    """A problem whose first ``3N`` variables displace a base structure's atoms, with a minimum distance.

    The retraction scales the displacement toward the (admissible) base until
    every interatomic distance is at least ``min_distance``.
    """

    def __init__(self, base, delta: float, min_distance: float, extra_lower=(), extra_upper=(),
                 tolerance=None, seeds=()):
        self.base = base.copy()
        self.base.calc = None
        self.n = len(base)
        self.min_distance = float(min_distance)
        d = np.full(3 * self.n, float(delta))
        super().__init__(np.concatenate([-d, extra_lower]), np.concatenate([d, extra_upper]), tolerance or {}, seeds)

    def base_reason(self) -> str | None:
        """Why the base itself is not admissible (then nothing of this problem is searched)."""
        dmin = min_distance(self.base.positions, self.base.cell.array, self.base.pbc)
        if dmin < self.min_distance:
            return (f"{self.label}: its structure has atoms {dmin:.3g} A apart, closer than the domain's "
                    f"min_distance {self.min_distance:g} A")
        return None

    def displaced_positions(self, x: np.ndarray) -> np.ndarray:
        return self.base.positions + np.asarray(x[: 3 * self.n]).reshape(self.n, 3)

    def constraint(self, x):
        dmin = min_distance(self.displaced_positions(x), self.base.cell.array, self.base.pbc)
        if dmin < self.min_distance - 1e-9:
            return f"atoms {dmin:.4g} A apart (< min_distance {self.min_distance:g} A)"
        return None

    def repair(self, x):
        x = super().repair(x)
        if self.constraint(x) is None:
            return x
        # first shrink the displacements toward the base, then (if the other variables also move
        # atoms, e.g. a strain) everything toward the base point x = 0
        for mask in (np.arange(len(x)) < 3 * self.n, np.ones(len(x), dtype=bool)):
            start = x.copy()
            t = 1.0
            for _ in range(RETRACTION_HALVINGS):
                t *= 0.5
                x = np.where(mask, t * start, start)
                if self.constraint(x) is None:
                    return x
            x = np.where(mask, 0.0, start)
            if self.constraint(x) is None:
                return x
        return x

    def parameters(self, x):
        x = np.asarray(x, dtype=float)
        out = {"max_displacement_A": float(np.abs(x[: 3 * self.n]).max()) if self.n else 0.0}
        for i in range(3 * self.n, len(x)):
            if self.span[i] == 0:
                continue
            name = self.names[i]
            out[name] = float(np.degrees(x[i])) if name.startswith(ANGLE_PREFIXES) else float(x[i])
        return out

    def kept_structure(self, settings, positions, strain=None):
        """The contract's structure this problem displaces, as a structure spec (data) whose build gives exactly
        ``positions`` (its rattle folded into ``displacements``; ``strain``: a Voigt strain of a bulk cell), or
        why it cannot be written as one."""
        from ..structures import MAX_DISPLACEMENT

        label = self.label.split("/perm")[0]
        spec = next((s for s in getattr(settings, "structures", []) if s.label() == label), None)
        if spec is None:
            return f"{self.label} is the search domain's own structure, not one of the contract's"
        update: dict = {"rattle": 0.0, "displacements": None}
        if strain is not None:
            if getattr(spec, "kind", "") != "bulk" or spec.strain is not None:
                return f"{self.label}: a strained cell is written as a bulk spec without a strain of its own"
            update["strain"] = tuple(float(e) for e in strain)
        plain = spec.model_copy(update=update)
        d = np.asarray(positions, dtype=float) - plain.build().positions
        if np.abs(d).max() > MAX_DISPLACEMENT:
            return f"{self.label}: displacements of {np.abs(d).max():.3g} A exceed a spec's {MAX_DISPLACEMENT:g} A"
        return plain.model_copy(update={"displacements": [tuple(float(c) for c in row) for row in d]})

    @staticmethod
    def displacement_names(n: int) -> tuple[str, ...]:
        return tuple(f"u{i}{c}" for i in range(n) for c in "xyz")
