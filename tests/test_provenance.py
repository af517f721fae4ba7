"""The artifact store: content ids, the evaluator hook, parallel and killed writers, bad stores."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_mlip.provenance.artifact import Artifact, ModelIdentity
from pytest_mlip.provenance.store import SCHEMA_VERSION, Store, StoreError

ROOT = Path(__file__).resolve().parent.parent
CLEAN = "tests.mutants:clean_morse"


def art(value, parents=(), kind="violation", code="test-1", model=ModelIdentity("m", "1", "abc")):
    return Artifact(kind=kind, value=value, routine="r", params={"contract": "c", "probe": "p", "key": "k"},
                    parents=tuple(parents), model=model, code_version=code, reason="why", context={"item": "x"})


def test_id_is_derived_from_content_only():
    a, b = art(1.5, ["p2", "p1"]), art(1.5, ["p1", "p2"])
    assert a.id == b.id and len(a.id) == 32
    b.context = {"item": "other"}
    b.reason = "another reason"
    assert b.content_id() == a.id  # reason and context describe, they do not identify
    assert art(1.5000001).id != a.id
    assert art(1.5, code="test-2").id != a.id
    assert art(1.5, model=ModelIdentity("m", "1", "abd")).id != a.id


def test_store_round_trip_deduplicates_and_verifies(tmp_path):
    st = Store(tmp_path / "s.sqlite")
    parent = art(0.1, kind="probe")
    child = art(2.0, [parent.id])
    assert st.put_many([parent, child]) == 2
    assert st.put_many([child, parent, child]) == 0  # INSERT OR IGNORE: duplicates are harmless
    assert st.count() == 2
    got = st.get(child.id)
    assert got.value == 2.0 and got.parents == (parent.id,) and got.verifies()
    assert st.resolve(child.id[:8]) == [child.id]
    assert st.closure([child.id]) == {child.id, parent.id}
    st.db.execute("UPDATE artifacts SET value='3.0' WHERE id=?", (child.id,))
    assert not st.get(child.id).verifies()  # an edited value no longer matches its id
    assert st.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_incompatible_store_version_is_a_one_line_error(tmp_path):
    path = tmp_path / "old.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 98),))
    db.commit()
    db.close()
    with pytest.raises(StoreError) as exc:
        Store(path)
    msg = str(exc.value)
    assert "\n" not in msg and f"schema version {SCHEMA_VERSION + 98}" in msg and "--mlip-store" in msg


def test_store_that_is_not_sqlite_is_a_one_line_error(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as exc:
        Store(path)
    assert "\n" not in str(exc.value) and "--mlip-store" in str(exc.value)


def test_an_empty_file_is_not_taken_as_a_new_store(tmp_path):
    """Held-out round 15: --mlip-store=empty.db (a file the user made) was filled with pytest-mlip's tables. An
    empty file is not ours: refused in one line, left as it was."""
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(StoreError) as exc:
        Store(path)
    assert "\n" not in str(exc.value) and "empty file" in str(exc.value) and "--mlip-store" in str(exc.value)
    assert path.stat().st_size == 0 and list(tmp_path.iterdir()) == [path]


def test_plugin_refuses_incompatible_store(pytester, tmp_path):
    path = tmp_path / "old.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='0' WHERE key='schema_version'")
    db.commit()
    db.close()
    res = pytester.runpytest("--mlip=emt", "--mlip-committee=none", f"--mlip-store={path}", "-k", "dissociation",
                             "-p", "no:hypothesispytest")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    errors = [ln for ln in res.errlines if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "schema version 0" in errors[0] and "--mlip-store" in errors[0]


def test_evaluator_records_real_calls_only_and_tracks_requests():
    from ase.build import molecule

    from pytest_mlip.evaluation import Evaluator
    from pytest_mlip.models.registry import load

    calls = []
    ev = Evaluator(load(CLEAN))
    ev.recorder = lambda model, key, result, atoms: calls.append((key, result.energy, len(atoms)))
    ev.touched = set()
    h2o = molecule("H2O")
    e1 = ev.energy(h2o)
    e2 = ev.energy(h2o)
    assert e1 == e2 and len(calls) == 1 and ev.stats.hits == 1
    assert ev.touched == {calls[0][0]}  # the request was tracked both times, recorded once


def test_verdict_artifacts_cite_every_configuration_a_probe_used():
    from pytest_mlip.evaluation import evaluator_for
    from pytest_mlip.provenance.recorder import verdict_artifacts
    from pytest_mlip.testing import run_contract

    v = run_contract("dissociation-limit", CLEAN)
    arts, ids = verdict_artifacts(v, evaluator_for(CLEAN), "test-1")
    by_id = {a.id: a for a in arts}
    for p in v.probes:
        probe_art = by_id[by_id[ids["probes"][p.probe]["violations"]["energy"]].parents[0]]
        assert probe_art.kind == "probe"
        assert len(probe_art.parents) == len(p.config_keys) >= 3  # A+B, A and B at least
        assert all(by_id[e].kind == "evaluation" for e in probe_art.parents)
    verdict = by_id[ids["verdict"]]
    assert verdict.value == v.status and ids["max_normalized"] in verdict.parents
    assert by_id[ids["max_normalized"]].value == v.max_normalized


def test_payload_keeps_the_configuration():
    from ase.build import bulk

    from pytest_mlip.evaluation.evaluator import Evaluation
    from pytest_mlip.provenance.recorder import _payload, decode_payload

    atoms = bulk("Cu", cubic=True)
    forces = np.random.default_rng(0).normal(size=(4, 3))
    blob = _payload(atoms, Evaluation(1.0, forces, np.arange(6.0)))
    back = decode_payload(blob)
    assert np.array_equal(back["positions"], atoms.positions) and np.array_equal(back["forces"], forces)
    assert back["pbc"].all() and np.array_equal(back["stress"], np.arange(6.0))


WRITER = textwrap.dedent("""
    import sys, time
    from pytest_mlip.provenance.artifact import Artifact
    from pytest_mlip.provenance.store import Store
    st = Store(sys.argv[1])
    n = 0
    while True:
        batch = [Artifact(kind="observable", value=float(n + i), routine="r", params={"i": n + i}, parents=(),
                          model=None, code_version="kill-test", payload=b"x" * 2000) for i in range(20)]
        st.put_many(batch)
        n += 20
        print(n, flush=True)
