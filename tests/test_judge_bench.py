"""The judge bench: legitimate and fabricated variants of a real report; the judge must sort every one.

One real run (a planted-defect model whose surface wall fails, a clean committee
member, two contracts) writes a report; a second run in the same process, as if
by an earlier code version, leaves stale artifacts in the same store. From
that report the bench builds legitimate variants (edited, re-ordered,
re-printed more precisely, trimmed of optional parts) and fabricated ones in
the ways a careless or dishonest writer would: invented numbers, values that
cite the wrong artifact, altered or re-rounded values, stale artifacts from
another code or model version, claims without citation, a required claim
dropped, numbers laundered through derived artifacts registered afterwards.
Two counts are measured, never traded: fabrications approved and legitimate
reports flagged. Both must be zero.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_mlip.provenance.artifact import Artifact, ModelIdentity, canonical
from pytest_mlip.provenance.store import Store
from pytest_mlip.reporting.claims import fmt_value
from pytest_mlip.reporting.judge import judge_file

ROOT = Path(__file__).resolve().parent.parent
M = "tests.mutants.foundation:short_range_hole"
CLEAN = "tests.mutants:clean_morse"
WALL, DISS = "repulsive-wall-surface", "dissociation-limit"
STALE_CODE = "0.0.9+g0123abc"

RUNS = textwrap.dedent("""
    import sys
    import pytest
    import pytest_mlip.provenance.artifact as artifact

    args = sys.argv[1:]
    first = pytest.main(args + ["--mlip-report=rep"])
    artifact.code_version = lambda: "%s"  # an earlier code version, same store
    second = pytest.main(args)
    print("RUNS", int(first), int(second))
""" % STALE_CODE)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    args = ["-q", "-p", "no:cacheprovider", "-W", "ignore", f"--mlip={M}", f"--mlip-committee={CLEAN}", "-k",
            f"{WALL} or {DISS}", "--mlip-store=store.sqlite"]
    res = subprocess.run([sys.executable, "-c", RUNS, *args], cwd=d, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "RUNS 1 1" in res.stdout, res.stdout[-3000:] + res.stderr[-3000:]
    return Bench(d)


def short(aid: str) -> str:
    return aid[:12]


def cite(c: dict) -> str:
    return f"{c['text']} [a:{short(c['artifact'])}]"


class Bench:
    def __init__(self, d: Path):
        self.dir = d
        self.rep = d / "rep"
        self.store_path = d / "store.sqlite"
        self.md = (self.rep / "report.md").read_text()
        self.data = json.loads((self.rep / "report.json").read_text())
        self.store = Store(self.store_path)
        run_id = self.data["run"]["id"]
        self.target = self.data["run"]["target"]
        self.committee = next(m["name"] for m in self.data["models"] if m["role"] != "target")
        stale = self.store.db.execute("SELECT id, artifact FROM runs WHERE id != ?", (run_id,)).fetchone()
        self.stale = self.store.get_many(self.store.closure([stale[1]]))
        self.stale_index = {(a.kind, canonical(a.params), a.model.name if a.model else None): a.id
                            for a in self.stale.values()}

    def v(self, contract, model=None):
        model = model or self.target
        return next(v for v in self.data["verdicts"] if v["contract"] == contract and v["model"] == model)

    def probe(self, contract, probe, model=None):
        return next(p for p in self.v(contract, model)["probes"] if p["probe"] == probe)

    def twin(self, aid: str) -> str:
        """The same quantity as recorded by the earlier code version."""
        a = self.store.get(aid)
        twin = self.stale_index[(a.kind, canonical(a.params), a.model.name if a.model else None)]
        assert self.stale[twin].value == a.value and self.stale[twin].code_version == STALE_CODE
        return twin

    def clone(self, aid: str, ident: ModelIdentity, memo=None) -> str:
        """Re-record an artifact and its ancestry as if another version of the same model had produced it."""
        memo = {} if memo is None else memo
        if aid in memo:
            return memo[aid]
        a = self.store.get(aid)
        new = Artifact(kind=a.kind, value=a.value, routine=a.routine, params=a.params,
                       parents=tuple(self.clone(p, ident, memo) for p in a.parents),
                       model=ident if a.model else None, code_version=a.code_version, reason=a.reason,
                       context=a.context)
        self.store.put(new)
        memo[aid] = new.id
        return new.id

    def launder(self, template_id: str, value, parents: list[str], **params) -> str:
        """Register a derived artifact with an invented value, made to look like the template's kind."""
        t = self.store.get(template_id)
        new = Artifact(kind=t.kind, value=value, routine=t.routine, params={**t.params, **params},
                       parents=tuple(parents), model=t.model, code_version=t.code_version, reason=t.reason,
                       context=t.context)
        self.store.put(new)
        return new.id


