"""Calculators whose outputs are garbage, chosen by a corruption name (the self-attack suite draws them).

``Corrupted(corruption)`` wraps the clean Morse reference and corrupts one output on structures of at least
``min_atoms`` atoms. ``from_env`` is a factory for plugin runs: the corruption comes from
``MLIP_TEST_CORRUPTION`` (and ``MLIP_TEST_CORRUPTION_MIN_ATOMS``).
"""

from __future__ import annotations

import os

import numpy as np
from ase.calculators.calculator import Calculator, all_changes

from . import clean_morse


def _corrupt(kind: str, value, n: int):
    if kind == "nan":
        return np.asarray(value, dtype=float) * np.nan
    if kind == "inf":
        return np.asarray(value, dtype=float) + np.inf
    if kind == "string":
        return "0.0"
    if kind == "none":
        return None
    if kind == "complex":
        return np.asarray(value, dtype=float) + 1j
    if kind == "bool":
        return True
    if kind == "object":
        return object()
    if kind == "per_atom":
        return np.full(n, float(np.sum(value)) / max(n, 1))
    if kind == "flat":
        return np.asarray(value, dtype=float).reshape(-1)
    if kind == "short":
        return np.asarray(value, dtype=float)[:-1]
    if kind == "extra_row":
        return np.vstack([np.atleast_2d(value), np.zeros((1, np.atleast_2d(value).shape[1]))])
    if kind == "ragged":
        return [[1.0, 2.0], [3.0]]
    if kind == "wrapped":  # the right number inside a length-1 array: not a scalar
        return np.asarray([float(np.sum(value))])
    if kind == "listed":
        return [float(np.sum(value))]
    raise ValueError(kind)


#: corruptions that make each output garbage (not every kind fits every output)
CORRUPTIONS = {
    "energy": ["nan", "inf", "string", "none", "complex", "bool", "object", "per_atom", "ragged", "wrapped",
               "listed"],
    "forces": ["nan", "inf", "string", "none", "complex", "object", "flat", "short", "extra_row", "ragged"],
    "stress": ["nan", "inf", "string", "complex", "short", "ragged"],
    "missing": ["energy", "forces"],
}


class Corrupted(Calculator):
    implemented_properties = ["energy", "forces", "stress"]

    def __init__(self, prop: str, kind: str, min_atoms: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.base = clean_morse()
        self.prop, self.kind, self.min_atoms = prop, kind, min_atoms
        self.mlip_metadata = {"cutoff": 5.0, "dtype": "float64", "conservative": True}

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        work = self.atoms.copy()
        want = ["energy", "forces"] + (["stress"] if work.pbc.all() else [])
        self.base.calculate(work, want, all_changes)
        out = {k: self.base.results[k] for k in want}
        if len(work) >= self.min_atoms:
            if self.prop == "hang":  # a model stuck in one call (the timeout's test)
                import time

                time.sleep(float(self.kind))
            elif self.prop == "swallow":  # a model stuck in one call that swallows the timeout's interrupt
                import time

                end = time.monotonic() + float(self.kind)
                while time.monotonic() < end:
                    try:
                        time.sleep(max(end - time.monotonic(), 0.0))
                    except BaseException:  # noqa: BLE001 (what the mutant is for)
                        pass
            elif self.prop == "deaf":  # a model that ignores SIGALRM and then hangs (or a call stuck in native code)
                import signal
                import time

                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                time.sleep(float(self.kind))
            elif self.prop == "exit":  # a model that calls sys.exit (or raises another BaseException)
                raise SystemExit(int(self.kind))
            elif self.prop == "missing":
                out.pop(self.kind, None)
            elif self.prop == "results":  # results hold NaN; the public getter answers the clean value
                self.clean = dict(out)
                out[self.kind] = _corrupt("nan", out[self.kind], len(work))
            elif self.prop in out:
                out[self.prop] = _corrupt(self.kind, out[self.prop], len(work))
        self.results = out

    def get_property(self, name, atoms=None, allow_calculation=True):
        value = super().get_property(name, atoms, allow_calculation)
        n = len(self.atoms) if self.atoms is not None else 0
        if name == self.kind and n >= self.min_atoms:
            if self.prop == "getter":  # the public getter says NaN while results look fine
                return _corrupt("nan", value, n)
            if self.prop == "offset":  # the public getter says another number (+0.5) than results
                return np.asarray(value) + 0.5
            if self.prop == "refuse":  # the public getter refuses a property results hold
                from ase.calculators.calculator import PropertyNotImplementedError

                raise PropertyNotImplementedError(name)
            if self.prop == "results":
                return self.clean[name]
        return value


def from_env():
    prop, _, kind = os.environ.get("MLIP_TEST_CORRUPTION", "energy:nan").partition(":")
    return Corrupted(prop, kind, int(os.environ.get("MLIP_TEST_CORRUPTION_MIN_ATOMS", "0")))


class Zero(Calculator):
    """Zero energy, forces and stress everywhere: finite, self-consistent and physically empty (a held-out case:
    it passed Born stability, whose tensor of zeros has no negative eigenvalue)."""

    implemented_properties = ["energy", "forces", "stress"]

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        self.results = {"energy": 0.0, "forces": np.zeros((len(self.atoms), 3)), "stress": np.zeros(6)}


def zero():
    return Zero()
