"""The judge's operator bench: fabrications and legitimate rewrites of fresh reports, split by seed.

Each operator takes a copy of a report folder (report.json, report.md,
report.html and the provenance snapshot) and a seeded random generator, and
either fabricates (a number, sign, unit, verdict word, role, context, table
cell, heading, hidden markup, omission, a false typed note, a forged store:
edited in place, re-hashed end to end with the report regenerated from it, or
a second store beside the snapshot) or rewrites legitimately (whitespace and
layout, JSON key order and indentation, emphasis, true typed notes added
through ``pytest-mlip render``, the snapshot re-compressed or
decompressed, the folder moved). The judge runs as CI would: with the root
hash the pytest log printed (``--root``) and its default random sample of
model calls. Two counts are measured, never traded: fabrications approved and
legitimate variants flagged.

    python benchmarks/judge_bench.py                      # development seeds on fresh emt / lennard-jones reports
    python benchmarks/judge_bench.py --split held-out-5 --example --agent-example   # the new held-out seeds (once)
    python benchmarks/judge_bench.py --example            # also the committed example report
    python benchmarks/judge_bench.py --runs '' --agent-example  # only the detective's reports (escalations, index)

The detective's reports (escalation.json records rendered to report.md) get their own operators (number, sign,
unit, verdict word, decision word, role, omission, markup, the planner's words, a swapped phrase, a false note,
the store edited or doubled; legitimate: reflow, emphasis, record layout, more digits, true typed notes, the snapshot
compressed or not, the folder moved), on a fresh detective run on a planted defect (``--agent-runs``) and on the
committed example (``--agent-example``).

Seeds 1000-1999 are the development set, 2000-2999 the first held-out set (already run once: spent),
3000-3999 the second held-out set (spent on the run reports' operators, session 4), 4000-4999 the third (spent,
session 5: the first held-out run of the detective reports' operators), 5000-5999 the fourth (``--split
held-out-4``, the first with operators on the detective folder's other files: seed 5000 spent in session 7, on
the fresh runs, tm-wall and the detective example; its three wrong outcomes were operator defects, fixed after:
a count note that was true, rows padded before their first pipe into the list above them; so the range is
spent), 6000-6999 the fifth (``--split held-out-5``: seeds 6000-6001 spent in session 8, with the committed
example and the detective example, 0 of 415 fabrications approved, 0 of 184 rewrites flagged), 7000-7999 the
sixth (``--split held-out-6``: seed 7000 spent in session 9 on the fresh runs and tm-wall, 0 of 114 fabrications
approved, 1 of 49 rewrites flagged: a value note printing 0.3 for the report's 0.300, refused as re-rounded; the
judge accepts it since; so the range is spent), 8000-8999 the seventh (``--split held-out-7``: seed 8000 spent in
session 10 on the fresh runs and tm-wall, after free-text comments were removed from judged reports: 0 of 115
fabrications approved, 0 of 46 rewrites flagged, 161 variants judged in 712 s).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: development seeds; the first held-out range (spent); the second held-out range, for the lead to run once
DEV, HELD_OUT, HELD_OUT_2, HELD_OUT_3, HELD_OUT_4, HELD_OUT_5, HELD_OUT_6, HELD_OUT_7 = (
    range(1000, 2000), range(2000, 3000), range(3000, 4000), range(4000, 5000), range(5000, 6000), range(6000, 7000),
    range(7000, 8000), range(8000, 9000))

#: fresh runs the bench reports on: (name, pytest arguments); each takes seconds to a minute
RUNS = {
    "emt": ["--mlip=emt", "--mlip-committee=lennard-jones", "-k", "repulsive-wall-dimers or zero-net or adsorption",
            "--mlip-partial"],
    "lj": ["--mlip=lennard-jones", "--mlip-committee=emt", "-k", "dissociation or compression or symmetry",
           "--mlip-partial"],
    "mutant": ["--mlip=tests.mutants.foundation:short_range_hole", "--mlip-committee=tests.mutants:clean_morse",
               "-k", "repulsive-wall-surface or dissociation-limit", "--mlip-partial"],
}


@dataclass
class Report:
    name: str
    folder: Path
    root: str


def make_report(name: str, args: list[str], work: Path) -> Report:
    """Run pytest on a cheap model and return its report folder and the root hash its log printed."""
    d = work / name
    if (d / "root.txt").is_file() and (d / "report" / "report.json").is_file():  # built earlier in this --work
        return Report(name, d / "report", (d / "root.txt").read_text().strip())
    d.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", *args,
           f"--mlip-report={d / 'report'}", f"--mlip-output={d / 'out'}"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    m = re.search(r"mlip root: ([0-9a-f]{64})", res.stdout)
    if not m or not (d / "report" / "report.json").is_file():
        raise RuntimeError(f"run {name} wrote no report:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    (d / "root.txt").write_text(m.group(1))
    return Report(name, d / "report", m.group(1))


def example_report() -> Report | None:
    folder = ROOT / "docs" / "example-report"
    m = re.search(r"root hash: `([0-9a-f]{64})`", (folder / "report.md").read_text())
    return Report("example", folder, m.group(1)) if m else None


# --- helpers --------------------------------------------------------------------------------------------------------

NUM = re.compile(r"(?<![\w.#:/-])\d+\.\d+(?:e[-+]\d+)?")


def read(p: Path) -> str:
    return p.read_text(encoding="utf-8")


def write(p: Path, s: str):
    p.write_text(s, encoding="utf-8")


def body_start(md: str) -> int:
    return md.index("## Models")


def pick(rng, seq):
    seq = list(seq)
    return rng.choice(seq) if seq else None


def load(folder: Path) -> dict:
    return json.loads(read(folder / "report.json"))


def save_and_render(folder: Path, data: dict):
    """What a careful forger does: edit report.json and re-render md and html with the tool."""
    from pytest_mlip.reporting.report import ReportError, figures_for, render_html, render_markdown, rerender

    write(folder / "report.json", json.dumps(data, indent=1) + "\n")
    try:
        rerender(folder)
    except ReportError:  # render refuses the notes: the forger calls the renderer's functions directly
        kept, free = typed_notes(data.get("notes"))
        shown = {**data, "notes": kept}
        figs = figures_for(shown)
        md, html = render_markdown(shown, figs), render_html(shown, figs)
        for text in free:  # a note no renderer prints (free text): the forger writes it into the pages by hand
            md += f"\n- Unverified commentary (not checked by the judge): {text}\n"
            html = html.replace("</body>", f"<p>Unverified commentary (not checked by the judge): {text}</p>\n</body>")
        write(folder / "report.md", md)
        write(folder / "report.html", html)


def typed_notes(notes) -> tuple[list, list[str]]:
    """The notes the renderer accepts, and the texts of the free-text ones it refuses."""
    from pydantic import ValidationError

    from pytest_mlip.reporting.claims import parse_notes

    kept, free = [], []
    for n in notes or []:
        try:
            parse_notes([n])
            kept.append(n)
        except ValidationError:
            free.append(str(n.get("text", n)) if isinstance(n, dict) else str(n))
    return kept, free


def claims_of(data: dict):
    """(path into report.json, claim dict) of every cited number."""
    out = []
    for i, v in enumerate(data["verdicts"]):
        if v.get("max_normalized"):
            out.append(v["max_normalized"])
        out += list(v["tolerance"].values())
        for p in v["probes"]:
            if p.get("normalized"):
                out.append(p["normalized"])
            out += list(p["violations"].values()) + list(p["observables"].values())
    return [c for c in out if isinstance(c.get("value"), (int, float)) and not isinstance(c.get("value"), bool)]


def bump_number(text: str, rng) -> str:
    """Another plausible number for ``text``: a digit changed, scaled by ten, or sign flipped."""
    way = rng.choice(["digit", "scale", "sign"])
    if way == "sign":
        return text[1:] if text.startswith("-") else "-" + text
    if way == "scale":
        try:
            from pytest_mlip.reporting.claims import fmt_value

            return fmt_value(float(text) / 10)
        except ValueError:
            pass
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    i = rng.choice(digits)
    return text[:i] + str((int(text[i]) + rng.randint(1, 9)) % 10) + text[i + 1:]


def sub_nth(text: str, pattern, repl_fn, rng, start=0) -> str | None:
    hits = [m for m in re.finditer(pattern, text) if m.start() >= start]
    if not hits:
        return None
    m = rng.choice(hits)
    new = repl_fn(m)
    if new == m.group(0):
        return None
    return text[:m.start()] + new + text[m.end():]


# --- store forgery -------------------------------------------------------------------------------------------------


def snapshot_plain(folder: Path) -> Path:
    """Decompress the snapshot (in place) and return the plain file."""
    gz = folder / "provenance.sqlite.gz"
    plain = folder / "provenance.sqlite"
    if gz.is_file():
        with gzip.open(gz) as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        gz.unlink()
    return plain


def recompress(folder: Path, level: int = 6):
    plain = folder / "provenance.sqlite"
    with open(plain, "rb") as src, gzip.open(folder / "provenance.sqlite.gz", "wb", compresslevel=level) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()


def forge(path: Path, edit) -> bool:
    """Rewrite a store consistently: ``edit(artifacts)`` changes values (or drops verdicts from the run); every
    derived value is then recomputed from its parents and every id re-hashed up to the run artifact and the run row.
    Returns False if ``edit`` found nothing to change."""
    from pytest_mlip.provenance.artifact import Artifact
    from pytest_mlip.provenance.store import Store

    st = Store(path, readonly=True)
    ids = [r[0] for r in st.db.execute("SELECT id FROM artifacts")]
    arts = st.get_many(ids)
    payloads = {aid: st.payload(aid) for aid in ids}
    runs = st.db.execute("SELECT * FROM runs").fetchall()
    extra = {r[0]: (r[1], r[2]) for r in st.db.execute("SELECT id, run, created FROM artifacts")}
    st.close()
    changed = edit(arts)
    if not changed:
        return False
    # topological order: parents first
    order, seen = [], set()

    def visit(aid):
        if aid in seen or aid not in arts:
            return
        seen.add(aid)
        for p in arts[aid].parents:
            visit(p)
        order.append(aid)

    for aid in sorted(arts):
        visit(aid)
    remap: dict[str, str] = {}
    new: dict[str, Artifact] = {}
    for aid in order:
        a = arts[aid]
        parents = tuple(remap.get(p, p) for p in a.parents)
        pa = [new[p] for p in parents if p in new]
        value = a.value
        if a.kind == "normalized" and a.params.get("status", "ok") == "ok":
            tol = {p.params.get("key"): p.value for p in pa if p.kind == "tolerance"}
            vals = [p.value / tol[p.params.get("key")] for p in pa if p.kind == "violation" and p.params.get("key") in tol]
            value = max(vals) if vals else value
        elif a.kind == "max_normalized":
            vals = [p.value for p in pa if p.kind == "normalized"]
            value = max(vals) if vals else value
        elif a.kind == "verdict" and a.value != "skip":
            worst = [p.value for p in pa if p.kind == "max_normalized"]
            errors = any(p.params.get("status") == "error" for p in pa if p.kind == "normalized")
            if worst:
                value = "error" if errors else ("fail" if worst[0] > 1.0 else "pass")
        elif a.kind == "run":
            value = dict(a.value)
            vids = [remap.get(v, v) for v in a.value.get("order", [])]
            keep = [v for v in vids if v in parents]
            value["order"] = keep
            value["verdicts"] = len(keep)
            value["texts"] = {remap.get(k, k): t for k, t in a.value.get("texts", {}).items() if remap.get(k, k) in keep}
            value["required"] = sorted(v for v in keep if new[v].params.get("role") == "target"
                                       and new[v].params.get("hard") and new[v].value in ("fail", "error"))
        b = Artifact(kind=a.kind, value=value, routine=a.routine, params=a.params, parents=parents, model=a.model,
                     code_version=a.code_version, reason=a.reason, context=a.context)
        new[b.id] = b
        remap[aid] = b.id
        if b.id != aid:
            payloads[b.id] = payloads.get(aid)
            extra[b.id] = extra[aid]
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("BEGIN")
    db.execute("DELETE FROM artifacts")
    db.execute("DELETE FROM parents")
    from pytest_mlip.provenance.artifact import canonical

    for b in new.values():
        m = b.model
        run, created = extra[b.id]
        db.execute("INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (b.id, b.kind, canonical(b.value), b.routine, canonical(b.params), b.reason, canonical(b.context),
                    m.name if m else None, m.version if m else None, m.weights_hash if m else None, b.code_version,
                    run, created, payloads.get(b.id)))
        db.executemany("INSERT INTO parents VALUES (?,?)", [(b.id, p) for p in b.parents])
    for r in runs:
        db.execute("UPDATE runs SET artifact=? WHERE id=?", (remap.get(r[-1], r[-1]), r[0]))
    db.execute("COMMIT")
    db.close()
    return True


def forged(f: Path, edit) -> bool:
    """Forge the report folder's snapshot with ``edit`` (see :func:`forge`), regenerate the report from it with the
    tool, and gzip the forged snapshot in place of the original."""
    ok = forge(snapshot_plain(f), edit)
    if ok:
        regenerate(f)
    recompress(f)
    return ok


def regenerate(folder: Path):
    """Rewrite report.json, report.md and report.html from the (forged) store with the tool itself."""
    from pytest_mlip.provenance.store import Store
    from pytest_mlip.reporting.report import report_from_store

    data = load(folder)
    st = Store(folder / "provenance.sqlite", readonly=True)
    try:
        new = report_from_store(st, data["run"]["id"])
    finally:
        st.close()
    new["notes"] = data.get("notes", [])
    save_and_render(folder, new)


# --- fabrication operators -----------------------------------------------------------------------------------------


def f_number_md(f, rng):
    md = read(f / "report.md")
    new = sub_nth(md, NUM, lambda m: bump_number(m.group(0), rng), rng, body_start(md))
    return new and write(f / "report.md", new) is None


def f_number_html(f, rng):
    h = read(f / "report.html")
    new = sub_nth(h, r'(?<=<span class="num">)[^<]+', lambda m: bump_number(m.group(0), rng), rng)
    return new and write(f / "report.html", new) is None


def f_number_json(f, rng):
    data = load(f)
    c = pick(rng, [c for c in claims_of(data) if c["value"] != 0])  # (a zero scaled is no fabrication)
    if c is None:
        return False
    from pytest_mlip.reporting.claims import fmt_value

    c["value"] = c["value"] * 0.1 if rng.random() < 0.5 else float(bump_number(fmt_value(float(c["value"])), rng))
    c["text"] = fmt_value(c["value"])
    save_and_render(f, data)
    return True


def f_sign_md(f, rng):
    md = read(f / "report.md")
    minus = rng.choice(["-", "\u2212", "\u2013"])
    new = sub_nth(md, NUM, lambda m: minus + m.group(0), rng, body_start(md))
    return new and write(f / "report.md", new) is None


def f_unit(f, rng):
    data = load(f)
    vs = [v for v in data["verdicts"] if v.get("units")]
    v = pick(rng, vs)
    if v is None:
        return False
    k = pick(rng, v["units"])
    u = v["units"][k]
    v["units"][k] = {"eV": "meV", "eV/A": "meV/A", "GPa": "MPa", "1": "eV", "": "eV"}.get(u, "k" + u)
    if rng.random() < 0.5:
        save_and_render(f, data)
    else:
        md = read(f / "report.md")
        new = sub_nth(md, rf"`{re.escape(u)}`" if u not in ("1", "") else r"dimensionless",
                      lambda m: f"`{v['units'][k]}`", rng)
        if not new:
            return False
        write(f / "report.md", new)
    return True


def f_verdict_md(f, rng):
    md = read(f / "report.md")
    swap = {"FAIL": "pass", "pass": "FAIL", "ERROR": "pass", "skip": "pass"}
    new = sub_nth(md, r"\b(FAIL|pass|ERROR|skip)\b(?= \[a:)", lambda m: swap[m.group(0)], rng, body_start(md))
    return new and write(f / "report.md", new) is None


def f_verdict_html(f, rng):
    h = read(f / "report.html")
    new = sub_nth(h, r'<span class="(fail|pass)">(FAIL|pass)</span>',
                  lambda m: '<span class="pass">pass</span>' if m.group(1) == "fail" else '<span class="fail">FAIL</span>',
                  rng)
    return new and write(f / "report.html", new) is None


def f_verdict_json(f, rng):
    data = load(f)
    v = pick(rng, [v for v in data["verdicts"] if v["status"]["text"] in ("fail", "pass", "error")])
    if v is None:
        return False
    v["status"]["text"] = {"fail": "pass", "pass": "fail", "error": "pass"}[v["status"]["text"]]
    v["gating"] = False if v["status"]["text"] == "pass" else v["gating"]
    save_and_render(f, data)
    return True


def f_field_json(f, rng):
    """A field the old judge never read: hard, gating, reason, worst_probe, basis, setting, reproduce, calls."""
    data = load(f)
    v = pick(rng, data["verdicts"])
    k = rng.choice(["hard", "gating", "reason", "worst_probe", "setting", "reproduce", "calls", "check"])
    old = v.get(k)
    v[k] = (not old) if isinstance(old, bool) else (old + 7 if isinstance(old, int) else (str(old) + " (fixed)"))
    save_and_render(f, data)
    return True


def f_role(f, rng):
    data = load(f)
    m = pick(rng, data["models"])
    if m is None or len(data["models"]) < 2:
        return False
    other = "committee" if m["role"] == "target" else "target"
    m["role"] = other
    for v in data["verdicts"]:
        if v["model"] == m["name"]:
            v["role"] = other
    if rng.random() < 0.5:
        save_and_render(f, data)
    else:
        md = read(f / "report.md")
        new = sub_nth(md, rf"(?<=\| `{re.escape(m['name'])}` \| )\w+", lambda _: other, rng)
        if not new:
            return False
        write(f / "report.md", new)
    return True


def f_context_md(f, rng):
    """Two model names swapped in the verdict matrix header (cells now belong to the other model)."""
    md, names = read(f / "report.md"), [m["name"] for m in load(f)["models"]]
    if len(names) < 2:
        return False
    a, b = rng.sample(names, 2)
    i = md.index("## Verdict matrix")
    j = md.index("\n|", i)
    k = md.index("\n", j + 1)
    line = md[j:k]
    new = line.replace(f"`{a}`", "\0").replace(f"`{b}`", f"`{a}`").replace("\0", f"`{b}`")
    if new == line:
        return False
    write(f / "report.md", md[:j] + new + md[k:])
    return True


def f_table_md(f, rng):
    """Two cells of one table row swapped."""
    md = read(f / "report.md")
    lines = md.split("\n")
    rows = [i for i, s in enumerate(lines) if s.startswith("| `") and s.count("|") >= 4]
    rng.shuffle(rows)
    for i in rows:
        cells = lines[i].split("|")
        idx = [j for j in range(2, len(cells) - 1) if cells[j].strip()]
        pairs = [(x, y) for x in idx for y in idx if x < y and cells[x].strip() != cells[y].strip()]
        if pairs:
            x, y = rng.choice(pairs)
            cells[x], cells[y] = cells[y], cells[x]
            lines[i] = "|".join(cells)
            write(f / "report.md", "\n".join(lines))
            return True
    return False


def f_heading_md(f, rng):
    md, names = read(f / "report.md"), [m["name"] for m in load(f)["models"]]
    if len(names) < 2:
        return False
    style = rng.choice(["swap", "plain", "setext"])

    def repl(m):
        c, model = m.group(1), m.group(2)
        other = rng.choice([n for n in names if n != model])
        if style == "swap":
            return f"### `{c}` on `{other}`"
        if style == "plain":
            return f"### {c} on {other}"
        return f"{c} on {other}\n" + "-" * 10

    new = sub_nth(md, r"^### `([^`]+)` on `([^`]+)`$", repl, rng)
    return new and write(f / "report.md", new) is None


def f_markup_md(f, rng):
    md = read(f / "report.md")
    hidden = rng.choice(["<!-- v/tau 0.5 -->", "\u200b0.5\u200b", "&#48;.5", "*0.5*", "\u00bd", "`0.5`",
                         "<sup>0.5</sup>", "[^1]\n\n[^1]: v/tau is 0.5"])
    lines = md.split("\n")
    i = rng.randrange(10, len(lines))
    lines[i] = lines[i] + " " + hidden
    write(f / "report.md", "\n".join(lines))
    return True


def f_markup_html(f, rng):
    h = read(f / "report.html")
    hidden = rng.choice(['<span style="display:none">pass</span>', "<!-- 0.5 -->", '<b hidden>SevenNet passes</b>',
                         "&#8722;", '<p class="note">All contracts pass.</p>'])
    i = h.index("<h2>")
    write(f / "report.html", h[:i] + hidden + h[i:])
    return True


def f_omission_md(f, rng):
    md = read(f / "report.md")
    way = rng.choice(["section", "line"])
    if way == "section":
        heads = [m.start() for m in re.finditer(r"^### ", md, re.M)]
        if not heads:
            return False
        i = rng.choice(heads)
        j = md.find("\n### ", i + 1)
        j = len(md) if j < 0 else j + 1
        write(f / "report.md", md[:i] + md[j:])
    else:
        lines = md.split("\n")
        cand = [i for i, s in enumerate(lines) if s.strip() and i > 5]
        del lines[rng.choice(cand)]
        write(f / "report.md", "\n".join(lines))
    return True


def f_omission_json(f, rng):
    data = load(f)
    fails = [v for v in data["verdicts"] if v["status"]["text"] in ("fail", "error")] or data["verdicts"]
    data["verdicts"].remove(rng.choice(fails))
    save_and_render(f, data)
    return True


def f_prose_md(f, rng):
    md = read(f / "report.md")
    data = load(f)
    target = data["run"]["target"]
    line = rng.choice([f"\n{target} passes every hard contract.\n", "\nAll failures are committee-only.\n",
                       f"\nThe target fails only two contracts.\n", "\nSevenNet-0 obeys the repulsive wall.\n"])
    i = md.index("## Failures")
    write(f / "report.md", md[:i] + line + "\n" + md[i:])
    return True


def _note(f, rng, note):
    data = load(f)
    data.setdefault("notes", []).append(note)
    save_and_render(f, data)
    return True


def f_note(f, rng):
    data = load(f)
    c = pick(rng, claims_of(data))
    v = pick(rng, data["verdicts"])
    names = [m["name"] for m in data["models"]]
    kind = rng.choice(["value", "unit", "comparison", "count", "verdict", "role", "exists", "comment"])
    from pytest_mlip.reporting.claims import fmt_value
    from pytest_mlip.reporting.judge_report import unit_of  # noqa: F401 (kept for the reader: units are checked)

    if kind == "value":
        note = {"kind": "value", "artifact": c["artifact"], "value": fmt_value(c["value"] * 1.5 + 1), "unit": ""}
    elif kind == "unit":
        u = ""
        for vv in data["verdicts"]:
            for p in vv["probes"]:
                for k, cc in p["violations"].items():
                    if cc["artifact"] == c["artifact"]:
                        u = vv["units"].get(k, "")
        note = {"kind": "value", "artifact": c["artifact"], "value": c["text"], "unit": "meV" if u != "meV" else "eV"}
    elif kind == "comparison":
        note = {"kind": "comparison", "a": c["artifact"], "op": ">" if float(c["value"]) <= 0 else "<",
                "b_value": "0", "unit": "x"}
        note["unit"] = None
    elif kind == "count":
        k = sum(1 for x in data["verdicts"] if x["status"]["text"] == "fail" and x["role"] == "target")
        m = sum(1 for x in data["verdicts"] if x["role"] == "target")
        # a wrong count: one more or one fewer (never the true count: with no failure, one more)
        note = {"kind": "count", "n": k + 1 if k == 0 else k + rng.choice([-1, 1]), "m": m, "status": "fail",
                "role": "target"}
    elif kind == "verdict":
        wrong = {"fail": "pass", "pass": "fail", "error": "pass", "skip": "pass"}[v["status"]["text"]]
        note = {"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": wrong}
    elif kind == "role":
        m = pick(rng, data["models"])
        note = {"kind": "role", "model": m["name"], "role": "committee" if m["role"] == "target" else "target"}
    elif kind == "exists":
        note = {"kind": "exists", "model": rng.choice(["mace-mpa-0", "orb-v3-conservative-inf-omat", names[0]]),
                "ran": True}
        if note["model"] == names[0]:
            note["ran"] = False
    else:
        note = {"kind": "comment", "text": rng.choice([
            f"The {names[0]} model looks solid here.", "Only two contracts are worth a look.",
            "Everything passes once the cutoff is fixed.", "The wall is about half an eV too soft.",
            "Energies are off by 1e-3 per atom.", "Sevennet behaves; the others do not.",
            "This run is clean, nothing to escalate."])}
    if kind == "comparison" and note.get("unit") is None:
        note.pop("unit")
        # the claim contradicts the number (wrong side of zero), unit omitted on purpose
    return _note(f, rng, note)


def f_store_edit(f, rng):
    """A value edited in the snapshot, ids kept (the report re-rendered from the edited store)."""
    plain = snapshot_plain(f)
    db = sqlite3.connect(str(plain), isolation_level=None)
    rows = [(aid, json.loads(v)) for aid, v in db.execute(
        "SELECT id, value FROM artifacts WHERE kind IN ('violation','normalized','max_normalized')")]
    rows = [(aid, v) for aid, v in rows if isinstance(v, (int, float)) and v != 0]
    aid, val = rng.choice(rows)
    db.execute("UPDATE artifacts SET value=? WHERE id=?", (json.dumps(val / 10), aid))
    db.close()
    regenerate(f)
    recompress(f)
    return True


def f_store_rehash(f, rng):
    """A raw violation divided by ten and the whole chain re-hashed; report regenerated from the forged store."""
    def edit(arts):
        cands = [a for a in arts.values() if a.kind == "violation" and isinstance(a.value, float) and a.value > 0]
        if not cands:
            return False
        a = rng.choice(cands)
        a.value = a.value / 10
        return True

    return forged(f, edit)


def f_store_drop(f, rng):
    """A failed verdict removed from the run artifact (no duty to claim it), re-hashed, report regenerated."""
    def edit(arts):
        runs = [a for a in arts.values() if a.kind == "run"]
        fails = [p for p in runs[0].parents if arts[p].value in ("fail", "error")] if runs else []
        if not fails:
            return False
        drop = rng.choice(fails)
        runs[0].parents = tuple(p for p in runs[0].parents if p != drop)
        return True

    return forged(f, edit)


def f_store_eval(f, rng):
    """A model call's energy changed and re-hashed (the derived numbers do not move: only the root and a re-run
    can tell)."""
    def edit(arts):
        cands = [a for a in arts.values() if a.kind == "evaluation"]
        a = rng.choice(cands)
        a.value = {**a.value, "energy": a.value["energy"] + 1.0}
        return True

    return forged(f, edit)


def f_store_beside(f, rng):
    """A forged uncompressed store beside the untouched .gz (forged, re-hashed, report regenerated from it)."""
    gz = f / "provenance.sqlite.gz"
    if not gz.is_file():
        recompress(f)
    keep = gz.read_bytes()
    ok = f_store_rehash(f, rng)  # leaves the forged store as the .gz
    snapshot_plain(f)
    gz.write_bytes(keep)
    return ok


def f_figure(f, rng):
    """One figure replaced by another (a passing curve shown for a failing one)."""
    figs = sorted((f / "figures").glob("*.png"))
    if len(figs) < 2:
        return False
    a, b = rng.sample(figs, 2)
    a.write_bytes(b.read_bytes())
    return True


def f_worst(f, rng):
    """A coordinate of a worst configuration moved."""
    files = sorted((f / "worst").rglob("*.extxyz"))
    if not files:
        return False
    p = rng.choice(files)
    new = sub_nth(read(p), r"-?\d+\.\d{4,}", lambda m: bump_number(m.group(0), rng), rng)
    return new and write(p, new) is None


def f_whitespace_md(f, rng):
    """Whitespace that Markdown gives meaning to: rows joined, a heading joined, an indented code block, a space
    inside a number, a cell moved to a line of its own (a list bullet)."""
    md = read(f / "report.md")
    lines = md.split("\n")
    way = rng.choice(["join-rows", "join-heading", "indent", "split-number", "cell-to-line"])
    if way == "join-rows":
        i = pick(rng, [k for k in range(1, len(lines) - 1) if lines[k].startswith("|") and
                       lines[k + 1].startswith("|") and not lines[k + 1].startswith("|--")])
        if i is None:
            return False
        lines[i:i + 2] = [lines[i] + " " + lines[i + 1]]
    elif way == "join-heading":
        i = pick(rng, [k for k in range(len(lines) - 2) if lines[k].startswith("#") and lines[k + 2].strip()])
        if i is None:
            return False
        lines[i:i + 3] = [lines[i] + " " + lines[i + 2]]
    elif way == "indent":
        i = pick(rng, [k for k in range(1, len(lines)) if not lines[k - 1].strip() and lines[k].strip()
                       and not lines[k].startswith(("|", "-", "#", "!"))])
        if i is None:
            return False
        lines[i] = "    " + lines[i]
    elif way == "split-number":
        text = "\n".join(lines)
        new = sub_nth(text, r"(?<=\d\.)(?=\d)", lambda m: " ", rng, body_start(text))
        if not new:
            return False
        write(f / "report.md", new)
        return True
    else:
        i = pick(rng, [k for k in range(len(lines)) if lines[k].startswith("|") and re.search(r"\| -?\d", lines[k])])
        if i is None:
            return False
        m = pick(rng, list(re.finditer(r"\| (?=-?\d)", lines[i])))
        lines[i] = lines[i][:m.start()] + "|\n- " + lines[i][m.end():]
    write(f / "report.md", "\n".join(lines))
    return True


def f_star_md(f, rng):
    """A ``*`` inside a code span or a link target (a model, contract or figure renamed)."""
    md = read(f / "report.md")
    way = rng.choice(["code", "link"])
    if way == "code":
        new = sub_nth(md, r"`([^`\n]{3,})`", lambda m: f"`{m.group(1)[:2]}*{m.group(1)[2:]}`", rng, body_start(md))
    else:
        new = sub_nth(md, r"\]\(([^)\n]{3,})\)", lambda m: f"]({m.group(1)[:-4]}*{m.group(1)[-4:]})", rng)
    return bool(new) and write(f / "report.md", new) is None


#: comments a forger hides a claim in: spelled apart, split, misspelled, synonyms, numerals, units, names, ids
DISGUISED_COMMENTS = [
    "The target p.a.s.s.e.s the wall.", "It pas sed on the surfaces.", "Net force: nil.", "Excellent wall.",
    "The dimers fial here.", "Looks excelent overall.", "Surface curve is broke n.", "Rated II of III.",
    "Off by a few meV.", "Seven Net looks fine here.", "Check the chg net curve.", "Worst at facade decade.",
    "See v and x.", "Everything is perfectly sane.", "Wall F A I L S at contact.", "The energy wall is solid.",
    "Sucessful run.", "It is robust.", "Nothing to see: clean.", "Only a handful of cases deviate.",
    "The target model is flawles.", "Dissociation is o k.", "Adsorption obeys the sign.", "Forces are ok-ay.",
]


def f_comment_disguise(f, rng):
    return _note(f, rng, {"kind": "comment", "text": rng.choice(DISGUISED_COMMENTS)})


def f_extra_file(f, rng):
    """A file the run did not write, next to the real ones: a second page, a figure, a note."""
    way = rng.choice(["md", "html", "png", "txt", "nested"])
    if way == "md":
        write(f / rng.choice(["report2.md", "REPORT.md", "summary.md", "README.md"]),
              read(f / "report.md").replace("FAIL", "pass"))
    elif way == "html":
        write(f / "index.html", read(f / "report.html").replace("FAIL", "pass"))
    elif way == "png":
        figs = sorted((f / "figures").glob("*.png"))
        if not figs:
            return False
        (f / "figures" / "matrix-updated.png").write_bytes(rng.choice(figs).read_bytes())
    elif way == "txt":
        write(f / "NOTES.txt", "All hard contracts pass after review.\n")
    else:
        (f / "worst" / "extra").mkdir(parents=True, exist_ok=True)
        write(f / "worst" / "extra" / "summary.md", "The worst configurations are all fine.\n")
    return True


FABRICATIONS = {
    "number-md": f_number_md, "number-html": f_number_html, "number-json": f_number_json, "sign-md": f_sign_md,
    "unit": f_unit, "verdict-md": f_verdict_md, "verdict-html": f_verdict_html, "verdict-json": f_verdict_json,
    "field-json": f_field_json, "role": f_role, "context-md": f_context_md, "table-md": f_table_md,
    "heading-md": f_heading_md, "markup-md": f_markup_md, "markup-html": f_markup_html,
    "omission-md": f_omission_md, "omission-json": f_omission_json, "prose-md": f_prose_md, "note": f_note,
    "store-edit": f_store_edit, "store-rehash": f_store_rehash, "store-drop-verdict": f_store_drop,
    "store-eval": f_store_eval, "store-beside": f_store_beside, "figure": f_figure, "worst-file": f_worst,
    "whitespace-md": f_whitespace_md, "star-md": f_star_md, "comment-disguise": f_comment_disguise,
    "extra-file": f_extra_file,
}


# --- legitimate rewrites -------------------------------------------------------------------------------------------


def l_reflow_md(f, rng):
    md = read(f / "report.md")
    out = []
    for line in md.split("\n"):
        r = rng.random()
        if line.startswith("|") and r < 0.5:
            cells = line.split("|")
            # padding inside the cells; never before the first pipe (a row indented under a list item joins it)
            line = "|".join([cells[0]] + [c.strip().ljust(rng.randint(0, 4) + len(c.strip())) if c.strip()
                                          else " " * rng.randint(0, 2) for c in cells[1:]])
        elif line.startswith("- ") and " " in line[2:] and r < 0.3:
            words = line.split(" ")
            k = rng.randrange(2, len(words)) if len(words) > 2 else 1
            line = " ".join(words[:k]) + "\n  " + " ".join(words[k:])
        elif r < 0.1:
            line = line + "  "
        out.append(line)
        if not line.strip() and rng.random() < 0.3:
            out.append("")
    write(f / "report.md", "\n".join(out))
    return True


def l_reflow_html(f, rng):
    h = read(f / "report.html")
    h = re.sub(r"(</(?:tr|li|p|h2|h3|table|ul)>)", lambda m: m.group(1) + ("\n" * rng.randint(0, 2)), h)
    h = re.sub(r"(<(?:tr|td)>)", lambda m: ("\n  " if rng.random() < 0.3 else "") + m.group(1), h)
    write(f / "report.html", h)
    return True


def l_json_layout(f, rng):
    data = load(f)

    def shuffle(x):
        if isinstance(x, dict):
            items = list(x.items())
            rng.shuffle(items)
            return {k: shuffle(v) for k, v in items}
        if isinstance(x, list):
            return [shuffle(v) for v in x]
        return x

    write(f / "report.json", json.dumps(shuffle(data), indent=rng.choice([None, 0, 2, 4]), ensure_ascii=rng.random() < .5))
    return True


def l_emphasis_md(f, rng):
    md = read(f / "report.md")
    new = re.sub(r"\b(FAIL|ERROR)\b(?= \[a:)", lambda m: f"**{m.group(1)}**" if rng.random() < 0.7 else m.group(1), md)
    new = re.sub(r"^(- (?:verdict|reason|reproduce)):", lambda m: f"- *{m.group(1)[2:]}*:", new, flags=re.M)
    write(f / "report.md", new)
    return True


def true_notes(data, rng, k=3) -> list[dict]:
    c = pick(rng, claims_of(data))
    v = pick(rng, data["verdicts"])
    m = pick(rng, data["models"])
    from pytest_mlip.reporting.claims import artifact_index

    idx = artifact_index(data)
    target_fails = sum(1 for x in data["verdicts"] if x["role"] == "target" and x["status"]["text"] == "fail")
    n_target = sum(1 for x in data["verdicts"] if x["role"] == "target")
    c2 = pick(rng, claims_of(data))
    opts = [
        {"kind": "value", "artifact": c["artifact"], "value": c["text"], "unit": idx[c["artifact"]]["unit"]},
        {"kind": "value", "artifact": c["artifact"][:rng.choice([12, 32])], "value": repr(float(c["value"])),
         "unit": idx[c["artifact"]]["unit"]},
        {"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": v["status"]["text"]},
        {"kind": "role", "model": m["name"], "role": m["role"]},
        {"kind": "exists", "model": m["name"], "ran": True},
        {"kind": "exists", "model": "mace-mpa-0", "ran": False},
        {"kind": "count", "n": target_fails, "m": n_target, "status": "fail", "role": "target"},
    ]
    if idx[c["artifact"]]["unit"] == idx[c2["artifact"]]["unit"] and c["value"] != c2["value"]:
        op = "<" if c["value"] < c2["value"] else ">"
        opts.append({"kind": "comparison", "a": c["artifact"], "op": op, "b": c2["artifact"]})
    return rng.sample(opts, min(k, len(opts)))


def l_notes(f, rng):
    data = load(f)
    data.setdefault("notes", []).extend(true_notes(data, rng, rng.randint(1, 4)))
    save_and_render(f, data)
    return True


def l_recompress(f, rng):
    snapshot_plain(f)
    if rng.random() < 0.6:
        recompress(f, rng.choice([1, 5, 9]))
    return True


def l_move(f, rng):
    dst = f.parent / f"moved-{rng.randrange(10**6)}" / "elsewhere"
    dst.parent.mkdir(parents=True)
    shutil.move(str(f), dst)
    return dst


def l_order(f, rng):
    """Models, contracts, verdicts and probes listed in another order (the rendering follows it)."""
    data = load(f)
    for k in ("models", "contracts", "verdicts"):
        rng.shuffle(data[k])
    for v in data["verdicts"]:
        rng.shuffle(v["probes"])
    save_and_render(f, data)
    return True


def l_precision(f, rng):
    """Some cited numbers printed with more digits than the default three (faithful at their precision)."""
    data = load(f)
    cs = claims_of(data)
    for c in rng.sample(cs, min(len(cs), rng.randint(1, 8))):
        from pytest_mlip.reporting.claims import fmt_value

        c["text"] = fmt_value(float(c["value"]), rng.randint(4, 9))
    save_and_render(f, data)
    return True


def l_reflow_prose_md(f, rng):
    """Paragraphs and list items re-wrapped at spaces, blank lines doubled, runs of spaces: what an editor's reflow
    does, and all of it whitespace CommonMark collapses (tables, headings and code are left as they are)."""
    md = read(f / "report.md")
    out, fence = [], False
    for line in md.split("\n"):
        if line.startswith("```"):
            fence = not fence
        if fence or line.startswith(("|", "#", "    ", "```", "!")) or "`" in line or len(line) < 20:
            out.append(line)
        else:
            words = line.split(" ")
            cut = sorted(rng.sample(range(1, len(words)), min(len(words) - 1, rng.randint(0, 2))))
            pieces, last = [], 0
            for c in cut + [len(words)]:
                pieces.append(" ".join(words[last:c]))
                last = c
            indent = "  " if line.startswith("- ") else ""
            out.append(("\n" + indent).join(p for p in pieces if p) if all(pieces) else line)
        if not line.strip() and rng.random() < 0.4:
            out.append("")
    write(f / "report.md", "\n".join(out))
    return True


LEGITIMATE = {
    "reflow-md": l_reflow_md, "reflow-html": l_reflow_html, "json-layout": l_json_layout,
    "emphasis-md": l_emphasis_md, "notes": l_notes, "recompress": l_recompress, "move": l_move,
    "order": l_order, "precision": l_precision, "reflow-prose-md": l_reflow_prose_md,
}


# --- escalation reports: the detective's records ---------------------------------------------------------------------
#
# An escalation report folder holds escalation.json (the record of typed claims), report.md (rendered from it) and
# provenance.sqlite (the snapshot). A careless forger edits report.md; a careful one edits the record and re-renders
# report.md with the tool's own renderer (a pattern judge approved 14 of 24 such edits).

#: detective runs the bench reports on: (name, detect arguments); each takes seconds
AGENT_RUNS = {
    "tm-wall": ["--mlip", "tests.mutants.agent:TransitionMetalWall", "--mlip-committee",
                "tests.mutants:clean_morse,lennard-jones", "--suite", "tests/data/agent/mlip_small_wall.toml",
                "--hypotheses", "2", "--tests-dir", "none"],
}


def make_agent_reports(name: str, args: list[str], work: Path) -> list[Report]:
    """Run the detective offline on a planted defect; its escalation reports and index, with the printed root."""
    d = work / name
    out = d / "out"
    if not (d / "root.txt").is_file():
        d.mkdir(parents=True, exist_ok=True)
        res = subprocess.run([sys.executable, "-m", "pytest_mlip.cli", "detect", *args, "--output", str(out)],
                             cwd=ROOT, capture_output=True, text=True, timeout=900,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        m = re.search(r"mlip root: ([0-9a-f]{64})", res.stdout)
        if not m:
            raise RuntimeError(f"detective run {name} printed no root:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        (d / "root.txt").write_text(m.group(1))
    root = (d / "root.txt").read_text().strip()
    return [Report(f"{name}/{p.name}", p, root) for p in sorted((out / "escalations").iterdir())] + \
        [Report(f"{name}/index", out, root)]


def agent_example_reports() -> list[Report]:
    """The committed detective example: its escalation reports and index (root printed in its README)."""
    base = ROOT / "docs" / "agent-example" / "sevennet-0"
    m = re.search(r"mlip root: ([0-9a-f]{64})", read(ROOT / "docs" / "agent-example" / "README.md"))
    root = m.group(1) if m else None
    return [Report(f"agent-example/{p.name}", p, root) for p in sorted((base / "escalations").iterdir())] + \
        [Report("agent-example/index", base, root)]


def record_file(f: Path) -> Path:
    return f / "escalation.json" if (f / "escalation.json").is_file() else f / "detective.json"


def load_record_json(f: Path) -> dict:
    return json.loads(read(record_file(f)))


def save_record(f: Path, data: dict):
    """What a careful forger does: edit the record and re-render report.md with the tool's renderer."""
    from pytest_mlip.agent.record import RECORD
    from pytest_mlip.agent.render import render_markdown

    write(record_file(f), json.dumps(data, indent=1) + "\n")
    kept, free = typed_notes(data.get("notes"))
    md = render_markdown(RECORD.validate_python({**data, "notes": kept}))
    for text in free:  # free text no renderer prints: written into the page by hand
        md += f"\n- Unverified commentary (not checked by the judge): {text}\n"
    write(f / "report.md", md)


