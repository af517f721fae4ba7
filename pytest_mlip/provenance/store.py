"""The artifact store: one SQLite file, safe for parallel workers and killed runs.

WAL journal (readers never block the writer; a SIGKILL leaves only whole
transactions), a busy timeout for workers writing at once, and
``INSERT OR IGNORE`` on content ids, so two workers storing the same result
make one row. A schema-version row guards against a store written by an
incompatible pytest-mlip.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Iterable

from ..errors import MlipError, loads_json
from .artifact import Artifact, ModelIdentity, canonical

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS artifacts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    routine TEXT NOT NULL,
    params TEXT NOT NULL,
    reason TEXT NOT NULL,
    context TEXT NOT NULL,
    model TEXT,
    model_version TEXT,
    weights_hash TEXT,
    code_version TEXT NOT NULL,
    run TEXT,
    created REAL NOT NULL,
    payload BLOB
);
CREATE TABLE IF NOT EXISTS parents (
    child TEXT NOT NULL,
    parent TEXT NOT NULL,
    PRIMARY KEY (child, parent)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS parents_by_parent ON parents (parent);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started REAL NOT NULL,
    finished REAL,
    code_version TEXT NOT NULL,
    target TEXT,
    committee TEXT,
    models TEXT,
    argv TEXT,
    store TEXT,
    artifact TEXT
);
"""


def _columns(db) -> dict[str, list[str]]:
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: [r[1] for r in db.execute(f"PRAGMA table_info('{t}')")] for t in tables}


def _schema_gaps(db) -> list[str]:
    """What a store lacks of the schema: each table and its columns, as this version creates them."""
    ref = sqlite3.connect(":memory:")
    try:
        ref.executescript(SCHEMA)
        want = _columns(ref)
    finally:
        ref.close()
    have = _columns(db)
    gaps = []
    for table, cols in want.items():
        if table not in have:
            gaps.append(f"table {table} is missing")
        elif have[table] != cols:
            gaps.append(f"table {table} has columns {', '.join(have[table])}, not {', '.join(cols)}")
    return gaps


class StoreError(MlipError):
    """The store cannot be used (wrong version, not a database, not writable)."""


def _fix(path, foreign: bool = False, readonly: bool = False) -> str:
    """The fix a store refusal names: a file of another program is the user's and stays where it is (a held-out
    case advised moving /etc/passwd aside); a store of another version may be moved aside."""
    option = "--store PATH" if readonly else "--mlip-store=PATH"
    if foreign:
        return f"pass {option} naming a pytest-mlip store or a new file (.mlip/provenance.sqlite by default)"
    return f"move {path} aside or pass {option} naming another file"


