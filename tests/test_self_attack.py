"""Self-attack: hypothesis draws corruptions of model outputs and mutations of contract files.

Asserted: garbage output is an ``error`` verdict naming the property (never a pass, never a skip) and garbage
never exits 0; every message is one line; a malformed contract file is a one-line usage error before any model
call; the store passes ``PRAGMA integrity_check``; no file outside ``.mlip/`` and the report folder changes.
Analytic models only, a few dozen examples in all.
"""

import hashlib
import math
import sqlite3
from pathlib import Path

import pytest
import torch  # noqa: F401  (imported before any in-process pytester run)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlip.laws import CHECKS
from pytest_mlip.contracts.files import parse_contracts
from pytest_mlip.errors import ContractFileError
from pytest_mlip.evaluation.evaluator import Evaluator
from pytest_mlip.models.registry import LoadedModel
from pytest_mlip.models.info import ModelInfo
from pytest_mlip.testing import builtin_contracts
from tests.mutants.garbage import CORRUPTIONS, Corrupted

ROOT = Path(__file__).resolve().parent.parent
corruptions = st.sampled_from([(p, k) for p, kinds in CORRUPTIONS.items() for k in kinds])


def _evaluator(prop, kind, min_atoms=0) -> Evaluator:
    info = ModelInfo(name=f"garbage-{prop}-{kind}", family="factory", conservative=True,
                     implemented_properties=("energy", "forces", "stress"))
    return Evaluator(LoadedModel(spec=info.name, info=info, calc=Corrupted(prop, kind, min_atoms)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corruption=corruptions, contract=st.sampled_from(["zero-net-force", "translation-invariance"]))
def test_garbage_output_is_an_error_verdict_naming_the_property(corruption, contract):
    prop, kind = corruption
    settings_ = builtin_contracts()[contract]
    v = CHECKS[settings_.check]().run(settings_, _evaluator(prop, kind))
    if prop == "stress" and not any(p.atoms is not None and all(p.atoms.pbc) for p in v.probes):
        return  # no periodic structure reached the model: stress was never asked for
    assert v.status == "error", (prop, kind, v.status, v.reason)
    errors = [p for p in v.probes if p.status == "error"]
    assert errors and all("\n" not in p.message for p in errors)
    named = "energy" if prop == "missing" and kind == "energy" else ("forces" if prop == "missing" else prop)
    assert any(named in p.message for p in errors), [p.message for p in errors]


VALID = ('[[contract]]\nname = "c"\ncheck = "symmetry"\ntransform = "rotation"\nsamples = 1\nhard = true\n'
         'structures = [ { kind = "bulk", name = "Cu", cubic = true, a = 3.6, repeat = [1, 1, 1] } ]\n'
         'tolerance = { energy = 1e-4, forces = 1e-3 }\n')
FIELDS = {"hard": "true", "samples": "1", "name": '"c"', "a": "3.6", "repeat": "[1, 1, 1]", "energy": "1e-4",
          "cubic": "true"}
BAD_VALUES = ['"yes"', "1", "-1", "0", "nan", "inf", "-3.6", "1e-12", "0.361", '"Xx"', "[0, 1, 1]", "[30, 30, 60]",
              "true", '"1"', "1.5", "[]"]


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(sorted(FIELDS)), value=st.sampled_from(BAD_VALUES))
def test_mutated_contract_file_is_valid_or_a_one_line_error(tmp_path_factory, field, value):
    old = f"{field} = {FIELDS[field]}"
    assert old in VALID
    text = VALID.replace(old, f"{field} = {value}", 1)
    path = tmp_path_factory.mktemp("c") / "mlip_x.toml"
    path.write_text(text)
    try:
        contracts = parse_contracts(path, root=path.parent)
    except ContractFileError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    # accepted: then it is a sane setting
    (s,) = contracts
    assert isinstance(s.hard, bool) and s.samples >= 1
    assert all(math.isfinite(t) and t > 0 for t in s.tolerance.values())
    spec = s.structures[0]
    assert 1.0 <= (spec.a or 3.6) <= 50.0 and all(1 <= n <= 20 for n in spec.repeat)


#: ours (.mlip, the report folder) and pytester's HOME caches (matplotlib writes its font cache under ~/.cache)
SKIP = (".mlip", "rep", ".cache", ".config")


def _snapshot(root: Path, skip: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not any(rel.parts[0] == s for s in skip):
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(corruption=corruptions, min_atoms=st.sampled_from([0, 3]))
def test_garbage_never_exits_zero_and_touches_nothing_of_the_users(pytester, monkeypatch, corruption, min_atoms):
    prop, kind = corruption
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("MLIP_TEST_CORRUPTION", f"{prop}:{kind}")
    monkeypatch.setenv("MLIP_TEST_CORRUPTION_MIN_ATOMS", str(min_atoms))
    if not (pytester.path / "contracts").exists():
        (pytester.path / "contracts").mkdir()
        (pytester.path / "contracts" / "mlip_small.toml").write_text(
            '[[contract]]\nname = "tr"\ncheck = "symmetry"\n'
            + 'transform = "translation"\nsamples = 1\nstructures = [ { kind = "molecule", name = "NH3" }, '
              '{ kind = "bulk", name = "Cu", cubic = true, rattle = 0.05 } ]\n')
        (pytester.path / "notes.md").write_text("the user's own file\n")
    from pytest_mlip.evaluation import evaluator as ev_mod
    from pytest_mlip.models import registry as reg_mod

    spec = "tests.mutants.garbage:from_env"
    ev_mod._EVALUATORS.pop(spec, None)  # a fresh model per example: the corruption is read when it loads
    reg_mod._LOADED.pop(spec, None)
    before = _snapshot(pytester.path, SKIP)
    res = pytester.runpytest_inprocess("--mlip=tests.mutants.garbage:from_env", "--mlip-committee=none",
                                       "--mlip-no-builtin", "--mlip-report=rep", "-p", "no:cacheprovider")
    assert res.ret != 0, (prop, kind, min_atoms)
    out = res.stdout.str()
    assert "Traceback" not in out and "INCOMPLETE" in out
    assert _snapshot(pytester.path, SKIP) == before
    db = sqlite3.connect(pytester.path / ".mlip" / "provenance.sqlite")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


@pytest.mark.parametrize("args, needle", [
    (["--mlip=tests.mutants.garbage:nope"], "no attribute"),
    (["--mlip=tests.mutants:clean_morse", "--mlip-timeout=abc"], "--mlip-timeout"),
])
def test_usage_errors_are_one_line_exit_4(pytester, monkeypatch, args, needle):
    monkeypatch.syspath_prepend(str(ROOT))
    res = pytester.runpytest_inprocess(*args, "--mlip-committee=none", "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = res.stderr.str().strip().splitlines()
    assert len(err) == 1 and needle in err[0]
