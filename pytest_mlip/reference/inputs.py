"""Inputs for an external reference code: configurations as extxyz, VASP and Quantum ESPRESSO single points.

Written for every configuration a reference card asks for (by the escalation
report's DFT card, and by the settle step when a card is not run here or a
configuration is outside the engine's domain). VASP inputs: POSCAR written by
ASE, plus an INCAR and KPOINTS written here; Quantum ESPRESSO: ASE's
``espresso-in`` writer with ``input_data`` and a ``pseudopotentials`` map. The
settings are a plain PBE single point, spin-polarised, with Gaussian smearing:
the reference for a label-free check is the same law evaluated by DFT, so only
consistency between configurations matters.

A configuration is any object with ``name``, ``probe``, ``role``, ``atoms`` and
``distance`` (None when it is no point of a scan).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..adversary.problem import Config

import numpy as np

#: PBE single-point settings of the card
ENCUT_EV = 520
QE_ECUTWFC_RY = 60
QE_ECUTRHO_RY = 480
SMEARING_EV = 0.05
KSPACING_A = 30.0  # k-points per direction: ceil(30 A / a), isolated systems use Gamma
#: crude cost model, core-hours of one spin-polarised single point: CORE_H * (V / 1000 A^3) * max(1, N/10)^2
CORE_H = 0.2


def _boxed(atoms):
    from ..evaluation.evaluator import prepare

    work = prepare(atoms)
    if not np.any(work.pbc):
        work.pbc = True  # plane-wave codes are periodic; the vacuum box isolates the system
    return work


def kpoints(atoms) -> tuple[int, int, int]:
    if not np.all(atoms.pbc) or atoms.info.get("isolated"):
        return (1, 1, 1)
    lengths = atoms.cell.lengths()
    return tuple(max(1, math.ceil(KSPACING_A / L)) for L in lengths)


def core_hours(atoms) -> float:
    work = _boxed(atoms)
    return CORE_H * (work.get_volume() / 1000.0) * max(1.0, len(work) / 10.0) ** 2


def incar(isolated: bool) -> str:
    return "\n".join([
        "SYSTEM = pytest-mlip detective verification single point",
        "PREC = Accurate",
        f"ENCUT = {ENCUT_EV}",
        "EDIFF = 1E-6",
        "ISPIN = 2",
        "ISMEAR = 0",
        f"SIGMA = {SMEARING_EV}",
        "IBRION = -1",
        "NSW = 0",
        "LREAL = .FALSE.",
        "LWAVE = .FALSE.",
        "LCHARG = .FALSE.",
        "ISIF = 2" if isolated else "ISIF = 3",
    ]) + "\n"


def write_inputs(configs: list[Config], folder: Path) -> dict:
    """configurations.extxyz plus vasp/<name>/{POSCAR,INCAR,KPOINTS} and qe/<name>.pwi; returns a manifest."""
    from ase.io import write

    folder = Path(folder)
    (folder / "vasp").mkdir(parents=True, exist_ok=True)
    (folder / "qe").mkdir(parents=True, exist_ok=True)
    frames = []
    manifest = {"configurations": [], "core_hours": 0.0}
    for c in configs:
        atoms = c.atoms.copy()
        atoms.calc = None
        atoms.info = {k: v for k, v in atoms.info.items() if isinstance(v, (str, int, float, bool))}
        isolated = not np.any(atoms.pbc)
        work = _boxed(atoms)
        if isolated:
            work.info["isolated"] = True
        work.info.update({"name": c.name, "probe": c.probe, "role": c.role})
        if c.distance is not None:
            work.info["distance"] = c.distance
        frames.append(work)
        d = folder / "vasp" / c.name
        d.mkdir(parents=True, exist_ok=True)
        write(d / "POSCAR", work, format="vasp", direct=True, sort=True)
        (d / "INCAR").write_text(incar(isolated))
        k = kpoints(work)
        (d / "KPOINTS").write_text(f"{'Gamma only' if isolated else 'Automatic mesh'}\n0\nGamma\n"
                                   f"{k[0]} {k[1]} {k[2]}\n0 0 0\n")
        symbols = sorted(set(work.get_chemical_symbols()))
        (d / "POTCAR.txt").write_text("Concatenate the PBE PAW potentials in this order (standard set): "
                                      + " ".join(symbols) + "\n")
        mag = [1.0 if s in _MAGNETIC else 0.0 for s in work.get_chemical_symbols()]
        work.set_initial_magnetic_moments(mag)
        input_data = {
            "control": {"calculation": "scf", "tprnfor": True, "tstress": not isolated,
                        "prefix": c.name.replace("-", "_"), "pseudo_dir": "./pseudo"},
            "system": {"ecutwfc": QE_ECUTWFC_RY, "ecutrho": QE_ECUTRHO_RY, "occupations": "smearing",
                       "smearing": "gaussian", "degauss": SMEARING_EV / 13.605693, "nspin": 2},
            "electrons": {"conv_thr": 1e-8 * len(work), "mixing_beta": 0.3},
        }
        if isolated:
            input_data["system"]["assume_isolated"] = "mt"
        pseudos = {s: f"{s}.pbe-n-kjpaw_psl.1.0.0.UPF" for s in symbols}
        with open(folder / "qe" / f"{c.name}.pwi", "w") as fh:
            write(fh, work, format="espresso-in", input_data=input_data, pseudopotentials=pseudos, kpts=k)
        ch = core_hours(work)
        manifest["core_hours"] += ch
        manifest["configurations"].append({"name": c.name, "probe": c.probe, "role": c.role, "natoms": len(work),
                                           "distance": c.distance, "core_hours": ch})
    for f in frames:
        f.set_initial_magnetic_moments(None)
    write(folder / "configurations.extxyz", frames, format="extxyz")
    return manifest


_MAGNETIC = {"Fe", "Co", "Ni", "Mn", "Cr", "V", "Cu", "Pt", "Pd", "O"}
