"""A short Markdown summary of a run for a pull-request comment (``--mlip-summary-md``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..provenance.artifact import SHORT_ID
from .claims import fmt_value
from .gate import is_gating
from .plugin import incomplete_lines


#: the last line of every summary file: the SHA-256 of the text above it (an HTML comment, invisible in a pull-request
#: comment), so a rerun knows whether the file is still what pytest-mlip wrote; an edited summary is the user's
SEAL = "<!-- pytest-mlip summary sha256:{} -->"


def write_summary(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, sealed with :data:`SEAL`."""
    from .gate import write_atomic

    body = text if text.endswith("\n") else text + "\n"
    write_atomic(path, body + SEAL.format(hashlib.sha256(body.encode()).hexdigest()) + "\n")


def is_own_summary(path: Path) -> bool:
    """A file pytest-mlip wrote and nobody edited since (its seal matches the text above it). An empty file is not
    one (a held-out case: the user's empty file was replaced; an empty ``__init__.py`` is a file that matters)."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if not data:
        return False
    body, _, last = data.rstrip(b"\n").rpartition(b"\n")
    body += b"\n"
    return last.decode(errors="replace") == SEAL.format(hashlib.sha256(body).hexdigest())


def summary_markdown(entries: list[tuple[dict, dict]], prov) -> str:
    gate = prov.gate
    verdicts = [v for v, _ in entries]
    ids = {(v["model"], v["contract"]): i for v, i in entries}
    target_hard = [v for v in verdicts if v["role"] == "target" and v["hard"]]
    failing = [v for v in target_hard if is_gating(v)]
    target = next((v["model"] for v in verdicts if v["role"] == "target"), prov.state.target)
    if gate is not None and prov.update_baseline and getattr(prov, "written_baseline", None) is not None:
        head = f"baseline updated ({len(failing)} hard failure(s) on the target recorded as known)"
    elif gate is not None and prov.update_baseline:  # an incomplete run never updates it (a held-out case said so)
        head = f"baseline NOT updated (the run is incomplete); {len(failing)} hard contract(s) fail"
    elif gate is not None:
        head = ("gate passed" if gate.passed else
                f"gate FAILED: {len(gate.of('new'))} new failure(s), {len(gate.of('regression'))} regression(s)")
    else:
        head = ("no hard contract ran on the target" if not target_hard else "all hard contracts pass" if not failing
                else f"{len(failing)} hard contract(s) fail")
    inc = getattr(prov, "incomplete", None) or {}
    if inc.get("count") or inc.get("interrupted") or inc.get("dead_workers"):
        head = "INCOMPLETE run; " + (head if gate is not None or failing else "no hard contract failed among those "
                                     "that finished")
        banner = incomplete_lines(inc)
    else:
        banner = incomplete_lines(inc)  # a partial run the user accepted (--mlip-partial) is still named
    tracker = getattr(prov, "tracker", None)
    adversary = list(getattr(tracker, "adversary", None) or [])
    gating = [r for r in adversary if r["gates"]]
    if gating:
        head += f"; the adversary fails the run ({len(gating)} finding(s))"
    lines = [f"### pytest-mlip on `{target}`: {head}", ""]
    if banner:
        lines += [f"**{banner[0]}**", ""] + [f"- {b.strip()}" for b in banner[1:]] + [""]
    passed = sum(v["status"] == "pass" for v in target_hard)
    skipped = sum(v["status"] == "skip" for v in target_hard)
    lines.append(f"Hard contracts on the target: {passed} pass, {len(failing)} fail, {skipped} skipped; "
                 f"committee: {', '.join(f'`{m}`' for m in prov.state.committee) or 'none'}.")
    found = [r for r in adversary if r["status"] in ("violation", "model-error")]
    if adversary:
        lines.append(f"Adversary (`--mlip-adversary`, reported apart): {len(adversary)} search(es), "
                     f"{len(found)} finding(s)" + (": " + ", ".join(
                         f"`{r['contract']}` on `{r['model']}` "
                         + ("MODEL ERROR" if r["status"] == "model-error" else f"v/tau {fmt_value(r['value'])}")
                         + (" (fails the run)" if r["gates"] else "") for r in found) if found else "") + ".")
    from .verdicts import unmeasured_guaranteed

    unmeasured = unmeasured_guaranteed(verdicts, target)
    if unmeasured and not getattr(prov.state, "skip_guaranteed", False):
        lines.append(unmeasured.replace("NOT MEASURED", "**NOT MEASURED**", 1) + ".")
    if getattr(prov.state, "skip_guaranteed", False):
        lines.append("Opt-out: `--mlip-skip-guaranteed`: energy-force consistency and Jacobian symmetry were not "
                     "measured on models that declare conservative forces.")
    kinds = {(c.model, c.contract): c for c in (gate.changes if gate else [])}
    rows = [v for v in verdicts if is_gating(v) or (v["model"], v["contract"]) in kinds]
    if rows:
        lines += ["", "| contract | model | status | v/tau | gate |", "|---|---|---|---|---|"]
        for v in rows:
            i = ids[(v["model"], v["contract"])]
            mn = i.get("max_normalized")
            val = f"{fmt_value(v.get('max_normalized'))} [a:{mn[:SHORT_ID]}]" if mn else "-"
            c = kinds.get((v["model"], v["contract"]))
            g = c.kind + (f" (baseline {c.before_status} {fmt_value(c.before)})" if c and c.before_status else "") \
                if c else ("-" if gate is None else "")
            lines.append(f"| `{v['contract']}` | `{v['model']}` | {v['status']} [a:{i['verdict'][:SHORT_ID]}] "
                         f"| {val} | {g} |")
    if gate is not None and gate.of("fixed"):
        lines += ["", "Fixed since the baseline: " + ", ".join(f"`{c.contract}` on `{c.model}`"
                                                              for c in gate.of("fixed")) + "."]
    lines += ["", f"Provenance: run `{prov.run_id}`, code `{prov.code_version}`"
              + (f"; report `{prov.report_dir / 'report.html'}`" if prov.report_dir else "") + "."]
    return "\n".join(lines) + "\n"
