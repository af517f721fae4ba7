"""The committed example report passes the judge (model calls are re-run by `pytest-mlip judge`, not here)."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_mlip.reporting.judge import judge_file

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "example-report"


def test_committed_example_report_passes_the_judge():
    root = re.search(r"root hash: `([0-9a-f]{64})`", (EXAMPLE / "report.md").read_text()).group(1)
    assert root in (EXAMPLE.parent / "example-report.md").read_text()  # the root the run printed, kept apart
    result = judge_file(EXAMPLE, root=root, sample=0, replay=0)
    assert result.ok, "\n".join(f.line() for f in result.failed)
    assert result.required_total == result.required_present == 5


AGENT = EXAMPLE.parent / "agent-example"


def test_committed_detective_reports_pass_the_judge():
    """The detective example's index and escalation reports, judged from their records with the root its run
    printed (kept in its README)."""
    root = re.search(r"mlip root: ([0-9a-f]{64})", (AGENT / "README.md").read_text()).group(1)
    base = AGENT / "sevennet-0"
    folders = sorted((base / "escalations").iterdir()) + [base]
    assert len(folders) == 4
    for folder in folders:
        result = judge_file(folder / "report.md", root=root, sample=0)
        assert result.ok, "\n".join(f.line() for f in result.failed)
        assert result.required_total == result.required_present >= 1