def items(data: dict, pred) -> list[dict]:
    """Every item (dict) of a record that ``pred`` accepts."""
    out = []

    def walk(x):
        if isinstance(x, dict):
            if "k" in x and pred(x):
                out.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data["blocks"])
    return out


def edit_item(f, rng, pred, change) -> bool:
    data = load_record_json(f)
    hits = items(data, pred)
    if not hits:
        return False
    it = rng.choice(hits)
    before = dict(it)
    change(it, rng)
    if it == before:
        return False
    save_record(f, data)
    return True


def e_number_md(f, rng):
    md = read(f / "report.md")
    new = sub_nth(md, r"(?<![\w.#:/-])\d+\.\d+(?:e[-+]\d+)?(?= \[a:)", lambda m: bump_number(m.group(0), rng), rng)
    if new is None:
        return False
    write(f / "report.md", new)
    return True


def e_number_json(f, rng):
    return edit_item(f, rng, lambda x: x["k"] == "value" and x["text"] not in ("0.00", "0"),
                     lambda x, r: x.update(text=bump_number(x["text"], r)))


def e_sign(f, rng):
    if rng.random() < 0.5:
        md = read(f / "report.md")
        new = sub_nth(md, r"(?<=[ (|])(\d+\.\d+(?:e[-+]\d+)?)(?= \[a:)", lambda m: "-" + m.group(1), rng)
        if new is None:
            return False
        write(f / "report.md", new)
        return True
    return edit_item(f, rng, lambda x: x["k"] == "value" and not x["text"].startswith("-") and
                     x["text"] not in ("0.00", "0"), lambda x, r: x.update(text="-" + x["text"]))