class Store:
    """Artifacts and runs in one SQLite file. ``readonly`` opens without creating or writing."""

    def __init__(self, path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        if self.path.exists() and not self.path.is_file():  # a folder, /dev/null, a pipe: never opened as a store
            what = "a folder" if self.path.is_dir() else "not a regular file (a device, pipe or socket)"
            option = "--store PATH" if readonly else "--mlip-store=PATH"
            raise StoreError(f"provenance store {self.path} is {what}; a store is a regular SQLite file: pass a file "
                             f"path with {option} (e.g. .mlip/provenance.sqlite)")
        if not readonly and self.path.is_file() and self.path.stat().st_size == 0:
            # SQLite would take an empty file for a new database and fill it (held-out round 15): it is not ours
            raise StoreError(f"provenance store {self.path} is an empty file that pytest-mlip did not write; it was "
                             "not touched: delete it to have the store created there, or pass --mlip-store=OTHER_PATH")
        try:
            if readonly:
                if not self.path.is_file():
                    raise StoreError(f"provenance store {self.path} does not exist; pass the store the run wrote "
                                     "(--store PATH) or re-run pytest --mlip=... to create it")
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                          isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._open()
            self._inode = self.path.stat().st_ino
        except StoreError:
            raise
        except OSError as exc:
            raise StoreError(f"cannot create the provenance store {self.path} ({exc.strerror}); "
                             "pass a writable location with --mlip-store=PATH") from None
        except sqlite3.OperationalError as exc:
            if "unable to open" in str(exc) or "readonly" in str(exc):
                raise StoreError(f"cannot open the provenance store {self.path} ({exc}); pass a writable location "
                                 "with --mlip-store=PATH") from None
            raise StoreError(f"{self.path} is not a usable pytest-mlip provenance store ({exc}); "
                             f"{_fix(self.path, True, readonly)}") from None
        except sqlite3.DatabaseError as exc:
            damaged = "malformed" in str(exc)
            what = "damaged" if damaged else "not a usable pytest-mlip provenance store"
            raise StoreError(f"{self.path} is {what} ({exc}); it was not touched: "
                             f"{_fix(self.path, not damaged, readonly)}") from None

    # --- setup -----------------------------------------------------------------------------------------------
    def _open(self):
        db = self.db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        exists = "meta" in tables
        if tables and not exists:
            raise StoreError(f"{self.path} is a SQLite database of another program (tables: "
                             f"{', '.join(sorted(tables)[:5])}), not a pytest-mlip provenance store; it was not "
                             f"touched: pass --mlip-store=OTHER_PATH")
        if tables:
            check = db.execute("PRAGMA quick_check").fetchall()
            if [tuple(r) for r in check] != [("ok",)]:
                raise StoreError(f"provenance store {self.path} is damaged ({str(check[0][0]).splitlines()[0]}); it was "
                                 "not touched: "
                                 f"move it aside (mv {self.path} {self.path}.damaged) and rerun, or pass "
                                 "--mlip-store=OTHER_PATH")
        if not exists and not self.readonly:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                db.execute("INSERT OR IGNORE INTO meta VALUES ('created_by', ?)", (_created_by(),))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        elif not self.readonly:
            db.execute("PRAGMA synchronous = NORMAL")
        row = None
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:
            pass
        if row is None:
            raise StoreError(f"{self.path} is a SQLite file but not a pytest-mlip provenance store (no schema "
                             f"version); {_fix(self.path, True, self.readonly)}")
        if str(row[0]) != str(SCHEMA_VERSION):
            raise StoreError(f"provenance store {self.path} has schema version {row[0]} but this pytest-mlip "
                             f"reads version {SCHEMA_VERSION}; {_fix(self.path, False, self.readonly)}")
        missing = _schema_gaps(db)
        if missing:  # a table dropped or altered by hand: every later query would fail mid-run
            raise StoreError(f"provenance store {self.path} is damaged ({'; '.join(missing)}); it was not touched: "
                             f"move it aside (mv {self.path} {self.path}.damaged) and rerun, or pass "
                             "--mlip-store=OTHER_PATH")

    def gone(self) -> str | None:
        """Why the file this store opened is no longer at its path (removed or replaced while the run went on: a
        model that deleted .mlip/ mid-run, held-out round 16), or None."""
        try:
            same = self.path.stat().st_ino == getattr(self, "_inode", None)
        except OSError:
            same = False
        return None if same else (f"left without its store: the provenance store {self.path} was removed or "
                                  "replaced during the run (by the model's code, or another process), and its "
                                  "artifacts with it")

    def close(self):
        try:
            self.db.close()
        except Exception:
            pass

    # --- writing ---------------------------------------------------------------------------------------------
    def put_many(self, artifacts: Iterable[Artifact], run: str | None = None) -> int:
        """Store artifacts (and their parent links) in one transaction; returns how many were new."""
        rows, links = [], []
        now = time.time()
        seen = set()
        for a in artifacts:
            if a.id in seen:
                continue
            seen.add(a.id)
            m = a.model
            rows.append((a.id, a.kind, canonical(a.value), a.routine, canonical(a.params), a.reason,
                         canonical(a.context), m.name if m else None, m.version if m else None,
                         m.weights_hash if m else None, a.code_version, a.run or run, a.created or now, a.payload))
            links.extend((a.id, p) for p in a.parents)
        if not rows:
            return 0
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            new = db.total_changes - before
            db.executemany("INSERT OR IGNORE INTO parents VALUES (?,?)", links)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return new

    def put(self, artifact: Artifact, run: str | None = None) -> str:
        self.put_many([artifact], run=run)
        return artifact.id

    def begin_run(self, run_id: str, code_version: str, target: str, committee: list[str], argv: list[str]):
        self._tx("INSERT OR REPLACE INTO runs (id, started, code_version, target, committee, argv, store) "
                 "VALUES (?,?,?,?,?,?,?)",
                 (run_id, time.time(), code_version, target, json.dumps(committee), json.dumps(argv),
                  str(self.path.resolve())))

    def finish_run(self, run_id: str, models: dict, artifact: str | None):
        self._tx("UPDATE runs SET finished=?, models=?, artifact=? WHERE id=?",
                 (time.time(), json.dumps(models, sort_keys=True), artifact, run_id))

    def _tx(self, sql, args):
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(sql, args)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # --- reading ---------------------------------------------------------------------------------------------
    _COLS = ("id, kind, value, routine, params, reason, context, model, model_version, weights_hash, "
             "code_version, run, created")

    def _artifact(self, row, parents: tuple[str, ...]) -> Artifact:
        (aid, kind, value, routine, params, reason, context, model, version, whash, code, run, created) = row
        ident = ModelIdentity(model, version, whash) if model is not None else None
        return Artifact(kind=kind, value=loads_json(value), routine=routine, params=loads_json(params),
                        parents=parents, model=ident, code_version=code, reason=reason,
                        context=loads_json(context), run=run, created=created, id=aid)

    def get(self, aid: str) -> Artifact | None:
        return self.get_many([aid]).get(aid)

    def get_many(self, ids: Iterable[str]) -> dict[str, Artifact]:
        ids = list(dict.fromkeys(ids))
        out: dict[str, Artifact] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(f"SELECT {self._COLS} FROM artifacts WHERE id IN ({marks})", chunk).fetchall()
            links: dict[str, list[str]] = {}
            for child, parent in self.db.execute(f"SELECT child, parent FROM parents WHERE child IN ({marks})",
                                                 chunk):
                links.setdefault(child, []).append(parent)
            for row in rows:
                out[row[0]] = self._artifact(row, tuple(links.get(row[0], ())))
        return out

    def first_altered(self, batch: int = 2000):
        """The first artifact edited after it was written, and why: its content no longer gives its id, or (a model
        call) its stored configuration or forces, kept outside the id, are not the ones its key and forces hash
        name. None when every artifact holds; reads the whole store in batches."""
        from .recorder import payload_problems

        last = ""
        while True:
            ids = [r[0] for r in self.db.execute("SELECT id FROM artifacts WHERE id > ? ORDER BY id LIMIT ?",
                                                 (last, batch))]
            if not ids:
                return self._first_dangling()
            try:
                arts = self.get_many(ids)
            except (ValueError, TypeError):  # a row whose stored JSON no longer parses: find it, name it
                for aid in ids:
                    try:
                        self.get_many([aid])
                    except (ValueError, TypeError):
                        return self._row_named(aid), "its stored content is no longer valid JSON"
                raise
            for a in arts.values():
                if not a.verifies():
                    return a, "its content no longer gives its id"
                problems = payload_problems(a, self.payload(a.id)) if a.kind == "evaluation" else []
                if problems:
                    return a, problems[0]
            last = ids[-1]

    def _first_dangling(self):
        """An artifact whose parent (or which, as a parent link's child) is missing from the store: rows deleted
        after they were written (a held-out case: three rows deleted, the store reused). None when every link
        holds."""
        row = self.db.execute("SELECT child, parent FROM parents WHERE parent NOT IN (SELECT id FROM artifacts) "
                              "OR child NOT IN (SELECT id FROM artifacts) LIMIT 1").fetchone()
        if row is None:
            return None
        child, parent = row
        return self._row_named(child), f"it cites {parent[:12]}, which is missing from the store (deleted?)"

    def _row_named(self, aid: str):
        """An artifact row that cannot be read as an artifact, by its id and kind (what a message names)."""
        from types import SimpleNamespace

        kind = self.db.execute("SELECT kind FROM artifacts WHERE id=?", (aid,)).fetchone()
        return SimpleNamespace(id=aid, kind=kind[0] if kind else "artifact")

    def resolve(self, prefix: str) -> list[str]:
        """Ids starting with ``prefix`` (at most two: enough to tell unique from ambiguous)."""
        prefix = prefix.lower()
        rows = self.db.execute("SELECT id FROM artifacts WHERE id >= ? AND id < ? ORDER BY id LIMIT 2",
                               (prefix, prefix + "g")).fetchall()
        return [r[0] for r in rows]

    def payload(self, aid: str) -> bytes | None:
        row = self.db.execute("SELECT payload FROM artifacts WHERE id=?", (aid,)).fetchone()
        return row[0] if row else None

    def children(self, aid: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT child FROM parents WHERE parent=?", (aid,))]

    def closure(self, roots: Iterable[str]) -> set[str]:
        """The roots and every artifact reachable through parent links."""
        seen = set(roots)
        frontier = list(seen)
        while frontier:
            chunk, frontier = frontier[:500], frontier[500:]
            marks = ",".join("?" * len(chunk))
            for (p,) in self.db.execute(f"SELECT parent FROM parents WHERE child IN ({marks})", chunk):
                if p not in seen:
                    seen.add(p)
                    frontier.append(p)
        return seen

    def runs_of(self, ids: Iterable[str]) -> list[tuple[str | None, str]]:
        """The distinct (run, code version) pairs the artifacts ``ids`` were stored with, sorted."""
        ids = list(dict.fromkeys(ids))
        out = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(self.db.execute(f"SELECT DISTINCT run, code_version FROM artifacts WHERE id IN ({marks})",
                                       chunk).fetchall())
        return sorted(out, key=lambda x: (x[0] or "", x[1]))

    def run(self, run_id: str) -> dict | None:
        row = self.db.execute("SELECT id, started, finished, code_version, target, committee, models, argv, store, "
                              "artifact FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            return None
        keys = ("id", "started", "finished", "code_version", "target", "committee", "models", "argv", "store",
                "artifact")
        d = dict(zip(keys, row))
        for k in ("committee", "models", "argv"):
            d[k] = loads_json(d[k]) if d[k] else ([] if k != "models" else {})
        return d

    def unhashed_fields(self, ids) -> dict[str, list]:
        """Per artifact, the stored fields its content id leaves out: reason, context, run, created."""
        ids = list(ids)
        out: dict[str, list] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(f"SELECT id, reason, context, run, created FROM artifacts WHERE id IN ({marks})",
                                       chunk):
                out[row[0]] = list(row[1:])
        return out

    def count(self, run: str | None = None, kind: str | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM artifacts WHERE 1=1", []
        if run is not None:
            sql += " AND run=?"
            args.append(run)
        if kind is not None:
            sql += " AND kind=?"
            args.append(kind)
        return int(self.db.execute(sql, args).fetchone()[0])

    def integrity(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])

    # --- export ----------------------------------------------------------------------------------------------
    def export(self, path, ids: Iterable[str], run_ids: Iterable[str], payloads: bool = False) -> int:
        """Copy ``ids`` (and the given run rows) into a new single-file store at ``path``; returns the count.

        The copy uses a rollback journal (no -wal/-shm side files), so it can be
        committed next to a report and opened read-only anywhere.
        """
        path = Path(path)
        if path.exists():
            path.unlink()
        out = sqlite3.connect(str(path), isolation_level=None)
        try:
            out.execute("PRAGMA journal_mode = DELETE")
            out.execute("BEGIN")
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    out.execute(stmt)
            out.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            out.execute("INSERT INTO meta VALUES ('created_by', ?)", (_created_by() + " (report snapshot)",))
            ids = list(dict.fromkeys(ids))
            payload_col = "payload" if payloads else "NULL"
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self.db.execute(f"SELECT {self._COLS}, {payload_col} FROM artifacts WHERE id IN ({marks})",
                                       chunk).fetchall()
                out.executemany("INSERT OR IGNORE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
                links = self.db.execute(f"SELECT child, parent FROM parents WHERE child IN ({marks})",
                                        chunk).fetchall()
                out.executemany("INSERT OR IGNORE INTO parents VALUES (?,?)", links)
            for rid in run_ids:
                row = self.db.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
                if row:
                    out.execute(f"INSERT OR REPLACE INTO runs VALUES ({','.join('?' * len(row))})", row)
            out.execute("COMMIT")
            out.execute("VACUUM")
            return len(ids)
        finally:
            out.close()


def _created_by() -> str:
    from .. import __version__

    return f"pytest-mlip {__version__} (pid {os.getpid()})"
