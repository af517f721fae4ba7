"""The judge's operator bench, small: one fresh report, one development seed, every operator.

The full bench (several runs and models, development and held-out seeds) is
``python benchmarks/judge_bench.py``; this test keeps its operators honest:
every fabrication is refused and every legitimate rewrite approved.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
M = "tests.mutants.foundation:short_range_hole"
CLEAN = "tests.mutants:clean_morse"


def bench_module():
    spec = importlib.util.spec_from_file_location("mlip_judge_bench", ROOT / "benchmarks" / "judge_bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", f"--mlip={M}",
           f"--mlip-committee={CLEAN}", "-k", "repulsive-wall-surface or dissociation-limit", "--mlip-report=rep",
           "--junitxml=junit.xml", "--mlip-partial"]
    res = subprocess.run(cmd, cwd=d, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                         timeout=600)
    root = re.search(r"mlip root: ([0-9a-f]{64})", res.stdout)
    assert res.returncode == 1 and root, res.stdout[-3000:] + res.stderr[-3000:]
    return d, root.group(1)


def test_root_is_in_the_terminal_junit_and_report(fresh):
    d, root = fresh
    assert f'<property name="mlip_root" value="{root}"' in (d / "junit.xml").read_text()
    assert f"- root hash: `{root}`" in (d / "rep" / "report.md").read_text()
    assert root in (d / "rep" / "report.html").read_text()


def test_operator_bench(fresh, tmp_path):
    d, root = fresh
    B = bench_module()
    rep = B.Report("mutant", d / "rep", root)
    outcomes = B.run_bench([rep], [1000], work=tmp_path)
    ops = {o.op for o in outcomes}
    assert len(ops) >= len(B.FABRICATIONS) + len(B.LEGITIMATE) - 2, ops  # (an operator may find nothing to do)
    wrong = [o for o in outcomes if o.fabricated == o.approved]
    assert not wrong, B.summary(outcomes)


def _copy(fresh, tmp_path) -> Path:
    import shutil

    dst = tmp_path / "rep"
    shutil.copytree(fresh[0] / "rep", dst)
    return dst


def test_cli_exit_status_root_and_stores(fresh, tmp_path, capsys):
    from pytest_mlip.cli import main

    rep = _copy(fresh, tmp_path)
    root = fresh[1]
    assert main(["judge", str(rep), "--root", root, "--seed", "1"]) == 0
    assert main(["judge", str(rep / "report.md"), "--root", "0" * 64, "-q"]) == 1
    assert "the root given with --root" in capsys.readouterr().out
    for given, what in (("zzzz", "is not one"), (root[:12], "is a prefix of one")):  # held-out round 11: the
        assert main(["judge", str(rep), "--root", given]) == 2  # option's value was blamed on the store
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and what in err[0] and "64 hexadecimal digits" in err[0], err
    assert main(["judge", str(rep), "--root", root.upper(), "-q"]) == 0
    B = bench_module()
    B.recompress(rep)  # the snapshot gzipped: still one store
    assert main(["judge", str(rep / "report.html"), "--root", root]) == 0
    gz = str(rep / "provenance.sqlite.gz")  # --store naming the snapshot beside the report is that one store
    assert main(["judge", str(rep), "--store", gz, "--root", root]) == 0  # (a held-out case: 'two stores')
    (rep / "provenance.sqlite").write_bytes(b"")
    assert main(["judge", str(rep), "--root", root]) == 2
    assert "two provenance stores" in capsys.readouterr().err
    (rep / "provenance.sqlite").unlink()
    assert main(["judge", str(rep), "--store", str(tmp_path / "nonexistent.sqlite"), "--root", root]) == 2
    err = capsys.readouterr().err  # a held-out case: a mistyped --store was reported as "two stores"
    assert "nonexistent.sqlite: no such file" in err and "leave --store out" in err and "two" not in err
    import os

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "sdir").mkdir()
    for name, what in (("fifo", "is a named pipe (FIFO)"), ("sdir", "is a folder")):  # held-out round 11: "no such
        assert main(["judge", str(rep), "--store", str(tmp_path / name), "--root", root]) == 2  # file"
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and what in err[0] and "not a provenance store" in err[0], err


def test_notes_are_rendered_and_evaluated(fresh, tmp_path):
    import json

    from pytest_mlip.cli import main
    from pytest_mlip.reporting.judge import judge_file

    rep = _copy(fresh, tmp_path)
    data = json.loads((rep / "report.json").read_text())
    v = next(v for v in data["verdicts"] if v["status"]["text"] == "fail")
    c = v["max_normalized"]
    good = [{"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": "fail"},
            {"kind": "value", "artifact": c["artifact"][:8], "value": c["text"], "unit": "1"},
            {"kind": "comparison", "a": c["artifact"], "op": ">", "b_value": "1", "unit": "1"},
            {"kind": "exists", "model": "mace-mpa-0", "ran": False}]
    data["notes"] = good
    (rep / "report.json").write_text(json.dumps(data))
    assert main(["render", str(rep)]) == 0
    md = (rep / "report.md").read_text()
    assert "## Notes" in md and "Unverified commentary" not in md
    assert f"Claim: `{v['contract']}` on `{v['model']}` is FAIL." in md
    r = judge_file(rep, root=fresh[1])
    assert r.ok, "\n".join(f.line() for f in r.failed)
    bad = [{"kind": "verdict", "contract": v["contract"], "model": v["model"], "status": "pass"},
           {"kind": "value", "artifact": c["artifact"], "value": c["text"], "unit": "eV"},
           {"kind": "comparison", "a": c["artifact"], "op": "<", "b_value": "1", "unit": "1"},
           {"kind": "count", "n": 0, "m": 2, "status": "fail", "role": "target"},
           {"kind": "role", "model": CLEAN, "role": "target"},
           {"kind": "exists", "model": "mace-mpa-0"},
           {"kind": "exists", "model": v["model"].upper(), "ran": False},  # true of the letters only
           {"kind": "exists", "model": "zero-net-force-FAIL-was-waived-by-review", "ran": False},  # words as a name
           {"kind": "comment", "text": "The wall fails badly."},
           {"kind": "comment", "text": "Reviewed by the surface group; see the curves."},  # free text, however mild
           {"kind": "comment", "text": "Reviewers agreed it behaves as it should."}]
    for note in bad:
        data["notes"] = [note]
        (rep / "report.json").write_text(json.dumps(data))
        comment = note["kind"] == "comment"
        assert main(["render", str(rep)]) == (2 if comment else 0)  # render refuses what the judge would
        r = judge_file(rep / "report.json", root=fresh[1])
        # (render refused a comment, so the pages beside report.json cannot be rendered from it: refused too)
        wheres = [f.where for f in r.failed]
        assert wheres[0] == "notes[0]" and set(wheres) <= ({"notes[0]", "render", "report.md", "report.html"}
                                                           if comment else {"notes[0]"}), (note, [f.line() for f in r.failed])


def test_incomplete_block_is_rendered_and_required(fresh, tmp_path):
    import json

    from pytest_mlip.reporting.judge import judge_file

    B = bench_module()
    rep = _copy(fresh, tmp_path)

    def edit(arts):
        run = next(a for a in arts.values() if a.kind == "run")
        run.value = {**run.value, "incomplete": {"count": 1, "errors": [], "crashed": ["x[emt]"], "not_run": [],
                                                 "deselected_hard": [], "interrupted": None, "dead_workers": [],
                                                 "fails_run": True}}
        return True

    assert B.forge(rep / "provenance.sqlite", edit)
    B.regenerate(rep)
    md = (rep / "report.md").read_text()
    assert md.index("INCOMPLETE run") < md.index("## Models") and "`x[emt]` (crashed)" in md
    approved = judge_file(rep)
    assert approved.ok  # consistent (without the root: this store was re-hashed on purpose)
    # an approval of an honest incomplete report still says the run was incomplete (a held-out remark)
    assert "the run is INCOMPLETE (1 problem(s) under incomplete)" in approved.summary()
    from pytest_mlip.cli import main

    # a CI step gating on the judge's status asks for a complete run (held-out rounds 9 and 10: exit 0 passed it)
    assert main(["judge", str(rep), "--sample", "0", "--replay", "0", "--budget", "0"]) == 0
    assert main(["judge", str(rep), "--sample", "0", "--replay", "0", "--budget", "0", "--require-complete"]) == 1
    data = json.loads((rep / "report.json").read_text())
    del data["incomplete"]
    B.save_and_render(rep, data)
    r = judge_file(rep)
    assert not r.ok and any(f.where == "incomplete" for f in r.failed)


def test_missing_figures_and_worst_files_are_refused(fresh, tmp_path):
    """A report folder with a figure or a worst configuration deleted no longer shows what the run found."""
    from pytest_mlip.reporting.judge import judge_file

    rep = _copy(fresh, tmp_path)
    assert judge_file(rep, root=fresh[1]).ok
    figure = sorted((rep / "figures").glob("*.png"))[0]
    figure.unlink()
    r = judge_file(rep, root=fresh[1])
    assert not r.ok and any("is missing" in reason for f in r.failed for reason in f.reasons)
    rep = _copy(fresh, tmp_path / "second")
    worst = sorted((rep / "worst").rglob("*.extxyz"))[0]
    worst.unlink()
    r = judge_file(rep, root=fresh[1])
    assert not r.ok and any(f.where == "worst" for f in r.failed)


def test_replay_remeasures_what_the_check_measured(fresh, tmp_path):
    """A raw violation divided by ten with the whole chain re-hashed is consistent (no root given), but the check
    routine, replayed on the stored model calls, measures the real one."""
    from pytest_mlip.reporting.judge import judge_file

    B = bench_module()
    rep = _copy(fresh, tmp_path)
    clean = judge_file(rep, sample=None, replay=None)
    assert clean.ok and any(f.where == "replay" and "match" in f.text for f in clean.findings), \
        "\n".join(f.line() for f in clean.findings)

    def edit(arts):
        a = max((a for a in arts.values() if a.kind == "violation" and isinstance(a.value, float)),
                key=lambda a: a.value)
        a.value = a.value / 10
        return True

    assert B.forged(rep, edit)
    r = judge_file(rep, sample=None, replay=None)
    assert not r.ok and [f.where for f in r.failed] == ["replay"], "\n".join(f.line() for f in r.failed)
    assert "the replay measures" in " ".join(r.failed[0].reasons)


def test_replay_refuses_a_configuration_not_in_the_store():
    from ase.build import molecule

    from pytest_mlip.models.registry import load
    from pytest_mlip.reporting.replay import NotInStore, ReplayEvaluator

    ev = ReplayEvaluator(load("emt"))
    with pytest.raises(NotInStore):
        ev.evaluate(molecule("H2O"))


def test_escalation_operator_bench(tmp_path):
    """The detective's reports judged from their records: every escalation operator's fabrication is refused and
    every legitimate rewrite approved, on a fresh offline run on a planted defect (one development seed)."""
    B = bench_module()
    reports = B.make_agent_reports("tm-wall", B.AGENT_RUNS["tm-wall"], tmp_path / "runs")
    assert len(reports) >= 2
    outcomes = B.run_bench(reports, [1000], work=tmp_path / "variants", sample=0)
    ops = set(B.ESCALATION_FABRICATIONS) | set(B.ESCALATION_LEGITIMATE)
    missing = ops - {o.op for o in outcomes}
    assert len(missing) <= 2, missing  # (an operator may find nothing to do on one seed)
    wrong = [o for o in outcomes if o.fabricated == o.approved]
    assert not wrong, B.summary(outcomes)


def test_held_out_judge_cases(fresh, tmp_path):
    """Held-out cases: a page beside the named file that says otherwise; a block quote wrapped with '> ' on its
    continuation lines and a byte-order mark (legitimate); free-text comments, which a judged report does not
    hold (a word list was talked around: 'Reviewers agreed it behaves as it should.' was approved)."""
    import json

    from pytest_mlip.reporting.judge import judge_file

    B = bench_module()
    rep = _copy(fresh, tmp_path)
    html = (rep / "report.html").read_text()
    assert '<span class="fail">FAIL</span>' in html
    (rep / "report.html").write_text(html.replace('<span class="fail">FAIL</span>', '<span class="pass">pass</span>', 1))
    for named in ("report.md", "report.json"):
        r = judge_file(rep / named, root=fresh[1])
        assert not r.ok and any(f.where == "report.html" for f in r.failed), named
    (rep / "report.html").write_text(html)
    md = (rep / "report.md").read_text()
    quoted = [line for line in md.splitlines() if line.startswith("> ") and len(line) > 60]
    assert quoted, "the report has a long block quote (the PARTIAL banner)"
    words = quoted[0][2:].split(" ")
    wrapped = "> " + " ".join(words[:4]) + "\n> " + " ".join(words[4:])
    (rep / "report.md").write_text("\ufeff" + md.replace(quoted[0], wrapped, 1))
    r = judge_file(rep, root=fresh[1])
    assert r.ok, "\n".join(f.line() for f in r.failed)
    (rep / "report.md").write_text(md)
    data = json.loads((rep / "report.json").read_text())
    for text in ("Effective Medium Theory behaves well on adsorption.", "Reviewers agreed it behaves as it should.",
                 "Reviewed by the materials group; see the curves."):  # free text, however mild: refused
        B.save_and_render(rep, {**data, "notes": [{"kind": "comment", "text": text}]})  # rendered by hand
        r = judge_file(rep, root=fresh[1])
        assert not r.ok and "free text is not part of a judged report" in r.failed[0].line(), text
        # every finding says so in the README's words, not pydantic's (held-out round 19: "ValidationError ...
        # tagged-union[ValueNote, ...]" on the render finding)
        assert not any("ValidationError" in f.line() or "union" in f.line() for f in r.failed), \
            [f.line() for f in r.failed]


DRIFT = '''import os
import numpy as np
from ase.calculators.emt import EMT


class Drift(EMT):
    """EMT plus a uniform force (breaks zero net force); FORGE=1 switches it off (a forger's conftest)."""

    def calculate(self, *args, **kwargs):
        super().calculate(*args, **kwargs)
        if not os.environ.get("FORGE") and "forces" in self.results:
            self.results["forces"] = self.results["forces"] + np.array([0.05, 0.0, 0.0])


def factory():
    return Drift()
'''


def test_a_forged_second_run_into_one_store_is_re_run_exactly(tmp_path, monkeypatch):
    """A held-out case: a run forged by switching a defect off was run twice into one store; the second run's
    calls keep the rows the first stored (same content id), which the judge took for calls of an unknown platform
    and held loosely (forces unchecked), so the forgery passed even with --all. The second run made those calls
    itself: they are re-run exactly on its platform."""
    from pytest_mlip.reporting.judge import judge_file

    (tmp_path / "drift.py").write_text(DRIFT)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", "--mlip=drift:factory",
           "--mlip-committee=none", "-k", "zero-net-force", "--mlip-partial"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGE": "1"}
    roots = []
    for rep in ("rep1", "rep2"):
        res = subprocess.run(cmd + [f"--mlip-report={rep}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stdout[-2000:]
        roots.append(re.search(r"mlip root: ([0-9a-f]{64})", res.stdout).group(1))
    monkeypatch.syspath_prepend(str(tmp_path))  # as the CLI finds a module:factory in the folder it runs in
    monkeypatch.delenv("FORGE", raising=False)
    r = judge_file(tmp_path / "rep2", root=roots[1], sample=None)
    assert not r.ok and any("re-run forces differ" in x for f in r.failed for x in f.reasons), \
        "\n".join(f.line() for f in r.findings)


def test_a_forged_run_judged_on_another_platform_is_caught_by_its_forces(tmp_path, monkeypatch):
    """A held-out case: a run forged by switching a force-only defect off, its platform made to differ from the
    judge's (a spoofed library version), escaped the exact re-run: across platforms only energies were held. Most
    re-run calls' forces differ by the defect, which another CPU's float noise never does (median <= 3e-6 eV/A on
    the committed example): refused. The honest run judged across platforms still passes, its check replayed:
    EMT refuses the probe's Si8, a skip whose refused call the run does not cite (the replay asked the store for it
    and refused the honest run: CI, session 17)."""
    import pytest_mlip.provenance.platform as platform
    from pytest_mlip.reporting.judge import judge_file

    (tmp_path / "drift.py").write_text(DRIFT)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", "--mlip=drift:factory",
           "--mlip-committee=none", "-k", "zero-net-force", "--mlip-partial", "--mlip-report=rep"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGE": "1"}
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:]
    root = re.search(r"mlip root: ([0-9a-f]{64})", res.stdout).group(1)
    real = platform.fingerprint
    monkeypatch.setattr(platform, "fingerprint", lambda: {**real(), "numpy": "0.0-elsewhere"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FORGE", "1")  # the model as it was run: honest, on "another platform"
    honest = judge_file(tmp_path / "rep", root=root, sample=None)
    assert honest.ok, "\n".join(f.line() for f in honest.failed)
    assert any(f.where == "replay" and "re-measured" in f.line() for f in honest.findings), \
        "\n".join(f.line() for f in honest.findings)
    monkeypatch.delenv("FORGE")  # the model as it is: its drift was hidden from the run
    r = judge_file(tmp_path / "rep", root=root, sample=None)
    assert not r.ok and any("differ from the record (median 0.05" in x for f in r.failed for x in f.reasons), \
        "\n".join(f.line() for f in r.findings)


def test_a_report_json_the_renderer_cannot_read_is_one_line_and_a_finding(fresh, tmp_path, capsys):
    """A held-out case: "gate": {"passed": true} in report.json crashed render and the judge with a jinja2
    traceback (exit 1); render says so in one line (exit 2), the judge refuses it with a finding."""
    import json

    from pytest_mlip.cli import main
    from pytest_mlip.reporting.judge import judge_file

    rep = _copy(fresh, tmp_path)
    data = json.loads((rep / "report.json").read_text())
    before = (rep / "report.md").read_text()
    (rep / "report.json").write_text(json.dumps({**data, "gate": {"passed": True}}))
    capsys.readouterr()
    assert main(["render", str(rep)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "cannot be rendered" in err[0], err
    assert (rep / "report.md").read_text() == before
    r = judge_file(rep, root=fresh[1])
    assert not r.ok


@pytest.mark.parametrize("command", ["judge", "detect", "laws"])
def test_ctrl_c_in_a_command_is_one_line_not_a_traceback(monkeypatch, capsys, command):
    """Held-out cases (round 9): Ctrl-C during `pytest-mlip judge` or `detect` printed a 30-75 line traceback."""
    import importlib

    from pytest_mlip import cli

    module = {"judge": "pytest_mlip.reporting.judge_cli", "detect": "pytest_mlip.agent.cli",
              "laws": "pytest_mlip.laws.cli"}[command]

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module(module), "run", interrupted)
    argv = {"judge": ["judge", "rep"], "detect": ["detect", "--mlip", "emt"], "laws": ["laws"]}[command]
    assert cli.main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"pytest-mlip: {command} interrupted"), err


@pytest.mark.parametrize("page", ["report.md", "report.html"])
def test_render_never_replaces_a_page_the_user_edited(fresh, tmp_path, capsys, page):
    """Held-out case (round 10): `pytest-mlip render` replaced a report.md the user had appended notes to (exit 0,
    the notes gone), where the pytest run refuses an edited page. Render refuses it too, with one line."""
    from pytest_mlip.cli import main

    rep = _copy(fresh, tmp_path)
    assert main(["render", str(rep)]) == 0  # its own pages: replaced
    capsys.readouterr()
    edited = (rep / page).read_text() + "\nMY ANALYSIS NOTES\n"
    (rep / page).write_text(edited)
    assert main(["render", str(rep)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not as pytest-mlip wrote it" in err[0], err
    assert (rep / page).read_text() == edited


def test_json_nested_too_deeply_and_a_fifo_are_one_line(fresh, tmp_path, capsys):
    """Held-out round 13: a report.json nested 100,000 deep ended judge and render in a RecursionError traceback;
    render blocked for ever on a report.json that is a named pipe. Each is one line, exit 2; a baseline nested
    that deep is one line too."""
    import os

    from pytest_mlip.cli import main
    from pytest_mlip.reporting.gate import BaselineError, load_baseline

    deep = "[" * 100000 + "]" * 100000
    rep = _copy(fresh, tmp_path)
    (rep / "report.json").write_text(deep)
    capsys.readouterr()
    for argv in (["render", str(rep)], ["judge", str(rep), "--root", fresh[1]]):
        assert main(argv) == 2
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and "nested too deeply" in err[0], err
    (rep / "report.json").unlink()
    os.mkfifo(rep / "report.json")
    assert main(["render", str(rep)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "is a named pipe (FIFO), not a report" in err[0], err
    (tmp_path / "b.json").write_text(deep)
    with pytest.raises(BaselineError, match="nested too deeply"):
        load_baseline(tmp_path / "b.json")


def test_an_edited_folder_marker_is_refused(fresh, tmp_path):
    """Held-out round 13: a line added by hand to the report folder's marker (a file it does not hold) was approved
    with 'folder: holds only the files the run wrote'. The marker lists exactly the folder's files and bytes."""
    from pytest_mlip.reporting.judge import judge_file

    rep = _copy(fresh, tmp_path)
    marker = rep / ".pytest-mlip-report"
    text = marker.read_text()
    for edited, words in ((text + "deadbeef  thesis.md\n", "never writes"),
                          (text + "mine: thesis.md\n", "never writes")):
        marker.write_text(edited)
        r = judge_file(rep, root=fresh[1], sample=0, replay=0)
        assert not r.ok and any(words in f.line() for f in r.failed), [f.line() for f in r.failed]
    marker.write_text(text)
    assert judge_file(rep, root=fresh[1], sample=0, replay=0).ok
