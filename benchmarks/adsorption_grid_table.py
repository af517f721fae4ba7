"""Adsorption-energy grid, per model side by side, from a report written by the plugin.

    pytest --mlip=sevennet-0 --mlip-committee=chgnet-0.3.0,diep -n 2 \
        benchmarks/mlip_adsorption_grid.toml --mlip-report=grid-report
    python benchmarks/adsorption_grid_table.py grid-report/report.json

Prints, for each adsorption-sign contract in the report, the E_rel grid (eV; metals x adsorbates) of
every model, with the Materials Project +U block (U metal x O/F-bearing adsorbate) marked, and the
counts the seed's analysis reads: pairs with E_rel > 0 (and > tau) inside and outside the block,
plus pairs with no intact bound minimum ("unbound") or an unconverged relaxation. Reads only
report.json (every value there cites its artifact; `pytest-mlip judge` re-verifies them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _val(x):
    return x.get("value") if isinstance(x, dict) else x


def grid_of(verdict: dict) -> dict[tuple[str, str], dict]:
    out = {}
    for p in verdict["probes"]:
        obs = {k: _val(v) for part in ("observables", "flags") for k, v in p.get(part, {}).items()}
        vio = {k: _val(v) for k, v in p.get("violations", {}).items()}
        if "metal" not in obs:
            continue
        out[(obs["metal"], obs["adsorbate"])] = {**obs, **{f"v_{k}": v for k, v in vio.items()},
                                                 "status": p.get("status"), "message": p.get("message", "")}
    return out


def cell(d: dict | None) -> str:
    if d is None:
        return "-"
    if d.get("status") == "skip":
        return "skip"
    if d.get("v_not_converged"):
        return "n.c."
    if d.get("v_unbound"):
        return "unb."
    e = d.get("E_rel")
    if e is None:
        return "?"
    return f"{e:+.2f}" + ("*" if d.get("u_block") else "") + ("" if d.get("judged", True) else "w")


def counts(grid: dict, tau: float) -> dict:
    c = {k: 0 for k in ("in", "out", "in_pos", "out_pos", "in_tau", "out_tau", "unbound", "not_converged", "skip")}
    for d in grid.values():
        if d.get("status") == "skip":
            c["skip"] += 1
            continue
        side = "in" if d.get("u_block") else "out"
        c[side] += 1
        if d.get("v_not_converged"):
            c["not_converged"] += 1
        elif d.get("v_unbound"):
            c["unbound"] += 1
        elif d.get("E_rel") is not None and d.get("judged", True):
            c[f"{side}_pos"] += d["E_rel"] > 0
            c[f"{side}_tau"] += d["E_rel"] > tau
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", type=Path, help="report.json written by --mlip-report")
    args = ap.parse_args(argv)
    report = json.loads(args.report.read_text())
    contracts = {v["contract"] for v in report["verdicts"] if v["check"] == "adsorption_sign"}
    for name in sorted(contracts):
        verdicts = [v for v in report["verdicts"] if v["contract"] == name]
        grids = {v["model"]: grid_of(v) for v in verdicts}
        tau = _val(verdicts[0]["tolerance"].get("E_rel", 0.05))
        metals = list(dict.fromkeys(m for g in grids.values() for m, _ in g))
        ads = list(dict.fromkeys(a for g in grids.values() for _, a in g))
        print(f"\n== {name}: E_rel (eV) per model; * = +U block (U metal x O/F adsorbate); "
              f"unb. = no intact bound minimum; n.c. = not converged; w = weak binder, not judged")
        for model, g in grids.items():
            print(f"\n{model}")
            print(f"{'':4s}" + "".join(f"{a:>9s}" for a in ads))
            for m in metals:
                print(f"{m:4s}" + "".join(f"{cell(g.get((m, a))):>9s}" for a in ads))
        print(f"\ncounts (tau = {tau:g} eV)")
        print(f"{'model':16s} {'+U block: E_rel>0 / >tau / pairs':>34s} {'outside: E_rel>0 / >tau / pairs':>34s} "
              f"{'unbound':>8s} {'n.c.':>5s}")
        for model, g in grids.items():
            c = counts(g, tau)
            print(f"{model:16s} {c['in_pos']:>20d} / {c['in_tau']:>3d} / {c['in']:>4d}  "
                  f"{c['out_pos']:>20d} / {c['out_tau']:>3d} / {c['out']:>4d}  {c['unbound']:>8d} {c['not_converged']:>5d}")


if __name__ == "__main__":
    main()
