"""Typed probe structures: contract files describe them, fixed code builds them.

Every spec is a pydantic model with a ``kind`` discriminator and a ``build()``
that returns an :class:`ase.Atoms` made with :mod:`ase.build`. Specs are data,
so a contract file or an agent-written protocol can name any of them without
writing code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

VACUUM = 10.0  # A of vacuum around isolated structures and above slabs
#: lattice constants (A) a contract may state: below 1 A is no crystal (a value in nm, say), above 50 A a typo
LATTICE_RANGE = (1.0, 50.0)
#: repeats and slab sizes per direction
MAX_REPEAT = 20
#: largest displacement component a structure spec may add to an atom (A)
MAX_DISPLACEMENT = 2.0


def check_symbol(symbol: str) -> str:
    """A chemical element symbol, or a one-line error naming it."""
    from ase.data import atomic_numbers

    if not isinstance(symbol, str) or symbol not in atomic_numbers or symbol == "X":
        raise ValueError(f"unknown element symbol {symbol!r}; use a symbol of the periodic table (H, He, Li, ...)")
    return symbol


def _capitalised(formula: str) -> str | None:
    """``cu`` -> ``Cu``, ``nacl`` -> None (ambiguous), when capitalising the whole word gives a valid formula."""
    from ase.data import atomic_numbers
    from ase.symbols import string2symbols

    fix = formula[:1].upper() + formula[1:].lower()
    try:
        symbols = string2symbols(fix)
        return fix if fix != formula and symbols and all(s in atomic_numbers and s != "X" for s in symbols) else None
    except Exception:
        return None


def check_formula(formula: str) -> str:
    """A chemical formula whose every symbol is an element (``Cu3Ni3``, ``NaCl``)."""
    from ase.symbols import string2symbols

    try:
        symbols = string2symbols(formula)
    except Exception:
        fix = _capitalised(formula)
        hint = f"write {fix!r}" if fix else "write it like Cu3Ni3 or NaCl"
        raise ValueError(f"{formula!r} is not a chemical formula (symbols are case-sensitive; {hint})") from None
    if not symbols:
        raise ValueError(f"{formula!r} is an empty formula")
    for sym in symbols:
        check_symbol(sym)
    return formula


def check_counts(v, what: str):
    """Cell repeats or slab sizes: whole numbers from 1 to MAX_REPEAT per direction."""
    if any(not (1 <= n <= MAX_REPEAT) for n in v):
        raise ValueError(f"{what} {list(v)}: each count must be between 1 and {MAX_REPEAT}")
    return v


def check_lattice(value: float | None, what: str = "lattice constant") -> float | None:
    lo, hi = LATTICE_RANGE
    if value is not None and not (lo <= value <= hi):
        raise ValueError(f"{what} {value:g} is outside [{lo:g}, {hi:g}] A; lattice constants are in Angstrom "
                         f"(Cu: a = 3.61, not 0.361 nm)")
    return value


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rattle: float = Field(0.0, ge=0.0, le=0.5, description="Gaussian displacement (A) applied after building")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="random seed of the rattle or the cluster (0 to 2^32 - 1)")
    #: one (dx, dy, dz) per atom (A), added after the rattle: a configuration the adversary found, kept as data
    displacements: list[tuple[float, float, float]] | None = None

    @field_validator("displacements")
    @classmethod
    def _small(cls, v):
        if v is not None and any(abs(c) > MAX_DISPLACEMENT for d in v for c in d):
            raise ValueError(f"displacements: each component at most {MAX_DISPLACEMENT:g} A in magnitude")
        return v

    def build(self):
        atoms = self._build()
        if self.rattle:
            atoms.rattle(stdev=self.rattle, seed=self.seed)
        if self.displacements is not None:
            if len(self.displacements) != len(atoms):
                raise ValueError(f"displacements: {len(self.displacements)} given for a structure of {len(atoms)} "
                                 "atoms; give one (dx, dy, dz) per atom")
            atoms.positions = atoms.positions + np.asarray(self.displacements, dtype=float)
        return atoms

    def label(self) -> str:
        """The probe id of this structure (``+displaced`` when it carries displacements)."""
        return self._label() + ("+displaced" if self.displacements is not None else "")

    def _label(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _build(self):  # pragma: no cover - abstract
        raise NotImplementedError


class Molecule(_Spec):
    """A molecule from ase.build.molecule (G2 set names: H2O, CH4, CO2, C6H6...)."""

    kind: Literal["molecule"] = "molecule"
    name: str

    @field_validator("name")
    @classmethod
    def _known(cls, v):
        from ase.collections import g2

        if v not in g2.names:
            raise ValueError(f"unknown molecule {v!r}; use a name of ase.collections.g2")
        return v

    def _label(self) -> str:
        return self.name + (f"~{self.rattle:g}" if self.rattle else "")

    def _build(self):
        from ase.build import molecule

        atoms = molecule(self.name)
        atoms.center(vacuum=VACUUM)
        atoms.pbc = False
        return atoms


class Atom(_Spec):
    """A single isolated atom."""

    kind: Literal["atom"] = "atom"
    element: str

    _element = field_validator("element")(classmethod(lambda cls, v: check_symbol(v)))

    def _label(self) -> str:
        return self.element

    def _build(self):
        from ase import Atoms

        atoms = Atoms(self.element, positions=[[0, 0, 0]])
        atoms.center(vacuum=VACUUM)
        return atoms


class Dimer(_Spec):
    """Two atoms a distance apart, isolated."""

    kind: Literal["dimer"] = "dimer"
    elements: tuple[str, str]
    distance: float = Field(gt=0.05, le=20.0, description="A")

    @field_validator("elements")
    @classmethod
    def _elements(cls, v):
        for sym in v:
            check_symbol(sym)
        return v

    def _label(self) -> str:
        return f"{''.join(self.elements)}@{self.distance:g}A"

    def _build(self):
        from ase import Atoms

        atoms = Atoms(self.elements, positions=[[0, 0, 0], [0, 0, self.distance]])
        atoms.center(vacuum=VACUUM)
        return atoms


class Cluster(_Spec):
    """Random isolated cluster with a minimum interatomic distance."""

    kind: Literal["cluster"] = "cluster"
    symbols: str  # chemical formula, e.g. "Cu4Ni2"
    min_distance: float = Field(2.0, gt=0.5, le=6.0, description="A")
    radius: float | None = Field(None, gt=0.0, le=100.0, description="sphere radius (A); default from the count")

    _symbols = field_validator("symbols")(classmethod(lambda cls, v: check_formula(v)))

    def _label(self) -> str:
        return f"{self.symbols}-cluster/s{self.seed}"

    def _build(self):
        from ase import Atoms

        atoms = Atoms(self.symbols)
        n = len(atoms)
        radius = self.radius or self.min_distance * (0.6 * n ** (1 / 3) + 0.6)
        rng = np.random.default_rng(self.seed)
        pos = np.empty((n, 3))
        placed = 0
        for _ in range(20000):
            if placed == n:
                break
            trial = rng.uniform(-radius, radius, 3)
            if np.linalg.norm(trial) > radius:
                continue
            if not placed or np.sqrt(((pos[:placed] - trial) ** 2).sum(axis=1)).min() >= self.min_distance:
                pos[placed] = trial
                placed += 1
        if placed < n:
            raise ValueError(f"cannot place {n} atoms {self.min_distance} A apart in radius {radius:.2f} A")
        atoms.positions = pos
        atoms.center(vacuum=VACUUM)
        return atoms


class Bulk(_Spec):
    """A periodic crystal from ase.build.bulk (optionally a supercell)."""

    kind: Literal["bulk"] = "bulk"
    name: str  # element or formula, e.g. "Cu", "Si", "NaCl"
    crystalstructure: str | None = None
    a: float | None = None
    c: float | None = None
    cubic: bool = False
    orthorhombic: bool = False
    repeat: tuple[int, int, int] = (1, 1, 1)
    strain: tuple[float, float, float, float, float, float] | None = None  # Voigt, applied to the cell

    _name = field_validator("name")(classmethod(lambda cls, v: check_formula(v)))

    @field_validator("a", "c")
    @classmethod
    def _lattice(cls, v, info):
        return check_lattice(v, f"lattice constant {info.field_name}")

    _repeat = field_validator("repeat")(classmethod(lambda cls, v, info: check_counts(v, info.field_name)))

    @field_validator("strain")
    @classmethod
    def _strain(cls, v):
        if v is not None and any(abs(x) > 0.3 for x in v):
            raise ValueError(f"strain {list(v)}: Voigt components are fractions, |e| <= 0.3 (0.01 is 1 %)")
        return v

    def _label(self) -> str:
        rep = "x".join(map(str, self.repeat))
        tag = self.crystalstructure or ""
        return f"{self.name}-{tag}{'' if rep == '1x1x1' else '-' + rep}" + (f"~{self.rattle:g}" if self.rattle else "")

    def _build(self):
        from ase.build import bulk

        kwargs = {}
        for key in ("crystalstructure", "a", "c"):
            if getattr(self, key) is not None:
                kwargs[key] = getattr(self, key)
        atoms = bulk(self.name, cubic=self.cubic, orthorhombic=self.orthorhombic, **kwargs)
        atoms = atoms.repeat(self.repeat)
        if self.strain is not None:
            e = self.strain
            eps = np.array([[e[0], e[5] / 2, e[4] / 2], [e[5] / 2, e[1], e[3] / 2], [e[4] / 2, e[3] / 2, e[2]]])
            atoms.set_cell(atoms.cell.array @ (np.eye(3) + eps), scale_atoms=True)
        return atoms


class Slab(_Spec):
    """A surface slab from ase.build (fcc111, fcc100, bcc110, hcp0001...), periodic in-plane."""

    kind: Literal["slab"] = "slab"
    element: str
    facet: Literal["fcc111", "fcc100", "fcc110", "bcc110", "bcc100", "bcc111", "hcp0001"]
    size: tuple[int, int, int] = (2, 2, 3)
    a: float | None = None
    vacuum: float = Field(VACUUM, ge=3.0, le=100.0, description="A of vacuum above the slab")

    _element = field_validator("element")(classmethod(lambda cls, v: check_symbol(v)))
    _a = field_validator("a")(classmethod(lambda cls, v: check_lattice(v)))

    _size = field_validator("size")(classmethod(lambda cls, v, info: check_counts(v, info.field_name)))

    def _label(self) -> str:
        return f"{self.element}({self.facet[3:]})-{'x'.join(map(str, self.size))}"

    def _build(self):
        from ase import build

        kwargs = {} if self.a is None else {"a": self.a}
        return getattr(build, self.facet)(self.element, size=self.size, vacuum=self.vacuum, **kwargs)


class File(_Spec):
    """A structure read with ase.io.read (path relative to the contract file)."""

    kind: Literal["file"] = "file"
    path: str
    index: int = 0

    def _label(self) -> str:
        return f"{Path(self.path).name}[{self.index}]"

    def _build(self):
        from ase.io import read

        return read(self.path, index=self.index)


StructureSpec = Annotated[Union[Atom, Molecule, Dimer, Cluster, Bulk, Slab, File], Field(discriminator="kind")]

__all__ = ["StructureSpec", "Atom", "Molecule", "Dimer", "Cluster", "Bulk", "Slab", "File", "VACUUM"]
