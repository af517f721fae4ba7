"""The judge's command line: bad input is one line naming the fix, exit status 2; and the matching rules."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_mlip.cli import main
from pytest_mlip.provenance.store import Store
from pytest_mlip.reporting.claims import fmt_value, number_mismatch

RECORD = ('{"format": "pytest-mlip-agent-report", "version": 1, "kind": "index", "run": {"id": "r1", '
          '"code_version": "v1", "store": "provenance.sqlite"}, "blocks": [{"t": "p", "items": '
          '[{"k": "phrase", "id": "sec.type"}]}]}')


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pytest-mlip: error: ")
    return err[0]


def test_report_that_does_not_parse(tmp_path, capsys):
    bad = tmp_path / "report.json"
    bad.write_text('{"format": "pytest-mlip-report", "version": 1, "run": ')
    assert main(["judge", str(bad)]) == 2
    assert "not valid JSON" in one_error(capsys)
    bad.write_text('{"something": "else"}')
    assert main(["judge", str(bad)]) == 2
    assert "not a pytest-mlip report" in one_error(capsys)


def test_markdown_without_its_source(tmp_path, capsys):
    """A report is judged from its source (report.json, or a detective record): free Markdown alone is refused."""
    bad = tmp_path / "report.md"
    bad.write_text("# Some notes\n\nThe drop is 3 eV.\n")
    assert main(["judge", str(bad)]) == 2
    assert "not a report this tool generates" in one_error(capsys)


def test_missing_report_and_missing_store(tmp_path, capsys):
    assert main(["judge", str(tmp_path / "nope.md")]) == 2
    assert "does not exist" in one_error(capsys)
    (tmp_path / "detective.json").write_text(RECORD)
    (tmp_path / "report.md").write_text("x\n")
    assert main(["judge", str(tmp_path / "report.md")]) == 2
    assert "--store PATH" in one_error(capsys)
    (tmp_path / "detective.json").write_text(RECORD[:40])
    assert main(["judge", str(tmp_path)]) == 2
    assert "not valid JSON" in one_error(capsys)


def test_store_from_an_incompatible_version(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    db.commit()
    db.close()
    (tmp_path / "detective.json").write_text(RECORD)
    assert main(["judge", str(tmp_path / "detective.json"), "--store", str(path)]) == 2
    assert "schema version 7" in one_error(capsys)


def test_unknown_run_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    (tmp_path / "detective.json").write_text(RECORD)
    assert main(["judge", str(tmp_path / "detective.json"), "--store", str(path)]) == 2
    assert "run 'r1' is not in the provenance store" in one_error(capsys)


@pytest.mark.parametrize("text, value, ok", [
    ("1.63e+04", 16270.2, True),
    ("16270", 16270.2, True),  # more digits than the report prints: fine
    ("1.627e+04", 16270.2, True),
    ("1.62e+04", 16270.2, False),  # rounded the wrong way
    ("2e+04", 16270.2, False),  # coarser than three significant digits
    ("0.00", 0.0, True),
    ("0", 0.0, True),  # an exact zero is exact however it is printed (held-out benches flagged "0.0" twice)
    ("0.0", 0.0, True),
    ("0.0", 0.001, False),
    ("0.00", 3e-12, False),  # a tiny value is not zero at the report's precision
    ("3.00e-12", 3e-12, True),
    ("1.00", 1.004, True),
    ("1.00", 1.006, False),  # a failing 1.006 shown as 1.00
    ("inf", float("inf"), True),
    ("-1.00", -1.0, True),
])
def test_printed_number_matching(text, value, ok):
    assert (number_mismatch(text, value) is None) == ok
    assert number_mismatch(fmt_value(value), value) is None


def test_a_replay_across_code_versions_is_named_not_comparable(monkeypatch):
    """The committed example was recorded by an older code version whose desorption check asked for other
    configurations: replaying it with today's check flagged the authentic report (held-out seed 4001). A replay
    compares one code version with itself; across versions it says so and the store is verified as before."""
    from pytest_mlip.reporting import replay as rp

    f = rp._other_version("desorption-barrier on chgnet-0.3.0", "0.1.0+gaaaa", "0.1.0+gbbbb")
    assert f.ok and "not comparable" in f.text and "0.1.0+gaaaa" in f.text


def test_an_honest_report_of_forces_near_the_float_range_is_approved(pytester, monkeypatch):
    """Held-out case (round 7): forces of 1e200 (finite) square past the float range, so fmax is inf in the record
    and in the re-run; inf - inf is nan, and the judge refused an untampered report ("inf, the record says inf")."""
    from pytest_mlip.reporting.judge import judge_file

    monkeypatch.syspath_prepend(str(pytester.path))
    pytester.makepyfile(huge_models="""
        from ase.calculators.emt import EMT

        class Huge(EMT):
            def calculate(self, *args, **kwargs):
                super().calculate(*args, **kwargs)
                self.results["forces"] = self.results["forces"] + 1e200

        def huge():
            return Huge()
    """)
    (pytester.path / "contracts").mkdir()
    (pytester.path / "contracts" / "mlip_x.toml").write_text(
        '[[contract]]\nname = "rot"\ncheck = "symmetry"\ntransform = "rotation"\nsamples = 1\n'
        'structures = [ { kind = "bulk", name = "Cu", cubic = true } ]\n')
    res = pytester.runpytest_inprocess("--mlip=huge_models:huge", "--mlip-committee=none", "--mlip-no-builtin",
                                       "--mlip-report=rep", "-p", "no:cacheprovider")
    assert res.ret in (0, 1) and (pytester.path / "rep" / "report.json").is_file(), res.stdout.str()[-2000:]
    result = judge_file(pytester.path / "rep", sample=3, seed=0)
    assert result.ok, "\n".join(f.line() for f in result.failed)
