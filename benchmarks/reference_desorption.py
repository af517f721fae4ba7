"""The desorption barrier of one model on one case settled against GPAW along its own rigid scan.

    PYTEST_MLIP_GPAW_RANKS=2 python benchmarks/reference_desorption.py [--model sevennet-l3i5] [--case CO/Cu]

Runs the desorption-barrier contract (rigid scan only, neb = false) on the model for the case, then the
reference card (pytest_mlip.reference.cards.desorption_barrier) with GPAW (PBE, LCAO dzp): the energy at
the model's barrier position and at the asymptote, the reference rise, its decision, seconds per point.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="sevennet-l3i5")
    ap.add_argument("--case", default="CO/Cu", help="ADSORBATE/METAL of a built-in desorption case")
    ap.add_argument("--cache", default=".mlip/reference")
    args = ap.parse_args(argv)

    from pytest_mlip.reference.engines import engine
    from pytest_mlip.reference.settle import Budget, Cache, settle_verdict
    from pytest_mlip.testing import builtin_contracts, run_contract

    settings = builtin_contracts()["desorption-barrier"]
    ads, metal = args.case.split("/")
    cases = [c.model_dump() for c in settings.cases if c.adsorbate == ads and c.metal == metal]
    settings = type(settings).model_validate({**settings.model_dump(), "cases": cases, "neb": False})
    v = run_contract(settings, args.model)
    p = v.probes[0]
    o = p.observables
    print(f"model {args.model} {p.probe}: status {v.status} rise {o.get('rise'):.4f} eV at dz {o.get('dz_at_max')} A; "
          f"well depth {o.get('well_depth'):.4f} eV; v/tau {p.normalized:.3g}", flush=True)
    eng = engine("gpaw")
    print(f"engine {eng.method.label()} ranks {eng.method.ranks} version {eng.version()}", flush=True)
    for st in settle_verdict(v, settings, eng, Cache(args.cache), Budget(None)):
        for pt in st.points:
            print(f"  point {pt['name']:<9} {pt['role']:<40} E {pt['energy']} eV converged {pt['converged']} "
                  f"{pt['seconds']:.1f} s (kpts {pt['details'].get('kpts')}, {pt['formula']}) cached {pt['cached']}"
                  + (f" error {pt['details']['error']}" if "error" in pt["details"] else ""))
        print(f"  reference rise {st.observables.get('rise')} eV; band {st.band}; model {st.model_value:.4f} eV "
              f"-> {st.decision.upper()}: {st.reason}")
    if not v.probes or (p.normalized or 0) <= 1:
        print("the model does not fail this case: nothing to settle (the plugin settles failing probes only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
