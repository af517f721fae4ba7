"""Evaluation engine: cached, counted, failure-tolerant model calls.

Every contract asks an :class:`Evaluator` for energies, forces and stresses.
It caches by (model, numbers, positions, cell, pbc), so no configuration is
computed twice in a process; it counts calls and time per model for the
benchmarks; and it turns exceptions and non-finite outputs into
:class:`~pytest_mlip.errors.ModelEvaluationError`, which carries the
offending configuration, so a contract can fail that probe and go on.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelEvaluationError

#: Vacuum (A) around an isolated system that is given a box before any model
#: sees it (CHGNet and others refuse a zero cell); pbc stays False.
ISOLATED_BOX_PADDING = 20.0


@dataclass(frozen=True)
class Evaluation:
    """One model's outputs for one configuration (float64 copies)."""

    energy: float
    forces: np.ndarray
    stress: np.ndarray | None  # Voigt, eV/A^3, ASE sign convention; None if not computed

    @property
    def natoms(self) -> int:
        return len(self.forces)


@dataclass
class CallStats:
    calls: int = 0  # model calls actually made
    hits: int = 0  # requests answered from the cache
    seconds: float = 0.0
    failures: int = 0


def fully_periodic(atoms) -> bool:
    return bool(np.all(atoms.pbc)) and atoms.cell.rank == 3


def prepare(atoms):
    """Copy of ``atoms`` that any model accepts: isolated systems get a real box."""
    work = atoms.copy()
    work.calc = None
    if not np.any(work.pbc) and work.cell.rank < 3:
        pos = work.get_positions()
        span = pos.max(axis=0) - pos.min(axis=0) if len(pos) else np.zeros(3)
        work.set_cell(np.diag(span + 2 * ISOLATED_BOX_PADDING))
    return work


def config_key(model_id: str, atoms) -> str:
    """Content hash of what determines a model's output for ``atoms``."""
    h = hashlib.sha256(model_id.encode())
    h.update(np.ascontiguousarray(atoms.numbers, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(atoms.positions, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(atoms.cell.array, dtype=np.float64).tobytes())
    h.update(np.asarray(atoms.pbc, dtype=bool).tobytes())
    return h.hexdigest()


@dataclass
class Evaluator:
    """Cached evaluation of one loaded model (:class:`LoadedModel`)."""

    model: object
    cache: dict = field(default_factory=dict)
    stats: CallStats = field(default_factory=CallStats)
    #: optional callback after each real model call (never on cache hits):
    #: ``recorder(model, key, result, atoms)`` with the Evaluation or the ModelEvaluationError;
    #: pytest_mlip.provenance stores each call as an artifact through it
    recorder: object = None
    #: when a set, the configuration key of every request (cache hits included) is added to it,
    #: so a probe can cite the evaluations it used (see Check._run_probe)
    touched: set | None = None

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def model_id(self) -> str:
        return f"{self.model.name}#{self.model.weights_hash or ''}"

    def wants_stress(self, atoms) -> bool:
        return fully_periodic(atoms) and "stress" in self.model.info.implemented_properties

    def evaluate(self, atoms) -> Evaluation:
        """Energy and forces (and stress for fully periodic cells) of ``atoms``."""
        work = prepare(atoms)
        key = config_key(self.model_id, work)
        if self.touched is not None:
            self.touched.add(key)
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.hits += 1
            if isinstance(hit, ModelEvaluationError):
                raise hit
            return hit
        props = ["energy", "forces"] + (["stress"] if self.wants_stress(work) else [])
        start = time.perf_counter()
        self.stats.calls += 1
        try:
            try:
                out = self.model.compute(work, props)
            except Exception as exc:  # the model's own failure, not ours
                raise ModelEvaluationError(self.name, work, f"model raised {type(exc).__name__}: {exc}") from exc
            finally:
                self.stats.seconds += time.perf_counter() - start
            result = self._check(work, out, "stress" in props)
        except ModelEvaluationError as err:
            self.stats.failures += 1
            self.cache[key] = err
            if self.recorder is not None:
                self.recorder(self.model, key, err, work)
            raise
        self.cache[key] = result
        if self.recorder is not None:
            self.recorder(self.model, key, result, work)
        return result

    def energy(self, atoms) -> float:
        return self.evaluate(atoms).energy

    def forces(self, atoms) -> np.ndarray:
        return self.evaluate(atoms).forces

    def _check(self, atoms, out, want_stress) -> Evaluation:
        if "energy" not in out:
            raise ModelEvaluationError(self.name, atoms, "no energy returned")
        energy = float(np.asarray(out["energy"]).reshape(-1)[0])
        if not math.isfinite(energy):
            raise ModelEvaluationError(self.name, atoms, f"non-finite energy ({energy})")
        if "forces" not in out:
            raise ModelEvaluationError(self.name, atoms, "no forces returned")
        forces = np.array(out["forces"], dtype=np.float64).reshape(len(atoms), 3)
        if not np.all(np.isfinite(forces)):
            raise ModelEvaluationError(self.name, atoms, "non-finite forces")
        stress = None
        if want_stress and "stress" in out:
            s = np.array(out["stress"], dtype=np.float64)
            if s.shape == (3, 3):
                s = s[[0, 1, 2, 1, 0, 0], [0, 1, 2, 2, 2, 1]]
            stress = s.reshape(6)
            if not np.all(np.isfinite(stress)):
                raise ModelEvaluationError(self.name, atoms, "non-finite stress")
        return Evaluation(energy=energy, forces=forces, stress=stress)


_EVALUATORS: dict[str, Evaluator] = {}


def evaluator_for(spec: str) -> Evaluator:
    """The process-wide evaluator of a model spec (loads the model on first use)."""
    if spec not in _EVALUATORS:
        from ..models.registry import load

        _EVALUATORS[spec] = Evaluator(load(spec))
    return _EVALUATORS[spec]


def all_evaluators() -> dict[str, Evaluator]:
    return dict(_EVALUATORS)
