"""Chemical neighbourhoods for widening a failure into a scope grid.

A failure on one element (or molecule, or crystal) is widened to its
neighbours: the elements next to it in the periodic table (same period,
adjacent group; same group, adjacent period), G2 molecules made of the same
kinds of elements, crystals with the same reference structure. Elements are
also sorted into coarse classes (s-block metal, transition metal, p-block
metal, non-metal, noble gas) so a hypothesis can claim "transition-metal
pairs" rather than "Ni-Ni".
"""

from __future__ import annotations

from functools import lru_cache

#: first atomic number of each period
_PERIOD_START = [(1, 1), (3, 2), (11, 3), (19, 4), (37, 5), (55, 6), (87, 7)]
_P_METALS = {"Al", "Ga", "In", "Sn", "Tl", "Pb", "Bi", "Po"}
_NOBLE = {"He", "Ne", "Ar", "Kr", "Xe", "Rn"}
CLASSES = ("s-metal", "transition-metal", "p-metal", "non-metal", "noble-gas", "f-block")


def period_group(z: int) -> tuple[int, int | None]:
    """(period, group) of element ``z``; group None for the f-block (La-Yb, Ac-No)."""
    if z == 1:
        return 1, 1
    if z == 2:
        return 1, 18
    start, period = max((s, p) for s, p in _PERIOD_START if s <= z)
    i = z - start
    if period in (2, 3):
        return period, (i + 1 if i < 2 else i + 11)
    if period in (4, 5):
        return period, i + 1
    if i < 2:
        return period, i + 1
    if i == 2:
        return period, 3  # La / Ac
    if i < 17:
        return period, None
    return period, i - 13


@lru_cache(maxsize=None)
def _table() -> dict[tuple[int, int], str]:
    from ase.data import chemical_symbols

    out = {}
    for z in range(1, 104):
        p, g = period_group(z)
        if g is not None:
            out[(p, g)] = chemical_symbols[z]
    return out


def element_class(symbol: str) -> str:
    from ase.data import atomic_numbers

    z = atomic_numbers[symbol]
    p, g = period_group(z)
    if symbol in _NOBLE:
        return "noble-gas"
    if g is None:
        return "f-block"
    if 3 <= g <= 12:
        return "transition-metal"
    if symbol in _P_METALS:
        return "p-metal"
    if g in (1, 2) and symbol != "H":
        return "s-metal"
    return "non-metal"


def neighbours(symbol: str) -> list[str]:
    """Periodic-table neighbours of an element, nearest first (same period, then same group)."""
    from ase.data import atomic_numbers

    p, g = period_group(atomic_numbers[symbol])
    if g is None:
        return []
    t = _table()
    out = []
    for dp, dg in ((0, 1), (0, -1), (1, 0), (-1, 0), (0, 2), (0, -2)):
        s = t.get((p + dp, g + dg))
        if s and s != symbol and s not in _NOBLE:
            out.append(s)
    return out


def same_class_neighbours(symbol: str) -> list[str]:
    c = element_class(symbol)
    return [s for s in neighbours(symbol) if element_class(s) == c]


def signature(elements) -> tuple[str, ...]:
    """The distinct element classes of a unit, sorted (what a scope claim is about)."""
    return tuple(sorted({element_class(e) for e in elements}))


# --- molecules and crystals ----------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _g2() -> dict[str, tuple[str, ...]]:
    from ase.build import molecule
    from ase.collections import g2

    out = {}
    for name in g2.names:
        try:
            out[name] = tuple(molecule(name).get_chemical_symbols())
        except Exception:
            continue
    return out


def is_planar(name: str) -> bool:
    """Is the G2 molecule planar (all atoms within 0.01 A of one plane)?"""
    import numpy as np
    from ase.build import molecule

    pos = molecule(name).positions
    if len(pos) <= 3:
        return True
    c = pos - pos.mean(axis=0)
    return bool(np.linalg.svd(c, compute_uv=False)[-1] < 0.01 * np.sqrt(len(pos)))


def similar_molecules(name: str, limit: int = 6) -> list[str]:
    """G2 molecules with the same element classes and a similar size, most similar first."""
    g2 = _g2()
    if name not in g2:
        return []
    ref = g2[name]
    ref_set, ref_sig = set(ref), set(signature(set(ref)))
    scored = []
    for other, syms in g2.items():
        if other == name or len(syms) < 3:
            continue
        if not set(signature(set(syms))) <= ref_sig | {"non-metal"}:
            continue
        overlap = len(ref_set & set(syms)) / len(ref_set | set(syms))
        size = abs(len(syms) - len(ref)) / max(len(ref), 1)
        if size > 1.0:
            continue
        scored.append((-(overlap - 0.5 * size), other))
    return [o for _, o in sorted(scored)[:limit]]


def reference_structure(symbol: str) -> tuple[str | None, float | None]:
    """(crystal structure, lattice constant a) of an element's reference state, from ase.data."""
    from ase.data import atomic_numbers, reference_states

    ref = reference_states[atomic_numbers[symbol]]
    if not ref:
        return None, None
    return ref.get("symmetry"), ref.get("a")


def facet_for(symbol: str) -> str | None:
    """The close-packed facet of an element's reference crystal (what ase.build can make)."""
    sym, _ = reference_structure(symbol)
    return {"fcc": "fcc111", "bcc": "bcc110", "hcp": "hcp0001"}.get(sym or "")
