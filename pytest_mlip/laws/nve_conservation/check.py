"""NVE energy conservation: short velocity-Verlet runs keep the total energy and stay physical."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from ...errors import ModelOutputError
from ..base import Check, ContractSettings, Measurement, Probe
from ..energy_force.check import probe_rng  # velocities seeded by the contract seed and the probe id

#: points of the energy trace kept per probe (the figure and the report; the fit uses every step)
TRACE_POINTS = 101
#: the violations that measure conservation (the integrator's error adds to them; 'unstable' is a flag)
ENERGY_KEYS = ("drift", "excursion")
KB = 8.617333262e-5  # Boltzmann's constant, eV/K


class NVESettings(ContractSettings):
    check: Literal["nve_conservation"] = "nve_conservation"
    temperatures: list[float] = Field(default_factory=lambda: [300.0, 1000.0],
                                      description="initial temperatures (K), one run per structure and temperature")
    timestep: float = Field(0.5, ge=0.05, le=5.0, description="velocity-Verlet time step (fs)")
    steps: int = Field(200, ge=10, le=20000, description="steps per run (one model call each)")
    seed: int = Field(0, description="seeds the Maxwell-Boltzmann velocities (with the probe id)")
    min_distance_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="a run is unstable when its closest "
                                         "pair comes closer than this fraction of the starting closest pair")
    refine: bool = Field(True, description="rerun a run past tau at half the step to tell the integrator's "
                                           "error from the model's")

    default_tolerance = {"drift": 0.015, "excursion": 0.01, "unstable": 0.5}

    @field_validator("temperatures")
    @classmethod
    def _temperatures(cls, v):
        if not v or any(not (1.0 <= t <= 5000.0) for t in v):
            raise ValueError(f"temperatures {v}: give at least one, each between 1 and 5000 K")
        return v


class _Unstable(Exception):
    """Raised from the MD observer to stop a run that has become unphysical."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def closest_pair(atoms) -> float:
    """The shortest interatomic distance (minimum image in periodic cells); inf for one atom."""
    n = len(atoms)
    if n < 2:
        return math.inf
    periodic = bool(np.any(atoms.pbc)) and atoms.cell.rank == 3
    d = atoms.get_all_distances(mic=periodic)
    d[np.diag_indices(n)] = math.inf
    return float(d.min())


def initial_velocities(atoms, temperature: float, rng):
    """Maxwell-Boltzmann momenta at ``temperature`` with no centre-of-mass motion (and, for an isolated system,
    no rotation), rescaled so the kinetic temperature ASE reports is exactly ``temperature``."""
    from ase.md import velocitydistribution as vd

    if hasattr(vd, "thermalize_momenta"):  # ase >= 3.29; the same draws as MaxwellBoltzmannDistribution
        vd.thermalize_momenta(atoms, temperature, rng=rng)
    else:  # pragma: no cover - older ase
        vd.MaxwellBoltzmannDistribution(atoms, temperature_K=temperature, rng=rng)
    vd.Stationary(atoms)
    if not np.any(atoms.pbc) and len(atoms) > 2:
        vd.ZeroRotation(atoms)
    now = atoms.get_temperature()
    if now > 0:
        atoms.set_momenta(atoms.get_momenta() * math.sqrt(temperature / now))


def drift_fit(t_ps: np.ndarray, e_per_atom: np.ndarray) -> float:
    """Slope (eV/atom/ps) of a least-squares line through the total energy per atom."""
    if len(t_ps) < 2:
        return 0.0
    return float(np.polyfit(t_ps, e_per_atom, 1)[0])