UNIT_SWAP = {"eV": "meV", "A": "nm", "eV/A": "eV/nm", "K": "C", "eV/atom": "eV", "1": "eV", "GPa": "MPa",
             "core-hours": "hours", "": "eV", "eV/A^3": "GPa"}


def e_unit(f, rng):
    if rng.random() < 0.4:
        md = read(f / "report.md")
        new = sub_nth(md, r"(?<=\] )(eV/A|eV|A|K|GPa|core-hours)\b",
                      lambda m: {"eV/A": "meV/A", "eV": "meV", "A": "nm", "K": "mK", "GPa": "MPa",
                                 "core-hours": "hours"}[m.group(1)], rng)
        if new is None:
            return False
        write(f / "report.md", new)
        return True
    return edit_item(f, rng, lambda x: x["k"] == "value", lambda x, r: x.update(unit=UNIT_SWAP.get(x["unit"], "eV")))


def e_verdict_word(f, rng):
    r = rng.random()
    if r < 0.4:
        md = read(f / "report.md")
        new = sub_nth(md, r"\b(fail|pass|violates the law|obeys the law)(?= \[a:)",
                      lambda m: {"fail": "pass", "pass": "fail", "violates the law": "obeys the law",
                                 "obeys the law": "violates the law"}[m.group(1)], rng)
        if new is None:
            return False
        write(f / "report.md", new)
        return True
    return edit_item(f, rng, lambda x: x["k"] == "verdict",
                     lambda x, r: x.update(status={"fail": "pass", "pass": "fail", "error": "pass",
                                                   "skip": "pass"}[x["status"]]))