def sub(text: str, old: str, new: str, count: int = 1) -> str:
    assert old in text, f"bench: {old!r} not in the report"
    return text.replace(old, new, count)


def section(md: str, heading: str) -> tuple[int, int]:
    start = md.index(heading)
    level = heading.split(" ", 1)[0]
    nxt = [i for i in (md.find(f"\n{'#' * k} ", start + len(heading)) for k in range(1, len(level) + 1)) if i != -1]
    return start, (min(nxt) + 1 if nxt else len(md))


def drop_section(md: str, heading: str) -> str:
    a, b = section(md, heading)
    return md[:a] + md[b:]


def reprint(md: str, data: dict, sig: int | None = None, idlen: int | None = None) -> str:
    """Re-print every cited number (more digits) or every citation (another id length)."""
    def claims():
        for v in data["verdicts"]:
            for c in [v["max_normalized"], *v["tolerance"].values()]:
                if c:
                    yield c
            for p in v["probes"]:
                for c in [p["normalized"], *p["violations"].values(), *p["observables"].values()]:
                    if c:
                        yield c
    for c in claims():
        old = cite(c)
        new_text = fmt_value(c["value"], sig) if sig else c["text"]
        new = f"{new_text} [a:{c['artifact'][:idlen or 12]}]"
        md = md.replace(old, new)
    if idlen:
        md = re.sub(r"\[a:([0-9a-f]{12})\]",
                    lambda m: f"[a:{_full(data, m.group(1))[:idlen]}]", md)
    return md


def _full(data: dict, prefix: str) -> str:
    blob = json.dumps(data)
    m = re.search(rf'"({prefix}[0-9a-f]{{20}})"', blob)
    return m.group(1)


@dataclass
class Variant:
    name: str
    legit: bool
    content: str
    fmt: str = "md"
    expect: str | None = None  # a fabricated variant must be flagged for this reason
    snapshot: bool | None = False  # True: the snapshot next to it; None: the store the report names


