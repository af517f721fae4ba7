"""Reference engines: one DFT single point of an ``ase.Atoms`` under a stated :class:`Method`.

An engine knows electronic structure, not laws: it takes a configuration (its
initial magnetic moments are the spin start, ``atoms.info["spin"]`` the number
of unpaired electrons, 2S) and a method, and returns a :class:`Result` with the
energy, whether the SCF converged, and the seconds it took. A case outside an
engine's domain (a periodic cell for PySCF, an element without a basis) is an
:class:`OutsideDomain` raised before anything runs; a missing package is a
:class:`MissingEngine` whose message names the extra to install.

- ``pyscf``: molecular Kohn-Sham (UKS when the system or its start is
  spin-polarised), Gaussian basis (def2-SVP with its effective core potentials
  for Z > 36 by default), a broken-symmetry start from per-atom moments,
  second-order SCF as the fallback; only isolated systems.
- ``gpaw``: PAW, LCAO mode (dzp by default), Fermi-Dirac smearing,
  spin-polarised from the initial moments, periodic or isolated; run in a
  subprocess under ``mpiexec -n RANKS`` (OMP_NUM_THREADS=1) when ranks > 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import MlipError

HARTREE_EV = 27.211386245988


class MissingEngine(MlipError):
    """The engine's package is not installed (the message names the extra)."""


class OutsideDomain(MlipError):
    """The configuration is outside what this engine can compute."""


def atom_spin(z: int, moment: float) -> int:
    """Unpaired electrons of a lone atom started from ``moment``: the nearest count of the atom's parity (a carbon
    asked for a moment of 1 made PySCF refuse 'Electron number 6 and spin 1 are not consistent'; held-out round
    11). ECP cores hold an even number of electrons, so Z's parity is the atom's."""
    s = int(round(abs(moment)))
    if (z - s) % 2:
        s = s + 1 if s == 0 else s - 1
    return s


class EngineFailure(MlipError):
    """The engine crashed (not an SCF that failed to converge): nothing is cached, the probe is undecided."""


class OutOfTime(EngineFailure):
    """The computation ran past its deadline (the reference budget) and was stopped: nothing is cached."""


class Method(BaseModel):
    """Everything that determines a reference value besides the configuration (part of the cache key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    engine: str
    functional: str = "PBE"
    basis: str = Field("", description="Gaussian basis (pyscf) or LCAO basis (gpaw)")
    mode: str = Field("", description="gpaw: lcao or pw; pyscf: molecular")
    smearing: float = Field(0.0, ge=0.0, description="Fermi-Dirac width (eV); gpaw only")
    k_length: float = Field(20.0, gt=0.0, description="gpaw k-points per periodic direction: ceil(k_length / L) "
                                                       "for cell lengths L below 15 A, else 1")
    conv_tol: float = Field(1e-8, gt=0.0, description="SCF energy convergence (Hartree for pyscf, eV per "
                                                       "valence electron for gpaw)")
    max_cycle: int = Field(200, ge=1)
    ranks: int = Field(1, ge=1, le=64, description="MPI ranks (gpaw)")

    def label(self) -> str:
        mode = f"{self.mode} {self.basis}" if self.engine == "gpaw" else self.basis
        return f"{self.engine} {self.functional}/{mode}"


@dataclass
class Result:
    energy: float | None  # eV; None when it did not converge
    converged: bool
    seconds: float
    spin: int  # 2S used
    details: dict = field(default_factory=dict)


def unpaired(atoms) -> int:
    """2S of a configuration: ``atoms.info['spin']`` if set, else the parity of its electron count."""
    if "spin" in atoms.info:
        return int(atoms.info["spin"])
    return int(sum(atoms.numbers) - int(atoms.info.get("charge", 0))) % 2


class Engine:
    """Base of the reference engines: the name, the extra, the version, ``compute``."""

    name: ClassVar[str] = ""
    module: ClassVar[str] = ""
    extra: ClassVar[str] = ""
    #: can it compute periodic cells (slabs, bulk)?
    periodic: ClassVar[bool] = True

    def __init__(self, method: Method | None = None):
        self.method = method or self.default_method()

    @classmethod
    def default_method(cls) -> Method:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def missing(cls) -> str | None:
        """A one-line message when the engine cannot run here, else None."""
        import importlib.util

        if importlib.util.find_spec(cls.module) is None:
            return f"--mlip-reference={cls.name} needs {cls.module}: {cls.extra}"
        return None

    def version(self) -> str:
        import importlib.metadata

        try:
            return importlib.metadata.version(self.module)
        except importlib.metadata.PackageNotFoundError:
            return "?"

    def domain_error(self, atoms) -> str | None:
        """Why ``atoms`` is outside this engine's domain, or None."""
        if not self.periodic and np.any(atoms.pbc) and atoms.cell.rank > 0 and not atoms.info.get("isolated"):
            return (f"{self.name} computes isolated molecules; a periodic cell (slab, bulk) needs a periodic engine "
                    "(--mlip-reference=gpaw)")
        return None

    def compute(self, atoms, deadline: float | None = None) -> Result:  # pragma: no cover
        """One single point; ``deadline`` (time.monotonic()) stops it with :class:`OutOfTime`."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What an artifact records about the method (engine, version, functional, basis or mode, ...)."""
        return {"engine": self.name, "version": self.version(), **self.method.model_dump(exclude={"engine"})}


