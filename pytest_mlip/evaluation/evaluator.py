"""Evaluation engine: cached, counted, failure-tolerant model calls.

Every contract asks an :class:`Evaluator` for energies, forces and stresses.
It caches by (model, numbers, positions, cell, pbc), so no configuration is
computed twice in a process; it counts calls and time per model for the
benchmarks; and it turns exceptions and non-finite outputs into
:class:`~pytest_mlip.errors.ModelEvaluationError`, which carries the
offending configuration, so a contract can fail that probe and go on.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import signal
import threading
import time
import types
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelEvaluationError, ModelOutputError, ModelTimeoutError

#: Vacuum (A) around an isolated system that is given a box before any model
#: sees it (CHGNet and others refuse a zero cell); pbc stays False.
ISOLATED_BOX_PADDING = 20.0


#: seconds one model call may take before it becomes an ``error`` verdict (``--mlip-timeout``); None: no limit
CALL_TIMEOUT: dict[str, float | None] = {"seconds": None}
DEFAULT_TIMEOUT = 900.0
#: the judge's default: it re-runs calls the run made within its own limit, and a CI step must not wait 15 minutes on
#: a call that hangs (a held-out case: a judge step hung silently)
JUDGE_TIMEOUT = 120.0
#: what a --timeout option of the console script's commands takes (as pytest's --mlip-timeout)
TIMEOUT_NUMBER = dict(what="a number of seconds", example="600", integer=False, minimum=0.1, maximum=1e8)


def set_call_timeout(seconds: float | None):
    CALL_TIMEOUT["seconds"] = seconds


class _Deadline(BaseException):
    """Raised inside a model call by the timer; a BaseException so the model's own ``except Exception`` misses it."""


#: the process's own ``os._exit``, kept before :func:`no_process_exit` stands in for it during model code
_REAL_EXIT = os._exit


class ModelExit(BaseException):
    """Raised in place of ``os._exit`` called by model code (a calculator or a factory): the process lives on to
    report it (a BaseException, like SystemExit, so the model's own ``except Exception`` misses it)."""


@contextlib.contextmanager
def no_process_exit(what: str):
    """While the enclosed model code runs on this thread, ``os._exit(n)`` raises :class:`ModelExit` naming ``what``
    instead of ending the process with no verdict (exit 0 and no report); other threads exit as usual."""
    owner, pid = threading.get_ident(), os.getpid()

    previous = os._exit

    def refuse(status=0):
        if threading.get_ident() != owner:  # another thread: the run's own guard (plugin.guard_process_exit) decides
            return previous(status)
        if os.getpid() != pid:  # a child the model forked (it inherits this thread): its exit is its own
            return previous(status)
        raise ModelExit(f"{what} called os._exit({status}) (a model must raise an exception, not end the process)")

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = previous


def _model_call(fn, *args):
    return fn(*args)


@functools.lru_cache(maxsize=None)
def named_call(spec: str):
    """A function that calls ``fn(*args)`` under a name that says which model it runs. A model that crashes the
    interpreter (a segfault in native code) leaves no verdict and no report; the fatal-error stack dump (pytest's
    faulthandler) then still names the model call in progress: ``File ".../evaluator.py", line N in model call of
    'mods:segv'``."""
    name = f"model call of {spec!r}"
    code = _model_call.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, _model_call.__globals__, name)


#: exit status of a run stopped by the watchdog (pytest's "interrupted")
HARD_STOP_EXIT = 2


def hard_stop_after(seconds: float) -> float:
    """When the watchdog stops the process: twice the timeout plus 5 s (the interrupt had its chance)."""
    return 2 * seconds + 5


#: set by the pytest plugin: stops output capture so the watchdog's line reaches the terminal
before_hard_stop = None


#: set by the reporting plugin: callables given the stuck call in words, run before the process ends; each writes
#: the outputs the user asked for as INCOMPLETE and returns a line saying what it wrote (or None)
on_hard_stop: list = []
#: how long those writers may take before the process ends anyway (the watchdog exists so that nothing hangs)
HARD_STOP_WRITE_S = 30.0