""")


def test_store_survives_sigkill(tmp_path):
    path = tmp_path / "killed.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    committed = 0
    deadline = time.time() + 60
    while committed < 400 and time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed = int(line)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert committed >= 400
    st = Store(path, readonly=True)
    assert st.integrity() == "ok"
    count = st.count()
    assert count >= committed  # every committed transaction is there (whole batches only)
    assert count % 20 == 0
    rows = st.db.execute("SELECT id FROM artifacts").fetchall()
    assert all(a.verifies() for a in st.get_many([r[0] for r in rows]).values())


def _run(args, cwd, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_parallel_run_stores_the_same_artifacts_as_a_serial_one(tmp_path):
    pytest.importorskip("xdist")
    args = ["--mlip=emt", "--mlip-committee=lennard-jones", "-k", "dissociation or rotation or wall-surface",
            "--mlip-partial"]
    stores = {}
    for name, extra in (("serial", []), ("xdist", ["-n", "2"])):
        res = _run([*args, *extra, f"--mlip-store={tmp_path / name}.sqlite"], cwd=tmp_path)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        stores[name] = Store(tmp_path / f"{name}.sqlite", readonly=True)
    contents, verdicts = {}, {}
    for name, st in stores.items():
        # ids include the code version, which moves when anyone edits the tree between the two runs:
        # compare what the artifacts say instead (kind, model, parameters, value)
        rows = st.db.execute("SELECT kind, model, params, value FROM artifacts WHERE kind != 'run'").fetchall()
        contents[name] = sorted(rows, key=repr)
        verdicts[name] = sorted((r[2], r[3]) for r in rows if r[0] in ("verdict", "max_normalized"))
        assert st.integrity() == "ok"
        assert len(set(map(repr, rows))) == len(rows)
    assert contents["serial"] == contents["xdist"]  # nothing lost, nothing duplicated
    assert verdicts["serial"] == verdicts["xdist"] and len(verdicts["serial"]) >= 8
