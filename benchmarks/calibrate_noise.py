"""Measure the float32 noise floor of each exact check on each shipped model.

For models that satisfy a law by construction (equivariant architectures,
autograd forces and stress), the violation a check measures is rounding
noise. This script runs the built-in exact contracts on every usable shipped
model and writes the worst value per (model, contract, tolerance key) to
``pytest_mlip/calibration.json``; ``tests/test_calibration.py`` then requires
every default tolerance to be at least 3x that noise. The repulsive wall and
other energy-scan checks get the energy noise of a dimer under translation.

    python benchmarks/calibrate_noise.py [model ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from pytest_mlip.contracts.base import CHECKS
from pytest_mlip.errors import ModelEvaluationError
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


def fd_noise(evaluator, settings) -> float:
    """The finite-difference noise of energy-force consistency on a model whose forces are the gradient of its
    energy: the check's own worst |F - F_FD| with its refinement applied to every component (tolerance ~0, so each
    component gets the better of the central difference at h and the Richardson estimate from h and h/2), over the
    contract's structures that the model covers and on which the law holds at the default tolerance."""
    from pytest_mlip.contracts.energy_force import EnergyForce

    holds = {p.probe for p in EnergyForce().run(settings, evaluator, recheck_guaranteed=True).probes
             if p.status == "ok" and p.normalized <= 1}  # a failing structure holds a finding (DIEP's benzene)
    strict = settings.model_copy(update={"tolerance": {"forces": 1e-12}})
    verdict = EnergyForce().run(strict, evaluator, recheck_guaranteed=True)
    return max((p.violations.get("forces", 0.0) for p in verdict.probes if p.probe in holds), default=0.0)


EF_HOW = ("energy-force-consistency: the check's own worst |F - F_FD| at step 3e-3 A with its h/2 refinement "
          "applied to every component (the better of central differences and Richardson), over the structures on "
          "which the law holds at the default tolerance (a failing structure is a finding, not noise): the "
          "finite-difference noise; its maximum over the models is the floor a contract's tolerance may not go "
          "below (--energy-force).")


def main_energy_force(models):
    """Only the energy-force floor: ``python benchmarks/calibrate_noise.py --energy-force [model ...]``."""
    data = json.loads(OUT.read_text())
    settings = builtin_contracts()["energy-force-consistency"]
    for model in models:
        t0 = time.perf_counter()
        noise = fd_noise(evaluator_for(model), settings)
        data["noise"].setdefault(model, {})["energy-force-consistency"] = {"forces": float(f"{noise:.3g}")}
        if EF_HOW not in data["how"]:
            data["how"] += " " + EF_HOW
        print(f"{model}: energy-force FD noise {noise:.3g} eV/A ({time.perf_counter() - t0:.0f} s)", flush=True)
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
        data["noise"][model] = per
        data.setdefault("observed", {})[model] = observed
        print(f"{model}: {time.perf_counter() - t0:.0f} s floor {floor}", json.dumps(observed), flush=True)
    data["how"] = ("benchmarks/calibrate_noise.py, float32 as shipped, CPU, torch 2.13. Noise floor: the worst "
                   "change of E/atom, forces and stress under rotation, translation and permutation of rattled, "
                   "low-symmetry probes (rattled ethanol, a Cu3Ni3 cluster, rattled Si and NaCl), where every "
                   "shipped architecture is invariant up to rounding. Symmetry contracts use that floor; "
                   "dissociation uses floor x atoms for energy; stress-strain: the finite-difference error "
                   "(autograd stress); wall: energy change of dimers under translation. 'observed' holds the "
                   "raw worst violations of the built-in exact contracts, which include real findings.")
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--energy-force"]:
        main_energy_force(sys.argv[2:] or SHIPPED + ["emt", "lennard-jones"])
    else:
        main(sys.argv[1:] or SHIPPED)
