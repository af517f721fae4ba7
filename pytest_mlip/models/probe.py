"""Probe which elements a bare calculator supports (no declared metadata).

"Unsupported" is what the model says about *that* element: it raises an error that names it (its symbol,
atomic number or name) as a ``KeyError`` key, or in a message such as "element H not supported", "unknown
species 1". An element whose dimer gives garbage (NaN, a wrong shape, a string) or an exception that names no
element (``KeyError('whatever')``, "model exploded") is *supported* as far as the probe can tell: the contracts
then evaluate it, and the evaluator turns the garbage into an ``error`` verdict naming the property; the probe's
own failures are model failures too, reported with the next item (the run is incomplete). Garbage must
never read as "element not supported".
"""

from __future__ import annotations

import re

import numpy as np

UNSUPPORTED = re.compile(r"(?i)(not\s+(be\s+)?support|unsupported|unknown\s+(element|species|atom)|"
                         r"no\s+(parameters?|potential)|not\s+(in|available|implemented)\s+for|"
                         r"element|species|atomic\s+number)")


def names_element(text: str, z: int) -> bool:
    """Does ``text`` name element ``z``: its symbol ("Cu" also in "CuNi", "cu" as a word of its own), its atomic
    number as a whole number, or its name?"""
    from ase.data import atomic_names, chemical_symbols

    symbol = chemical_symbols[z]
    return bool(re.search(rf"(?<![A-Za-z]){symbol}(?![a-z])", text)
                or re.search(rf"(?i)(?<![A-Za-z]){symbol}(?![A-Za-z])", text)
                or re.search(rf"(?<![\d.]){z}(?![\d.])", text)
                or re.search(rf"(?i)\b{atomic_names[z]}\b", text))


def says_unsupported(exc: BaseException, z: int) -> bool:
    """Does this exception read as "element ``z`` is not supported" (rather than a crash)? A ``KeyError`` whose
    key is the element (symbol or atomic number), or a ``NotImplementedError`` or a message in the words of
    :data:`UNSUPPORTED` that names the element; an exception that names no element is the model's failure."""
    from ase.data import chemical_symbols

    if isinstance(exc, KeyError) and exc.args:
        key = exc.args[0]
        if isinstance(key, (int, str)) and not isinstance(key, bool) and str(key) in (str(z), chemical_symbols[z]):
            return True
    text = str(exc)
    worded = isinstance(exc, (KeyError, NotImplementedError)) or bool(UNSUPPORTED.search(text))
    return worded and names_element(text, z)


def probe_elements(calc, max_z: int = 94, first: list | None = None, name: str = "probe",
                   counts: list | None = None) -> tuple[str, ...]:
    """Elements a dimer at 2.5 A in a 20 A box is evaluated for without the model saying it is unsupported.

    ``first``, when a list, receives (atoms, results) of the first call that returned: the model's first real
    call, which the evaluator repeats (the determinism sample). ``counts``, when a list, receives what the
    no-interaction and blind-energy checks count ([valid dimer calls, those with every force exactly zero, their
    formulas and energies, those isolated, the spread of every valid call's energy]). ``name`` is the model's spec
    (what a timeout names). A dimer that has a force is asked at two more distances (:func:`ignores_geometry`)."""
    from ase.data import chemical_symbols

    from ..errors import ModelTimeoutError
    from ..evaluation.evaluator import EnergySpread, note_flat_call, validate_output
    from ..evaluation.shared import SharedFunctions, named

    shared = SharedFunctions()
    ok, bad = [], []
    moving = None  # (z, energy, largest force) of the first valid dimer with a force: asked at other distances
    for z in range(1, max_z + 1):
        label = f"{chemical_symbols[z]}2 at 2.5 A"
        try:
            atoms, replaced = dimer_call(calc, name, shared, z, 2.5)
            if replaced:  # as in the evaluator's calls (held-out round 15: builtins.max replaced in calculate)
                bad.append(f"{label}: the model changed {named(replaced)} during a call (put back): a model must not "
                           "change Python's builtins, math, json, os, numpy, ASE's Atoms and Calculator or the "
                           "process's working directory, recursion limit and standard streams")
                ok.append(chemical_symbols[z])
                continue
            if first is not None and not first:
                first.append((atoms.copy(), dict(calc.results)))
            out = validate_output(name, atoms, dict(calc.results), want_stress=False)
            if moving is None and np.abs(out.forces).max() >= MOVING_FORCE:
                moving = (z, out.energy, float(np.abs(out.forces).max()))
            if counts is not None:
                if not counts:
                    counts += [0, 0, set(), 0, EnergySpread()]
                counts[0] += 1
                counts[4].add(atoms, out.energy)  # dimers of every element it takes: one energy on all ignores them
                if not out.forces.any():
                    counts[1] += 1
                    counts[3] += not atoms.pbc.any()  # the probe's dimers are isolated
                    note_flat_call(counts[2], atoms, out.energy)
        except ModelTimeoutError as exc:
            # a model that hangs says nothing about its elements: take them all, the contracts report the hang
            bad.append(f"{label}: {exc}")
            ok += [chemical_symbols[k] for k in range(z, max_z + 1)]
            break
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the model's own words decide (SystemExit is a crash, not an exit)
            if says_unsupported(exc, z):
                continue
            bad.append(f"{label}: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")
        ok.append(chemical_symbols[z])
    if moving is not None:
        line = ignores_geometry(calc, name, shared, *moving)
        if line:
            bad.append(line)
    calc.results = {}
    if bad:
        PROBE_FAILURES.setdefault(name, []).extend(bad)
    return tuple(ok)