def e_decision_word(f, rng):
    r = rng.random()
    if r < 0.3:
        md = read(f / "report.md")
        new = sub_nth(md, r"\b(escalate|reject|yes|no)\b(?= \(|\s*\||;)",
                      lambda m: {"escalate": "reject", "reject": "escalate", "yes": "no", "no": "yes"}[m.group(1)],
                      rng)
        if new is None:
            return False
        write(f / "report.md", new)
        return True
    if r < 0.6:
        return edit_item(f, rng, lambda x: x["k"] == "decision",
                         lambda x, r: x.update(verdict="reject" if x["verdict"] == "escalate" else "escalate",
                                               type="none" if x["verdict"] == "escalate" else
                                               "exact-constraint violation"))
    if r < 0.8:
        return edit_item(f, rng, lambda x: x["k"] == "held", lambda x, r: x.update(
            held={"yes": "no", "no": "yes", "n/a": "yes"}[x["held"]]))
    return edit_item(f, rng, lambda x: x["k"] == "expect" and x["who"] != "kind",
                     lambda x, r: x.update(expect={"fail": "pass", "pass": "fail", "any": "fail"}[x["expect"]]))


def e_role(f, rng):
    r = rng.random()
    if r < 0.3:
        md = read(f / "report.md")
        new = sub_nth(md, r"\((target|committee)\)", lambda m: "(committee)" if m.group(1) == "target" else
                      "(target)", rng)
        if new is None:
            return False
        write(f / "report.md", new)
        return True
    if r < 0.6:
        return edit_item(f, rng, lambda x: x["k"] == "phrase" and x["id"] in ("role.target", "role.committee"),
                         lambda x, r: x.update(id="role.committee" if x["id"] == "role.target" else "role.target"))
    data = load_record_json(f)
    models = sorted({x["name"] for x in items(data, lambda x: x["k"] == "name" and x["role"] == "model")})
    if len(models) < 2:
        return False
    return edit_item(f, rng, lambda x: x["k"] == "name" and x["role"] == "model",
                     lambda x, r: x.update(name=r.choice([m for m in models if m != x["name"]])))


