"""Planted-defect calculators: each breaks exactly one law of one contract.

Each class is itself the factory: ``--mlip=tests.mutants.foundation:ShortRangeHole``.

A mutant wraps a clean analytic calculator and adds a term with analytic
forces (and stress where it applies), so it stays consistent with every law
but the one it is written to break. Factories here are what
``--mlip=tests.mutants:<name>`` loads in the plugin tests.
"""

from __future__ import annotations

import numpy as np
from ase.calculators.calculator import Calculator, all_changes


def clean_morse():
    """Clean reference: ASE Morse with a smooth cutoff (finite, repulsive wall; all laws hold)."""
    from ase.calculators.morse import MorsePotential

    # rcut1, rcut2 are in units of r0 in ASE: the cutoff is 2.5 x 2 A = 5 A, as declared
    calc = MorsePotential(epsilon=1.0, rho0=3.0, r0=2.0, rcut1=2.0, rcut2=2.5)
    calc.mlip_metadata = {"cutoff": 5.0, "conservative": True, "dtype": "float64"}
    return calc


class AddedTerm(Calculator):
    """Base + extra energy term; subclasses implement ``term(atoms) -> (E, F, stress|None)``."""

    implemented_properties = ["energy", "forces", "stress"]

    def __init__(self, base=None, **kwargs):
        super().__init__(**kwargs)
        self.base = base if base is not None else clean_morse()
        self.mlip_metadata = {"cutoff": 5.0, "dtype": "float64", "conservative": self.conservative}

    conservative = True

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        work = self.atoms.copy()
        self.base.calculate(work, ["energy", "forces"] + (["stress"] if work.pbc.all() else []), all_changes)
        base = dict(self.base.results)
        e, f, s = self.term(work)
        self.results = {"energy": base["energy"] + e, "forces": base["forces"] + f}
        if "stress" in base:
            self.results["stress"] = base["stress"] + (s if s is not None else 0.0)

    def term(self, atoms):  # pragma: no cover - abstract
        raise NotImplementedError


def periodic(atoms) -> bool:
    return bool(np.all(atoms.pbc)) and atoms.cell.rank == 3


def pair_forces_stress(atoms, i, j, pair_f, dvec):
    """Forces and (periodic cells only) Voigt stress from ``pair_f`` = dE/dr_j of each listed pair (i, j)."""
    forces = np.zeros((len(atoms), 3))
    np.add.at(forces, i, pair_f)
    np.add.at(forces, j, -pair_f)
    stress = None
    if periodic(atoms):
        t = np.einsum("ka,kb->ab", pair_f, dvec) / atoms.get_volume()
        stress = np.array([t[0, 0], t[1, 1], t[2, 2], t[1, 2], t[0, 2], t[0, 1]])
    return forces, stress


class NanAtShortRange(AddedTerm):
    """Returns NaN energy whenever two atoms are closer than 1 A (a model that breaks down)."""

    def term(self, atoms):
        n = len(atoms)
        d = atoms.get_all_distances(mic=periodic(atoms)) + np.eye(n) * 10 if n > 1 else np.array([[10.0]])
        return (float("nan") if d.min() < 1.0 else 0.0), np.zeros((n, 3)), None


class NanEverywhere(AddedTerm):
    """Returns a NaN energy on every call (garbage out, no law's violation)."""

    def term(self, atoms):
        return float("nan"), np.zeros((len(atoms), 3)), None


class RaisesOnLargeSystems(AddedTerm):
    """Raises inside calculate() for structures of 8 atoms or more (dimers still work)."""

    def term(self, atoms):
        if len(atoms) >= 8:
            raise RuntimeError("simulated model crash on a large system")
        return 0.0, np.zeros((len(atoms), 3)), None


def not_a_calculator():
    """A broken factory: returns a string."""
    return "this is not a calculator"
