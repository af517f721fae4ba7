"""Measure the float32 noise floor of each law's tolerance keys on each shipped model.

For models that satisfy a law by construction (equivariant architectures,
autograd forces and stress), the violation a check measures is rounding
noise. Each law says how its noise is measured in its record's calibration
entry (``pytest_mlip/laws/<law>/``; ``pytest-mlip laws`` lists the laws that
opt out and why); this script runs that entry for every built-in contract of
the law on every usable shipped model and writes the worst value per (model,
contract, tolerance key) to ``pytest_mlip/calibration.json``. Contract files
may then not set a tolerance below it (``pytest_mlip.contracts.files``).

    python benchmarks/calibrate_noise.py [model ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pytest_mlip.evaluation import evaluator_for
from pytest_mlip.laws import LAWS, run_contract
from pytest_mlip.testing import builtin_contracts

SHIPPED = ["sevennet-0", "sevennet-l3i5", "chgnet-0.3.0", "chgnet-0.2.0", "chgnet-r2scan", "diep"]
OUT = Path(__file__).resolve().parent.parent / "pytest_mlip" / "calibration.json"


class Context:
    """What a law's calibration entry may ask for on one model: shared measurements computed once, and the raw
    worst violations of a built-in contract (recorded under 'observed': they include real findings)."""

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.observed_raw: dict[str, dict[str, float]] = {}
        self._shared: dict[str, object] = {}

    def shared(self, key: str, measure):
        if key not in self._shared:
            self._shared[key] = measure(self.evaluator)
        return self._shared[key]

    def observed(self, settings) -> dict[str, float]:
        if settings.name not in self.observed_raw:
            keys: dict[str, float] = {}
            for p in run_contract(settings, self.evaluator, recheck_guaranteed=True).probes:
                for k, v in p.violations.items():
                    keys[k] = max(keys.get(k, 0.0), v)
            self.observed_raw[settings.name] = keys
        return dict(self.observed_raw[settings.name])


def _rounded(values: dict) -> dict:
    return {k: float(f"{v:.3g}") for k, v in values.items()}


def main(models):
    data = json.loads(OUT.read_text()) if OUT.exists() else {"noise": {}}
    contracts = builtin_contracts()
    for model in models:
        t0 = time.perf_counter()
        ctx = Context(evaluator_for(model))
        per = {}
        for name, settings in contracts.items():
            entry = LAWS[settings.check].calibration_function()
            if entry is not None:
                per[name] = _rounded(entry(settings, ctx))
        data["noise"][model] = per
        data.setdefault("observed", {})[model] = {k: _rounded(v) for k, v in ctx.observed_raw.items()}
        print(f"{model}: {time.perf_counter() - t0:.0f} s", json.dumps(per), flush=True)
    data["how"] = ("benchmarks/calibrate_noise.py, float32 as shipped, CPU, torch 2.13. Each law's calibration entry "
                   "(pytest_mlip/laws/<law>/): symmetry contracts use the noise floor, the worst change of E/atom, "
                   "forces and stress under rotation, translation and permutation of rattled, low-symmetry probes "
                   "(rattled ethanol, a Cu3Ni3 cluster, rattled Si and NaCl), where every shipped architecture is "
                   "invariant up to rounding; dissociation uses floor x atoms for energy; the wall: energy change of "
                   "dimers under translation; stress-strain, zero net force, energy-force, Jacobian symmetry and "
                   "determinism: the law's own raw violation (autograd forces and stress, a deterministic forward "
                   "pass). 'observed' holds the raw worst violations of the contracts measured that way, which "
                   "include real findings.")
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or SHIPPED)
