"""Turn verdicts into what a person reads: failure text, summary table, files."""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def _calibration() -> dict:
    path = Path(__file__).resolve().parent.parent / "calibration.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text()).get("noise", {})


def noise_for(model: str, contract: str) -> dict[str, float]:
    """Measured float32 noise of a contract's check on a model (empty if not calibrated)."""
    return dict(_calibration().get(model, {}).get(contract, {}))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", name)[:120]


def save_worst(output: Path, verdict) -> str | None:
    """Write the worst configuration as extxyz; return its path."""
    worst = verdict.worst()
    if worst is None or worst.atoms is None:
        return None
    from ase.io import write

    folder = Path(output) / "worst" / _safe(verdict.model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_safe(verdict.contract)}.extxyz"
    if (path.exists() or path.is_symlink()) and not _written_by_us(path):  # a file of the user's: kept
        path = folder / f"{_safe(verdict.contract)}.pytest-mlip.extxyz"
        if path.is_symlink() or (path.exists() and not _written_by_us(path)):
            return None
    atoms = worst.atoms.copy()
    atoms.calc = None
    atoms.info.update({"mlip_contract": verdict.contract, "mlip_model": verdict.model, "mlip_probe": worst.probe,
                       "mlip_normalized_violation": float(worst.normalized if worst.normalized is not None else -1)})
    write(path, atoms, format="extxyz")
    return str(path)


def _written_by_us(path: Path) -> bool:
    """A plain file whose extxyz comment line carries the keys :func:`save_worst` writes."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            fh.readline()
            return "mlip_contract=" in fh.readline()
    except OSError:
        return False


def fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    if isinstance(x, (int, float)):
        return f"{x:.3g}"
    return str(x)


def format_failure(verdict, state) -> str:
    from ..laws.base import unit_text

    what = "ERROR (the model could not be evaluated)" if verdict.status == "error" else "FAILED"
    lines = [f"{verdict.contract} {what} on {verdict.model} ({'hard' if verdict.hard else 'soft'}, {verdict.basis})",
             f"  {verdict.reason}"]
    worst = verdict.worst()
    if worst is not None:
        lines.append(f"  worst probe: {worst.probe}  normalized violation v/tau = {fmt(worst.normalized)}")
        for k, v in worst.violations.items():
            noise = verdict.noise.get(k)
            ntxt = f", measured float32 noise {noise:.2g}" if noise else ""
            lines.append(f"    {k}: v = {v:.4g} {unit_text(verdict.units, k)}, tau = {verdict.tolerance[k]:g}{ntxt}")
        shown = {k: v for k, v in worst.observables.items() if not isinstance(v, list)}
        if shown:
            lines.append("    observed: " + ", ".join(f"{k}={fmt(v)}" for k, v in shown.items()))
        if worst.message:
            lines.append(f"    {worst.message}")
    if verdict.worst_file:
        lines.append(f"  worst configuration: {verdict.worst_file}")
    lines.append(f"  reproduce: pytest --mlip={state.target if verdict.role == 'target' else verdict.model} "
                 f"--mlip-committee=none --mlip-partial -k '{verdict.contract}'")
    lines.append(f"  verification setting: {verdict.setting}")
    lines.append(f"  model calls: {verdict.evaluations} (+{verdict.cache_hits} from cache), {verdict.seconds:.1f} s")
    return "\n".join(lines)


def committee_spread(verdicts: list[dict]) -> dict[str, tuple[float, float]]:
    """Per contract: min and max of v/tau across models at the target's worst probe."""
    out = {}
    by_contract: dict[str, list[dict]] = {}
    for v in verdicts:
        by_contract.setdefault(v["contract"], []).append(v)
    for contract, vs in by_contract.items():
        target = next((v for v in vs if v["role"] == "target"), None)
        probe = target and target.get("worst_probe")
        if not probe:
            continue
        values = []
        for v in vs:
            for p in v.get("probes", []):
                if p["probe"] == probe and p.get("normalized") is not None and p["status"] != "skip":
                    values.append(p["normalized"])
        if len(values) > 1:
            out[contract] = (min(values), max(values))
    return out