def e_omission(f, rng):
    if rng.random() < 0.4:
        md = read(f / "report.md").split("\n")
        idx = [i for i, line in enumerate(md) if line.startswith("- ") and "[a:" in line]
        if not idx:
            return False
        del md[rng.choice(idx)]
        write(f / "report.md", "\n".join(md))
        return True
    data = load_record_json(f)
    idx = [i for i, b in enumerate(data["blocks"]) if b["t"] in ("li", "li2", "p", "table")
           and ("verdict" in json.dumps(b) or "value" in json.dumps(b))]
    if not idx:
        return False
    del data["blocks"][rng.choice(idx)]
    save_record(f, data)
    return True


def e_markup(f, rng):
    md = read(f / "report.md")
    r = rng.random()
    if r < 0.25:
        new = md.replace("\n## ", "\n<!-- max v/tau 0.500 -->\n## ", 1)
    elif r < 0.5:
        new = sub_nth(md, r"(\d+\.\d+(?:e[-+]\d+)?) (\[a:[0-9a-f]+\])", lambda m: f"`{m.group(1)}` {m.group(2)}", rng)
    elif r < 0.75:
        new = sub_nth(md, r"^## (.+)$", lambda m: f"#### {m.group(1)}", rng) if "## " in md else None
    else:
        new = sub_nth(md, r"^\| (`[^`]+`) \|", lambda m: f"| {m.group(1)} | 0.100 |", rng)
    if new is None or new == md:
        return False
    write(f / "report.md", new)
    return True


