"""A developer's own model and the small things: module:factory from the rootdir, --version, detect's
option names, docs only writes where it is told."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mlip.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent

MYMODEL = '''
def factory():
    """EMT with the metadata pytest-mlip reads (README: "Your own model")."""
    from ase.calculators.emt import EMT

    calc = EMT()
    calc.mlip_metadata = {"elements": ("Cu", "Ni"), "cutoff": 5.0, "dtype": "float64", "conservative": True}
    return calc
'''


def test_factory_module_in_the_rootdir_is_found_from_a_subfolder(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "mymodel.py").write_text(MYMODEL)
    sub = tmp_path / "somewhere" / "deeper"
    sub.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)  # the tests' mutants only; mymodel.py is found through the rootdir
    proc = subprocess.run([sys.executable, "-m", "pytest", "--mlip=mymodel:factory", "--mlip-committee=none",
                           "-k", "dissociation", "-p", "no:cacheprovider", "--mlip-contracts"],
                          cwd=sub, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "dissociation-limit" in proc.stdout and "each runs once per model (mymodel:factory)" in proc.stdout


def test_factory_metadata_is_read(pytester, monkeypatch):
    pytester.makepyfile(mymodel=MYMODEL)
    monkeypatch.syspath_prepend(str(pytester.path))
    from pytest_mlip.models import registry

    monkeypatch.setattr(registry, "_LOADED", {})
    info = registry.load("mymodel:factory").info
    assert info.elements == ("Cu", "Ni") and info.cutoff == 5.0 and info.conservative is True
    assert info.description == "EMT with the metadata pytest-mlip reads (README: \"Your own model\")."


def test_unimportable_factory_names_where_it_looked(pytester):
    result = pytester.runpytest_inprocess("--mlip=nosuchmodule_xyz:factory", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot import module 'nosuchmodule_xyz'*set pythonpath in the pytest ini file*"])


def test_version(capsys):
    from pytest_mlip import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pytest-mlip {__version__}"


def test_detect_takes_pytests_option_names_and_the_old_ones(capsys):
    parser = build_parser()
    args = parser.parse_args(["detect", "--mlip", "sevennet-0", "--mlip-committee", "diep", "--mlip-store", "s.db"])
    assert (args.target, args.committee, args.store) == ("sevennet-0", "diep", "s.db")
    assert capsys.readouterr().err == ""
    args = parser.parse_args(["detect", "--target", "sevennet-0", "--committee", "diep", "--report", "rep"])
    assert (args.target, args.committee, args.report) == ("sevennet-0", "diep", "rep")
    err = capsys.readouterr().err
    assert "--target is deprecated, use --mlip" in err and "--committee is deprecated, use --mlip-committee" in err


def test_docs_prints_unless_given_a_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["docs"]) == 0
    assert capsys.readouterr().out.startswith("# The inspection specification")
    assert list(tmp_path.iterdir()) == []  # nothing written into the user's folder
    assert main(["docs", "--out", "spec.md"]) == 0
    assert (tmp_path / "spec.md").read_text().startswith("# The inspection specification")
    assert main(["docs", "--out", "spec.md", "--check"]) == 0


def test_docs_never_overwrites_a_file_it_did_not_write(tmp_path, capsys, monkeypatch):
    """Held-out cases: ``docs --out README.md`` replaced the user's file; ``docs --out <folder>`` crashed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# my project\n")
    (tmp_path / "docs").mkdir()
    assert main(["docs", "--out", "README.md"]) != 0
    assert "pytest-mlip docs did not write" in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == "# my project\n"
    assert main(["docs", "--out", "docs"]) != 0
    err = capsys.readouterr().err
    assert "is a folder" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["docs", "--out", "docs/spec.md"]) == 0 and main(["docs", "--out", "docs/spec.md"]) == 0
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["spec.md"]
    # round 7: a line the user added to the generated page is kept (the page is sealed by its hash), and --check
    # on a file of the user's does not advise overwriting it
    spec = tmp_path / "docs" / "spec.md"
    spec.write_text(spec.read_text() + "my addition\n")
    assert main(["docs", "--out", "docs/spec.md"]) != 0
    assert "edited since" in capsys.readouterr().err and spec.read_text().endswith("my addition\n")
    assert main(["docs", "--out", "README.md", "--check"]) == 1
    out = capsys.readouterr().out
    assert "not a file pytest-mlip docs wrote" in out and "run pytest-mlip docs --out" not in out