# --- PySCF -----------------------------------------------------------------------------------------------------------


class PySCF(Engine):
    name = "pyscf"
    module = "pyscf"
    extra = "pip install 'pytest-mlip[reference]'"

    @classmethod
    def default_method(cls) -> Method:
        return Method(engine="pyscf", functional="PBE", basis="def2-SVP", mode="molecular", conv_tol=1e-8,
                      max_cycle=150)

    periodic = False

    def domain_error(self, atoms) -> str | None:
        why = super().domain_error(atoms)
        if why:
            return why
        try:
            from pyscf import gto

            for s in set(atoms.get_chemical_symbols()):
                gto.basis.load(self.method.basis, s)
        except Exception:
            return f"no {self.method.basis} basis for {', '.join(sorted(set(atoms.get_chemical_symbols())))} in pyscf"
        return None

    def _mole(self, atoms, spin: int):
        from pyscf import gto

        mol = gto.Mole()
        mol.atom = [(s, tuple(p)) for s, p in zip(atoms.get_chemical_symbols(), atoms.positions)]
        mol.unit = "Angstrom"
        mol.basis = self.method.basis
        if self.method.basis.lower().startswith("def2"):
            heavy = sorted({s for s, z in zip(atoms.get_chemical_symbols(), atoms.numbers) if z > 36})
            if heavy:
                mol.ecp = {s: self.method.basis for s in heavy}
        mol.spin = spin
        mol.charge = int(atoms.info.get("charge", 0))
        mol.verbose = 0
        mol.build()
        return mol

    def _broken_symmetry_guess(self, mol, atoms, moments):
        """Block-diagonal UKS density of the isolated atoms, each spin-polarised as its initial moment says."""
        from pyscf import dft

        na, nb = [], []
        dma = np.zeros((mol.nao, mol.nao))
        dmb = np.zeros((mol.nao, mol.nao))
        offsets = mol.aoslice_by_atom()
        for i, (sym, m) in enumerate(zip(atoms.get_chemical_symbols(), moments)):
            one = atoms[[i]]
            spin = atom_spin(int(atoms.numbers[i]), m)
            one.info = {"spin": spin}
            amol = self._mole(one, spin)
            mf = dft.UKS(amol)
            mf.xc = self.method.functional
            mf.max_cycle = 100
            mf.kernel()
            a, b = mf.make_rdm1()
            if m < 0:
                a, b = b, a
            lo, hi = offsets[i, 2], offsets[i, 3]
            dma[lo:hi, lo:hi], dmb[lo:hi, lo:hi] = a, b
            na.append(a.trace()), nb.append(b.trace())
        return np.array([dma, dmb])

    def compute(self, atoms, deadline: float | None = None) -> Result:
        from pyscf import dft, lib

        # one OpenMP thread unless asked: on a shared or busy machine more threads made H2 30x slower here
        lib.num_threads(int(os.environ.get("PYTEST_MLIP_REFERENCE_THREADS", "1")))
        why = self.domain_error(atoms)
        if why:
            raise OutsideDomain(why)
        spin = unpaired(atoms)
        moments = atoms.get_initial_magnetic_moments()
        polarised = spin > 0 or np.any(np.abs(moments) > 0)
        t0 = time.perf_counter()
        mol = self._mole(atoms, spin)
        mf = (dft.UKS if polarised else dft.RKS)(mol)
        mf.xc = self.method.functional
        mf.conv_tol = self.method.conv_tol
        mf.max_cycle = self.method.max_cycle
        if deadline is not None:
            def stop(envs):  # called after every SCF cycle
                if time.monotonic() > deadline:
                    raise OutOfTime(f"pyscf stopped after {time.perf_counter() - t0:.0f} s: the reference budget "
                                    "ran out during this point")
            mf.callback = stop
        dm0 = None
        start = "atomic superposition"
        if polarised and np.any(np.abs(moments) > 0) and len(atoms) > 1:
            dm0 = self._broken_symmetry_guess(mol, atoms, moments)
            start = "per-atom moments " + ",".join(f"{m:+g}" for m in moments)
        strategy = "DIIS"
        e = mf.kernel(dm0)
        if not mf.converged:
            strategy = "DIIS, then second-order (Newton) SCF"
            mf2 = mf.newton()
            mf2.callback = mf.callback
            e = mf2.kernel(mf.make_rdm1())
            mf = mf2
        seconds = time.perf_counter() - t0
        details = {"start": start, "strategy": strategy, "scf_cycles": int(getattr(mf, "cycles", -1) or -1)}
        if polarised:
            s2, mult = mf.spin_square()
            details["S^2"] = float(s2)
        ok = bool(mf.converged)
        return Result(energy=float(e) * HARTREE_EV if ok else None, converged=ok, seconds=seconds, spin=spin,
                      details=details)