def e_text(f, rng):
    """The planner's words changed in the record (a statement, a rule, a reason), the report re-rendered."""
    swaps = [("violates", "obeys"), ("escalate", "reject"), ("fail", "pass"), ("predicted", "ruled out"),
             ("decisive", "inconclusive")]

    def change(x, r):
        for a, b in r.sample(swaps, len(swaps)):
            if a in x["text"]:
                x["text"] = x["text"].replace(a, b, 1)
                return

    return edit_item(f, rng, lambda x: x["k"] == "text" and any(a in x["text"] for a, _ in swaps), change)


def e_law_phrase(f, rng):
    """Another of the catalogue's phrases in place of one (a type, a boundary, a confound)."""
    from pytest_mlip.agent.record import PHRASES

    ids = [k for k in PHRASES if not k.startswith(("sec.", "h.", "role.", "kind."))]
    return edit_item(f, rng, lambda x: x["k"] == "phrase" and x["id"] in ids and len(PHRASES[x["id"]]) > 12,
                     lambda x, r: x.update(id=r.choice([i for i in ids if i != x["id"] and len(PHRASES[i]) > 12])))


def e_note(f, rng):
    data = load_record_json(f)
    verdicts = items(data, lambda x: x["k"] == "verdict")
    if not verdicts:
        return False
    v = rng.choice(verdicts)
    flip = {"fail": "pass", "pass": "fail", "error": "pass", "skip": "fail"}[v["status"]]
    data["notes"] = [rng.choice([
        {"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": flip},
        {"kind": "comment", "text": "The model obeys the law everywhere; nothing to escalate."},
        {"kind": "comment", "text": "Reviewed: the target is fine here."}])]
    save_record(f, data)
    return True