def guaranteed_laws() -> dict[str, str]:
    """check -> title of the laws a model's construction is said to guarantee (``guaranteed_for_conservative``),
    measured on every model by default."""
    from ..laws import CHECKS

    return {name: c.title for name, c in CHECKS.items() if getattr(c, "guaranteed_for_conservative", False)}


def unmeasured_guaranteed(verdicts: list[dict], target: str) -> str | None:
    """One line when the run gave the target no verdict of energy-force consistency or Jacobian symmetry (their
    contracts not collected: --mlip-no-builtin, -k, a path), so no output reads as if they held (a held-out case: a
    model with zero forces passed a run of the user's own contracts, and nothing said these were not measured)."""
    mine = {v["check"] for v in verdicts if v["model"] == target and v.get("role", "target") == "target"
            and v["status"] != "skip"}
    missing = [what for check, what in guaranteed_laws().items() if check not in mine]
    if not missing or not any(v["model"] == target for v in verdicts):
        return None
    return (f"NOT MEASURED on {target}: {' and '.join(missing)} (no such contract ran: the built-in suite was left out "
            "or deselected); a pass here says nothing about them")


def summary_lines(verdicts: list[dict], state, gate=None, updating: bool = False) -> list[str]:
    """The terminal's verdict table and what it means for the run; ``gate``: the baseline comparison
    (known failures do not fail the run), ``updating``: a --mlip-update-baseline run (nothing fails)."""
    if not verdicts:
        return ["no contract verdicts"]
    models = [m for m in state.models if any(v["model"] == m or v["model"].startswith(m) for v in verdicts)]
    models = state.models
    contracts = []
    for v in verdicts:
        if v["contract"] not in contracts:
            contracts.append(v["contract"])
    cell = {}
    for v in verdicts:
        for m in models:
            if v["model"] == m or _name_matches(v["model"], m):
                status = v["status"]
                txt = {"pass": "pass", "fail": "FAIL", "skip": "skip", "error": "ERROR"}[status]
                if status in ("fail", "error") and (v["role"] != "target" or not v["hard"]):
                    txt = txt.lower() + "*"
                val = fmt(v.get("max_normalized")) if status != "skip" else "-"
                cell[(v["contract"], m)] = f"{val} {txt}"
    spread = committee_spread(verdicts)
    head = ["contract (max v/tau)"] + [m + (" [target]" if m == state.target else "") for m in models] + ["spread"]
    rows = []
    for c in contracts:
        sp = spread.get(c)
        rows.append([c] + [cell.get((c, m), "") for m in models] + [f"{fmt(sp[0])}..{fmt(sp[1])}" if sp else "-"])
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths))]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths)) for r in rows]
    from .gate import is_gating

    gating = [v for v in verdicts if is_gating(v)]
    lines.append("")
    texts = set(cell.values())
    key = []
    if any(t.endswith(("FAIL", "ERROR")) for t in texts):
        key.append("FAIL: hard contract failed on the target (fails the run"
                   + (" unless the baseline knows it)" if gate is not None else ")"))
    if any(t.endswith("*") for t in texts):
        key.append("fail*: committee or soft (reported only)")
    if spread:
        key.append("spread: v/tau across models at the target's worst probe")
    if key:
        lines.append("; ".join(key) + ".")
    from ..laws.base import MISSING_DEPENDENCY

    missing = {v["contract"]: v["reason"] for v in verdicts
               if v["status"] == "skip" and v.get("reason", "").startswith(MISSING_DEPENDENCY)}
    for contract, reason in missing.items():
        lines.append(f"NOT RUN {contract}: {reason}")
    reported = [v for v in verdicts if v["status"] in ("fail", "error") and v not in gating]
    if reported:
        lines.append("reported, not gating (committee models and soft contracts):")
        for v in reported:
            worst = next((p for p in v.get("probes", []) if p["probe"] == v.get("worst_probe")), {})
            note = f"; {worst['message']}" if worst.get("message") else ""
            lines.append(f"  {v['contract']} on {v['model']}: {v['reason']}{note}")
    lines += crossref(verdicts)
    partial = [v for v in verdicts if v["status"] in ("pass", "fail") and any(p.get("status") == "skip"
                                                                                for p in v.get("probes", []))]
    if partial:
        lines.append("probes skipped inside a verdict (the verdict covers only the rest):")
        for v in partial:
            skipped = [p for p in v["probes"] if p.get("status") == "skip"]
            lines.append(f"  {v['contract']} on {v['model']}: {len(skipped)} of {len(v['probes'])} probe(s) skipped "
                         f"({skipped[0].get('message', '')})")
    cost: dict[str, list[float]] = {}
    for v in verdicts:
        c = cost.setdefault(v["model"], [0, 0, 0.0])
        c[0] += v.get("evaluations", 0)
        c[1] += v.get("cache_hits", 0)
        c[2] += v.get("seconds", 0.0)
    lines.append("model calls: " + "; ".join(
        f"{m} {int(c[0])} calls + {int(c[1])} cache hits, {c[2]:.1f} s" for m, c in cost.items()))
    measured = [v["max_normalized"] for v in verdicts
                if v["role"] == "target" and v["hard"] and v.get("max_normalized") is not None]
    worst = max(measured) if measured else None
    if updating:
        verdict = (f"{len(gating)} hard failure(s) on the target, recorded in the baseline as known "
                   "(a baseline update fails nothing)")
    elif gate is not None:
        failing = {(c.model, c.contract) for c in gate.failing}
        n_new = sum((v["model"], v["contract"]) in failing for v in gating)
        verdict = (f"{n_new} new or regressed hard failure(s) on the target (fail the run), "
                   f"{len(gating) - n_new} known to the baseline (do not)")
    else:
        verdict = f"{len(gating)} hard failure(s) on the target (fail the run)" if gating else \
            "no hard failure on the target"
    shown = fmt(worst) if worst is not None else ("none measured" if gating else "0")
    lines.append(f"viol_max over active hard contracts on {state.target}: {shown}; {verdict}. "
                 "A verdict holds only for its setting (structures, tolerances).")
    return lines