def _hard_stop(seconds, model, atoms):
    """A call ignored its interrupt (SIGALRM ignored or blocked, or stuck in native code): say so in one line, write
    the outputs asked for as INCOMPLETE, and end the process, so the CI job fails instead of hanging (under xdist
    the controller reports a dead worker)."""
    import sys

    what = atoms.get_chemical_formula() if atoms is not None else "a structure"
    if before_hard_stop is not None:
        try:
            before_hard_stop()
        except Exception:  # noqa: BLE001 (the process ends next; the exit status still says it)
            pass
    stuck = (f"a call of model {model!r} on {what} ran past --mlip-timeout={seconds:g} s and could not be "
             "interrupted (it ignores SIGALRM or is stuck in native code)")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    ends = (f"xdist worker {worker} stops here; the controller lists its item as crashed and the run as incomplete "
            "(exit 1)" if worker else f"the run stops here, incomplete (exit {HARD_STOP_EXIT})")
    sys.__stderr__.write(f"\npytest-mlip: {stuck}; {ends}; fix the model or raise --mlip-timeout\n")
    sys.__stderr__.flush()
    for line in _write_stopped_outputs(stuck):
        sys.__stderr__.write(f"pytest-mlip: {line}\n")
    sys.__stderr__.flush()
    _REAL_EXIT(HARD_STOP_EXIT)


def _write_stopped_outputs(stuck: str) -> list[str]:
    """Run the :data:`on_hard_stop` writers on a thread of their own, for at most :data:`HARD_STOP_WRITE_S` (a
    writer stuck on a dead file system must not hang the run the watchdog is ending)."""
    lines: list[str] = []

    def run_all():
        for write in list(on_hard_stop):
            try:
                line = write(stuck)
            except Exception as exc:  # noqa: BLE001 (one output failing must not keep the others from being written)
                line = f"could not write an output of the stopped run: {exc}"
            if line:
                lines.append(line)

    worker = threading.Thread(target=run_all, daemon=True, name="pytest-mlip-hard-stop-outputs")
    worker.start()
    worker.join(HARD_STOP_WRITE_S)
    return lines


