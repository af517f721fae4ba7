"""Dimer tails at 4.5 A settled against DFT: model tail fractions, reference tails per engine, decisions.

    python benchmarks/reference_tails.py [--models a,b] [--elements Cu,Sb] [--engines pyscf,gpaw]

For each model the built-in dimer-tail contract gives f and r_eq per element; the reference card
(pytest_mlip.reference.cards.dimer_tail) computes f_ref with each engine around that r_eq (cached
under --cache, so models with close minima share points), and its decision table is applied. Prints
the reference tails, seconds per point, the measured method spread, and one decision per model,
element and engine. Decisions are made for every probe here (not only failing ones).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
MODELS = "sevennet-0,sevennet-l3i5,chgnet-0.3.0,chgnet-0.2.0,chgnet-r2scan,diep"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--elements", default="Cu,Sb")
    ap.add_argument("--engines", default="pyscf,gpaw")
    ap.add_argument("--cache", default=".mlip/reference")
    args = ap.parse_args(argv)

    from pytest_mlip.laws import CHECKS
    from pytest_mlip.reference.cards import ProbeCase, card_for
    from pytest_mlip.reference.engines import MissingEngine, engine
    from pytest_mlip.reference.settle import Budget, Cache, settle
    from pytest_mlip.testing import builtin_contracts, run_contract

    settings = builtin_contracts()["dimer-tail"]
    settings = type(settings).model_validate({**settings.model_dump(), "elements": args.elements.split(",")})
    card = card_for("dimer_tail")
    built = {p.id: p for p in CHECKS["dimer_tail"]().probes(settings)}
    tails = {}
    for model in args.models.split(","):
        v = run_contract(settings, model)
        for p in v.probes:
            tails[(model, p.probe)] = p
            f = p.observables.get("tail_fraction")
            print(f"model {model:<14} {p.probe:<10} status {p.status:<4} f {f if f is None else round(f, 4)!s:<8} "
                  f"r_eq {p.observables.get('r_eq', float('nan')):.3f} A", flush=True)
    cache = Cache(args.cache)
    budget = Budget(None)
    refs = {}
    for name in args.engines.split(","):
        try:
            eng = engine(name)
        except MissingEngine as exc:
            print(f"{name}: {exc}")
            continue
        for (model, probe), p in tails.items():
            if p.status != "ok" or p.observables.get("tail_fraction") is None:
                continue
            case = ProbeCase("dimer-tail", probe, built[probe], {**p.violations, **p.observables},
                             tolerance=dict(settings.tolerance))
            st = settle(card, settings, case, eng, cache, budget)
            fresh = [pt["seconds"] for pt in st.points]
            ref = st.observables.get("tail_fraction")
            refs.setdefault((name, probe), {})[card.centre(case)] = (ref, st.observables.get("well_depth"), fresh)
            band = st.band or {}
            print(f"{name:<6} {model:<14} {probe:<10} f_model {st.model_value:+.4f} f_ref "
                  f"{'-' if ref is None else f'{ref:+.4f}'} band [{band.get('lo', float('nan')):+.4f}, "
                  f"{band.get('hi', float('nan')):+.4f}] -> {st.decision.upper()}: {st.reason}", flush=True)
    print("\nreference tails (engine, probe, model r_eq rounded: f_ref, well depth eV, median s/point, points)")
    for (name, probe), by in sorted(refs.items()):
        for centre, (ref, depth, secs) in sorted(by.items()):
            med = statistics.median(secs) if secs else float("nan")
            print(f"  {name:<6} {probe:<10} r_c {centre:.2f}: f_ref {'-' if ref is None else f'{ref:.4f}'} depth "
                  f"{'-' if depth is None else f'{depth:.3f}'} ; {med:.1f} s/point over {len(secs)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
