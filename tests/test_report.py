"""Reports: report.json is the source, report.md and report.html render it, every number cites an artifact."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

# kept in pytester's sys.modules snapshot (extension modules cannot be imported twice)
import jinja2  # noqa: F401
import matplotlib.backends.backend_agg  # noqa: F401
import matplotlib.figure  # noqa: F401
import pytest_mlip.provenance.plugin  # noqa: F401
import pytest_mlip.reporting.plugin  # noqa: F401
import pytest_mlip.reporting.report  # noqa: F401
from pytest_mlip.reporting.judge import judge_file

ROOT = Path(__file__).resolve().parent.parent
M = "tests.mutants.foundation:short_range_hole"
CLEAN = "tests.mutants:clean_morse"
SELECT = "repulsive-wall-surface or dissociation-limit or energy-force-consistency"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real plugin run: the mutant fails the surface wall, the clean committee member passes."""
    d = tmp_path_factory.mktemp("report-run")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", f"--mlip={M}",
           f"--mlip-committee={CLEAN}", "-k", SELECT, "--mlip-report=rep", "--mlip-summary-md=summary.md",
           "--junitxml=junit.xml"]
    res = subprocess.run(cmd, cwd=d, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]  # the planted defect fails the run
    return d, res


def test_report_folder_is_complete(run):
    d, res = run
    rep = d / "rep"
    for name in ("report.json", "report.md", "report.html", "provenance.sqlite"):
        assert (rep / name).is_file()
    assert (rep / "figures" / "matrix.png").is_file()
    assert list((rep / "figures").glob("curves-repulsive-wall-surface-*.png"))
    assert list((rep / "worst").rglob("repulsive-wall-surface.extxyz"))
    assert not [p for p in d.rglob("*") if ".tmp" in p.name]  # the staging folder is gone
    assert "report: " in res.stdout and "provenance: run " in res.stdout


