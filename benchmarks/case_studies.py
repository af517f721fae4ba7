"""The source's case studies run end to end by the detective on shipped models, and docs/case-studies.md.

    python benchmarks/case_studies.py run [--case NAME ...] [--out docs/case-studies]
    pytest --mlip=sevennet-0 --mlip-committee=chgnet-0.3.0,diep generated_tests/ \
        --junitxml=docs/case-studies/kept-sevennet-0.xml
    python benchmarks/case_studies.py render [--out docs/case-studies] [--doc docs/case-studies.md]

``run`` calls ``pytest-mlip detect`` once per case (the evidence, the committee and the options are in ``CASES``),
each into its own folder with its memory, provenance store, escalation reports and kept protocol files. ``render``
writes the Markdown from those folders alone (run.json, memory.jsonl, the kept files, the JUnit XML of the kept
suite): every number it prints is read from them and cites its artifact ``[a:ID]`` in that folder's store, so
``pytest-mlip judge`` can re-verify the escalation reports. Nothing in the document is typed by hand but the case
titles and the seed's claim each case starts from.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent

#: slug -> (title, the seed's finding the case starts from, detect arguments)
CASES: dict[str, tuple[str, str, list[str]]] = {
    "adsorption": (
        "The +U-block adsorption anomaly (SevenNet-0)",
        "the seed's MACE-MPA-0 grid: E_rel > 0 on 27 of the 40 cells of the Materials Project +U block (U metal x "
        "O/F-bearing adsorbate), none of the 72 outside it",
        ["--mlip", "sevennet-0", "--mlip-committee", "chgnet-0.3.0,diep", "--mlip-report", "docs/example-report",
         "--contracts", "adsorption-sign", "--hypotheses", "2"]),
    "desorption": (
        "The spurious desorption barrier (SevenNet-l3i5)",
        "the seed's CO/Cu(111): a rigid scan rising above the desorbed asymptote at 1.25 A, confirmed by CI-NEB, "
        "absent in DFT",
        ["--mlip", "sevennet-l3i5", "--mlip-committee", "chgnet-0.3.0,diep", "--suite",
         "benchmarks/mlip_case_desorption.toml", "--contracts", "desorption-barrier", "--hypotheses", "1"]),
    "dimer-tail": (
        "The dimer mid-range tail (SevenNet-0; Cr2, Sb2)",
        "the seed's Appendix C: Sb2, Mo2, W2 keeping 9-17 % of the well depth at 4.5 A against at most 4 % in the "
        "committee; Cr2 left out because the committee disagrees near equilibrium",
        ["--mlip", "sevennet-0", "--mlip-committee", "chgnet-0.3.0,diep", "--mlip-report", "docs/example-report",
         "--contracts", "dimer-tail", "--hypotheses", "2"]),
}


#: why a case has no recorded run (printed in its place)
NOT_RUN: dict[str, str] = {}


# --- run ---------------------------------------------------------------------------------------------------------


def run(cases: list[str], out: Path) -> None:
    for slug in cases:
        folder = out / slug
        if folder.exists():
            shutil.rmtree(folder)
        argv = [sys.executable, "-m", "pytest_mlip.cli", "detect", *CASES[slug][2], "--output", str(folder),
                "--tests-dir", str(folder / "kept")]
        t0 = time.perf_counter()
        rc = subprocess.call(argv, cwd=ROOT)
        print(f"{slug}: exit {rc} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        for store in folder.rglob("provenance.sqlite"):  # keep the repository small; the judge reads .gz
            with open(store, "rb") as src, gzip.open(store.with_suffix(".sqlite.gz"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            store.unlink()


# --- render ------------------------------------------------------------------------------------------------------


def _rel(path: str) -> str:
    """A path the run recorded, relative to the repository (runs made in another checkout name theirs)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        parts = Path(path).parts
        return str(Path(*parts[parts.index("docs"):])) if "docs" in parts else str(path)


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "memory.jsonl").read_text().splitlines() if line.strip()]


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{float(x):.3g}"


def _cite(aid) -> str:
    return f" [a:{aid[:12]}]" if aid else ""