# --- GPAW ------------------------------------------------------------------------------------------------------------

_GPAW_SCRIPT = r'''
import json, sys, time
from ase.io import read
from gpaw import GPAW, FermiDirac, KohnShamConvergenceError, mpi
spec = json.load(open(sys.argv[1]))
atoms = read(sys.argv[2])
m = spec["method"]
kw = dict(xc=m["functional"], mode=m["mode"], kpts=tuple(spec["kpts"]), occupations=FermiDirac(m["smearing"]),
          convergence={"energy": m["conv_tol"]}, maxiter=m["max_cycle"], txt=spec["txt"],
          symmetry={"point_group": False})  # rattled and lifted geometries: no point-group analysis
if m["mode"] == "lcao":
    kw["basis"] = m["basis"]
if spec["spin"] or any(abs(x) > 0 for x in atoms.get_initial_magnetic_moments()):
    kw["spinpol"] = True  # total moment held at 2S (the initial moments sum to it), local moments free
    kw["occupations"] = FermiDirac(m["smearing"], fixmagmom=True)
if not any(atoms.pbc):
    atoms.pbc = False
atoms.calc = GPAW(**kw)
t0 = time.perf_counter()
out = {"converged": True}
try:
    out["energy"] = float(atoms.get_potential_energy())
except KohnShamConvergenceError as exc:  # the SCF did not converge: a result (undecided), not a crash
    out = {"converged": False, "energy": None, "error": type(exc).__name__ + ": " + str(exc)[:200]}
out["seconds"] = time.perf_counter() - t0
if mpi.world.rank == 0:
    json.dump(out, open(spec["out"], "w"))
'''


