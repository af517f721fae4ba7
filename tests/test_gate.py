"""The CI gate: a baseline turns known failures into reports and lets only new ones or regressions fail."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

# keep these in pytester's sys.modules snapshot: inner runs then reuse them (and the cached code version)
import pytest_mlip.provenance.plugin  # noqa: F401
import pytest_mlip.reporting.plugin  # noqa: F401
import pytest_mlip.reporting.gate  # noqa: F401
import pytest_mlip.reporting.summary  # noqa: F401
import jinja2  # noqa: F401
import matplotlib.backends.backend_agg  # noqa: F401
import matplotlib.figure  # noqa: F401
from pytest_mlip.provenance.artifact import code_version

code_version()

M = "tests.mutants.foundation:short_range_hole"
ARGS = [f"--mlip={M}", "--mlip-committee=none", "--mlip-partial", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
WALL = "repulsive-wall-surface"


def run(pytester, *extra, k=f"{WALL} or dissociation-limit"):  # the suite the baseline holds
    return pytester.runpytest(*ARGS, "-k", k, *extra)


@pytest.fixture
def baseline(pytester, tmp_path):
    """A real baseline of the mutant (the surface wall fails), written by --mlip-update-baseline."""
    path = tmp_path / "baseline.json"
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline", k=f"{WALL} or dissociation-limit")
    assert res.ret == 0, res.stdout.str()[-3000:]  # updating accepts the current failures
    doc = json.loads(path.read_text())
    entry = next(e for e in doc["entries"] if e["contract"] == WALL)
    assert entry["status"] == "fail" and entry["max_normalized"] > 1 and entry["artifact"]
    return path, doc


def edit(path, doc, contract, **changes):
    doc = json.loads(json.dumps(doc))
    entry = next(e for e in doc["entries"] if e["contract"] == contract)
    entry.update(changes)
    path.write_text(json.dumps(doc))
    return entry


def wall_value(doc):
    return next(e for e in doc["entries"] if e["contract"] == WALL)["max_normalized"]


def test_known_failure_does_not_fail_the_run(pytester, baseline):
    path, _ = baseline
    res = run(pytester, f"--mlip-baseline={path}")
    assert res.ret == 0
    out = res.stdout.str()
    assert "gate (regression margin 0.2 relative): passed" in out and "known" in out
    assert "VIOLATED" in out or "violated" in out  # still reported, just not failing


def test_new_failure_fails_the_run(pytester, baseline):
    path, doc = baseline
    edit(path, doc, WALL, status="pass", max_normalized=0.4)
    res = run(pytester, f"--mlip-baseline={path}")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 new failure(s)" in res.stdout.str()


def test_failure_missing_from_the_baseline_is_new(pytester, baseline):
    path, doc = baseline
    doc = dict(doc, entries=[e for e in doc["entries"] if e["contract"] != WALL])
    path.write_text(json.dumps(doc))
    res = run(pytester, f"--mlip-baseline={path}")
    assert res.ret == pytest.ExitCode.TESTS_FAILED and "not in the baseline" in res.stdout.str()


def test_regression_beyond_the_margin_fails(pytester, baseline):
    path, doc = baseline
    now = wall_value(doc)
    edit(path, doc, WALL, max_normalized=now / 1.5)  # now 50% worse than the baseline
    res = run(pytester, f"--mlip-baseline={path}")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 regression(s)" in res.stdout.str()
    edit(path, doc, WALL, max_normalized=now / 1.1)  # 10% worse: inside the 20% margin
    assert run(pytester, f"--mlip-baseline={path}").ret == 0
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-regression-margin=0.05")
    assert res.ret == pytest.ExitCode.TESTS_FAILED  # a tighter margin catches it


def test_improvement_and_fix_are_reported(pytester, baseline):
    path, doc = baseline
    now = wall_value(doc)
    doc = json.loads(json.dumps(doc))
    for e in doc["entries"]:
        if e["contract"] == WALL:
            e["max_normalized"] = now * 3
        if e["contract"] == "dissociation-limit":
            e["status"], e["max_normalized"] = "fail", 2.5
    path.write_text(json.dumps(doc))
    summary = path.parent / "summary.md"
    res = run(pytester, f"--mlip-baseline={path}", f"--mlip-summary-md={summary}", k=f"{WALL} or dissociation-limit")
    assert res.ret == 0
    out = res.stdout.str()
    assert "improved" in out and "fixed      dissociation-limit" in out
    text = summary.read_text()
    assert "gate passed" in text and "Fixed since the baseline: `dissociation-limit`" in text
    assert len(text.splitlines()) < 20  # fits a pull-request comment


def test_junit_carries_violation_tolerance_and_artifact(pytester, baseline, tmp_path):
    path, _ = baseline
    xml = tmp_path / "junit.xml"
    res = run(pytester, f"--mlip-baseline={path}", f"--junitxml={xml}")
    assert res.ret == 0
    case = next(c for c in ET.parse(xml).iter("testcase") if WALL in c.get("name"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["mlip_status"] == "fail" and props["mlip_gate"].startswith("known")
    assert float(props["mlip_max_normalized"]) > 1
    assert props["mlip_violation"].startswith("drop=") and props["mlip_tolerance"] == "drop=0.01, shortfall=0.01"
    assert len(props["mlip_artifact"]) == 32


@pytest.mark.parametrize("content, words", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    ('{"format": "something-else"}', "not a pytest-mlip baseline"),
    ('{"format": "pytest-mlip-baseline", "version": 1, "entries": [{"model": "x"}]}', "malformed entry"),
    # hand edits a held-out attacker tried: v/tau is a non-negative number
    ('{"format": "pytest-mlip-baseline", "version": 1, "entries": [{"model": "x", "contract": "c", "status": '
     '"pass", "max_normalized": NaN}]}', "must be >= 0"),
    ('{"format": "pytest-mlip-baseline", "version": 1, "entries": [{"model": "x", "contract": "c", "status": '
     '"fail", "max_normalized": -3}]}', "must be >= 0"),
    ('{"format": "pytest-mlip-baseline", "version": 1, "entries": [{"model": "x", "contract": "c", "status": '
     '"fail", "max_normalized": true}]}', "must be a number"),
])
def test_bad_baseline_is_a_one_line_error(pytester, tmp_path, content, words):
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    res = run(pytester, f"--mlip-baseline={path}")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in res.errlines if ln.startswith("ERROR:")]
    assert len(errors) == 1 and words in errors[0] and "--mlip-update-baseline" in errors[0]
    assert res.stdout.lines == [] or "passed" not in res.stdout.str()
    assert (path.read_text() if path.exists() else None) == content  # untouched
    if content is not None:  # the fix it names works (a held-out case: "regenerate it" with a command that refuses)
        assert "move it aside" in errors[0], errors[0]
        path.rename(tmp_path / "baseline.json.old")
        assert run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline").ret == 0 and path.is_file()


def test_update_baseline_needs_a_file(pytester):
    res = run(pytester, "--mlip-update-baseline")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert any("--mlip-baseline=FILE" in ln for ln in res.errlines)


@pytest.mark.parametrize("content", ["garbage", '{"name": "my-package", "version": "1.0"}\n', ""])
def test_update_refuses_a_file_that_is_not_a_baseline(pytester, tmp_path, content):
    """package.json, a corrupt or an empty file: never overwritten; a usage error names a new file instead."""
    path = tmp_path / "package.json"
    path.write_text(content)
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in res.errlines if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "refuses to overwrite" in errors[0]
    assert path.read_text() == content


def test_update_writes_a_new_baseline_atomically(pytester, tmp_path):
    path = tmp_path / "baseline.json"
    assert run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline").ret == 0
    assert json.loads(path.read_text())["format"] == "pytest-mlip-baseline"
    assert not list(tmp_path.glob(".baseline.json.*"))  # no temporary file left behind


def test_report_with_a_gate_passes_the_judge(pytester, baseline, tmp_path):
    from pytest_mlip.reporting.judge import judge_file

    path, doc = baseline
    edit(path, doc, WALL, max_normalized=wall_value(doc) * 3)  # improved, still failing: a gate note in the report
    rep = tmp_path / "rep"
    res = run(pytester, f"--mlip-baseline={path}", f"--mlip-report={rep}")
    assert res.ret == 0
    md = (rep / "report.md").read_text()
    assert "## CI gate" in md and "- improved: `repulsive-wall-surface`" in md
    result = judge_file(rep / "report.md")
    assert result.ok and result.required_present == 1, "\n".join(f.line() for f in result.failed)
    assert json.loads((rep / "report.json").read_text())["gate"]["changes"][0]["kind"] == "improved"


def test_a_baseline_contract_this_run_did_not_collect_fails_the_gate(pytester, baseline):
    """A known failure must not leave the gate because its contract file was removed or the contract renamed
    (a held-out case: deleting the file of a baselined failing contract turned the gate green)."""
    path, doc = baseline
    doc = json.loads(json.dumps(doc))
    doc["entries"].append({**next(e for e in doc["entries"] if e["contract"] == WALL), "contract": "renamed-wall"})
    path.write_text(json.dumps(doc))
    res = run(pytester, f"--mlip-baseline={path}")
    out = res.stdout.str()
    assert res.ret != 0, out[-3000:]
    assert "missing    renamed-wall: a hard contract of the baseline that this run did not collect" in out
    # updating the baseline is how a contract is dropped on purpose: then it is not missing
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline")
    assert res.ret == 0 and "renamed-wall" not in path.read_text()


def test_a_partial_update_keeps_the_entries_it_left_out(pytester, baseline):
    """--mlip-update-baseline from `-k one --mlip-partial` rewrites that contract's entries only (it used to drop
    every other entry of the baseline without a word)."""
    path, doc = baseline
    before = {(e["model"], e["contract"]) for e in doc["entries"]}
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline", k=WALL)
    assert res.ret == 0, res.stdout.str()[-3000:]
    after = json.loads(path.read_text())
    assert {(e["model"], e["contract"]) for e in after["entries"]} == before
    kept = [e for e in after["entries"] if e.get("kept")]
    assert kept and all(e["contract"] != WALL for e in kept)
    assert "of the previous baseline for contracts this partial run left out" in res.stdout.str()
    assert run(pytester, f"--mlip-baseline={path}").ret == 0  # the merged baseline still gates the full selection


def test_updating_another_targets_baseline_is_refused(pytester, tmp_path):
    """Held-out case: --mlip-update-baseline with another target replaced that target's record of known failures
    without a word. It is a usage error naming both targets; the file is untouched."""
    path = tmp_path / "b.json"
    assert run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline", k=WALL).ret == 0
    before = path.read_bytes()
    res = run(pytester, f"--mlip-baseline={path}", "--mlip-update-baseline", "--mlip=emt", k=WALL)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "refuses to replace" in res.stderr.str() and "one baseline file per target" in res.stderr.str()
    assert path.read_bytes() == before



def test_an_infinite_v_over_tau_against_a_finite_baseline_is_a_regression():
    """Held-out case (round 8): the stored verdict keeps no number for v/tau = inf, so the gate called it known
    ("gate passed") while the item, reading inf, failed the run. Both now say regression."""
    from pytest_mlip.reporting.gate import classify

    v = {"model": "m", "contract": "c", "role": "target", "hard": True, "status": "fail", "max_normalized": None}
    entry = {"status": "fail", "max_normalized": 1e300}
    assert classify(v, entry, 0.2).kind == "regression"
    assert classify(v, {"status": "fail", "max_normalized": None}, 0.2).kind == "known"