#: eV/A: a dimer force at least this large says the energy must change with the distance
MOVING_FORCE = 1e-2
#: eV/atom: energies within it are one energy (the determinism law's energy floor)
SAME_ENERGY = 1e-5
#: A: the distances a dimer with a force at 2.5 A is asked again at
OTHER_DISTANCES = (2.0, 3.0)


def dimer_call(calc, name: str, shared, z: int, distance: float):
    """One probe call: the dimer of element ``z`` at ``distance`` A in a 20 A box, guarded (shared functions the
    call replaces are put back and listed) and timed like the evaluator's calls; (atoms, replaced), the outputs left
    in ``calc.results``."""
    from ase import Atoms

    from ..evaluation.evaluator import CALL_TIMEOUT, call_deadline, named_call
    from ..evaluation.shared import guarded_call

    atoms = Atoms(numbers=[z, z], positions=[[0, 0, 0], [0, 0, distance]], cell=[20, 20, 20], pbc=False)
    calc.results = {}
    replaced: list = []
    with guarded_call(shared, replaced), call_deadline(CALL_TIMEOUT["seconds"], name, atoms):
        named_call(name)(calc.calculate, atoms, ["energy", "forces"], ["positions", "numbers", "cell", "pbc"])
    return atoms, replaced


def ignores_geometry(calc, name: str, shared, z: int, energy: float, force: float) -> str | None:
    """A probe failure when a dimer with a force of ``force`` eV/A at 2.5 A has one energy at 2.0, 2.5 and 3.0 A:
    forces that move the atoms with an energy that does not follow them (held-out round 19: E = -3 eV per atom +
    0.1 with EMT's forces passed a suite of zero-net-force contracts, which never look at the energy). Two calls;
    a failure on them says nothing here (the contracts meet it)."""
    from ase.data import chemical_symbols

    from ..evaluation.evaluator import validate_output

    for d in OTHER_DISTANCES:
        try:
            atoms, replaced = dimer_call(calc, name, shared, z, d)
            if replaced:
                return None
            e = validate_output(name, atoms, dict(calc.results), want_stress=False).energy
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - a timeout or garbage here is the contracts' to report
            return None
        if abs(e - energy) > 2 * SAME_ENERGY:
            return None
    symbol = chemical_symbols[z]
    return (f"{symbol}2 at 2.0, 2.5 and 3.0 A: the energy ignores the geometry: {energy:.6g} eV at each distance "
            f"while the force at 2.5 A is {force:.3g} eV/A (an energy that does not follow the atoms)")


#: model spec -> what the element probe's calls returned that is not a valid output (garbage, a crash, a timeout):
#: model failures no contract may ever evaluate again, drained into the next item's report (the run is incomplete)
PROBE_FAILURES: dict[str, list[str]] = {}


def take_probe_failures(spec: str) -> list[str]:
    return PROBE_FAILURES.pop(spec, [])
