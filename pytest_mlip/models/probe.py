"""Probe which elements a bare calculator supports (no declared metadata).

"Unsupported" is what the model says: it raises an error that names the element or the species
(``KeyError``, or a message such as "element H not supported", "unknown species"). An element whose
dimer gives garbage (NaN, a wrong shape, a string) or an unrecognisable exception is *supported* as far
as the probe can tell: the contracts then evaluate it, and the evaluator turns the garbage into an
``error`` verdict naming the property. Garbage must never read as "element not supported".
"""

from __future__ import annotations

import re

UNSUPPORTED = re.compile(r"(?i)(not\s+(be\s+)?support|unsupported|unknown\s+(element|species|atom)|"
                         r"no\s+(parameters?|potential)|not\s+(in|available|implemented)\s+for|"
                         r"element|species|atomic\s+number)")


def says_unsupported(exc: BaseException) -> bool:
    """Does this exception read as "this element is not supported" (rather than a crash)?"""
    return isinstance(exc, (KeyError, NotImplementedError)) or bool(UNSUPPORTED.search(str(exc)))


def probe_elements(calc, max_z: int = 94, first: list | None = None) -> tuple[str, ...]:
    """Elements a dimer at 2.5 A in a 20 A box is evaluated for without the model saying it is unsupported.

    ``first``, when a list, receives (atoms, results) of the first call that returned: the model's first real
    call, which the evaluator repeats (the determinism sample)."""
    from ase import Atoms
    from ase.data import chemical_symbols

    from ..errors import ModelTimeoutError
    from ..evaluation.evaluator import CALL_TIMEOUT, call_deadline

    ok = []
    for z in range(1, max_z + 1):
        atoms = Atoms(numbers=[z, z], positions=[[0, 0, 0], [0, 0, 2.5]], cell=[20, 20, 20], pbc=False)
        try:
            calc.results = {}
            with call_deadline(CALL_TIMEOUT["seconds"], "probe", atoms):
                calc.calculate(atoms, ["energy", "forces"], ["positions", "numbers", "cell", "pbc"])
            if first is not None and not first:
                first.append((atoms.copy(), dict(calc.results)))
        except ModelTimeoutError:
            # a model that hangs says nothing about its elements: take them all, the contracts report the hang
            ok += [chemical_symbols[k] for k in range(z, max_z + 1)]
            break
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the model's own words decide (SystemExit is a crash, not an exit)
            if says_unsupported(exc):
                continue
        ok.append(chemical_symbols[z])
    calc.results = {}
    return tuple(ok)