def test_html_is_self_contained(run):
    html = (run[0] / "rep" / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']https?://""", html) and "<script" not in html
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert images and all(src.startswith("data:image/png;base64,") for src in images)
    data = json.loads((run[0] / "rep" / "report.json").read_text())
    for v in data["verdicts"]:
        assert v["status"]["artifact"][:12] in html
        if v["max_normalized"]:
            assert f'{v["max_normalized"]["text"]}</span><span class="aid"' in html


def test_every_number_is_cited_and_the_judge_agrees(run):
    rep = run[0] / "rep"
    md = (rep / "report.md").read_text()
    cited = re.findall(r"(\S+) \[a:([0-9a-f]{12})\]", md)
    assert len(cited) > 30
    for fmt in ("report.md", "report.json"):
        result = judge_file(rep / fmt)
        assert result.ok, "\n".join(f.line() for f in result.failed)
        assert result.required_total == 1 and result.required_present == 1


def test_markdown_is_rendered_from_the_json(run):
    from pytest_mlip.reporting.report import figures_for, render_markdown

    rep = run[0] / "rep"
    data = json.loads((rep / "report.json").read_text())
    assert render_markdown(data, figures_for(data)) == (rep / "report.md").read_text()


def test_failure_section_says_how_to_reproduce(run):
    md = (run[0] / "rep" / "report.md").read_text()
    section = md.split(f"### `repulsive-wall-surface` on `{M}`", 1)[1].split("\n## ", 1)[0]
    assert "- verdict: FAIL [a:" in section and "fails the run" in section
    assert f"- reproduce: `pytest --mlip={M} --mlip-committee=none --mlip-partial -k 'repulsive-wall-surface'`" in section
    assert "- verification setting: `repulsive_wall: drop<=0.01 eV" in section
    link = re.search(r"worst configuration: \[([^\]]+)\]", section).group(1)
    from ase.io import read

    atoms = read(run[0] / "rep" / link)
    assert atoms.info["mlip_contract"] == "repulsive-wall-surface" and len(atoms) == 13
    assert re.search(r"\| `O/Cu\(111\)-top` \| drop \| \S+ \[a:\w+\] \| 0\.0100 \[a:\w+\] \| `eV` \|", section)


def test_summary_and_junit_are_written(run):
    d = run[0]
    text = (d / "summary.md").read_text()
    # -k left hard contracts out: the summary says the run is incomplete and names them
    assert text.startswith(f"### pytest-mlip on `{M}`: INCOMPLETE run; 1 hard contract(s) fail") and len(text) < 3000
    assert "hard contracts deselected: " in text and "rotation-invariance" in text
    data = json.loads((d / "rep" / "report.json").read_text())
    assert "rotation-invariance" in data["incomplete"]["deselected_hard"] and data["incomplete"]["count"] > 0
    assert "INCOMPLETE run" in (d / "rep" / "report.md").read_text().split("\n- run:")[0]
    assert "`repulsive-wall-surface`" in text and "[a:" in text
    xml = (d / "junit.xml").read_text()
    assert 'name="mlip_max_normalized"' in xml and 'name="mlip_artifact"' in xml


def _scan_report_data() -> dict:
    """A report.json in miniature with a desorption scan and adsorption E_rel values (other contracts)."""
    import numpy as np

    def c(v, aid):
        from pytest_mlip.reporting.claims import claim

        return claim(v, aid.ljust(32, "0"))

    dz = list(np.linspace(0.0, 6.0, 13))
    verdicts = []
    for k, (model, role) in enumerate((("m-target", "target"), ("m-comm", "committee"))):
        bump = 0.2 if role == "target" else 0.0
        e = [float(-1.2 * np.exp(-x) + bump * np.exp(-((x - 1.3) ** 2))) for x in dz]
        verdicts.append({"contract": "co-desorption", "check": "desorption_barrier", "model": model, "role": role,
                         "hard": False, "basis": "disagreement", "gating": False,
                         "status": {"text": "pass", "artifact": f"a{k}".ljust(32, "0")},
                         "max_normalized": c(0.5, f"b{k}"), "reason": "", "setting": "s", "worst_probe": "CO/Cu111",
                         "worst_file": None, "reproduce": "r", "tolerance": {}, "units": {},
                         "probes": [{"probe": "CO/Cu111", "status": "ok", "message": "", "normalized": c(0.5, f"c{k}"),
                                     "violations": {}, "observables": {}, "flags": {},
                                     "series": {"dz": {"values": dz, "artifact": f"d{k}".ljust(32, "0")},
                                                "E": {"values": e, "artifact": f"e{k}".ljust(32, "0")}}}]})
        probes = []
        for i, (ads, surf) in enumerate([(a, s) for a in ("O", "CO") for s in ("Cu(111)", "Pt(111)")]):
            probes.append({"probe": f"{ads}/{surf}", "status": "ok", "message": "", "normalized": c(0.1, f"f{k}{i}"),
                           "violations": {}, "flags": {}, "series": {},
                           "observables": {"E_rel": c(0.3 * i - 0.5 + bump, f"g{k}{i}")}})
        verdicts.append({"contract": "adsorption-sign", "check": "adsorption_sign", "model": model, "role": role,
                         "hard": True, "basis": "exact", "gating": False,
                         "status": {"text": "pass", "artifact": f"h{k}".ljust(32, "0")},
                         "max_normalized": c(0.1, f"i{k}"), "reason": "", "setting": "s", "worst_probe": "O/Cu(111)",
                         "worst_file": None, "reproduce": "r", "tolerance": {}, "units": {}, "probes": probes})
    return {"format": "pytest-mlip-report", "version": 1, "precision": 3,
            "run": {"id": "r", "code_version": "v", "target": "m-target", "target_spec": "m-target", "committee": [],
                    "store": "s", "artifact": None, "snapshot": "provenance.sqlite"},
            "models": [{"name": "m-target", "role": "target", "version": None, "weights_hash": None, "family": "x",
                        "spec": "m-target"},
                       {"name": "m-comm", "role": "committee", "version": None, "weights_hash": None, "family": "x",
                        "spec": "m-comm"}],
            "contracts": [{"name": "co-desorption", "check": "desorption_barrier", "hard": False, "basis": "x",
                           "title": "", "statement": ""},
                          {"name": "adsorption-sign", "check": "adsorption_sign", "hard": True, "basis": "x",
                           "title": "", "statement": ""}],
            "verdicts": verdicts, "gate": None}


def test_scans_and_e_rel_heatmaps_are_drawn_generically():
    from pytest_mlip.reporting.report import figures_for, render_html, render_markdown

    data = _scan_report_data()
    figs = figures_for(data)
    sections = [f["section"] for f in figs]
    assert sections.count("curves") == 1 and sections.count("heatmaps") == 2  # one E_rel map per model
    scan = next(f for f in figs if f["section"] == "curves")
    assert scan["title"] == "co-desorption: energy against adsorbate height above its relaxed site" and scan["png"].startswith(b"\x89PNG")
    md = render_markdown(data, figs)
    assert "### `adsorption-sign`: E_rel per probe" in md
    assert re.search(r"\| `CO/Pt\(111\)` \| 0\.600 \[a:g03", md)
    assert render_html(data, figs).count("data:image/png;base64,") == len(figs)


def _unwritable_dir(tmp_path) -> Path:
    d = tmp_path / "readonly"
    d.mkdir()
    d.chmod(0o555)
    try:
        fd, probe = tempfile.mkstemp(dir=d)
    except OSError:
        return d
    os.close(fd)
    os.unlink(probe)  # running as root: permissions do not bind, use a folder the kernel refuses
    for candidate in (Path("/sys/fs"), Path("/proc/sys")):
        try:
            fd, probe = tempfile.mkstemp(dir=candidate)
        except OSError:
            return candidate
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no read-only folder available here")


def test_read_only_report_folder_is_a_one_line_error(pytester, tmp_path):
    ro = _unwritable_dir(tmp_path)
    before = sorted(os.listdir(ro))
    res = pytester.runpytest(f"--mlip={CLEAN}", "--mlip-committee=none", "-k", "dissociation-limit",
                             "-p", "no:hypothesispytest", f"--mlip-report={ro / 'rep'}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in res.errlines if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "cannot write" in errors[0] and "--mlip-report=DIR" in errors[0]
    assert sorted(os.listdir(ro)) == before  # nothing written


def test_report_path_that_is_a_file_is_a_one_line_error(pytester, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    res = pytester.runpytest(f"--mlip={CLEAN}", "--mlip-committee=none", "-k", "dissociation-limit",
                             "-p", "no:hypothesispytest", f"--mlip-report={target}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert any("is a file, not a folder" in ln for ln in res.errlines)


def test_failed_write_leaves_no_partial_report(run, tmp_path):
    from pytest_mlip.provenance.store import Store
    from pytest_mlip.reporting.report import ReportError, write_report

    data = json.loads((run[0] / "rep" / "report.json").read_text())
    store = Store(run[0] / ".mlip" / "provenance.sqlite", readonly=True)

    def broken_export(*args, **kwargs):
        raise OSError(28, "No space left on device")

    store.export = broken_export
    with pytest.raises(ReportError, match="No space left on device"):
        write_report(tmp_path / "new-report", data, store)
    assert os.listdir(tmp_path) == []  # neither the folder nor its staging copy


def test_model_errors_are_reported_and_judged(pytester, tmp_path):
    """A model that returns NaN: the error verdict, its v/tau = inf and the failed call are all artifacts."""
    rep = tmp_path / "rep"
    res = pytester.runpytest("--mlip=tests.mutants:NanAtShortRange", "--mlip-committee=none", "-k", "wall-surface",
                             "-p", "no:hypothesispytest", f"--mlip-report={rep}")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    md = (rep / "report.md").read_text()
    assert re.search(r"\| ERROR \[a:\w+\] · inf \[a:\w+\] \|", md)
    for fmt in ("report.md", "report.json"):
        result = judge_file(rep / fmt)
        assert result.ok and result.required_present == 1, "\n".join(f.line() for f in result.failed)
    from pytest_mlip.provenance.store import Store

    st = Store(rep / "provenance.sqlite", readonly=True)
    assert st.count(kind="evaluation_error") >= 1


def test_a_call_re_run_on_another_platform_is_held_to_its_energy_only(run, monkeypatch):
    """Float32 models reproduce their calls to the last digit on the platform that made them (measured identical
    across processes) but not on another CPU: there the judge holds the energy to 5e-3 of its scale and reports
    the forces; on the run's own platform a forged force is caught."""
    import pytest_mlip.provenance.platform as platform_mod
    from pytest_mlip.evaluation.evaluator import Evaluator
    from pytest_mlip.models.registry import load
    from pytest_mlip.provenance.recorder import decode_payload
    from pytest_mlip.reporting.judge import Judge
    from pytest_mlip.reporting.judge_report import _rerun, pick_store, spot_check

    rep = run[0] / "rep"
    data = json.loads((rep / "report.json").read_text())
    st, _, _ = pick_store(rep, None)
    judge = Judge(st, data["run"]["id"])
    assert (judge.run_art.value or {}).get("platform") == platform_mod.fingerprint()  # the run recorded it
    here = [f for f in spot_check(judge, 2, seed=0) if f.where == "model calls"]
    assert here and all(f.ok and "another platform" not in f.text for f in here)
    monkeypatch.setattr(platform_mod, "fingerprint", lambda: {"machine": "elsewhere"})
    there = [f for f in spot_check(judge, 2, seed=0) if f.where == "model calls"]
    assert there and all(f.ok and "made on another platform" in f.text for f in there)

    a = next(x for x in judge.arts.values() if x.kind == "evaluation" and x.model and x.model.name == CLEAN
             and st.payload(x.id))
    cfg = decode_payload(st.payload(a.id))
    ev = Evaluator(load(CLEAN))
    forged = dict(cfg, forces=np.asarray(cfg["forces"]) + 0.5)
    assert _rerun(ev, a, forged, exact=True)[0] is not None and _rerun(ev, a, forged, exact=False)[0] is None
    e = float(a.value["energy"])
    off = dataclasses.replace(a, value={**a.value, "energy": e + 0.02 * max(abs(e), len(cfg["numbers"]))})
    assert "another CPU" in (_rerun(ev, off, cfg, exact=False)[0] or "")
