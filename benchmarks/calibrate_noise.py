"""Measure the float32 noise floor of each exact check on each shipped model.

For models that satisfy a law by construction (equivariant architectures,
autograd forces and stress), the violation a check measures is rounding
noise. This script runs the built-in exact contracts on every usable shipped
model and writes the worst value per (model, contract, tolerance key) to
``pytest_mlip/calibration.json``; ``tests/test_calibration.py`` then requires
every default tolerance to be at least 3x that noise. The repulsive wall and
other energy-scan checks get the energy noise of a dimer under translation.

    python benchmarks/calibrate_noise.py [model ...]
    python benchmarks/calibrate_noise.py --law nve-conservation [model ...]   # that law's entries only

The NVE law's entries: its integrator error at the contract's own setting on clean analytic models (EMT,
Lennard-Jones) and on each model, told from a model's own non-conservation by halving the time step
(see ``nve_noise``), and the float32 noise of the total energy.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from pytest_mlip.contracts.base import CHECKS
from pytest_mlip.evaluation import evaluator_for
from pytest_mlip.testing import builtin_contracts

#: laws every shipped architecture satisfies by construction: their violations are rounding noise
BY_CONSTRUCTION = ("rotation-invariance", "translation-invariance", "permutation-invariance")
SHIPPED = ["sevennet-0", "sevennet-l3i5", "chgnet-0.3.0", "chgnet-0.2.0", "chgnet-r2scan", "diep"]
EXACT_CHECKS = ("symmetry", "dissociation", "stress_strain")
OUT = Path(__file__).resolve().parent.parent / "pytest_mlip" / "calibration.json"


def dimer_energy_noise(evaluator) -> float:
    """Worst |dE| of dimers translated by random vectors: the energy noise of a scan."""
    from ase import Atoms

    rng = np.random.default_rng(0)
    worst = 0.0
    for pair in [("Ni", "Ni"), ("C", "O"), ("H", "H"), ("Cu", "Pt")]:
        for r in (0.6, 1.2, 2.2, 3.5):
            a = Atoms(pair, positions=[[0, 0, 0], [0, 0, r]])
            a.center(vacuum=10)
            e0 = evaluator.energy(a)
            for _ in range(2):
                b = a.copy()
                b.positions += rng.uniform(-2, 2, 3)
                worst = max(worst, abs(evaluator.energy(b) - e0))
    return worst


def _unused_fragment_noise(evaluator, settings) -> dict:
    """|dE| and max |dF| of the combined fragment systems under a rigid translation."""
    from pytest_mlip.contracts.dissociation import Dissociation

    rng = np.random.default_rng(1)
    worst = {"energy": 0.0, "forces": 0.0}
    for probe in Dissociation().probes(settings):
        a = evaluator.evaluate(probe.atoms)
        moved = probe.atoms.copy()
        moved.positions += rng.uniform(-2, 2, 3)
        b = evaluator.evaluate(moved)
        worst["energy"] = max(worst["energy"], abs(a.energy - b.energy))
        worst["forces"] = max(worst["forces"], float(np.abs(a.forces - b.forces).max()))
    return worst


#: low-symmetry probes on which every shipped model is equivariant up to rounding
NOISE_PROBES = [
    {"kind": "molecule", "name": "CH3CH2OH", "rattle": 0.05},
    {"kind": "cluster", "symbols": "Cu3Ni3", "seed": 2},
    {"kind": "bulk", "name": "Si", "cubic": True, "rattle": 0.05},
    {"kind": "bulk", "name": "NaCl", "crystalstructure": "rocksalt", "a": 5.64, "rattle": 0.05},
]


def noise_floor(evaluator) -> dict:
    """Worst change of E/atom, F, sigma under rotation, translation and permutation of NOISE_PROBES."""
    from pytest_mlip.contracts.symmetry import Symmetry, SymmetrySettings

    floor = {}
    for transform in ("rotation", "translation", "permutation"):
        settings = SymmetrySettings(name=f"noise-{transform}", transform=transform, samples=3,
                                    structures=NOISE_PROBES)
        verdict = Symmetry().run(settings, evaluator)
        for p in verdict.probes:
            for k, v in p.violations.items():
                floor[k] = max(floor.get(k, 0.0), v)
    return floor


def nve_noise(evaluator, settings) -> tuple[dict, dict]:
    """(noise, observed) of the NVE law on one model at the contract's setting.

    observed: the worst drift and excursion over the contract's runs; the same two after rerunning the worst
    runs at half the time step for the same simulated time (velocity Verlet's error shrinks about 4x, a force
    that is not a gradient does not); and the float32 noise of E_total/N (largest change of the energy per atom
    of every run's last frame under a rigid translation). noise: the worst drift and excursion when halving
    the step at least halved them (the integrator's error on this model's surface), else empty: what the run
    measured is the model's own, a finding and not noise.
    """
    from pytest_mlip.contracts.nve_conservation import NVEConservation

    check = NVEConservation()
    settings = type(settings).model_validate({**settings.model_dump(), "refine": False})  # the raw values at dt
    verdict = check.run(settings, evaluator, recheck_guaranteed=True)
    ok = [p for p in verdict.probes if p.status == "ok"]
    if not ok:
        return {}, {"status": verdict.status, "reason": verdict.reason[:200]}
    worst = {k: max(p.violations[k] for p in ok) for k in ("drift", "excursion")}
    rng = np.random.default_rng(3)
    e_noise = 0.0
    for p in ok:
        frame = p.atoms
        moved = frame.copy()
        moved.positions += rng.uniform(-2, 2, 3)
        e_noise = max(e_noise, abs(evaluator.energy(moved) - evaluator.energy(frame)) / len(frame))
    half = {}
    for key in ("drift", "excursion"):
        p = max(ok, key=lambda r: r.violations[key])
        spec = next(s for s in settings.structures for t in settings.temperatures if p.probe == f"{s.label()}@{t:g}K")
        temp = p.observables["temperature_K"]
        fine = type(settings).model_validate({**settings.model_dump(), "timestep": settings.timestep / 2,
                                              "steps": settings.steps * 2, "temperatures": [temp],
                                              "structures": [spec.model_dump()]})
        r = check.run(fine, evaluator, recheck_guaranteed=True).probes[0]
        half[key] = {"probe": p.probe, "at_dt": p.violations[key], "at_dt_half": r.violations.get(key),
                     "unstable_at_dt_half": r.violations.get("unstable")}
    observed = {"drift": float(f"{worst['drift']:.3g}"), "excursion": float(f"{worst['excursion']:.3g}"),
                "energy_noise_per_atom": float(f"{e_noise:.3g}"), "halved_step": half,
                "unstable_runs": int(sum(p.violations["unstable"] for p in ok)), "runs": len(ok),
                "probes": {p.probe: [float(f"{p.violations[k]:.3g}") for k in ("drift", "excursion", "unstable")]
                           for p in ok},
                "cost": {"calls": verdict.evaluations, "seconds": round(verdict.seconds, 1)}}
    return nve_noise_entry(observed), observed


def nve_noise_entry(observed: dict) -> dict:
    """The NVE noise of a model from what ``nve_noise`` observed: each of drift and excursion whose worst run at
    least halved at half the time step (the integrator's error); one that did not is the model's own (a finding)."""
    return {k: observed[k] for k, h in observed.get("halved_step", {}).items()
            if h["at_dt_half"] is not None and h["at_dt_half"] <= h["at_dt"] / 2}


#: the NVE law's structures an analytic reference is measured on, where its own physics differs: Lennard-Jones's one
#: parameter set (sigma 2 A) puts the 1 A bonds of a molecule deep in its r^-12 wall (forces ~1e4 eV/A): that run
#: explodes, which says nothing about the integrator
NVE_SCOPE = {"lennard-jones": lambda spec: spec.kind != "molecule"}
NVE_HOW = (" nve-conservation: drift and excursion at the contract's setting (refinement off); each is kept as a "
           "model's noise only when rerunning its worst run at half the time step at least halved it (velocity "
           "Verlet's own error; EMT and Lennard-Jones too, Lennard-Jones on the cluster and bulk cell only), else it "
           "is in 'observed' alone (benchmarks/calibrate_noise.py --law nve-conservation).")


def main_nve(models):
    """(Re)measure only the NVE law's entries of calibration.json on ``models`` (analytic references included)."""
    data = json.loads(OUT.read_text())
    name = "nve-conservation"
    full = builtin_contracts()[name]
    for model in models:
        t0 = time.perf_counter()
        ev = evaluator_for(model)
        keep = NVE_SCOPE.get(model)
        settings = full if keep is None else type(full).model_validate(
            {**full.model_dump(), "structures": [s.model_dump() for s in full.structures if keep(s)]})
        noise, observed = nve_noise(ev, settings)
        data["noise"].setdefault(model, {}).pop(name, None)
        if noise:
            data["noise"][model][name] = noise
        data.setdefault("observed", {}).setdefault(model, {})[name] = observed
        print(f"{model}: {time.perf_counter() - t0:.0f} s, {ev.stats.calls} calls, noise {noise}",
              json.dumps(observed), flush=True)
        if NVE_HOW not in data["how"]:
            data["how"] += NVE_HOW
        OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(models):
    data = json.loads(OUT.read_text()) if OUT.exists() else {"noise": {}}
    contracts = builtin_contracts()
    for model in models:
        t0 = time.perf_counter()
        ev = evaluator_for(model)
        floor = noise_floor(ev)
        per, observed = {}, {}
        for name, settings in contracts.items():
            if settings.check in EXACT_CHECKS:
                verdict = CHECKS[settings.check]().run(settings, ev, recheck_guaranteed=True)
                keys = {}
                for p in verdict.probes:
                    for k, v in p.violations.items():
                        keys[k] = max(keys.get(k, 0.0), v)
                observed[name] = {k: float(f"{v:.3g}") for k, v in keys.items()}
        natoms = 0
        for name, settings in contracts.items():
            if settings.check == "symmetry":
                per[name] = {k: float(f"{v:.3g}") for k, v in floor.items()}
            elif settings.check == "stress_strain":
                per[name] = observed[name]  # every shipped model computes stress by autograd: FD noise
            elif settings.check == "dissociation":
                from pytest_mlip.contracts.dissociation import Dissociation

                natoms = max(len(p.atoms) for p in Dissociation().probes(settings))
                per[name] = {"energy": float(f"{floor['energy'] * natoms:.3g}"),
                             "forces": float(f"{floor['forces']:.3g}")}
            elif settings.check == "repulsive_wall":
                per[name] = {"drop": float(f"{dimer_energy_noise(ev):.3g}")}
        kept = data["noise"].get(model, {}).get("nve-conservation")  # measured by --law nve-conservation
        if kept:
            per["nve-conservation"] = kept
        data["noise"][model] = per
        data.setdefault("observed", {})[model] = observed
        print(f"{model}: {time.perf_counter() - t0:.0f} s floor {floor}", json.dumps(observed), flush=True)
    data["how"] = ("benchmarks/calibrate_noise.py, float32 as shipped, CPU, torch 2.13. Noise floor: the worst "
                   "change of E/atom, forces and stress under rotation, translation and permutation of rattled, "
                   "low-symmetry probes (rattled ethanol, a Cu3Ni3 cluster, rattled Si and NaCl), where every "
                   "shipped architecture is invariant up to rounding. Symmetry contracts use that floor; "
                   "dissociation uses floor x atoms for energy; stress-strain: the finite-difference error "
                   "(autograd stress); wall: energy change of dimers under translation. 'observed' holds the "
                   "raw worst violations of the built-in exact contracts, which include real findings." + NVE_HOW)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:2] == ["--law", "nve-conservation"]:
        main_nve(args[2:] or ["emt", "lennard-jones", *SHIPPED])
    else:
        main(args or SHIPPED)