class GPAW(Engine):
    name = "gpaw"
    module = "gpaw"
    extra = ("pip install gpaw gpaw-data (needs the Debian packages libxc-dev libblas-dev liblapack-dev "
             "libfftw3-dev libopenmpi-dev build-essential; see the README)")

    @classmethod
    def default_method(cls) -> Method:
        ranks = int(os.environ.get("PYTEST_MLIP_GPAW_RANKS", "1"))
        return Method(engine="gpaw", functional="PBE", basis="dzp", mode="lcao", smearing=0.1, conv_tol=5e-4,
                      max_cycle=333, ranks=ranks)

    def kpts(self, atoms) -> list[int]:
        import math

        lengths = atoms.cell.lengths()
        return [max(1, math.ceil(self.method.k_length / L)) if (p and L < 15.0) else 1
                for p, L in zip(atoms.pbc, lengths)]

    def compute(self, atoms, deadline: float | None = None) -> Result:
        from ase.io import write

        spin = unpaired(atoms)
        work = atoms.copy()
        moments = work.get_initial_magnetic_moments()
        if spin and not np.any(moments):
            moments = np.full(len(work), spin / len(work))
            work.set_initial_magnetic_moments(moments)
        if not np.any(work.pbc) and work.cell.rank < 3:
            work.center(vacuum=6.0)
        with tempfile.TemporaryDirectory(prefix="mlip-gpaw-") as tmp:
            tmp = Path(tmp)
            write(tmp / "in.traj", work)
            kpts = self.kpts(work)
            spec = {"method": self.method.model_dump(), "spin": spin, "kpts": kpts, "out": str(tmp / "out.json"),
                    "txt": str(tmp / "gpaw.txt")}
            (tmp / "spec.json").write_text(json.dumps(spec))
            (tmp / "run.py").write_text(_GPAW_SCRIPT)
            cmd = [sys.executable, str(tmp / "run.py"), str(tmp / "spec.json"), str(tmp / "in.traj")]
            if self.method.ranks > 1:
                cmd = ["mpiexec", "--allow-run-as-root", "-n", str(self.method.ranks)] + cmd
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            if self.method.ranks > 1:
                env["GPAW_MPI_BACKEND"] = "cgpaw"  # what `gpaw python` does under mpiexec (gpaw >= 25)
            t0 = time.perf_counter()
            limit = None if deadline is None else max(1.0, deadline - time.monotonic())
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=limit)
            except subprocess.TimeoutExpired:
                raise OutOfTime(f"gpaw stopped after {time.perf_counter() - t0:.0f} s: the reference budget ran "
                                "out during this point") from None
            seconds = time.perf_counter() - t0
            if not (tmp / "out.json").exists():
                lines = [x for x in (proc.stderr + proc.stdout).splitlines() if x.strip() and "!" not in x]
                raise EngineFailure(f"gpaw exited {proc.returncode} after {seconds:.0f} s: "
                                    f"{(lines[-1:] or ['no output'])[0].strip()}")
            out = json.loads((tmp / "out.json").read_text())
        details = {"ranks": self.method.ranks, "kpts": kpts, "scf_seconds": out.get("seconds")}
        if "error" in out:
            details["error"] = out["error"]
        return Result(out.get("energy"), bool(out["converged"]), seconds, spin, details)


ENGINES: dict[str, type[Engine]] = {"pyscf": PySCF, "gpaw": GPAW}


def engine(name: str, method: Method | None = None) -> Engine:
    """The named engine, or a one-line :class:`MissingEngine` / usage error."""
    cls = ENGINES.get(name)
    if cls is None:
        raise MlipError(f"unknown reference engine {name!r}; use one of: {', '.join(ENGINES)}")
    why = cls.missing()
    if why:
        raise MissingEngine(why)
    return cls(method)
