"""Hypothesis strategies for admissible structures, for your own property tests.

Each strategy draws only admissible inputs (the same kinds of Z the adversary
searches) and shrinks toward simple ones::

    from hypothesis import given, settings
    from pytest_mlip.strategies import clusters

    @settings(max_examples=25, deadline=None)
    @given(clusters("Cu4", min_distance=2.0))
    def test_forces_sum_to_zero(atoms):
        ...

* :func:`dimers`: two atoms at a distance in a range, any bond direction;
* :func:`clusters`: isolated clusters whose atoms are at least ``min_distance``
  apart (jittered grid sites: admissible by construction, no rejection);
* :func:`strained_bulk`: a crystal from ``ase.build.bulk`` under a bounded
  Voigt strain, atoms displaced by a bounded amount;
* :func:`slab_adsorbate`: a slab from ``ase.build`` with an adsorbate (atom
  or G2 molecule) at a height range above its top layer, anywhere laterally;
* :func:`domain_points`: points of an adversary search problem's Z, which
  :class:`~pytest_mlip.adversary.search.Search` uses for its
  ``hypothesis.target()`` baseline.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from hypothesis import strategies as st

__all__ = ["dimers", "clusters", "strained_bulk", "slab_adsorbate", "domain_points"]

VACUUM = 10.0


def _unit(**kw):
    return st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False, **kw)


def dimers(elements: Sequence[str] = ("H", "C", "N", "O", "Cu"), r: tuple[float, float] = (0.5, 3.0),
           orientation: bool = True) -> st.SearchStrategy:
    """Isolated dimers of two of ``elements`` at a distance in ``r`` (A), any direction when ``orientation``."""
    lo, hi = map(float, r)
    if not 0 < lo <= hi:
        raise ValueError(f"dimers: need 0 < r[0] <= r[1], got {r}")

    @st.composite
    def build(draw):
        from ase import Atoms

        a, b = draw(st.sampled_from(list(elements))), draw(st.sampled_from(list(elements)))
        d = draw(st.floats(lo, hi, allow_nan=False))
        if orientation:
            cos_t, phi = 2 * draw(_unit()) - 1, 2 * math.pi * draw(_unit())
            sin_t = math.sqrt(max(0.0, 1 - cos_t * cos_t))
            n = np.array([sin_t * math.cos(phi), sin_t * math.sin(phi), cos_t])
        else:
            n = np.array([0.0, 0.0, 1.0])
        atoms = Atoms([a, b], positions=[[0.0, 0.0, 0.0], d * n])
        atoms.center(vacuum=VACUUM)
        return atoms

    return build()


def clusters(symbols: str | None = None, elements: Sequence[str] = ("Cu", "Ni"), n: tuple[int, int] = (2, 6),
             min_distance: float = 2.0, jitter: float | None = None, box: float | None = None) -> st.SearchStrategy:
    """Isolated clusters, every pair at least ``min_distance`` (A) apart.

    ``symbols`` fixes the composition (a formula, e.g. "Cu3Ni3"); otherwise
    ``n`` atoms drawn from ``elements``. Atoms sit on distinct sites of a cubic
    grid of spacing min_distance + 2 jitter, each displaced by at most
    ``jitter`` per coordinate (default min_distance / 4). ``box`` (A) bounds the
    cluster's extent; it is an error when the atoms cannot fit.
    """
    from ase import Atoms

    fixed = list(Atoms(symbols).get_chemical_symbols()) if symbols else None
    n_lo, n_hi = (len(fixed), len(fixed)) if fixed else n
    if not 1 <= n_lo <= n_hi:
        raise ValueError(f"clusters: need 1 <= n[0] <= n[1], got {n}")
    j = min_distance / 4 if jitter is None else float(jitter)
    spacing = min_distance + 2 * j
    k = max(2, math.ceil(n_hi ** (1 / 3)) + 1)
    if box is not None:
        k = int(math.floor((box - 2 * j) / spacing)) + 1
        if n_hi > 1 and k ** 3 < n_hi:
            raise ValueError(f"clusters: no admissible point: {n_hi} atoms {min_distance:g} A apart (grid spacing "
                             f"{spacing:g} A) do not fit in a {box:g} A box; enlarge box or lower min_distance")
        k = max(k, 1)

    @st.composite
    def build(draw):
        count = draw(st.integers(n_lo, n_hi))
        syms = fixed or [draw(st.sampled_from(list(elements))) for _ in range(count)]
        sites = draw(st.lists(st.integers(0, k**3 - 1), min_size=count, max_size=count, unique=True))
        grid = np.array([[s // (k * k), (s // k) % k, s % k] for s in sites], dtype=float) * spacing
        shake = np.array(draw(st.lists(st.floats(-j, j, allow_nan=False), min_size=3 * count,
                                       max_size=3 * count))).reshape(count, 3)
        atoms = Atoms(syms, positions=grid + shake)
        atoms.center(vacuum=VACUUM)
        atoms.pbc = False
        return atoms

    return build()


def strained_bulk(name: str = "Cu", crystalstructure: str | None = None, a: float | None = None,
                  cubic: bool = True, max_strain: float = 0.04, rattle: float = 0.05) -> st.SearchStrategy:
    """``ase.build.bulk(name)`` under a Voigt strain with components in [-max_strain, max_strain]
    (engineering shears, as in the Bulk spec) and displacements of at most ``rattle`` A per coordinate."""
    from ase.build import bulk

    kwargs = {k: v for k, v in (("crystalstructure", crystalstructure), ("a", a)) if v is not None}
    base = bulk(name, cubic=cubic, **kwargs)
    natoms = len(base)

    @st.composite
    def build(draw):
        e = draw(st.lists(st.floats(-max_strain, max_strain, allow_nan=False), min_size=6, max_size=6))
        eps = np.array([[e[0], e[5] / 2, e[4] / 2], [e[5] / 2, e[1], e[3] / 2], [e[4] / 2, e[3] / 2, e[2]]])
        atoms = base.copy()
        atoms.set_cell(base.cell.array @ (np.eye(3) + eps), scale_atoms=True)
        if rattle:
            d = draw(st.lists(st.floats(-rattle, rattle, allow_nan=False), min_size=3 * natoms,
                              max_size=3 * natoms))
            atoms.positions += np.array(d).reshape(natoms, 3)
        return atoms

    return build()


def slab_adsorbate(element: str = "Cu", facet: str = "fcc111", adsorbate: str = "O",
                   height: tuple[float, float] = (1.0, 4.0), size: tuple[int, int, int] = (2, 2, 3),
                   vacuum: float = VACUUM) -> st.SearchStrategy:
    """A slab from ``ase.build.<facet>`` with ``adsorbate`` (a symbol or a G2 molecule name, as
    ``ase.build.molecule`` orients it) whose lowest atom is ``height`` (A) above the top layer, at
    any lateral position of the surface cell."""
    from ase import build

    from ase import Atoms
    from ase.collections import g2

    slab0 = getattr(build, facet)(element, size=size, vacuum=vacuum)
    if adsorbate not in g2.names and len(Atoms(adsorbate)) != 1:
        raise ValueError(f"slab_adsorbate: adsorbate {adsorbate!r} is neither one atom nor a G2 molecule name")
    lo, hi = map(float, height)
    if not 0 < lo <= hi:
        raise ValueError(f"slab_adsorbate: need 0 < height[0] <= height[1], got {height}")

    @st.composite
    def make(draw):
        from ase.build import add_adsorbate, molecule

        slab = slab0.copy()
        h = draw(st.floats(lo, hi, allow_nan=False))
        fa, fb = draw(_unit()), draw(_unit())
        xy = fa * slab.cell[0, :2] + fb * slab.cell[1, :2]
        ads = molecule(adsorbate) if adsorbate in g2.names else Atoms(adsorbate)
        add_adsorbate(slab, ads, h, position=tuple(xy), mol_index=int(np.argmin(ads.positions[:, 2])))
        return slab

    return make()


def domain_points(problem) -> st.SearchStrategy:
    """Admissible points of an adversary :class:`~pytest_mlip.adversary.problem.Problem`: uniform unit
    coordinates mapped into its box and retracted into Z."""
    d = len(problem.lower)
    return st.lists(_unit(), min_size=d, max_size=d).map(
        lambda u: problem.repair(problem.from_unit(np.asarray(u, dtype=float))))