class _Watchdog:
    """One daemon thread for the whole process that ends it when an armed call passes its hard deadline (a thread
    per call would cost a thread start on the hot path of every model call)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, tuple]] = {}
        self._next = 0
        self._thread = None

    def arm(self, after: float, args: tuple) -> int:
        with self._cond:
            self._next += 1
            self._armed[self._next] = (time.monotonic() + after, args)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True, name="pytest-mlip-watchdog")
                self._thread.start()
            self._cond.notify()
            return self._next

    def disarm(self, token: int) -> None:
        with self._cond:
            self._armed.pop(token, None)
            self._cond.notify()

    def _run(self):
        with self._cond:
            while True:
                if not self._armed:
                    self._cond.wait()
                    continue
                deadline, args = min(self._armed.values(), key=lambda v: v[0])
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        _hard_stop(*args)


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def alarm_after(seconds: float | None):
    """Raise :class:`_Deadline` (its argument: the seconds elapsed) in the enclosed code after ``seconds``, by
    SIGALRM; a no-op without seconds, off the main thread or where the platform has no interval timer. The one
    timer of model calls and model factories."""
    if not (seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()):
        yield
        return
    start = time.perf_counter()

    def on_alarm(signum, frame):
        raise _Deadline(time.perf_counter() - start)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def call_deadline(seconds: float | None, model: str, atoms):
    """Interrupt the enclosed call after ``seconds`` (SIGALRM; main thread of a POSIX process only).

    A call stuck inside one C routine is interrupted when it returns to Python; a sleeping or looping
    call is interrupted on time. The interrupted call becomes a :class:`ModelTimeoutError`.
    """
    start = time.perf_counter()
    watchdog = None
    if seconds:  # the backstop: a call that cannot be interrupted must not hang the CI job
        watchdog = _WATCHDOG.arm(hard_stop_after(seconds), (seconds, model, atoms))
    try:
        with alarm_after(seconds), no_process_exit(f"model {model!r}"):
            yield
    except _Deadline as stop:
        elapsed = stop.args[0]
        if elapsed < 0.99 * seconds:  # not our timer: another process (or the model) sent SIGALRM
            raise ModelTimeoutError(model, atoms, f"model call stopped by a SIGALRM that did not come from "
                                    f"--mlip-timeout ({seconds:g} s), after {elapsed:.3g} s: another process or the "
                                    "model's own code sent it") from None
        raise ModelTimeoutError(model, atoms, f"model call timed out after {seconds:g} s (--mlip-timeout)") from None
    finally:
        if watchdog is not None:
            _WATCHDOG.disarm(watchdog)
    elapsed = time.perf_counter() - start
    if seconds and elapsed > seconds:  # the model swallowed the interrupt (or no timer could run): still an error
        raise ModelTimeoutError(model, atoms, f"model call timed out after {seconds:g} s (--mlip-timeout): it ran "
                                f"{elapsed:.3g} s and returned without stopping when interrupted")


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
    repeats: int = 0  # extra calls of the sampled determinism check (not counted in ``calls``)
    multi: int = 0  # calls on structures of two atoms or more
    flat: int = 0  # of those, calls whose forces were all exactly zero
    #: of those, calls on isolated structures (no periodic direction): a clean model's forces vanish there only at an
    #: exact equilibrium, never by a crystal's symmetry
    flat_isolated: int = 0
    #: (formula, energy rounded to 1e-9 eV) of the flat calls, at most FLAT_CALLS_KEPT: energies that are a sum of
    #: per-element constants over every call are no interaction (see reporting's no-interaction check)
    flat_calls: set = field(default_factory=set)
    #: the spread of the energies of every call on two atoms or more (see :class:`EnergySpread`)
    spread: "EnergySpread" = field(default_factory=lambda: EnergySpread())


@dataclass
class EnergySpread:
    """The smallest and largest energy of a model's calls on two atoms or more (total; and per atom on isolated
    structures), with the formulas met (a few suffice): one energy on every call of different compositions ignores
    the structure, whatever the forces say (held-out cases: E = -1 eV, or 1e300 eV, on every call with EMT's forces
    passed a run of zero-net-force and repulsive-wall contracts: a flat curve never falls)."""

    calls: int = 0
    total: tuple[float, float] = (math.inf, -math.inf)
    formulas: tuple[str, ...] = ()
    isolated: int = 0
    per_atom: tuple[float, float] = (math.inf, -math.inf)
    isolated_formulas: tuple[str, ...] = ()
    #: geometries met, whatever the elements (the element probe's dimers are one: an element-blind potential such as
    #: ASE's Lennard-Jones gives them one energy, legitimately)
    geometries: tuple[str, ...] = ()
    isolated_geometries: tuple[str, ...] = ()

    KEPT = 4  # formulas (and geometries) kept: two different ones are what the test needs

    def add(self, atoms, energy: float):
        formula = atoms.get_chemical_formula(mode="hill")
        self.calls += 1
        self.total = (min(self.total[0], energy), max(self.total[1], energy))
        self.formulas = _kept(self.formulas, formula, self.KEPT)
        isolated = not atoms.pbc.any()
        # computed only while a kept list has room (until four geometries are met; the test needs two)
        geometry = geometry_signature(atoms) if len(self.geometries) < self.KEPT or (
            isolated and len(self.isolated_geometries) < self.KEPT) else None
        if geometry:
            self.geometries = _kept(self.geometries, geometry, self.KEPT)
        if isolated:
            self.isolated += 1
            e = energy / len(atoms)
            self.per_atom = (min(self.per_atom[0], e), max(self.per_atom[1], e))
            self.isolated_formulas = _kept(self.isolated_formulas, formula, self.KEPT)
            if geometry:
                self.isolated_geometries = _kept(self.isolated_geometries, geometry, self.KEPT)

    def as_dict(self) -> dict:
        return {"calls": self.calls, "total": list(self.total), "formulas": list(self.formulas),
                "geometries": list(self.geometries), "isolated_geometries": list(self.isolated_geometries),
                "isolated": self.isolated, "per_atom": list(self.per_atom),
                "isolated_formulas": list(self.isolated_formulas)}

    def merge(self, data: dict) -> None:
        """Take another process's (or an earlier item's) spread in: counts add, ranges widen, formulas join."""
        self.calls += data["calls"]
        self.isolated += data["isolated"]
        self.total = (min(self.total[0], data["total"][0]), max(self.total[1], data["total"][1]))
        self.per_atom = (min(self.per_atom[0], data["per_atom"][0]), max(self.per_atom[1], data["per_atom"][1]))
        for f in data["formulas"]:
            self.formulas = _kept(self.formulas, f, self.KEPT)
        for g in data.get("geometries", ()):
            self.geometries = _kept(self.geometries, g, self.KEPT)
        for g in data.get("isolated_geometries", ()):
            self.isolated_geometries = _kept(self.isolated_geometries, g, self.KEPT)
        for f in data["isolated_formulas"]:
            self.isolated_formulas = _kept(self.isolated_formulas, f, self.KEPT)


def geometry_signature(atoms) -> str:
    """The geometry of ``atoms`` whatever its elements, position, orientation and numbering: the atom count, the
    periodic directions and cell volume, and the sorted interatomic distances (rounded to 1e-3 A; the first 256
    atoms)."""
    head = atoms[:256]
    d = np.sort(head.get_all_distances(mic=bool(atoms.pbc.any())), axis=None) if len(head) > 1 else np.zeros(0)
    volume = round(float(abs(atoms.cell.volume)), 3) if atoms.cell.rank == 3 else 0.0
    body = np.round(d, 3).tobytes() + repr((len(atoms), tuple(bool(p) for p in atoms.pbc), volume)).encode()
    return hashlib.sha256(body).hexdigest()[:16]


def _kept(kept: tuple[str, ...], formula: str, most: int) -> tuple[str, ...]:
    return kept if formula in kept or len(kept) >= most else tuple(sorted(kept + (formula,)))


#: distinct flat calls kept per evaluator for the no-interaction check (enough to over-determine a per-element fit)
FLAT_CALLS_KEPT = 64


def note_flat_call(kept: set, atoms, energy: float):
    """Keep one call whose forces were all exactly zero (its formula and energy) for the no-interaction check."""
    if len(kept) < FLAT_CALLS_KEPT:
        kept.add((atoms.get_chemical_formula(mode="hill"), round(float(energy), 9)))


@dataclass(frozen=True)
class RepeatSample:
    """The determinism law inside every run: a seeded sample of real model calls is made twice, and outputs that
    differ beyond the model's noise floor are a ``determinism`` violation, whatever contracts the run selected.

    The evaluator's first successful real call is always repeated (a model whose first output differs, a warm-up
    glitch, is caught whatever the sample draws), and so is the first call of each kind of system (its periodicity,
    its set of elements and its number of atoms: noise confined to slab calls, to one element's branch, or to cells
    of more than 8 atoms passed a 2% sample in held-out cases); besides them, a call is repeated while its evaluator has repeated
    fewer than ``minimum`` calls (per model, per process, so
    per xdist worker too) or when its configuration's hash falls in the ``fraction`` (the hash is of
    the configuration and the seed, so the sample is the same on every run). The floor is the determinism
    check's own default tolerance (>= 3x the float32 noise measured on the shipped models, see
    laws/determinism/).
    """

    fraction: float = 0.02
    minimum: int = 3
    seed: str = "pytest-mlip determinism sample"
    #: every this many real calls the evaluator's first call is made again and compared with its first output: state
    #: carried between calls (an energy that drifts with the call count) shows over many calls, not between two
    #: back-to-back ones (a held-out case passed a drift of 2e-6 eV/atom per call)
    anchor_every: int = 100

    def wants(self, key: str, repeated_so_far: int) -> bool:
        if repeated_so_far < self.minimum:
            return True
        h = int(hashlib.sha256((self.seed + key).encode()).hexdigest()[:8], 16)
        return h < self.fraction * 0x100000000

    @staticmethod
    def floor() -> dict[str, float]:
        from ..laws.determinism.check import DeterminismSettings

        return dict(DeterminismSettings.default_tolerance)


#: what :func:`evaluator_for` gives every evaluator of a pytest-mlip run
DEFAULT_SAMPLE = RepeatSample()


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
    #: sampled repeats (the determinism law on every run); None: off (an Evaluator built by hand)
    sample: RepeatSample | None = None
    #: determinism violations the sample found: one dict per repeated call whose outputs differed
    nondeterminism: list = field(default_factory=list)
    #: has the first real call's output been repeated? (it always is, besides the seeded sample)
    first_repeated: bool = False
    #: the kinds of system (periodicity, elements, number of atoms) whose first call was repeated
    kinds: set = field(default_factory=set)
    #: (configuration, output) of the first real call, made again every ``sample.anchor_every`` calls
    anchor: tuple | None = None
    #: the call count when the anchor was last made again at the end of the process's items (repeat_anchor)
    anchor_checked: int = -1
    #: digest of (energy, forces) -> the first configuration that gave them (see _refuse_stale)
    outputs_seen: dict = field(default_factory=dict)
    #: every model failure raised to a caller (cached ones again when asked again): a caller that turns one into a
    #: verdict marks it ``reported``; the pytest plugin lists an item's unreported ones as incomplete (a test that
    #: catches the error and passes must not hide garbage)
    raised: list = field(default_factory=list)
    #: the functions pytest-mlip's checks call, as before this model's first call (each call is compared with it)
    shared: object = None

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
                self.raised.append(hit)
                raise hit
            return hit
        try:
            result = self._call(work)
        except ModelEvaluationError as err:
            self.cache[key] = err
            if self.recorder is not None:
                self.recorder(self.model, key, err, work)
            self.raised.append(err)
            raise
        if self.sample is not None and not self.first_repeated:
            self._repeat_first_probe()
        kind = (tuple(bool(p) for p in work.pbc), tuple(sorted(set(work.numbers.tolist()))), len(work))
        new_kind = kind not in self.kinds
        self.kinds.add(kind)
        if self.sample is not None and (not self.first_repeated or new_kind
                                        or self.sample.wants(key, self.stats.repeats)):
            self.first_repeated = True  # the model's first real output is always repeated (a warm-up glitch)
            self._repeat_sampled(work, result)
        if self.sample is not None:
            if self.anchor is None:
                self.anchor = (work, result)
            elif self.stats.calls % self.sample.anchor_every == 0:
                self._repeat_sampled(*self.anchor, later=self.stats.calls)
        self.cache[key] = result
        if self.recorder is not None:
            self.recorder(self.model, key, result, work)
        return result

    def repeat_anchor(self) -> None:
        """The first call made again now (the process's last item): an output that changed after some calls shows
        however short the run (held-out round 13: a shift after the 30th of 41 calls passed; the anchor came back
        only every 100 calls). Once per process, after a call since the last one."""
        if self.sample is None or self.anchor is None or self.stats.calls == self.anchor_checked:
            return
        self.anchor_checked = self.stats.calls
        self._repeat_sampled(*self.anchor, later=self.stats.calls)

    def repeat(self, atoms) -> Evaluation:
        """A fresh model call on ``atoms`` that bypasses the cache (the determinism law compares it with the
        cached one); counted, validated and timed like any call, never stored in the cache."""
        try:
            return self._call(prepare(atoms))
        except ModelEvaluationError as err:
            self.raised.append(err)
            raise

    def _repeat_first_probe(self):
        """The model's first real call, when the element probe made it before this evaluator existed, repeated
        and compared like any sampled call."""
        counts = getattr(self.model, "probe_counts", None)
        if counts:  # the element probe's dimers count toward no interaction (taken once per process)
            self.model.probe_counts = None
            self.stats.multi += counts[0]
            self.stats.flat += counts[1]
            self.stats.flat_isolated += counts[3] if len(counts) > 3 else 0
            for call in counts[2]:
                if len(self.stats.flat_calls) < FLAT_CALLS_KEPT:
                    self.stats.flat_calls.add(call)
            if len(counts) > 4:  # and toward the blind-energy check (held-out round 19: E = -10 eV on every call,
                # EMT's forces, passed a suite of three structures, too few calls alone)
                self.stats.spread.merge(counts[4].as_dict())
        pending = getattr(self.model, "first_call", None)
        if not pending:
            return
        self.model.first_call = None
        atoms, results = pending
        try:
            first = validate_output(self.name, atoms, results, False)
        except ModelEvaluationError:
            return
        self._repeat_sampled(atoms, first)

    def _repeat_sampled(self, work, first: Evaluation, later: int | None = None):
        """Call the model again on ``work`` and record a determinism violation when the outputs differ beyond the
        floor (a second call that fails where the first succeeded differs too); ``later``: the first call, repeated
        after that many calls."""
        floor = self.sample.floor()
        self.stats.repeats += 1
        self.stats.calls -= 1  # the repeat is the sample's cost, counted apart
        try:
            again = self._call(work)
        except ModelEvaluationError as err:
            self.stats.failures -= 1
            self.nondeterminism.append({"model": self.name, "structure": work.get_chemical_formula(),
                                        "natoms": len(work), "energy": None, "forces": None,
                                        "floor": floor, "message": f"a repeated call failed: {err}"})
            return
        from ..laws.determinism.check import stress_change

        de = abs(again.energy - first.energy) / max(len(work), 1)
        df = float(np.abs(again.forces - first.forces).max()) if len(work) else 0.0
        ds = stress_change(first, again)
        if de > floor["energy"] or df > floor["forces"] or ds > floor.get("stress", np.inf):
            self.nondeterminism.append({"model": self.name, "structure": work.get_chemical_formula(),
                                        "natoms": len(work), "energy": de, "forces": df, "stress": ds,
                                        "floor": floor,
                                        "message": f"energy changed by {de:.3g} eV/atom, forces by {df:.3g} eV/A and "
                                                   f"stress by {ds:.3g} eV/A^3 between two identical calls"
                                                   + (f" (the first call, made again {later} calls later)"
                                                      if later else "")})

    def _call(self, work) -> Evaluation:
        """One real model call: counted, timed, under the per-call deadline, its output validated."""
        props = ["energy", "forces"] + (["stress"] if self.wants_stress(work) else [])
        if self.shared is None:
            from .shared import SharedFunctions

            self.shared = SharedFunctions()
        from .shared import guarded_call

        replaced: list = []
        start = time.perf_counter()
        self.stats.calls += 1
        try:
            try:
                with guarded_call(self.shared, replaced), call_deadline(CALL_TIMEOUT["seconds"], self.name, work):
                    out = self.model.compute(work, props)
            except (ModelEvaluationError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # the model's own failure, not ours: SystemExit and the like included
                raise ModelEvaluationError(self.name, work, f"model raised {type(exc).__name__}: {exc}") from exc
            finally:
                self.stats.seconds += time.perf_counter() - start
            if replaced:  # the checks and the report would run the model's code (held-out round 15)
                from .shared import named

                raise ModelEvaluationError(self.name, work, f"the model changed {named(replaced)} during a call "
                                           "(put back): a model must not change Python's builtins, math, json, os, "
                                           "numpy, ASE's Atoms and Calculator or the process's working directory, "
                                           "recursion limit and standard streams")
            result = self._check(work, out, "stress" in props)
            self._refuse_stale(work, result)
            if len(work) >= 2:
                self.stats.multi += 1
                self.stats.spread.add(work, result.energy)
                if not result.forces.any():
                    self.stats.flat += 1
                    self.stats.flat_isolated += not work.pbc.any()
                    note_flat_call(self.stats.flat_calls, work, result.energy)
            return result
        except ModelEvaluationError:
            self.stats.failures += 1
            raise

    def energy(self, atoms) -> float:
        return self.evaluate(atoms).energy

    def forces(self, atoms) -> np.ndarray:
        return self.evaluate(atoms).forces

    def _refuse_stale(self, work, result: Evaluation) -> None:
        """Outputs identical to an earlier call's, bit for bit (energy and non-zero forces), on a geometry that is
        not the same up to a translation, rotation, mirror image or renumbering, are an earlier call's outputs
        returned again: a calculator that did not recompute (held-out round 13: a model that returned its first
        results for every structure of the same size passed, its dimer curve flat). Isolated structures only."""
        if not result.forces.any() or len(work) > STALE_ATOMS or work.pbc.any():
            # zero forces repeat legitimately (atoms out of each other's reach: the no-interaction test's); periodic
            # cells are left out (a law's planted plateau under strain repeats its outputs by design)
            return
        key = hashlib.sha256(np.float64(result.energy).tobytes() + result.forces.tobytes()).digest()
        earlier = self.outputs_seen.get(key)
        if earlier is None:
            if len(self.outputs_seen) < STALE_KEPT:
                self.outputs_seen[key] = work.copy()
            return
        cutoff = getattr(getattr(self.model, "info", None), "cutoff", None)
        if not same_geometry(earlier, work, reach=float(cutoff) if cutoff else STALE_REACH):
            raise ModelOutputError(self.name, work, "energy", "the model returned exactly the energy and forces of an "
                                   f"earlier call on another geometry ({earlier.get_chemical_formula()}, other "
                                   "interatomic distances): its "
                                   "results were not recomputed (a calculator that skips calculate() when the "
                                   "positions change?)")

    def _check(self, atoms, out, want_stress) -> Evaluation:
        return validate_output(self.name, atoms, out, want_stress)


#: configurations kept per evaluator for the stale-output test (the earliest calls of at most STALE_ATOMS atoms:
#: ~20 MB at most)
STALE_KEPT = 2048
STALE_ATOMS = 200


def same_geometry(a, b, reach: float, tol: float = 1e-6) -> bool:
    """The same geometry, as far as a model can see, up to a translation, rotation, mirror image or renumbering: the
    same periodicity and cell shape, and the same sorted interatomic distances shorter than ``reach`` (minimum
    image in periodic directions). Longer distances are not compared: two fragments moved apart beyond a model's
    cutoff give it the same outputs (the dissociation law's geometries). Elements are not compared either: a model
    that ignores them (Lennard-Jones, Morse) gives H2 and C2 at one distance the same outputs."""
    if len(a) != len(b) or a.pbc.tolist() != b.pbc.tolist():
        return False
    if a.pbc.any() and not np.allclose(a.cell.cellpar(), b.cell.cellpar(), atol=tol):
        return False
    if len(a) < 2:
        return True
    da, db = (np.sort(x.get_all_distances(mic=bool(x.pbc.any())), axis=None) for x in (a, b))
    da, db = da[da < reach], db[db < reach]
    return da.shape == db.shape and bool(np.allclose(da, db, atol=tol))


#: A: the distances the stale-output test compares when the model declares no cutoff (shorter than any MLIP's)
STALE_REACH = 3.0


#: the public getter a check's value is read through, per property (ASE's calculator protocol)
GETTERS = {"energy": "get_potential_energy", "forces": "get_forces", "stress": "get_stress"}


def _same(a, b) -> bool:
    """Do two raw outputs hold the same numbers (NaN equal to NaN)? Garbage on one side only is a difference."""
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return repr(a) == repr(b)
    return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=True))


def read_outputs(model: str, calc, work, properties) -> dict:
    """A calculator's outputs for ``work``, read once through its public getters (what an ASE user reads), after
    one ``calculate`` call; each must agree with ``calc.results``, so the values the checks use and the values the
    model publishes are one and the same (a getter that says NaN while ``results`` looks fine, or the reverse, is
    a :class:`ModelOutputError`)."""
    from ase.calculators.calculator import PropertyNotImplementedError, all_changes

    calc.results = {}
    calc.calculate(work, list(properties), list(all_changes))
    results = dict(calc.results)
    calc.atoms = work.copy()  # the getters answer from this call's results, no second calculation
    out = {}
    for prop in properties:
        getter = getattr(calc, GETTERS.get(prop, ""), None)
        try:
            value = getter(work) if getter is not None else results.get(prop)
        except PropertyNotImplementedError:
            if results.get(prop) is not None:  # a value the model's own getter refuses to give (a held-out case)
                raise ModelOutputError(model, work, prop, f"{GETTERS[prop]}() raised PropertyNotImplementedError but "
                                       f"results[{prop!r}] holds {_describe(results[prop])}; the calculator must "
                                       f"publish one value through both (or not declare {prop})") from None
            value = None
        if prop in results and value is not None and not _same(value, results[prop]):
            raise ModelOutputError(model, work, prop, f"{GETTERS[prop]}() returned {_describe(value)} but "
                                   f"results[{prop!r}] holds {_describe(results[prop])}{_difference(value, results[prop])}; "
                                   "the calculator must publish one value through both")
        if value is not None:
            out[prop] = value
    return out


def _difference(a, b) -> str:
    """ " (largest difference X)" between two outputs of one shape, else "": what the shapes do not show."""
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if x.shape == y.shape and x.size:
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.abs(x - y)
            d = d[np.isfinite(d)]
            if d.size:
                return f" (largest difference {float(d.max()):.3g})"
    except (TypeError, ValueError):
        pass
    return ""


def _describe(value) -> str:
    """What a bad output is, in a few words: its type and, for arrays, shape and dtype; short values shown."""
    if isinstance(value, np.ndarray):
        text = f"an array of shape {value.shape} and dtype {value.dtype}"
    else:
        text = f"a {type(value).__name__}"
    r = repr(value)
    return text + (f" ({r})" if len(r) <= 40 else "")


def _numeric_array(model, atoms, prop, value) -> np.ndarray:
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise ModelOutputError(model, atoms, prop, f"got {_describe(value)}, expected numbers")
    try:
        arr = np.asarray(value)
    except Exception:  # ragged lists and the like
        raise ModelOutputError(model, atoms, prop, f"got {_describe(value)}, expected numbers") from None
    if arr.dtype.kind not in "iuf":  # bool, complex, object, strings: not a real number
        raise ModelOutputError(model, atoms, prop, f"got {_describe(value)}, expected real numbers")
    return arr.astype(np.float64)


#: the largest magnitudes a model's outputs may have: finite numbers beyond them are no interatomic energy, force or
#: stress (a held-out case: an energy of 1e300 eV on every call passed). Far beyond physics (the screened nuclear
#: repulsion of two plutonium nuclei 0.1 A apart is ~2e5 eV per atom). The energy's bound is float64's: beyond 1e12
#: eV per atom less than a meV of resolution is left, and the energy laws would compare rounding (round 14: an offset
#: of 1e24 eV per atom passed them all). Textbook potentials stay inside it down to ~0.2 A (the registered
#: Lennard-Jones, sigma 2 A: 3e9 eV at 0.3 A); forces and stresses, never offset, keep a bound of overflow's order.
OUTPUT_LIMITS = {"energy": 1e12, "forces": 1e27, "stress": 1e27}


def validate_output(model: str, atoms, out: dict, want_stress: bool) -> Evaluation:
    """A model's raw results as an :class:`Evaluation`, or a :class:`ModelOutputError` naming what is wrong.

    Energy: one finite real number, a scalar (a 0-d array is accepted; a one-element or per-atom array is not).
    Forces: finite reals of shape (N, 3). Stress, when asked for and the model declares it: finite reals
    of shape (6,) (Voigt) or (3, 3). Magnitudes within :data:`OUTPUT_LIMITS` (energy per atom in eV, forces in eV/A,
    stress in eV/A^3).
    """
    n = len(atoms)
    if out.get("energy") is None:
        raise ModelOutputError(model, atoms, "energy", "no energy returned (results['energy'] missing or None)")
    for prop in ("energy", "forces", "stress"):
        if isinstance(out.get(prop), np.ma.MaskedArray) and np.ma.is_masked(out[prop]):
            raise ModelOutputError(model, atoms, prop, "a masked value (numpy.ma): no number where one is due")
    e = _numeric_array(model, atoms, "energy", out["energy"])
    if e.size != 1:
        raise ModelOutputError(model, atoms, "energy", f"got shape {e.shape}, expected one number for the "
                                                       "whole structure (a per-atom array is not an energy)")
    if e.ndim != 0:
        raise ModelOutputError(model, atoms, "energy", f"got a {type(out['energy']).__name__} of shape {e.shape}, "
                                                       "expected a scalar (results['energy'] = float(e) or e.item())")
    energy = float(e)
    if not math.isfinite(energy):
        raise ModelOutputError(model, atoms, "energy", f"non-finite energy ({energy})")
    if abs(energy) > OUTPUT_LIMITS["energy"] * max(n, 1):
        raise ModelOutputError(model, atoms, "energy", f"energy {energy:.3g} eV is beyond any interatomic energy "
                                                       f"(|E| > {OUTPUT_LIMITS['energy']:.0e} eV per atom)")
    if out.get("forces") is None:
        raise ModelOutputError(model, atoms, "forces", "no forces returned (results['forces'] missing or None)")
    forces = _numeric_array(model, atoms, "forces", out["forces"])
    if forces.shape != (n, 3):
        raise ModelOutputError(model, atoms, "forces", f"got shape {forces.shape}, expected ({n}, 3)")
    if not np.all(np.isfinite(forces)):
        bad = int(np.argwhere(~np.isfinite(forces))[0][0])
        raise ModelOutputError(model, atoms, "forces", f"non-finite forces on atom {bad}")
    if n and np.abs(forces).max() > OUTPUT_LIMITS["forces"]:
        bad = int(np.argmax(np.abs(forces).max(axis=1)))
        raise ModelOutputError(model, atoms, "forces", f"force {np.abs(forces).max():.3g} eV/A on atom {bad} is "
                                                       f"beyond any interatomic force (> {OUTPUT_LIMITS['forces']:.0e} eV/A)")
    stress = None
    if want_stress:
        if out.get("stress") is None:
            raise ModelOutputError(model, atoms, "stress", "no stress returned though the model declares it")
        s = _numeric_array(model, atoms, "stress", out["stress"])
        if s.shape == (3, 3):
            s = s[[0, 1, 2, 1, 0, 0], [0, 1, 2, 2, 2, 1]]
        elif s.shape != (6,):
            raise ModelOutputError(model, atoms, "stress", f"got shape {s.shape}, expected (6,) or (3, 3)")
        if not np.all(np.isfinite(s)):
            raise ModelOutputError(model, atoms, "stress", "non-finite stress")
        if np.abs(s).max() > OUTPUT_LIMITS["stress"]:
            raise ModelOutputError(model, atoms, "stress", f"stress {np.abs(s).max():.3g} eV/A^3 is beyond any "
                                                           f"interatomic stress (> {OUTPUT_LIMITS['stress']:.0e} eV/A^3)")
        stress = s
    return Evaluation(energy=energy, forces=forces, stress=stress)


_EVALUATORS: dict[str, Evaluator] = {}


def evaluator_for(spec: str) -> Evaluator:
    """The process-wide evaluator of a model spec (loads the model on first use)."""
    if spec not in _EVALUATORS:
        from ..models.registry import load

        _EVALUATORS[spec] = Evaluator(load(spec), sample=DEFAULT_SAMPLE)
    return _EVALUATORS[spec]


def all_evaluators() -> dict[str, Evaluator]:
    return dict(_EVALUATORS)