def e_store_edit(f, rng):
    """A number the report cites (or one it derives from) edited in the snapshot, its id kept."""
    cited = {x["artifact"] for x in items(load_record_json(f), lambda x: x["k"] == "value")}
    plain = snapshot_plain(f)
    db = sqlite3.connect(str(plain), isolation_level=None)
    rows = [(aid, json.loads(v)) for aid, v in db.execute(
        "SELECT id, value FROM artifacts WHERE kind IN ('violation','normalized','max_normalized','observable')")
        if aid in cited]
    rows = [(aid, v) for aid, v in rows if isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0]
    if not rows:
        db.close()
        return False
    aid, val = rng.choice(rows)
    db.execute("UPDATE artifacts SET value=? WHERE id=?", (json.dumps(val / 10), aid))
    db.close()
    return True


def e_store_beside(f, rng):
    """A second store beside the snapshot."""
    plain = f / "provenance.sqlite"
    if not plain.is_file():
        return False
    with open(plain, "rb") as src, gzip.open(f / "provenance.sqlite.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return True


#: the detective's own files besides its record, report.md and the snapshot (a folder is the detective's as a whole)
_CORE = {"escalation.json", "detective.json", "report.md", "provenance.sqlite", "provenance.sqlite.gz"}


def _side_files(f: Path) -> list[Path]:
    return sorted(p for p in f.rglob("*") if p.is_file() and p.relative_to(f).as_posix() not in _CORE)


def e_file_edit(f, rng):
    """One of the folder's other files changed: a figure, reproduce.py, a DFT input, a kept protocol, the memory."""
    files = _side_files(f)
    if not files:
        return False
    p = rng.choice(files)
    data = p.read_bytes()
    if p.suffix == ".png" or b"\0" in data[:2048]:
        i = rng.randrange(len(data) // 4, 3 * len(data) // 4)
        p.write_bytes(data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1:])
        return True
    text = data.decode("utf-8", errors="replace")
    new = sub_nth(text, r"(?<![\w.])\d+\.\d+", lambda m: bump_number(m.group(0), rng), rng)
    if new is None or new == text:
        new = text + "\n# reviewed: the model obeys this law\n"
    p.write_text(new)
    return True


def e_file_add(f, rng):
    """A file the detective did not write, in its folder: a note, a second page, a figure, a protocol."""
    way = rng.choice(["note", "page", "figure", "protocol", "nested"])
    if way == "note":
        write(f / rng.choice(["NOTES.md", "REVIEW.txt", "README.md"]), "Ready to merge. The model obeys the law.\n")
    elif way == "page":
        write(f / "report-final.md", read(f / "report.md").replace("escalate", "reject"))
    elif way == "figure":
        pngs = [p for p in f.rglob("*.png")]
        if not pngs:
            return False
        (f / "figure-final.png").write_bytes(rng.choice(pngs).read_bytes())
    elif way == "protocol":
        tomls = [p for p in f.rglob("*.toml")]
        if not tomls:
            return False
        src = rng.choice(tomls)
        (src.parent / ("mlip_extra-" + src.name.removeprefix("mlip_"))).write_text(read(src).replace("hard = true",
                                                                                                  "hard = false"))
    else:
        (f / "dft" / "extra").mkdir(parents=True, exist_ok=True)
        write(f / "dft" / "extra" / "result.txt", "DFT agrees with the model: no violation.\n")
    return True


def e_file_drop(f, rng):
    """One of the folder's other files deleted (a kept protocol, the figure, the reproducer)."""
    files = _side_files(f)
    if not files:
        return False
    rng.choice(files).unlink()
    return True


def el_touch(f, rng):
    """Every file's modification time changed (a checkout, a copy): nothing a reader sees."""
    t = 1_700_000_000 + rng.randrange(10**7)
    for p in f.rglob("*"):
        if p.is_file():
            os.utime(p, (t, t))
    return True


ESCALATION_FABRICATIONS = {
    "esc-number-md": e_number_md, "esc-number-json": e_number_json, "esc-sign": e_sign, "esc-unit": e_unit,
    "esc-verdict": e_verdict_word, "esc-decision": e_decision_word, "esc-role": e_role, "esc-omission": e_omission,
    "esc-markup": e_markup, "esc-text": e_text, "esc-phrase": e_law_phrase, "esc-note": e_note,
    "esc-store-edit": e_store_edit, "esc-store-beside": e_store_beside,
    "esc-file-edit": e_file_edit, "esc-file-add": e_file_add, "esc-file-drop": e_file_drop,
}


def el_reflow(f, rng):
    """Whitespace Markdown collapses: list items and paragraphs broken over lines, padded cells, blank lines."""
    md = read(f / "report.md")
    out = []
    for line in md.split("\n"):
        r = rng.random()
        if line.startswith("|") and r < 0.5:
            cells = line.split("|")
            line = "|".join([cells[0]] + [c.strip().center(len(c.strip()) + rng.randint(0, 4)) if c.strip()
                                          else " " * rng.randint(0, 2) for c in cells[1:]])
        elif (line.startswith("- ") or (line[:1].isalpha())) and line.count(" ") > 3 and r < 0.4:
            words = line.split(" ")
            k = rng.randrange(2, len(words))
            if not words[k].startswith(("-", "+", "*", "#", ">", "|")) and not words[k][:1].isdigit():
                line = " ".join(words[:k]) + "\n  " + " ".join(words[k:])
        elif r < 0.1:
            line = line + "   "
        out.append(line)
        if not line.strip() and rng.random() < 0.3:
            out.append("")
    write(f / "report.md", "\n".join(out))
    return True


def el_emphasis(f, rng):
    md = read(f / "report.md")
    new = re.sub(r"\b(escalate|fail|violates the law)\b(?=[ ;(])",
                 lambda m: f"**{m.group(1)}**" if rng.random() < 0.6 else m.group(1), md)
    new = re.sub(r"^## (.+)$", lambda m: f"## *{m.group(1)}*" if rng.random() < 0.3 else m.group(0), new, flags=re.M)
    if new == md:
        return False
    write(f / "report.md", new)
    return True


def el_json_layout(f, rng):
    data = load_record_json(f)
    write(record_file(f), json.dumps(data, indent=rng.choice([None, 2, 4]), sort_keys=rng.random() < 0.5))
    return True


def el_precision(f, rng):
    """A number printed with more digits than the report's default (the artifact's own value, rounded)."""
    from pytest_mlip.reporting.claims import fmt_value
    from pytest_mlip.provenance.store import Store

    data = load_record_json(f)
    vals = items(data, lambda x: x["k"] == "value")
    if not vals:
        return False
    plain = snapshot_plain(f) if (f / "provenance.sqlite.gz").is_file() else f / "provenance.sqlite"
    st = Store(plain, readonly=True)
    try:
        for x in rng.sample(vals, min(3, len(vals))):
            v = st.get(x["artifact"]).value
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                x["text"] = fmt_value(v, rng.choice([4, 5, 6]))
    finally:
        st.close()
    save_record(f, data)
    return True


def el_notes(f, rng):
    """True typed notes, added to the record and rendered."""
    data = load_record_json(f)
    notes = []
    for v in rng.sample(items(data, lambda x: x["k"] == "verdict"), 1):
        notes.append({"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": v["status"]})
    for x in rng.sample(items(data, lambda x: x["k"] == "value"), 1):
        notes.append({"kind": "value", "artifact": x["artifact"], "value": x["text"], "unit": x["unit"]})
    data["notes"] = notes
    save_record(f, data)
    return True


def el_recompress(f, rng):
    plain = f / "provenance.sqlite"
    if plain.is_file():
        recompress(f, rng.choice([1, 5, 9]))
    else:
        snapshot_plain(f)
    return True


ESCALATION_LEGITIMATE = {
    "esc-reflow": el_reflow, "esc-emphasis": el_emphasis, "esc-json-layout": el_json_layout,
    "esc-precision": el_precision, "esc-notes": el_notes, "esc-recompress": el_recompress, "esc-move": l_move,
    "esc-touch": el_touch,
}


# --- the bench -----------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    report: str
    op: str
    seed: int
    fabricated: bool
    approved: bool
    detail: str


def judge(folder: Path, root: str, seed: int, sample: int | None = 3) -> tuple[bool, str]:
    from pytest_mlip.errors import MlipError
    from pytest_mlip.reporting.judge import judge_file

    try:
        r = judge_file(folder, root=root, sample=sample, seed=seed)
    except MlipError as exc:
        return False, f"error: {exc}"
    bad = r.failed
    return (not bad), ("approved" if not bad else bad[0].line()[:160])


def run_bench(reports: list[Report], seeds, ops: dict | None = None, work: Path | None = None,
              use_root: bool = True, sample: int | None = 3, verbose: bool = False) -> list[Outcome]:
    work = Path(work or tempfile.mkdtemp(prefix="mlip-judge-bench-"))
    out = []
    run_ops = [(n, fn, True) for n, fn in FABRICATIONS.items()] + [(n, fn, False) for n, fn in LEGITIMATE.items()]
    esc_ops = [(n, fn, True) for n, fn in ESCALATION_FABRICATIONS.items()] + \
        [(n, fn, False) for n, fn in ESCALATION_LEGITIMATE.items()]
    for rep in reports:
        all_ops = run_ops if (rep.folder / "report.json").is_file() else esc_ops
        if ops:
            all_ops = [o for o in all_ops if o[0] in ops]
        for seed in seeds:
            for name, fn, fab in all_ops:
                rng = random.Random(f"{seed}:{rep.name}:{name}")
                d = work / f"{rep.name.replace('/', '-')}-{name}-{seed}" / "rep"
                if d.parent.exists():
                    shutil.rmtree(d.parent)
                d.parent.mkdir(parents=True)
                shutil.copytree(rep.folder, d, ignore=shutil.ignore_patterns("README.md"))
                applied = fn(d, rng)
                if not applied:
                    shutil.rmtree(d.parent)
                    continue
                if isinstance(applied, Path):
                    d = applied
                ok, detail = judge(d, rep.root if use_root else None, seed, sample)
                out.append(Outcome(rep.name, name, seed, fab, ok, detail))
                if fab == ok and verbose:
                    print(f"  WRONG {rep.name} {name} seed {seed}: {'approved' if ok else 'flagged'}: {detail}",
                          flush=True)
                shutil.rmtree(d.parent, ignore_errors=True)
    return out


def summary(outcomes: list[Outcome]) -> str:
    fab = [o for o in outcomes if o.fabricated]
    leg = [o for o in outcomes if not o.fabricated]
    lines = [f"fabrications approved: {sum(o.approved for o in fab)} / {len(fab)}; "
             f"legitimate flagged: {sum(not o.approved for o in leg)} / {len(leg)}"]
    for o in outcomes:
        if o.fabricated == o.approved:
            lines.append(f"  WRONG {o.report} {o.op} seed {o.seed}: {'approved' if o.approved else 'flagged'}: "
                         f"{o.detail}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "held-out", "held-out-2", "held-out-3", "held-out-4", "held-out-5",
                                       "held-out-6", "held-out-7"],
                    default="dev", help="dev: seeds 1000-1999; held-out: 2000-2999 (spent); held-out-2: 3000-3999 "
                    "(spent); held-out-3: 4000-4999 (spent); held-out-4: 5000-5999 (spent); held-out-5: 6000-6999 "
                    "(spent); held-out-6: 7000-7999 (spent); held-out-7: 8000-8999 (spent)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per report and operator (default 2)")
    ap.add_argument("--runs", default="emt,lj,mutant", help="fresh runs to report on (comma-separated)")
    ap.add_argument("--example", action="store_true", help="also the committed example report")
    ap.add_argument("--agent-runs", default="tm-wall", help="detective runs whose escalation reports and index are "
                                                           "judged (comma-separated; '' for none)")
    ap.add_argument("--agent-example", action="store_true", help="also the committed detective example")
    ap.add_argument("--no-root", action="store_true", help="judge without the root hash (what a store forgery gets "
                                                          "past when no CI log kept it)")
    ap.add_argument("--work", default=None, help="work folder; reports built there earlier are reused")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("MPLBACKEND", "Agg")
    work = Path(args.work or tempfile.mkdtemp(prefix="mlip-judge-bench-"))
    t0 = time.time()
    reports = [make_report(n, RUNS[n], work / "runs") for n in args.runs.split(",") if n]
    if args.example:
        ex = example_report()
        if ex:
            reports.append(ex)
    for n in (x for x in args.agent_runs.split(",") if x):
        reports += make_agent_reports(n, AGENT_RUNS[n], work / "runs")
    if args.agent_example:
        reports += agent_example_reports()
    t1 = time.time()
    seeds = list({"dev": DEV, "held-out": HELD_OUT, "held-out-2": HELD_OUT_2,
                  "held-out-3": HELD_OUT_3, "held-out-4": HELD_OUT_4, "held-out-5": HELD_OUT_5,
                  "held-out-6": HELD_OUT_6, "held-out-7": HELD_OUT_7}[args.split][:args.seeds])
    outcomes = run_bench(reports, seeds, work=work / "variants", use_root=not args.no_root, verbose=True)
    print(f"judge bench ({args.split} seeds {seeds[0]}..{seeds[-1]}, reports {', '.join(r.name for r in reports)}, "
          f"root {'not ' if args.no_root else ''}given): {len(outcomes)} variants, reports built in {t1 - t0:.0f} s, "
          f"judged in {time.time() - t1:.0f} s")
    print(summary(outcomes))
    fab = [o for o in outcomes if o.fabricated]
    leg = [o for o in outcomes if not o.fabricated]
    return 0 if not any(o.approved for o in fab) and all(o.approved for o in leg) else 1


if __name__ == "__main__":
    sys.exit(main())
