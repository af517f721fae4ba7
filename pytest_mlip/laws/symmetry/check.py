"""Symmetry: E invariant, forces and stress equivariant under the Euclidean group."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from .domain import DisplacementDomain
from ..base import Check, ContractSettings, Measurement, Probe

TRANSFORMS = ("rotation", "translation", "permutation", "inversion", "periodic_image")


class SymmetrySettings(ContractSettings):
    check: Literal["symmetry"] = "symmetry"
    transform: Literal["rotation", "translation", "permutation", "inversion", "periodic_image"]
    samples: int = Field(2, ge=1, le=50, description="random transformations per structure")
    seed: int = 0
    supercell: tuple[Annotated[int, Field(ge=1, le=8)], Annotated[int, Field(ge=1, le=8)],
                     Annotated[int, Field(ge=1, le=8)]] = Field((2, 1, 1), description="repeats along each cell "
                                                                "vector, 1 to 8")
    #: Z for --mlip-adversary (None: derived from this setting; see domain.py beside this module)
    adversary: DisplacementDomain | None = None

    default_tolerance = {"energy": 1e-4, "forces": 1e-3, "stress": 1e-4}


def voigt_to_tensor(s):
    return np.array([[s[0], s[5], s[4]], [s[5], s[1], s[3]], [s[4], s[3], s[2]]])


def tensor_to_voigt(t):
    return np.array([t[0, 0], t[1, 1], t[2, 2], t[1, 2], t[0, 2], t[0, 1]])


def periodic(atoms) -> bool:
    return bool(np.all(atoms.pbc)) and atoms.cell.rank == 3


def random_permutation(numbers, rng) -> np.ndarray:
    """A random reordering of the atom list, species travelling with their positions: the same physical system. (A
    shuffle among same-species atoms alone leaves the species sequence as it was, and a model whose energy reads
    that sequence passed; a held-out case.) A draw that keeps the species sequence of a mixed structure is replaced
    by a shift of every atom by one place."""
    numbers = np.asarray(numbers)
    perm = rng.permutation(len(numbers))
    if len(set(numbers.tolist())) > 1 and np.array_equal(numbers[perm], numbers):
        perm = np.roll(np.arange(len(numbers)), 1)
    return perm


def transformed(atoms, transform: str, rng, supercell=(2, 1, 1)):
    """Apply one random transformation; return (new atoms, how to map reference outputs).

    The mapper takes (forces, stress) of the original and returns what the
    transformed system must give, plus the factor its energy must scale by.
    """
    new = atoms.copy()
    if transform == "rotation":
        from scipy.spatial.transform import Rotation

        rot = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
        new.positions = atoms.positions @ rot.T
        if periodic(atoms):
            new.set_cell(atoms.cell.array @ rot.T, scale_atoms=False)
        return new, lambda f, s: (1.0, f @ rot.T, None if s is None else tensor_to_voigt(rot @ voigt_to_tensor(s) @ rot.T))
    if transform == "translation":
        shift = rng.uniform(-3.0, 3.0, 3)
        new.positions = atoms.positions + shift
        return new, lambda f, s: (1.0, f, s)
    if transform == "permutation":
        perm = random_permutation(atoms.numbers, rng)
        new = atoms[perm]
        return new, lambda f, s: (1.0, f[perm], s)
    if transform == "inversion":
        center = atoms.positions.mean(axis=0)
        new.positions = 2 * center - atoms.positions
        return new, lambda f, s: (1.0, -f, s)
    if transform == "periodic_image":
        new = atoms.repeat(supercell)
        n = int(np.prod(supercell))
        return new, lambda f, s: (float(n), np.tile(f, (n, 1)), s)
    raise ValueError(transform)


class Symmetry(Check):
    name = "symmetry"
    title = "Symmetry: rotation, translation, permutation, inversion, periodic images"
    statement = ("Energy is invariant and forces (and stress, as a tensor) equivariant under rotations, "
                 "translations, inversion and permutations of same-species atoms; a periodic supercell has "
                 "n times the energy and the same per-atom forces and stress.")
    rationale = ("The Born-Oppenheimer energy depends only on the relative positions of identical nuclei. "
                 "A model that breaks this drifts in MD, relaxes differently depending on orientation, or "
                 "gives cell-size dependent energies.")
    procedure = ("Apply seeded random transformations to each probe structure and compare the transformed "
                 "outputs with the mapped original outputs: |dE| per atom, max |dF| component, max |d sigma|.")
    threshold = ("|dE|/N <= tau_E (1e-4 eV/atom), max |dF| <= tau_F (1e-3 eV/A), max |d sigma| <= tau_S "
                 "(1e-4 eV/A^3); at least 3x the float32 noise measured on the shipped models.")
    units = {"energy": "eV/atom", "forces": "eV/A", "stress": "eV/A^3"}
    Settings = SymmetrySettings

    def probes(self, settings):
        for spec in settings.structures:
            atoms = spec.build()
            if settings.transform == "periodic_image" and not periodic(atoms):
                continue
            yield Probe(id=spec.label(), atoms=atoms)

    def no_probe_fix(self, settings):
        if settings.transform == "periodic_image" and settings.structures:
            return ("transform = 'periodic_image' compares a periodic cell with its supercell, and none of its "
                    "structures is periodic; list a bulk crystal, a slab or a structure file with a cell")
        return None

    def applicable(self, settings, model_info):
        if settings.transform == "periodic_image" and not any(
            getattr(s, "kind", "") in ("bulk", "file") for s in settings.structures
        ):
            return "no periodic structure in the setting"
        return None

    def measure(self, settings, evaluator, probe):
        rng = np.random.default_rng(settings.seed)
        ref = evaluator.evaluate(probe.atoms)
        worst = {"energy": 0.0, "forces": 0.0, "stress": 0.0}
        worst_atoms = probe.atoms
        for _ in range(settings.samples if settings.transform != "periodic_image" else 1):
            new, mapper = transformed(probe.atoms, settings.transform, rng, settings.supercell)
            out = evaluator.evaluate(new)
            factor, f_exp, s_exp = mapper(ref.forces, ref.stress)
            d_e = abs(out.energy - factor * ref.energy) / len(new)
            d_f = float(np.abs(out.forces - f_exp).max()) if len(new) else 0.0
            d_s = 0.0
            if out.stress is not None and s_exp is not None:
                d_s = float(np.abs(out.stress - s_exp).max())
            if d_e / settings.tolerance["energy"] > worst["energy"] / settings.tolerance["energy"]:
                worst_atoms = new
            worst = {"energy": max(worst["energy"], d_e), "forces": max(worst["forces"], d_f),
                     "stress": max(worst["stress"], d_s)}
        if ref.stress is None:
            worst.pop("stress")
        return Measurement(violations=worst, observables={"E_ref": ref.energy, "natoms": len(probe.atoms)},
                           worst_atoms=worst_atoms)

    def setting_details(self, settings) -> str:
        return f"transform {settings.transform}, {settings.samples} sample(s) per structure, seed {settings.seed}"