def _outcome(o: dict) -> str:
    worst = f" ({o['worst_probe']})" if o.get("worst_probe") and o["status"] in ("fail", "error") else ""
    return (f"{o['status']} {_num(o.get('max_normalized'))}{_cite((o.get('artifacts') or {}).get('max_normalized'))}"
            + worst)


#: the observables each case study's per-configuration line shows: E_rel (eV), the rigid scan's rise above the
#: asymptote (eV) and the height it peaks at (A), the tail fraction; and the desorption violation (barrier, eV: the
#: CI-NEB barrier where the rigid rise exceeded tau and the NEB converged, else the rise)
OBSERVABLES = ("E_rel", "rise", "dz_at_max", "tail_fraction")


def _observed(d: dict, ids: dict | None = None) -> str:
    """One configuration's observables, each citing its artifact (``ids``: the outcome's artifact map of it)."""
    obs, vio = d.get("observables") or {}, d.get("violations") or {}
    ids = ids or {}
    o_ids, v_ids = ids.get("observables") or {}, ids.get("violations") or {}
    if d.get("status") == "skip":
        return "skip"
    flags = [k.replace("_", " ") + _cite(v_ids.get(k)) for k in ("unbound", "not_converged") if vio.get(k)]
    vals = [f"{k} {_num(obs[k])}{_cite(o_ids.get(k))}" for k in OBSERVABLES if k in obs]
    if "barrier" in vio and "rise" in obs:
        vals.append(f"barrier {_num(vio['barrier'])}{_cite(v_ids.get('barrier'))}")
    return ", ".join(vals + flags) or f"v/tau {_num(d.get('normalized'))}"


def _units(protocol: dict) -> str:
    if "metals" in protocol:
        return f"{', '.join(protocol['metals'])} x {', '.join(protocol['adsorbates'])}"
    if "cases" in protocol:
        return "; ".join(f"{c['adsorbate']}/{c['metal']}({(c.get('facet') or '')[3:] or 'default'}) "
                         f"{c.get('site', 'ontop')}" for c in protocol["cases"])
    if "elements" in protocol:
        return ", ".join(f"{e}2" for e in protocol["elements"]) + f" at {protocol.get('distance', 4.5):g} A"
    if "structures" in protocol:
        return ", ".join(s.get("name") or s.get("symbols") or s.get("element", "?") for s in protocol["structures"])
    return "-"


def _changes(protocol: dict) -> str:
    keys = ("fmax", "steps", "relax_sites", "size", "free_layers", "dz_step", "neb", "distance", "transform", "seed")
    return ", ".join(f"{k} {protocol[k]}" for k in keys if k in protocol)


def _expect(p: dict) -> str:
    out = f"committee {p['committee']}"
    if p.get("excess_decades") is not None:
        out += f"; target {p['excess_decades']:g} decade(s) above the committee median"
    if p.get("above_band"):
        out += "; target above the committee band by more than its spread"
    return out