def variants(b: Bench) -> list[Variant]:
    md, data = b.md, b.data
    T, C = b.target, b.committee
    vw, vwc, vd, vdc = b.v(WALL), b.v(WALL, C), b.v(DISS), b.v(DISS, C)
    pw = vw["probes"][0]
    pname = pw["probe"]
    drop, tau = pw["violations"]["drop"], vw["tolerance"]["drop"]
    wall_cell = f"{vw['status']['text'].upper()} [a:{short(vw['status']['artifact'])}] · {cite(vw['max_normalized'])}"
    comm_cell = f"pass [a:{short(vwc['status']['artifact'])}] · {cite(vwc['max_normalized'])}"
    diss_cell = f"pass [a:{short(vd['status']['artifact'])}] · {cite(vd['max_normalized'])}"
    fail_head = f"### `{WALL}` on `{T}`"
    dp = {p["probe"]: p for p in vd["probes"]}
    out: list[Variant] = []
    L = lambda name, content, fmt="md", snapshot=False: out.append(Variant(name, True, content, fmt, None, snapshot))
    F = lambda name, content, expect, fmt="md": out.append(Variant(name, False, content, fmt, expect))
    dumps = lambda d: json.dumps(d, indent=1)

    # ---------------- legitimate ----------------
    L("as written", md)
    L("json as written", dumps(data), "json")
    L("judged against the snapshot next to it", md, snapshot=True)
    L("json judged against the snapshot", dumps(data), "json", snapshot=True)
    a, bb = section(md, "## Normalized violation per probe")
    f0, _ = section(md, "## Failures")
    L("sections re-ordered", md[:f0] + md[a:bb] + md[f0:a] + md[bb:])
    L("curves section left out", drop_section(md, "## Curves"))
    L("per-probe tables left out", drop_section(md, "## Normalized violation per probe"))
    for probe in list(dp)[:5]:
        row = next(ln for ln in md.splitlines() if ln.startswith(f"| `{probe}` |"))
        L(f"optional row {probe} removed", sub(md, row + "\n", ""))
    L("commentary without numbers", sub(md, "## Failures\n", "## Failures\n\nThe planted defect shows up as a collapse "
                                        "onto the surface; the committee member does not share it.\n"))
    L("prose restating cited values", sub(md, "## Curves", f"On `{pname}` the drop is {cite(drop)} eV against a "
                                      f"tolerance tau of {cite(tau)} eV.\n\n## Curves"))
    L("more digits (4)", reprint(md, data, sig=4))
    L("more digits (6)", reprint(md, data, sig=6))
    L("full-length ids", reprint(md, data, idlen=32))
    L("8-digit ids", reprint(md, data, idlen=8))
    L("status words in lower case", md.replace("FAIL [a:", "fail [a:"))
    L("tables re-spaced", re.sub(r" \| ", "  |   ", md))
    L("matrix figure and models table left out",
      drop_section(md.replace("![Verdict matrix](figures/matrix.png)\n", ""), "## Models"))
    rows = [ln for ln in md.splitlines() if ln.startswith(f"| `{pname}` | ")]
    shuffled = md
    for r in rows[:3]:
        shuffled = shuffled.replace(r + "\n", "", 1)
    shuffled = sub(shuffled, rows[3] + "\n", rows[3] + "\n" + "\n".join(reversed(rows[:3])) + "\n")
    L("detail rows re-ordered", shuffled)
    matrix = [ln for ln in md.splitlines() if ln.startswith("| contract |") or ln.startswith("|---|---|---|")
              or ln.startswith(f"| `{DISS}` |") or ln.startswith(f"| `{WALL}` |")]
    trimmed = md
    for ln in matrix:
        trimmed = trimmed.replace(ln, "|".join(ln.split("|")[:-2]) + "|", 1)
    L("committee column dropped from the matrix", trimmed)
    a, bb = section(md, "## Verdict matrix")
    L("matrix repeated", md[:bb] + md[a:bb].replace("## Verdict matrix", "## Verdict matrix, again") + md[bb:])
    L("CRLF line endings", md.replace("\n", "\r\n"))
    L("hidden reviewer note", md + "\n<!-- reviewed by A. on day 12, 3 questions -->\n")
    L("prose about the committee member",
      sub(md, "## Curves", f"For comparison `{C}` gives pass [a:{short(vwc['status']['artifact'])}] with v/tau "
                           f"{cite(vwc['max_normalized'])} on `{WALL}`.\n\n## Curves"))
    L("per-probe header marks the target", md.replace(f"| probe | `{T}` |", f"| probe | `{T}` (target) |"))
    L("judged against the store the report names", md, snapshot=None)
    L("headings reworded", md.replace("## Failures\n", "## Failures found in this run\n")
      .replace("## Verdict matrix\n", "## Verdict matrix (all models)\n"))
    L("summary bullet restating the worst v/tau",
      sub(md, "## Failures\n", f"## Failures\n\n- worst v/tau of `{WALL}` on `{T}`: "
                               f"{cite(vw['max_normalized'])}\n"))
    L("more digits (5)", reprint(md, data, sig=5))
    L("curve data lines left out", "\n".join(ln for ln in md.splitlines() if not ln.startswith(f"- `{pname}`: `"))
      + "\n")
    d = json.loads(dumps(data))
    for v in d["verdicts"]:
        for p in v["probes"]:
            for c in p["violations"].values():
                c["text"] = fmt_value(c["value"], 4)
    L("json texts with more digits", dumps(d), "json")
    L("json compact", json.dumps(data, separators=(",", ":")), "json")
    d = json.loads(dumps(data))
    d["verdicts"] = [v for v in d["verdicts"] if not (v["contract"] == DISS and v["model"] == C)]
    L("json without a passing committee verdict", dumps(d), "json")
    d = json.loads(dumps(data))
    d["verdicts"].reverse()
    L("json verdicts re-ordered", dumps(d), "json")
    d = json.loads(dumps(data))
    for v in d["verdicts"]:
        for p in v["probes"]:
            p["series"] = {}
    L("json without curve data", dumps(d), "json")
    d = json.loads(dumps(data))
    for v in d["verdicts"]:
        if v["contract"] == DISS and v["model"] == C:
            v["probes"] = v["probes"][1:]
    L("json with a probe left out", dumps(d), "json")

    # ---------------- fabricated ----------------
    F("invented number and id", sub(md, "## Curves", "The adsorbate binds by 0.420 [a:0123456789ab] eV.\n\n## Curves"),
      "no artifact")
    F("number without citation in prose", sub(md, "## Curves", f"The drop is {drop['text']} eV.\n\n## Curves"),
      "number without a citation")
    cell = cite(dp["H2O+CH4"]["normalized"])
    F("citation stripped from a table cell", sub(md, cell, dp["H2O+CH4"]["normalized"]["text"]),
      "number without a citation")
    F("altered value", sub(md, cite(drop), cite(drop).replace(drop["text"], "16.4")), "but the artifact holds")
    F("altered worst v/tau in the matrix", sub(md, cite(vw["max_normalized"]),
                                               f"0.164 [a:{short(vw['max_normalized']['artifact'])}]"),
      "but the artifact holds")
    F("altered tolerance", sub(md, cite(tau), f"1.00 [a:{short(tau['artifact'])}]"), "but the artifact holds")
    F("re-rounded coarser", sub(md, f"| v/tau | {cite(pw['normalized'])}",
                                f"| v/tau | 2e+04 [a:{short(pw['normalized']['artifact'])}]"), "re-rounded")
    F("tolerance re-rounded", sub(md, cite(tau), f"0.01 [a:{short(tau['artifact'])}]"), "re-rounded")
    r_eq = pw["observables"]["r_eq"]
    F("last digit nudged", sub(md, cite(r_eq), f"{fmt_value(r_eq['value'] - 0.01)} [a:{short(r_eq['artifact'])}]"),
      "but the artifact holds")
    other = dp["Cu+O"]["normalized"]
    F("cites another probe's artifact", sub(md, f"| `H2O+CH4` | {cite(dp['H2O+CH4']['normalized'])}",
                                          f"| `H2O+CH4` | {cite(other)}"), "from probe Cu+O")
    F("target cell cites the committee", sub(md, wall_cell, comm_cell), f"from model {C}")
    F("v/tau row cites the raw violation", sub(md, f"| v/tau | {cite(pw['normalized'])}", f"| v/tau | {cite(drop)}"),
      "printed as v/tau but the artifact is a violation")
    F("cites another contract's artifact",
      sub(md, cite(vw["max_normalized"]), cite(vd["max_normalized"])), f"from contract {DISS}")
    F("tolerance cell cites the violation", sub(md, cite(tau), cite(drop)), "printed as tau:drop")
    F("status flipped in the matrix", sub(md, f"FAIL [a:{short(vw['status']['artifact'])}] ·",
                                          f"pass [a:{short(vw['status']['artifact'])}] ·"), "printed status pass")
    F("status flipped in the failure section",
      sub(md, f"- verdict: FAIL [a:{short(vw['status']['artifact'])}]",
          f"- verdict: PASS [a:{short(vw['status']['artifact'])}]"), "printed status PASS")
    F("required claim dropped", drop_section(sub(md, wall_cell, "-"), fail_head), "required claim missing")
    wall_row = next(ln for ln in md.splitlines() if ln.startswith(f"| `{WALL}` |"))
    F("failing contract removed everywhere",
      drop_section(drop_section(sub(md, wall_row + "\n", ""), fail_head), f"### `{WALL}`: v/tau per probe"),
      "required claim missing")
    stale_cell = (f"pass [a:{short(b.twin(vd['status']['artifact']))}] · "
                  f"{vd['max_normalized']['text']} [a:{short(b.twin(vd['max_normalized']['artifact']))}]")
    F("stale artifacts from an earlier code version", sub(md, diss_cell, stale_cell), "stale: recorded by code")
    n = dp["H2O+CH4"]["normalized"]
    F("stale per-probe value", sub(md, cite(n), f"{n['text']} [a:{short(b.twin(n['artifact']))}]"), "stale")
    F("stale violation in the failure table",
      sub(md, cite(drop), f"{drop['text']} [a:{short(b.twin(drop['artifact']))}]"), "stale")
    ident = ModelIdentity(T, "0.9", "0ld0ld0ld0ld0ld0")
    old_max = b.clone(vd["max_normalized"]["artifact"], ident)
    old_verdict = b.clone(vd["status"]["artifact"], ident)
    F("artifacts of another model version",
      sub(md, diss_cell, f"pass [a:{short(old_verdict)}] · {vd['max_normalized']['text']} [a:{short(old_max)}]"),
      "stale: recorded for")
    fake_n = b.launder(pw["normalized"]["artifact"], 0.5, b.store.get(pw["normalized"]["artifact"]).parents)
    F("laundered v/tau (invented, registered afterwards)",
      sub(md, f"| `{pname}` | {cite(pw['normalized'])} |", f"| `{pname}` | 0.500 [a:{short(fake_n)}] |"),
      "not part of run")
    probe_art = b.store.get(drop["artifact"]).parents
    fake_drop = b.launder(drop["artifact"], 0.008, list(probe_art))
    fake_norm = b.launder(pw["normalized"]["artifact"], 0.008 / 0.01, [fake_drop, tau["artifact"]])
    fake_max = b.launder(vw["max_normalized"]["artifact"], 0.008 / 0.01, [fake_norm])
    vparents = [fake_max, fake_norm, fake_drop, tau["artifact"]]
    fake_verdict = b.launder(vw["status"]["artifact"], "pass", vparents)
    F("laundered chain: pass in the matrix, failure removed",
      drop_section(sub(md, wall_cell, f"pass [a:{short(fake_verdict)}] · 0.800 [a:{short(fake_max)}]"), fail_head),
      "not part of run")
    F("laundered chain in the failure table",
      sub(sub(md, cite(drop), f"0.00800 [a:{short(fake_drop)}]"),
          f"| v/tau | {cite(pw['normalized'])}", f"| v/tau | 0.800 [a:{short(fake_norm)}]"), "not part of run")
    e_eq = pw["observables"]["E_eq"]
    fake_e = b.launder(e_eq["artifact"], -2.5, list(probe_art))
    F("laundered observable", sub(md, cite(e_eq), f"-2.50 [a:{short(fake_e)}]"), "not part of run")
    F("invented claim in a fenced block",
      sub(md, "## Curves", "```\nbarrier 0.420 [a:0123456789ab] eV\n```\n\n## Curves"), "no artifact")
    F("invented claim in a table header",
      sub(md, f"| probe | `{T}` | `{C}` |", f"| probe | `{T}` | `{C}` (barrier 0.420 [a:0123456789ab] eV) |"),
      "no artifact")
    F("number hidden in a code span", sub(md, "## Curves", "- barrier: `0.42 eV`\n\n## Curves"),
      "number without a citation")
    F("number hidden in a link text", sub(md, "## Curves", "See [0.42 eV](figures/matrix.png).\n\n## Curves"),
      "number without a citation")
    F("self-computed ratio citing its input",
      sub(md, "## Curves", f"Relative to the tolerance the drop is {pw['normalized']['text']} "
                           f"[a:{short(drop['artifact'])}] times too large.\n\n## Curves"), "but the artifact holds")
    evaluation = next(p for p in b.store.get(probe_art[0]).parents)
    F("raw model call cited for a number", sub(md, "## Curves", f"- energy at the worst point: -208 "
                                                              f"[a:{short(evaluation)}]\n\n## Curves"),
      "a number must cite a stored number")
    F("header claims another code version", sub(md, f"- code version: `{data['run']['code_version']}`",
                                                f"- code version: `{STALE_CODE}`"), "the run recorded code version")
    F("header claims model weights",
      sub(md, f"| `{T}` | target | factory | - | - |", f"| `{T}` | target | factory | `1.2` | `feedfacefeedface` |"),
      "the run used version")
    F("verdict without citation in prose", sub(md, "## Curves", "Overall: PASS on every contract.\n\n## Curves"),
      "verdict without a citation")
    F("status citation stripped in the matrix",
      sub(md, f"FAIL [a:{short(vw['status']['artifact'])}] ·", "FAIL ·"), "verdict without a citation")

    def jf(name, edit, expect):
        d = json.loads(dumps(data))
        edit(d)
        F(name, dumps(d), expect, "json")

    def jv(d, contract, model):
        return next(v for v in d["verdicts"] if v["contract"] == contract and v["model"] == model)

    jf("json value and text altered",
       lambda d: jv(d, WALL, T)["max_normalized"].update(value=0.164, text="0.164"), "but the artifact holds")
    jf("json text altered", lambda d: jv(d, WALL, T)["max_normalized"].update(text="0.164"), "but the artifact holds")
    jf("json status flipped", lambda d: jv(d, WALL, T)["status"].update(text="pass"), "printed status pass")

    def swap(d):
        ps = jv(d, DISS, T)["probes"]
        ps[0]["normalized"], ps[2]["normalized"] = ps[2]["normalized"], ps[0]["normalized"]
    jf("json probes' citations swapped", swap, "printed for probe")
    jf("json failing verdict removed",
       lambda d: d.update(verdicts=[v for v in d["verdicts"] if v is not jv(d, WALL, T)]), "required claim missing")
    jf("json claim without citation", lambda d: jv(d, WALL, T)["probes"][0]["violations"]["drop"].update(artifact=None),
       "claim without a citation")
    jf("json stale artifact", lambda d: jv(d, DISS, T)["max_normalized"].update(
        artifact=b.twin(vd["max_normalized"]["artifact"])), "stale")
    jf("json laundered v/tau", lambda d: jv(d, WALL, T)["probes"][0].update(
        normalized={"value": 0.5, "text": "0.500", "artifact": fake_n}), "not part of run")
    jf("json header code version", lambda d: d["run"].update(code_version=STALE_CODE),
       "the run recorded code version")
    return out


