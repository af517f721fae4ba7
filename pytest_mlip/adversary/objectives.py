"""Search objectives: the base every law's objective derives from, and the registry the adversary reads.

A law opts in to the adversary with ``adversary.py`` in its folder
(``pytest_mlip/laws/<law>/``): an :class:`Objective` subclass registered with
:func:`register`, which turns one contract's settings (its ``adversary``
domain, or defaults derived from its sampled setting) into
:class:`~pytest_mlip.adversary.problem.Problem` s: a box of search variables,
the configurations they build, and the violation v(z) computed from the
model's own outputs only, normalised by the contract's tolerances exactly as
the sampled check does. Every problem is seeded from the sampled probes. A
law without one states why in its record (``pytest-mlip laws`` prints it);
the adversary lists it as "no search objective" and never searches it.

Slab + adsorbate contracts can build on :class:`AdsorbateProblem` (here: it
is shared, not one law's).
"""

from __future__ import annotations

from typing import ClassVar


from ..errors import MlipError
from .problem import Config, Problem, tensor

OBJECTIVES: dict[str, type["Objective"]] = {}


#: the words an objective's note about a probe starts with when the model failed on it (its own scan, a refined
#: reference point): the runner reports such a search as the model's error, never as a pass or a failed search
MODEL_ERROR_NOTE = "model error"


def model_error_note(probe_id: str, what: str, exc) -> str:
    return f"{probe_id}: {MODEL_ERROR_NOTE} {what} ({exc})"


class DomainError(MlipError):
    """Z of a contract has no admissible point (or cannot be built for this model)."""


def register(cls):
    """Class decorator: make ``cls`` the search objective of the check ``cls.check``."""
    OBJECTIVES[cls.check] = cls
    return cls


def objective_for(check: str) -> "Objective | None":
    cls = OBJECTIVES.get(check)
    return cls() if cls is not None else None


def _load_law_objectives():
    """Import every law's objective module (each registers itself); the laws name theirs in their record.
    (Only imported here: a law module that imported this one first is still initialising, and registers when done.)"""
    import importlib

    from ..laws import LAWS

    for law in LAWS.values():
        if law.objective:
            importlib.import_module(law.module(law.objective))


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


_load_law_objectives()

def __getattr__(name):
    """Names that lived here before the laws got their own folders (``DimerProblem``...), found in the laws'
    objective modules."""
    import sys

    from ..laws import LAWS

    for law in LAWS.values():
        module = sys.modules.get(law.module(law.objective) or "")
        if module is not None and hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(name)


__all__ = ["OBJECTIVES", "Objective", "register", "objective_for", "DomainError", "AdsorbateProblem"]