def crossref(verdicts: list[dict]) -> list[str]:
    """For each failed verdict of a law that names laws to be read against (its record's ``read_against``): does
    the other law hold on the same model's worst structure?

    E.g. a model whose forces are not the gradient of its energy fails rotation or translation too: the symmetry
    law is read against energy-force consistency, from that verdict's probe on the same structure (when it ran
    there), to say which law is the root.
    """
    from ..laws import LAWS

    lines = []
    for name, law in sorted(LAWS.items()):
        for other, (words, broken, holds) in law.read_against.items():
            by_model = {v["model"]: v for v in verdicts if v.get("check") == other}
            out = []
            for v in verdicts:
                if v.get("check") != name or v["status"] != "fail" or not v.get("worst_probe"):
                    continue
                probe = v["worst_probe"]
                e = by_model.get(v["model"])
                p = next((p for p in (e or {}).get("probes", []) if p["probe"] == probe), None)
                if e is None or e["status"] == "skip":
                    state = "not measured (" + (e["reason"] if e else f"{words.split()[0]} contract not run") + ")"
                elif p is None or p.get("status") != "ok":
                    state = "not measured on this structure" + (f" ({p.get('message')})" if p and p.get("message")
                                                                else "")
                else:
                    n = p.get("normalized")
                    state = f"{'BROKEN' if n > 1 else 'holds'} there (v/tau {fmt(n)}; {broken if n > 1 else holds})"
                out.append(f"  {v['contract']} on {v['model']} fails on {probe}: {words} {state}")
            if out:
                lines += [f"{name.replace('_', ' ')} failures read against {words} on the same structure:"] + out
    return lines


def _name_matches(verdict_model: str, spec: str) -> bool:
    try:
        from ..models.registry import resolve

        return resolve(spec).name == verdict_model
    except Exception:
        return False