def case_section(slug: str, folder: Path) -> list[str]:
    title, seed, args = CASES[slug]
    recs = _records(folder)
    run_json = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else None
    prereg = {r["data"]["hypothesis"]: r["data"]["predictions"] for r in recs if r["type"] == "preregistration"}
    probes: dict[str, dict] = {}
    for r in recs:
        if r["type"] == "probe":
            probes.setdefault(r["data"]["hypothesis"], {})[r["data"]["name"]] = r["data"]
    verdicts = {r["data"]["hypothesis"]: r["data"] for r in recs if r["type"] == "verdict"}
    kept = [r["data"] for r in recs if r["type"] == "protocol_file"]
    hyps = [r["data"] for r in recs if r["type"] == "hypothesis"]
    lines = [f"## {title}", "", f"Starts from {seed}.", "",
             "```", "pytest-mlip detect " + " ".join(args) + f" --output docs/case-studies/{slug} "
             f"--tests-dir docs/case-studies/{slug}/kept", "```", ""]
    if run_json:
        lines += [f"Evidence: {run_json['evidence']}. Wall time {run_json['wall_seconds']:.0f} s, "
                  f"{run_json['model_evaluations']} model evaluations (2 shared CPU cores); stopped: "
                  f"{run_json['stopped']}.", ""]
    else:
        lines += ["The run did not finish (stopped by hand at the session's deadline): what follows is what its "
                  "memory recorded up to then; a hypothesis without a verdict was still being probed.", ""]
    evidence = [r["data"] for r in recs if r["type"] == "evidence"]
    if evidence:
        src = args[args.index("--mlip-report") + 1] if "--mlip-report" in args else None
        where = (f" Artifacts in the evidence report's store (`{src}/provenance.sqlite.gz`): the run's own store does "
                 "not copy them." if src else "")
        lines += ["Evidence the hypotheses start from (per model: verdict, worst v/tau; per configuration: v/tau and "
                  "the violations above zero)." + where, ""]
        for e in evidence:
            arts = e.get("artifacts") or {}
            cells = []
            for probe, d in e["probes"].items():
                vio = ", ".join(f"{k} {_num(x)}" for k, x in (d.get("violations") or {}).items()
                                if isinstance(x, (int, float)) and x)
                cells.append(f"{probe} {_num(d.get('normalized'))}{_cite((arts.get('probes') or {}).get(probe))}"
                             + (f" ({vio})" if vio else ""))
            lines.append(f"- `{e['contract']}` on {e['model']} ({e['role']}): {e['status']}, max v/tau "
                         f"{_num(e.get('max_normalized'))}{_cite(arts.get('max_normalized'))}; " + "; ".join(cells))
        lines.append("")
    for hyp in hyps:
        hid = hyp["id"]
        v = verdicts.get(hid)
        head = f"### {hid} `{hyp['key']}`: " + (v["verdict"] if v else "no verdict (not finished)")
        if v and v.get("type", "none") != "none":
            head += f" ({v['type']})"
        lines += [head, "", f"Hypothesis: {hyp['statement']}", ""]
        if hyp.get("mechanism"):
            lines += [f"Proposed mechanism: {hyp['mechanism']}", ""]
        preds = prereg.get(hid, [])
        if preds:
            lines += ["Pre-registered before any probe ran:", "",
                      "| protocol | kind | configurations | varied | target expected | committee expected "
                      "| extra models |",
                      "|---|---|---|---|---|---|---|"]
            for p in preds:
                lines.append(f"| `{p['name']}` | {p['kind']} | {_units(p['protocol'])} | {_changes(p['protocol'])} | "
                             f"{p['target']} | {_expect(p)} | {', '.join(p.get('extra_models') or []) or '-'} |")
            lines += ["", "Probes (v/tau: the worst configuration's violation over the tolerance, its probe named "
                          "when above one; calls: model evaluations of every model the probe ran on):", "",
                      "| protocol | kind | calls | seconds | target | committee | extra |",
                      "|---|---|---|---|---|---|---|"]
            for name, r in probes.get(hid, {}).items():
                t = next(o for o in r["outcomes"] if o["role"] == "target")
                com = "; ".join(f"{o['model']} {_outcome(o)}" for o in r["outcomes"] if o["role"] == "committee")
                ext = "; ".join(f"{o['model']} {_outcome(o)}" for o in r["outcomes"] if o["role"] == "extra")
                lines.append(f"| `{name}` | {r['kind']} | {r['evaluations']} | {r['seconds']:.1f} | {_outcome(t)} | "
                             f"{com or '-'} | {ext or '-'} |")
            lines.append("")
            per = []
            for name, r in probes.get(hid, {}).items():
                for o in r["outcomes"]:
                    pids = (o.get("artifacts") or {}).get("probes") or {}
                    cells = [f"{k} {_observed(d, pids.get(k))}" for k, d in o["probes"].items()]
                    if cells:
                        per.append(f"- `{name}` on {o['model']}: " + "; ".join(cells))
            if per:
                lines += ["Per configuration (" + ", ".join(OBSERVABLES) + " where the check reports one; "
                          "'unbound' or 'not converged' where that flag is set):", ""] + per + [""]
        if v:
            lines += ["Verdict, against the pre-registration:", ""] + [f"- {x}" for x in v["reasons"]] + [""]
    files = [k for k in kept if k.get("path")]
    refused = [k for k in kept if k.get("refused")]
    if files:
        lines += ["Kept protocol files (pre-registered protocols the target fails and at least half the committee "
                  "passes; their verdicts on target and committee are those protocols' probes above):", ""]
        for k in files:
            lines.append(f"- `{_rel(k['path'])}`: {', '.join(f'`{c}`' for c in k.get('contracts') or [])}")
        lines.append("")
    for k in refused:
        lines += [f"No protocol kept for {k['hypothesis']}: {'; '.join(k['refused'])}.", ""]
    return lines


