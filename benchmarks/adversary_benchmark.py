"""Adversary benchmark: gradient ascent vs uniform random search vs hypothesis.target() at equal budgets.

Not a test (it takes minutes). Run from the repository root:

    python benchmarks/adversary_benchmark.py                 # both parts
    python benchmarks/adversary_benchmark.py --skip-shipped  # planted defects only

(a) Planted defects in narrow regions of Z (tests/mutants/narrow.py), each
    missed by the sampled check: per method, the largest normalised violation
    found and the model evaluations needed to first exceed the threshold
    (v/tau > 1), over several seeds; the ratio random / ascent of those
    evaluations (a lower bound when random search never got there).
(b) The shipped models on the built-in contracts that have a search
    objective, at a small budget: the sampled v/tau beside what each method
    found.

All three methods start from the same sampled points and count evaluations
the same way (pytest_mlip.adversary.search); the ascent's gradients come from
autograd where the model allows (the planted models and SevenNet), else from
the model's forces (conservative models, energy-only objectives), else from
finite differences, which are counted.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.mutants.narrow

METHODS = ("ascent", "random", "hypothesis")
N = "tests.mutants.narrow"
PLANTED = [
    # (label, contract, model)
    ("angular hole: wall dip at 1.965 A, one bond direction", "repulsive-wall-dimers", f"{N}:AngularHole"),
    ("height bump: O-Cu bump at one adsorbate height", "repulsive-wall-surface", f"{N}:HeightBump"),
    ("orientation well: rotation defect at one orientation", "rotation-invariance", f"{N}:OrientationWell"),
    ("deep angular hole (1.875 A, steep wall): limit", "repulsive-wall-dimers", f"{N}:DeepAngularHole"),
    ("compact hole (Gaussian tails): control", "repulsive-wall-dimers", f"{N}:CompactHole"),
]
SHIPPED_CONTRACTS = ("repulsive-wall-dimers", "rotation-invariance", "dissociation-limit",
                     "stress-strain-consistency")


def tensor(x):
    from pytest_mlip.adversary.problem import tensor as t

    return t(x)


def run(settings, model, method, budget, seed):
    from pytest_mlip.adversary.runner import run_adversary
    from pytest_mlip.adversary.search import SearchOptions
    from pytest_mlip.evaluation import evaluator_for

    t0 = time.perf_counter()
    r = run_adversary(settings, evaluator_for(model), SearchOptions(budget=budget, method=method, seed=seed),
                      recheck_guaranteed=True)
    return {"method": method, "seed": seed, "status": r.status, "value": r.value, "first_exceed": r.first_exceed,
            "evaluations": r.evaluations, "gradients": r.gradients, "problem": r.problem,
            "parameters": r.parameters, "seconds": time.perf_counter() - t0, "reason": r.reason}


def _dimer_energy(cls, r, n):
    """Closed form of a tests/mutants/narrow.py wall defect model for dimers (numpy, vectorised)."""
    m = cls.D * ((1 - np.exp(-cls.a * (r - cls.r0))) ** 2 - 1)
    t = np.clip((r - cls.r_switch) / (5.0 - cls.r_switch), 0.0, 1.0)
    e = m * 0.5 * (1 + np.cos(np.pi * t))
    c2 = (n @ np.asarray(cls.axis)) ** 2
    if cls.__name__ == "CompactHole":
        hole = np.exp(-(((r - cls.r_h) / cls.w_r) ** 2)) * np.exp(-cls.kappa * (1 - c2))
    else:
        hole = 1.0 / (1 + ((r - cls.r_h) / cls.w_r) ** 2) / (1 + cls.kappa * (1 - c2))
    return e - cls.depth * hole


def expected_random_evaluations(name, model, samples=400_000, seed=0):
    """Model evaluations uniform random search needs on average to first exceed v/tau > 1:
    (evaluations per point) / (fraction of Z where v/tau > 1), the fraction counted exactly on
    ``samples`` points drawn as the random search draws them (Problem.sample), v from the planted
    model's closed form (dimers) or a 0.001 A energy grid along the approach (surface)."""
    import importlib

    from pytest_mlip.adversary.objectives import objective_for
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.testing import builtin_contracts

    settings = builtin_contracts()[name]
    ev = evaluator_for(model)
    problems, _ = objective_for(settings.check).problems(settings, ev)
    cls = getattr(importlib.import_module(model.split(":")[0]), model.split(":")[1])
    rng = np.random.default_rng(seed)
    picks = rng.integers(len(problems), size=samples)
    xs = np.array([problems[i].sample(rng) for i in picks])
    tau = settings.tolerance["drop"]
    if name == "repulsive-wall-dimers":
        th, ph = xs[:, 2], xs[:, 3]
        n = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=1)
        v = (_dimer_energy(cls, xs[:, 0] + xs[:, 1], n) - _dimer_energy(cls, xs[:, 0], n)) / tau
    else:  # one surface approach: E(h) on a fine grid
        (p,) = problems
        grid = np.arange(p.lower[0], p.r_eq + 1e-3, 1e-3)
        e = np.array([ev.energy(p.configs(tensor(np.array([h, 0.0, 0.0, 0.0])))[0].to_atoms()) for h in grid])
        v = (np.interp(xs[:, 0] + xs[:, 1], grid, e) - np.interp(xs[:, 0], grid, e)) / tau
    hits = int(np.sum(v > 1.0))
    return (2.0 * samples / hits if hits else math.inf), hits, samples


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def planted(budget: int, seeds: int, out: dict):
    from pytest_mlip.testing import builtin_contracts, run_contract

    contracts = builtin_contracts()
    print(f"\n(a) planted narrow defects: budget {budget} model evaluations per run, seeds 0..{seeds - 1}")
    head = f"{'defect':54s} {'method':10s} {'sampled':>8s} {'best v/tau max/median':>22s} {'hits':>5s} " \
           f"{'evals to v/tau>1 (median)':>26s} {'s/run':>6s}"
    print(head)
    print("-" * len(head))
    ratios, never_less = [], []
    for label, name, model in PLANTED:
        settings = contracts[name]
        sampled = run_contract(settings, model, recheck_guaranteed=True)
        rows = {m: [run(settings, model, m, budget, s) for s in range(seeds)] for m in METHODS}
        out.setdefault("planted", []).append({"defect": label, "contract": name, "model": model,
                                              "sampled": sampled.max_normalized, "runs": rows})
        first = {}
        for m in METHODS:
            vals = [r["value"] for r in rows[m] if r["value"] is not None]
            hits = [r["first_exceed"] for r in rows[m] if r["first_exceed"] is not None]
            # a run that never exceeded counts as "more than the budget" for the median
            fe = sorted(hits + [math.inf] * (len(rows[m]) - len(hits)))
            med = statistics.median(fe) if fe else math.inf
            first[m] = med
            med_txt = fmt(med) if math.isfinite(med) else f">{budget}"
            print(f"{label if m == 'ascent' else '':54s} {m:10s} {fmt(sampled.max_normalized):>8s} "
                  f"{fmt(max(vals)) + ' / ' + fmt(statistics.median(vals)):>22s} {len(hits)}/{len(rows[m]):<3d} "
                  f"{med_txt:>26s} {statistics.mean(r['seconds'] for r in rows[m]):6.1f}")
        for ra, rr in zip(rows["ascent"], rows["random"]):
            never_less.append((label, ra["value"] >= rr["value"] - 1e-9))
        expected = None
        if name in ("repulsive-wall-dimers", "repulsive-wall-surface"):
            expected, hits, samples = expected_random_evaluations(name, model)
            print(f"{'':54s} {'(random, exact expectation: ' + (fmt(expected) if math.isfinite(expected) else 'inf') + f' evaluations; {hits} of {samples} points of Z exceed)':s}")
        a = max(first["ascent"], 1)
        ratios.append((label, first["random"] / a if math.isfinite(first["random"]) and math.isfinite(a) else None,
                       budget / a if math.isfinite(a) else None,
                       expected / a if expected is not None and math.isfinite(a) else None))
    print("\nevaluations to first exceed v/tau > 1, random search / gradient ascent (medians over seeds):")
    for label, ratio, bound, expected in ratios:
        extra = f"; with random's exact expectation: {expected:.3g}x" if expected is not None else ""
        if ratio is not None:
            print(f"  {label}: {ratio:.1f}x measured{extra}")
        elif bound is not None:
            print(f"  {label}: >= {bound:.1f}x measured (random search never exceeded the threshold within the "
                  f"budget){extra}")
        else:
            print(f"  {label}: gradient ascent did not exceed the threshold within the budget")
    ok = sum(1 for _, good in never_less if good)
    print(f"gradient ascent found at least as large a violation as random search at equal budget in "
          f"{ok}/{len(never_less)} paired runs" + ("" if ok == len(never_less) else ": " + ", ".join(
              sorted({lbl for lbl, good in never_less if not good}))))
    out["ratios"] = [{"defect": lbl, "ratio": r, "lower_bound": b, "ratio_expected": e} for lbl, r, b, e in ratios]


