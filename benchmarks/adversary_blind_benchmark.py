"""Adversary benchmark on models that offer values only: evaluations to first success, ascent vs random search.

Not a test (it takes minutes). Run from the repository root:

    python benchmarks/adversary_blind_benchmark.py            # 3 seeds, ascent budget 600, random 10x that
    python benchmarks/adversary_blind_benchmark.py --seeds 5 --json out.json

The planted defects (tests/mutants/blind.py) hide autograd and do not claim
conservative forces, as CHGNet, DIEP or any ASE calculator a user brings, so
every gradient the ascent uses is a finite difference it pays for. Each
defect is narrow and missed by the sampled check (its v/tau is printed).
Per defect and seed, both methods start from the same sampled points and
count evaluations the same way (pytest_mlip.adversary.search); each run stops
at its first normalised violation above 1 ("success"). Random search gets
``--random-factor`` times the evaluations the ascent needed in the same seed
(``--random-budget first``, the default: what deciding "at least that factor
fewer" takes) or times the ascent's budget (``--random-budget full``), so a
ratio random / ascent is measured when both succeed and is a lower bound
(">=") when random search never succeeded within its budget. Success counts are printed beside
the ratios: a ratio is only read at equal success. For the angular hole and
the height bump (the energies of tests/mutants/narrow.py's AngularHole and
HeightBump) random search's exact expectation is also printed
(benchmarks/adversary_benchmark.py: evaluations per point / share of Z that
exceeds, counted on 400000 points); for the isotropic wall dip and wall bump
from their closed form E(r) = Morse(r) + A L(r - r_c, w) the same way.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.mutants.blind

B = "tests.mutants.blind"
DEFECTS = [
    # (label, contract, model)
    ("angular hole: wall dip at 1.965 A along one bond direction", "repulsive-wall-dimers", f"{B}:BlindAngularHole"),
    ("height bump: O-Cu bump at 1.375 A over the surface", "repulsive-wall-surface", f"{B}:BlindHeightBump"),
    ("tail bump: interaction 7.3 A out, past the 5 A cutoff", "dissociation-limit", f"{B}:TailBump"),
    ("wall dip: isotropic, 1.72 A, 5 mA wide, steep wall", "repulsive-wall-dimers", f"{B}:WallDip"),
    ("wall bump: spurious 0.3 eV barrier at 1.975 A, 2 mA wide", "repulsive-wall-dimers", f"{B}:WallBump"),
    ("compression dip: pair dip at 1.9 A, 5 mA wide, on LJ", "compression-wall", f"{B}:CompressionDip"),
]


def first_success(settings, model: str, method: str, budget: int, seed: int) -> dict:
    """One search that stops at its first v/tau > 1: evaluations spent then (None: not within budget)."""
    from pytest_mlip.adversary.objectives import objective_for
    from pytest_mlip.adversary.search import BudgetExhausted, Search, SearchOptions
    from pytest_mlip.evaluation import evaluator_for

    class UntilFirst(Search):
        def _record(self, v, pi, x):
            super()._record(v, pi, x)
            if self.first_exceed is not None and self.phase == "search":
                raise BudgetExhausted

    ev = evaluator_for(model)
    problems, _ = objective_for(settings.check).problems(settings, ev)
    t0 = time.perf_counter()
    search = UntilFirst(problems, ev, SearchOptions(budget=budget, seed=seed, method=method)).run()
    best = search.best
    return {"method": method, "seed": seed, "first": search.first_exceed, "spent": search.spent,
            "best": None if best is None else best.value, "gradients": dict(search.gradients),
            "scans": search.scans, "problem": None if best is None else problems[best.problem].label,
            "seconds": time.perf_counter() - t0}


def expected_random_pair(name: str, model: str, samples: int = 400_000, seed: int = 0):
    """Random search's exact expectation (evaluations to first success) on a pair-Lorentzian wall defect
    (tests/mutants/blind.py: WallDip, WallBump), points drawn as the random search draws them, v in closed form."""
    import importlib

    import numpy as np

    from pytest_mlip.adversary.objectives import objective_for
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.testing import builtin_contracts

    settings = builtin_contracts()[name]
    problems, _ = objective_for(settings.check).problems(settings, evaluator_for(model))
    cls = getattr(importlib.import_module(model.split(":")[0]), model.split(":")[1])

    def energy(r):
        m = cls.D * ((1 - np.exp(-cls.a * (r - cls.r0))) ** 2 - 1)
        t = np.clip((r - cls.r_switch) / (5.0 - cls.r_switch), 0.0, 1.0)
        return m * 0.5 * (1 + np.cos(np.pi * t)) + cls.amplitude / (1 + ((r - cls.r_c) / cls.w) ** 2)

    rng = np.random.default_rng(seed)
    picks = rng.integers(len(problems), size=samples)
    xs = np.array([problems[i].sample(rng) for i in picks])
    v = (energy(xs[:, 0] + xs[:, 1]) - energy(xs[:, 0])) / settings.tolerance["drop"]
    hits = int(np.sum(v > 1.0))
    return (2.0 * samples / hits if hits else math.inf), hits, samples


def expected_random_tail(name: str, model: str, samples: int = 20_000, seed: int = 0):
    """Random search's exact expectation on the tail bump (tests/mutants/blind.py:TailBump, a pair Lorentzian past
    the cutoff): points drawn as the random search draws them; v = max(|dE|, max |dF|) / tau from the bump's
    closed form over every A-B pair (the clean Morse adds nothing beyond its cutoff); 3 evaluations per point."""
    import importlib

    import numpy as np

    from pytest_mlip.adversary.objectives import objective_for
    from pytest_mlip.adversary.problem import tensor
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.testing import builtin_contracts

    settings = builtin_contracts()[name]
    problems, _ = objective_for(settings.check).problems(settings, evaluator_for(model))
    cls = getattr(importlib.import_module(model.split(":")[0]), model.split(":")[1])
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(samples):
        p = problems[int(rng.integers(len(problems)))]
        a, b = (t.numpy() for t in p.placed_b(tensor(p.sample(rng))))
        d = b[None, :, :] - a[:, None, :]
        r = np.linalg.norm(d, axis=-1)
        x = (r - cls.r_c) / cls.w
        lor = 1.0 / (1.0 + x * x)
        de = cls.amplitude * (-2.0 * x / cls.w) * lor * lor  # dE/dr of each A-B pair
        fa = (de / r)[:, :, None] * d  # force on A from each pair (dE/dr_a = -de d/r)
        v = max(abs(cls.amplitude * lor.sum()) / settings.tolerance["energy"],
                max(np.abs(fa.sum(axis=1)).max(), np.abs(fa.sum(axis=0)).max()) / settings.tolerance["forces"])
        hits += v > 1.0
    return (3.0 * samples / hits if hits else math.inf), hits, samples


def fmt(v) -> str:
    return "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", type=int, default=600, help="the ascent's budget (model evaluations)")
    p.add_argument("--random-factor", type=int, default=10, help="random search gets this many times the ascent's "
                                                                   "evaluations (see --random-budget)")
    p.add_argument("--random-budget", choices=("first", "full"), default="first",
                   help="first: the factor times the ascent's evaluations to first success in the same seed; full: "
                        "the factor times the ascent's budget")
    p.add_argument("--only", default="", help="comma-separated defect indices (default: all)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    from pytest_mlip.testing import builtin_contracts, run_contract

    contracts = builtin_contracts()
    chosen = [DEFECTS[int(i)] for i in args.only.split(",") if i] or DEFECTS
    full = args.budget * args.random_factor
    what = (f"{args.random_factor}x the ascent's evaluations to first success in each seed"
            if args.random_budget == "first" else str(full))
    print(f"values-only models: evaluations to first v/tau > 1; ascent budget {args.budget}, random {what}, "
          f"seeds 0..{args.seeds - 1}")
    head = f"{'defect':60s} {'sampled':>8s} {'seed':>4s} {'ascent':>7s} {'random':>7s} {'random/ascent':>14s} {'s':>6s}"
    print(head)
    print("-" * len(head))
    out, summary = [], []
    t_all = time.perf_counter()
    for label, name, model in chosen:
        settings = contracts[name]
        sampled = run_contract(settings, model, recheck_guaranteed=True)
        ratios, wins = [], {"ascent": 0, "random": 0, "random runs": 0}
        for seed in range(args.seeds):
            a = first_success(settings, model, "ascent", args.budget, seed)
            rb = full if args.random_budget == "full" or a["first"] is None else \
                args.random_factor * max(a["first"], 1)
            if a["first"] is None:  # no ratio to read: do not spend random search's larger budget
                r = {"method": "random", "seed": seed, "first": None, "seconds": 0.0, "skipped": True}
            else:
                r = first_success(settings, model, "random", rb, seed)
            for m, res in (("ascent", a), ("random", r)):
                wins[m] += res["first"] is not None
            wins["random runs"] += not r.get("skipped", False)
            if a["first"] is None:
                ratio = "ascent failed"
            elif r["first"] is None:
                ratio = f">={rb / max(a['first'], 1):.3g}"
                ratios.append(rb / max(a["first"], 1))
            else:
                ratio = f"{r['first'] / max(a['first'], 1):.3g}"
                ratios.append(r["first"] / max(a["first"], 1))
            print(f"{label if seed == 0 else '':60s} {fmt(sampled.max_normalized) if seed == 0 else '':>8s} "
                  f"{seed:>4d} {fmt(a['first']) if a['first'] is not None else '>' + str(args.budget):>7s} "
                  f"{fmt(r['first']) if r['first'] is not None else '>' + str(rb):>7s} {ratio:>14s} "
                  f"{a['seconds'] + r['seconds']:6.1f}", flush=True)
            out.append({"defect": label, "contract": name, "model": model, "sampled": sampled.max_normalized,
                        "sampled_status": sampled.status, "ascent": a, "random": r})
        med = statistics.median(ratios) if len(ratios) == args.seeds else None
        summary.append((label, wins, med, sum(1 for x in out if x["defect"] == label and x["ascent"]["first"]
                                               is not None and x["random"]["first"] is None)))
        if model.endswith(":TailBump"):
            expected, hits, samples = expected_random_tail(name, model)
            firsts = [x["ascent"]["first"] for x in out if x["defect"] == label and x["ascent"]["first"] is not None]
            print(f"{'':60s} (random, exact expectation: {expected:.3g} evaluations, {hits} of {samples} points of Z "
                  f"exceed; / median ascent: {expected / max(statistics.median(firsts), 1):.3g}x)" if firsts else "",
                  flush=True)
        if model.endswith((":BlindAngularHole", ":BlindHeightBump", ":WallDip", ":WallBump")):
            from benchmarks.adversary_benchmark import expected_random_evaluations

            expected, hits, samples = (expected_random_pair(name, model) if model.endswith(("Dip", "Bump")) and
                                       "Height" not in model else expected_random_evaluations(name, model))
            firsts = [x["ascent"]["first"] for x in out if x["defect"] == label and x["ascent"]["first"] is not None]
            print(f"{'':60s} (random, exact expectation: {expected:.3g} evaluations, {hits} of {samples} points of Z "
                  f"exceed; / median ascent: {expected / max(statistics.median(firsts), 1):.3g}x)" if firsts else "",
                  flush=True)
    print("\nsuccess (first v/tau > 1 within budget) and median ratio random / ascent of evaluations to it:")
    for label, wins, med, lower in summary:
        ratio = "-" if med is None else f"{med:.3g}x" + (" (a lower bound in some seeds)" if lower else "")
        rnd = f"{wins['random']} of {wins['random runs']} runs (run only where the ascent succeeded)"
        print(f"  {label}: ascent {wins['ascent']}/{args.seeds}, random {rnd}; median ratio {ratio}")
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"budget": args.budget, "random_budget": args.random_budget, "random_factor": args.random_factor, "runs": out}, indent=1,
                                        default=str))


if __name__ == "__main__":
    main()