def kept_section(out: Path) -> list[str]:
    xmls = sorted(out.glob("kept-*.xml"))
    if not xmls:
        return []
    lines = ["## The kept suite", "",
             "What the kept protocol files in `generated_tests/` add to a run, measured by running only them "
             "(`pytest --mlip=NAME generated_tests/ --junitxml=docs/case-studies/kept-NAME.xml "
             "--mlip-store=STORE`, its store gzipped beside the XML as `kept-NAME.sqlite.gz`; times are pytest's per "
             "item, the first item of a model including its loading):", "",
             "| model run | item | role | verdict | v/tau (worst probe) | seconds |", "|---|---|---|---|---|---|"]
    for xml in xmls:
        tree = ElementTree.parse(xml)
        total = 0.0
        for case in tree.iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            seconds = float(case.get("time", 0.0))
            total += seconds
            verdict = json.loads(props.get("mlip_verdict") or "{}")
            arts = json.loads(props.get("mlip_artifacts") or "{}")
            v = props.get("mlip_max_normalized")
            role = verdict.get("role", "-") + ("" if verdict.get("hard", True) else ", soft")
            lines.append(f"| {xml.stem[5:]} | `{case.get('name')}` | {role} | {props.get('mlip_status', '-')} | "
                         f"{_num(float(v)) if v else '-'}{_cite(arts.get('max_normalized'))} "
                         f"{('(' + props['mlip_worst_probe'] + ')') if props.get('mlip_worst_probe') else ''} | "
                         f"{seconds:.1f} |")
        root = next((p.get("value") for p in tree.iter("property") if p.get("name") == "mlip_root"), "")
        lines.append(f"| {xml.stem[5:]} | total (mlip root `{root[:16]}`) | | | | {total:.1f} |")
    return lines + [""]


def render(out: Path, doc: Path) -> None:
    lines = ["# Case studies of the source, run end to end on shipped models", "",
             "Generated by `python benchmarks/case_studies.py render` from the detective's outputs in "
             "`docs/case-studies/<case>/` (run.json, memory.jsonl, the kept files); do not edit by hand. Every v/tau "
             "cites its artifact in that folder's `provenance.sqlite.gz`. `pytest-mlip judge docs/case-studies/<case>` "
             "verifies a case's folder and every escalation in it (add `--root HASH` with the root its run printed "
             "to anchor the store); each case was re-run on the record and seal formats of this version "
             "(`python benchmarks/case_studies.py run --case CASE`). The runs recorded no platform (they predate it), "
             "so the judge re-runs their model calls holding the energies only (see the README's judge section).", ""]
    for slug in CASES:
        folder = out / slug
        if (folder / "memory.jsonl").exists():
            lines += case_section(slug, folder)
        else:
            lines += [f"## {CASES[slug][0]}", "", "No run recorded: `python benchmarks/case_studies.py run --case "
                                                  f"{slug}` writes it." + (f" {NOT_RUN[slug]}" if slug in NOT_RUN
                                                                          else ""), ""]
    lines += kept_section(out)
    doc.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {doc}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("run", "render"))
    ap.add_argument("--case", action="append", choices=list(CASES), help="run only these cases (repeatable)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "case-studies")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "case-studies.md")
    a = ap.parse_args(argv)
    if a.action == "run":
        run(a.case or list(CASES), a.out)
    else:
        render(a.out, a.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
