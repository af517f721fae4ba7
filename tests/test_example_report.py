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