def run_nve(atoms, evaluator, temperature: float, timestep_fs: float, steps: int, fraction: float, rng) -> dict:
    """One velocity-Verlet run through the evaluator. Returns the time (fs) and total energy (eV) of every step
    reached, the smallest closest-pair ratio and, when the run became unphysical, at which step and why.

    Unphysical: a model output that is not finite, positions or kinetic energy that are not finite, or the
    closest pair nearer than ``fraction`` of the starting closest pair. The run stops there.
    """
    from ase import units
    from ase.md.verlet import VelocityVerlet

    from ...evaluation.calculator import EvaluatorCalculator

    work = atoms.copy()
    work.calc = EvaluatorCalculator(evaluator)
    initial_velocities(work, temperature, rng)
    d0 = closest_pair(work)
    out = {"t": [], "E": [], "Ekin": [], "ratio": 1.0, "unstable_step": None, "why": "", "frame": None}

    def observe():
        pos = work.get_positions()
        ekin = work.get_kinetic_energy()
        if not (np.all(np.isfinite(pos)) and math.isfinite(ekin)):
            raise _Unstable("positions or kinetic energy became non-finite")
        ratio = closest_pair(work) / d0 if math.isfinite(d0) else 1.0
        out["ratio"] = min(out["ratio"], ratio)
        epot = work.get_potential_energy()
        out["t"].append(len(out["t"]) * timestep_fs)
        out["E"].append(epot + ekin)
        out["Ekin"].append(ekin)
        if ratio < fraction:
            raise _Unstable(f"closest pair at {ratio:.3f} of its starting distance ({ratio * d0:.3f} A)")

    dyn = VelocityVerlet(work, timestep=timestep_fs * units.fs, logfile=None)
    dyn.attach(observe, interval=1)
    try:
        dyn.run(steps)  # ASE observes step 0 too; a model error there is its failure on the given structure
    except _Unstable as why:
        out["unstable_step"], out["why"] = dyn.nsteps, why.why  # observed after dyn.nsteps steps
    except ModelOutputError as err:
        if not out["t"] or "non-finite" not in str(err):
            raise  # garbage of another kind (shape, type), or on the starting structure: not a dynamical instability
        err.reported = True  # the verdict names it as the instability
        out["unstable_step"], out["why"] = dyn.nsteps + 1, f"non-finite model output ({err.prop})"  # the step tried
    frame = work.copy()
    frame.calc = None
    out["frame"] = frame
    return out