def test_judge_bench(bench, tmp_path, capsys):
    vs = variants(bench)
    assert len(vs) >= 60
    legit = [v for v in vs if v.legit]
    fake = [v for v in vs if not v.legit]
    assert len(legit) >= 30 and len(fake) >= 30
    approved, flagged, wrong_reason = [], [], []
    for i, v in enumerate(vs):
        folder = tmp_path / f"v{i:02d}"
        folder.mkdir()
        path = folder / f"report.{v.fmt}"
        path.write_text(v.content, newline="")
        if v.snapshot:
            shutil.copy(bench.rep / "provenance.sqlite", folder / "provenance.sqlite")
        result = judge_file(path, store=None if v.snapshot in (True, None) else str(bench.store_path))
        if v.legit and not result.ok:
            flagged.append((v.name, [f.line() for f in result.failed][:3]))
        if not v.legit:
            if result.ok:
                approved.append(v.name)
            elif not any(v.expect in r for f in result.failed for r in f.reasons):
                wrong_reason.append((v.name, v.expect, [f.line() for f in result.failed][:3]))
    with capsys.disabled():
        print(f"\njudge bench: {len(vs)} variants ({len(legit)} legitimate, {len(fake)} fabricated); "
              f"fabrications approved: {len(approved)}; legitimate flagged: {len(flagged)}")
    assert not approved, f"fabrications approved: {approved}"
    assert not flagged, f"legitimate reports flagged: {flagged}"
    assert not wrong_reason, f"caught for the wrong reason: {wrong_reason}"


def test_judge_cli_exit_status(bench, tmp_path):
    ok = subprocess.run([sys.executable, "-m", "pytest_mlip.cli", "judge", str(bench.rep / "report.md"), "-q"],
                        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "0 failed; required claims present: 1 of 1" in ok.stdout
    bad = tmp_path / "report.md"
    bad.write_text(bench.md.replace("## Curves", "The drop is 42 eV.\n\n## Curves"))
    res = subprocess.run([sys.executable, "-m", "pytest_mlip.cli", "judge", str(bad), "--store",
                          str(bench.store_path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 1 and "FAIL  line" in res.stdout and "number without a citation" in res.stdout
