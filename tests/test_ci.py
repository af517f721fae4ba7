"""CI: the GitHub Actions example parses and uses only what exists; every --mlip-* option has an ini twin."""

import re
import shlex
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"
CLEAN = "tests.mutants:clean_morse"


def _mlip_options(config) -> dict[str, object]:
    group = config._parser.getgroup("mlip")
    return {name: opt for opt in group.options for name in opt.names() if name.startswith("--mlip")}


def _commands(doc) -> list[str]:
    out = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            run = step.get("run")
            if run:
                text = re.sub(r"\\\n\s*", " ", run)
                out += [line.split(" #")[0].strip() for line in text.splitlines() if line.strip()]
    return out


def test_workflow_parses_and_has_every_stage():
    doc = yaml.safe_load(WORKFLOW.read_text())
    steps = doc["jobs"]["contracts"]["steps"]
    names = " ".join(s.get("name", s.get("uses", "")) for s in steps).lower()
    for stage in ("install", "cache model weights", "baseline", "upload the report", "post the summary"):
        assert stage in names, stage
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert "~/.cache/mace" in cache["with"]["path"] and "~/.cache/cached_path" in cache["with"]["path"]


def test_workflow_commands_and_options_exist(pytester):
    doc = yaml.safe_load(WORKFLOW.read_text())
    config = pytester.parseconfig()
    options = _mlip_options(config)
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    from pytest_mlip.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    commands = _commands(doc)
    ran_pytest = False
    for line in commands:
        words = shlex.split(line.replace("${{", "").replace("}}", ""))
        if words[0] == "pytest":
            ran_pytest = True
            for w in words[1:]:
                if w.startswith("--mlip"):
                    assert w.split("=", 1)[0] in options, f"{w} is not a pytest-mlip option"
            assert any(w.startswith("--mlip-baseline=") for w in words)
            assert "-n" in words  # pytest-xdist, from the 'test' extra
        elif words[0] == "pytest-mlip":
            assert words[1] in sub.choices, f"pytest-mlip {words[1]} is not a subcommand"
        for w in words:
            m = re.match(r"pytest-mlip\[([\w,]+)\]", w)
            if m:
                assert set(m.group(1).split(",")) <= extras, m.group(1)
    assert ran_pytest


def test_every_mlip_option_has_an_ini_twin(pytester):
    config = pytester.parseconfig()
    inis = config._parser._inidict
    for name, opt in _mlip_options(config).items():
        assert opt.dest in inis, f"{name} cannot be set in pyproject.toml"


def test_ini_options_apply_and_the_command_line_wins(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makeini(f"[pytest]\nmlip = {CLEAN}\nmlip_committee = none\nmlip_report = rep-ini\nmlip_partial = true\n"
                     "mlip_regression_margin = 0.5\nmlip_summary_md = summary.md\n")
    result = pytester.runpytest_inprocess("-k", "dissociation", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert (pytester.path / "rep-ini" / "report.json").is_file() and (pytester.path / "summary.md").is_file()
    result = pytester.runpytest_inprocess("-k", "dissociation", "-p", "no:cacheprovider", "--mlip-report=rep-cli")
    assert (pytester.path / "rep-cli" / "report.json").is_file()
    config = pytester.parseconfigure()
    assert config.getoption("mlip_regression_margin") == 0.5


def test_bad_ini_value_is_a_one_line_usage_error(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makeini(f"[pytest]\nmlip = {CLEAN}\nmlip_regression_margin = lots\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option mlip_regression_margin = 'lots' is not a relative growth of v/tau (a finite number >= 0); write "
                                 "e.g. mlip_regression_margin = 0.2*"])


def test_missing_baseline_says_to_create_it_first(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    result = pytester.runpytest_inprocess(f"--mlip={CLEAN}", "--mlip-committee=none", "--mlip-baseline=none.json",
                                          "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*none.json does not exist: run with --mlip-update-baseline first*"])