class NVEConservation(Check):
    name = "nve_conservation"
    title = "NVE energy conservation and stability"
    statement = ("In microcanonical (NVE) molecular dynamics with the model's forces, the total energy (potential + "
                 "kinetic) stays constant up to the integrator's own error, and the run stays physical: finite, "
                 "with no two atoms driven together.")
    rationale = ("Energy conservation is the dynamical consequence of forces being the gradient of one smooth "
                 "energy. A direct-force head, forces that are not -dE/dx of the reported energy, or an energy "
                 "with jumps (a hard cutoff) heat or cool a simulation steadily; a hole at short range swallows "
                 "atoms within a few hundred femtoseconds. Energy-force consistency probes single configurations; "
                 "this law integrates the same defect along trajectories the model itself chooses, which is what "
                 "an MD user meets (MLIP Arena, MLIPAudit and the eSEN paper test it the same way). Hard: it is "
                 "exact for any conservative, smooth potential (no committee is needed to judge it), tau sits "
                 ">= 3x above the integrator's error and the float32 noise measured at this time step, and a model "
                 "that fails it cannot be used for NVE molecular dynamics at this setting.")
    procedure = ("For each structure and initial temperature: Maxwell-Boltzmann velocities from a seeded generator "
                 "(seed and probe id), centre-of-mass motion removed (and rotation, for isolated systems), rescaled "
                 "to the temperature; then `steps` velocity-Verlet steps of `timestep` fs (ASE), one model call per "
                 "step. Observables: the drift, |slope| of a least-squares line through E_total/N over the run "
                 "(eV/atom/ps); the excursion, max |E_total(t) - E_total(0)|/N (eV/atom); and stability: the run "
                 "is unstable (flag 1, stopped there) when a model output or the positions become non-finite or "
                 "the closest pair comes nearer than min_distance_fraction of the starting closest pair. A stable "
                 "run past tau is rerun at half the step for the same time with the same velocities (refine): "
                 "when every value past tau at least halves (velocity Verlet's error shrinks ~4x; a force that is "
                 "not a gradient does the same work per ps at any step), the finer run is the measurement, so a "
                 "stiff but conservative surface is not reported. Label-free: only the model's own energies and "
                 "forces. Cost: one model call per step, twice more for a refined run.")
    threshold = ("drift <= tau_drift (0.015 eV/atom/ps), excursion <= tau_exc (0.01 eV/atom), unstable (0/1) <= 0.5. "
                 "At the default setting the integrator's own error (the part that shrinks >= 2x at half the step) "
                 "is at most 3.65e-3 eV/atom/ps of drift (chgnet-r2scan, ethanol at 300 K) and 2.52e-3 eV/atom of "
                 "excursion (EMT, ethanol at 1000 K): tau is 4.1x and 4.0x those. The float32 noise of E_total/N is "
                 "<= 3.2e-6 eV/atom (diep). Drift and excursion that do not shrink with the step are a model's own "
                 "(chgnet-0.3.0 and diep, 1.7e-3 to 2.3e-3 eV/atom/ps and eV/atom): below tau, so this setting does "
                 "not resolve non-conservation that small (calibration.json, 'observed'). Hard, exact.")
    units = {"drift": "eV/atom/ps", "excursion": "eV/atom", "unstable": "flag"}
    Settings = NVESettings

    def probes(self, settings):
        for spec in settings.structures:
            atoms = spec.build()
            for temperature in settings.temperatures:
                yield Probe(id=f"{spec.label()}@{temperature:g}K", atoms=atoms, params={"temperature": temperature})

    def measure(self, settings, evaluator, probe):
        run = self.trajectory(settings, evaluator, probe, settings.timestep, settings.steps)
        past = [k for k in ENERGY_KEYS if run["violations"][k] > settings.tolerance[k]]
        if settings.refine and past and not run["violations"]["unstable"]:
            # Past tau, tell the integrator's error from the model's: the same run (same velocities, same
            # simulated time) at half the step. Velocity Verlet's error shrinks about 4x; a force that is not the
            # gradient of the energy does the same work per picosecond at any step. When every value past tau at
            # least halves, the run at the finer step is the measurement.
            fine = self.trajectory(settings, evaluator, probe, settings.timestep / 2, settings.steps * 2)
            shrunk = all(fine["violations"][k] <= run["violations"][k] / 2 for k in past)
            verdict = "integrator's error: the finer run is the measurement" if shrunk else "the model's own"
            note = {"refined": f"at {settings.timestep / 2:g} fs: " + ", ".join(
                f"{k} {run['violations'][k]:.3g} -> {fine['violations'][k]:.3g}" for k in past) + f" ({verdict})"}
            if shrunk or fine["violations"]["unstable"]:
                run = fine
            run["observables"].update(note)
        return Measurement(violations=run["violations"], observables=run["observables"], worst_atoms=run["frame"])

    def trajectory(self, settings, evaluator, probe, timestep: float, steps: int) -> dict:
        """One run of the probe: its violations, observables and last frame."""
        temperature = probe.params["temperature"]
        run = run_nve(probe.atoms, evaluator, temperature, timestep, steps, settings.min_distance_fraction,
                      probe_rng(settings.seed, probe.id))
        n = len(probe.atoms)
        t = np.asarray(run["t"])
        e = np.asarray(run["E"]) / n
        drift = drift_fit(t / 1000.0, e)
        excursion = float(np.max(np.abs(e - e[0]))) if len(e) else 0.0
        unstable = run["unstable_step"] is not None
        stride = max(1, math.ceil(len(t) / TRACE_POINTS))
        kin = np.asarray(run["Ekin"])
        obs = {
            "temperature_K": temperature, "timestep_fs": timestep, "steps": steps,
            "steps_done": max(0, len(t) - 1), "natoms": n, "drift_signed": drift,
            "E0_per_atom": float(e[0]), "min_distance_ratio": run["ratio"],
            "T_final_K": float(2.0 * kin[-1] / (3.0 * n * KB)) if len(kin) else None,
            "curve_t": [float(x) for x in t[::stride]],
            "curve_dE": [float(x) for x in (e - e[0])[::stride]],
        }
        if unstable:
            obs["label"] = f"unstable at step {run['unstable_step']}: {run['why']}"
        return {"violations": {"drift": abs(drift), "excursion": excursion, "unstable": float(unstable)},
                "observables": obs, "frame": run["frame"]}

    def setting_details(self, settings) -> str:
        temps = ", ".join(f"{t:g}" for t in settings.temperatures)
        return (f"velocity Verlet, {settings.steps} steps of {settings.timestep:g} fs "
                f"({settings.steps * settings.timestep:g} fs) from {temps} K, seed {settings.seed}; unstable below "
                f"{settings.min_distance_fraction:g} x the starting closest pair"
                + ("; a run past tau is refined at half the step" if settings.refine else ""))
