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


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rattle: float = Field(0.0, ge=0.0, le=0.5, description="Gaussian displacement (A) applied after building")
    seed: int = 0

    def build(self):
        atoms = self._build()
        if self.rattle:
            atoms.rattle(stdev=self.rattle, seed=self.seed)
        return atoms

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

    def label(self) -> str:
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

    def label(self) -> str:
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
    distance: float = Field(gt=0.05, le=20.0)

    def label(self) -> str:
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
    min_distance: float = Field(2.0, gt=0.5)
    radius: float | None = None  # sphere radius (A); default from the atom count

    def label(self) -> str:
        return f"{self.symbols}-cluster/s{self.seed}"

    def _build(self):
        from ase import Atoms

        atoms = Atoms(self.symbols)
        n = len(atoms)
        radius = self.radius or self.min_distance * (0.6 * n ** (1 / 3) + 0.6)
        rng = np.random.default_rng(self.seed)
        pos: list[np.ndarray] = []
        for _ in range(20000):
            if len(pos) == n:
                break
            trial = rng.uniform(-radius, radius, 3)
            if np.linalg.norm(trial) > radius:
                continue
            if all(np.linalg.norm(trial - p) >= self.min_distance for p in pos):
                pos.append(trial)
        if len(pos) < n:
            raise ValueError(f"cannot place {n} atoms {self.min_distance} A apart in radius {radius:.2f} A")
        atoms.positions = np.array(pos)
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

    def label(self) -> str:
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
    vacuum: float = VACUUM

    def label(self) -> str:
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

    def label(self) -> str:
        return f"{Path(self.path).name}[{self.index}]"

    def _build(self):
        from ase.io import read

        return read(self.path, index=self.index)


StructureSpec = Annotated[Union[Atom, Molecule, Dimer, Cluster, Bulk, Slab, File], Field(discriminator="kind")]

__all__ = ["StructureSpec", "Atom", "Molecule", "Dimer", "Cluster", "Bulk", "Slab", "File", "VACUUM"]
