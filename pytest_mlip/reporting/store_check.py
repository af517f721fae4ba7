"""What a store file may hold beside a report: the store's own tables, its own metadata, the run's artifacts.

The root hash seals every artifact the run reaches; these checks cover what it does not reach: bytes after the
database's last page, a gzip snapshot's header comment, extra field or second member, tables and metadata rows the
tool never writes, run rows and artifacts that no run of the store reaches (a forged verdict left beside the run).
"""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

#: the tables and indexes a store holds (pytest_mlip.provenance.store.SCHEMA)
OBJECTS = {("table", "meta"), ("table", "artifacts"), ("table", "parents"), ("table", "runs"),
           ("index", "parents_by_parent")}
META_KEYS = {"schema_version", "created_by"}
FEXTRA, FNAME, FCOMMENT = 4, 8, 16


def gzip_problems(path: Path) -> list[str]:
    """A snapshot compressed by gzip: one member, no comment and no extra field in its header (a file name is
    what gzip writes by default)."""
    out = []
    d = zlib.decompressobj(wbits=31)
    after = 0
    with open(path, "rb") as fh:
        head = fh.read(4)
        if len(head) < 4 or head[:2] != b"\x1f\x8b":
            return ["not a gzip file"]
        if head[3] & FCOMMENT:
            out.append("its gzip header holds a comment (the tool never writes one)")
        if head[3] & FEXTRA:
            out.append("its gzip header holds an extra field (the tool never writes one)")
        chunk = head
        try:
            while chunk:
                if d.eof:
                    after += len(chunk)
                else:
                    d.decompress(chunk, 1 << 24)
                    while d.unconsumed_tail and not d.eof:
                        d.decompress(d.unconsumed_tail, 1 << 24)
                chunk = fh.read(1 << 20)
        except zlib.error as exc:
            return out + [f"cannot be decompressed ({exc})"]
    if not d.eof:
        out.append("its gzip stream ends early")
    extra = len(d.unused_data) + after
    if extra:
        out.append(f"{extra} byte(s) after its first gzip member (a second member or appended data)")
    return out


def sqlite_problems(path: Path) -> list[str]:
    """The database file ends at its last page."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            size = con.execute("PRAGMA page_size").fetchone()[0] * con.execute("PRAGMA page_count").fetchone()[0]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return [f"not a readable database ({exc})"]
    actual = path.stat().st_size
    if actual > size:  # (smaller: pages still in a live store's write-ahead log)
        return [f"the file holds {actual - size} byte(s) past the database's last page"]
    return []


def content_problems(store, run_id: str, single_run: bool) -> list[str]:
    """Tables, metadata, run rows and unreachable artifacts. ``single_run``: the store is a report's snapshot
    (exactly the run's row and what it reaches); otherwise it is a working store (the detective's, or one given
    with --store), which also keeps what its runs computed and did not cite: only its tables and metadata are
    held to the tool's."""
    db = store.db
    out = []
    objects = {(t, n) for t, n in db.execute("SELECT type, name FROM sqlite_master")
               if not n.startswith("sqlite_autoindex_")}
    extra = sorted(f"{t} {n}" for t, n in objects - OBJECTS)
    if extra:
        out.append(f"holds {', '.join(extra)}, which the tool never writes")
    keys = {k for (k,) in db.execute("SELECT key FROM meta")}
    if keys - META_KEYS:
        out.append(f"its meta table holds {', '.join(sorted(keys - META_KEYS))}, which the tool never writes")
    runs = [(r, a) for r, a in db.execute("SELECT id, artifact FROM runs")]
    if single_run and [r for r, _ in runs] != [run_id]:
        out.append(f"holds {len(runs)} run row(s) where a report's snapshot holds its own run alone")
    if single_run:
        roots = [a for _, a in runs if a]
        reached = store.closure(roots) if roots else set()
        total = db.execute("SELECT COUNT(*) FROM artifacts").fetchone()[0]
        if total != len(reached):
            out.append(f"{total - len(reached)} artifact(s) that the run does not reach (left beside the run)")
    return out


def store_file_problems(path: Path) -> list[str]:
    """Problems of the file itself (before it is opened as a store)."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip_problems(path)
    return sqlite_problems(path)