def shipped(models: list[str], budget: int, out: dict):
    from pytest_mlip.testing import builtin_contracts, run_contract

    contracts = builtin_contracts()
    print(f"\n(b) shipped models: budget {budget} per contract and model, seed 0")
    head = (f"{'model':14s} {'contract':28s} {'sampled':>10s} " + " ".join(f"{m + ' v/tau (>1 at)':>26s}" for m in METHODS)
            + "  ascent worst point")
    print(head)
    print("-" * len(head))
    for model in models:
        for name in SHIPPED_CONTRACTS:
            settings = contracts[name]
            t0 = time.perf_counter()
            sampled = run_contract(settings, model, recheck_guaranteed=True)
            rows = {m: run(settings, model, m, budget, 0) for m in METHODS}
            out.setdefault("shipped", []).append({"model": model, "contract": name,
                                                  "sampled": sampled.max_normalized, "sampled_status": sampled.status,
                                                  "runs": rows, "seconds": time.perf_counter() - t0})
            cells = []
            for m in METHODS:
                r = rows[m]
                cells.append(f"{fmt(r['value']) + ' (' + (str(r['first_exceed']) if r['first_exceed'] is not None else '-') + ')':>26s}")
            a = rows["ascent"]
            where = f"{a['problem']} " + ", ".join(f"{k}={v:.3g}" for k, v in a["parameters"].items()) \
                if a["status"] in ("violation", "clean") else a["reason"][:80]
            print(f"{model:14s} {name:28s} {fmt(sampled.max_normalized) + ' ' + sampled.status:>10s} "
                  + " ".join(cells) + f"  {where}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--planted-budget", type=int, default=600)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--shipped-budget", type=int, default=40)
    p.add_argument("--models", default="sevennet-0,chgnet-0.3.0,diep")
    p.add_argument("--skip-planted", action="store_true")
    p.add_argument("--skip-shipped", action="store_true")
    p.add_argument("--json", type=Path, default=None, help="also write every run as JSON here")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    out: dict = {"planted_budget": args.planted_budget, "shipped_budget": args.shipped_budget}
    t0 = time.perf_counter()
    if not args.skip_planted:
        planted(args.planted_budget, args.seeds, out)
    if not args.skip_shipped:
        shipped([m for m in args.models.split(",") if m], args.shipped_budget, out)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
