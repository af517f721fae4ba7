"""The DFT verification card: configurations to compute, ready-to-run inputs, cost, decisions.

Configurations are rebuilt from the pre-registered protocol with the check's
own probe construction (so the reference sees exactly what the models saw) and
written as extxyz. For each one, VASP inputs (POSCAR written by ASE, plus an
INCAR and KPOINTS written here) and a Quantum ESPRESSO input (written by ASE's
``espresso-in`` writer with ``input_data`` and a ``pseudopotentials`` map)
are produced. The settings are a plain PBE single point, spin-polarised, with
Gaussian smearing: the reference for a label-free check is the same law
evaluated by DFT, so only consistency between configurations matters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: PBE single-point settings of the card
ENCUT_EV = 520
QE_ECUTWFC_RY = 60
QE_ECUTRHO_RY = 480
SMEARING_EV = 0.05
KSPACING_A = 30.0  # k-points per direction: ceil(30 A / a), isolated systems use Gamma
#: crude cost model, core-hours of one spin-polarised single point: CORE_H * (V / 1000 A^3) * max(1, N/10)^2
CORE_H = 0.2
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class Config:
    name: str
    probe: str
    role: str  # what the configuration is in the protocol
    atoms: object
    distance: float | None = None
    parents: list[str] = field(default_factory=list)


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = LETTERS[r] + s
    return s


def configurations(settings, probes: list[str], series: dict[str, dict], points: int = 6) -> list[Config]:
    """The configurations a reference must compute for ``probes`` of a protocol.

    ``series`` maps probe -> {"r": [...], "E": [...], "ids": [...]} (the target's scan, when the law has one).
    Which configurations settle a finding is the law's to say: its playbook's ``reference_configs``.
    """
    from ..laws import CHECKS
    from .playbook import playbook_for

    check = CHECKS[settings.check]()
    book = playbook_for(settings.check)
    out: list[Config] = []
    for probe in check.probes(settings):
        if probe.id not in probes or book is None:
            continue
        for role, atoms, distance, parents in book.reference_configs(check, settings, probe, series.get(probe.id),
                                                                     points):
            out.append(Config(f"config-{_letters(len(out))}", probe.id, role, atoms, distance, parents))
    return out


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
