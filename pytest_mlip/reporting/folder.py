"""Who owns the files of a report folder: pytest-mlip replaces and removes only files it wrote itself.

The marker ``.pytest-mlip-report`` is a manifest: its first line is the marker text, then one line per file the
run wrote: its SHA-256 and its path in the folder. A file counts as ours only while it is a plain file (not a
link) at a listed path holding listed bytes. A file the user put in, edited or swapped, and a file that a copied
marker lists but that holds other bytes, is the user's: it is never overwritten or removed; a run that would have
to overwrite it stops with a usage error naming it. Links are never followed: a link where the report writes
(``figures``, ``worst`` or a page) is a usage error naming it.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from ..errors import MlipError

MARKER = ".pytest-mlip-report"
HEAD = "written by pytest-mlip: the files listed below are replaced on every --mlip-report run\n"
#: the pages and the snapshot at the top of the folder, and the sub-folders the report writes files into
PAGES = ("report.json", "report.md", "report.html", "provenance.sqlite")
SUBFOLDERS = ("figures", "worst")
_LINE = re.compile(r"^([0-9a-f]{64})  (\S.*)$")


class FolderError(MlipError):
    """A report folder holds something of the user's where the report would write."""


def special_file(path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (a named pipe, a device, a
    socket: a held-out case replaced a FIFO and /dev/full with regular files), else None."""
    import stat

    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file")


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_report_path(rel: str) -> bool:
    """A path the report may write: a page, or a file below figures/ or worst/ (never ``..``, never absolute).
    A manifest line naming anything else is ignored: a copied or forged marker grants nothing outside these."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel:
        return False
    return (len(parts) == 1 and rel in PAGES) or (len(parts) > 1 and parts[0] in SUBFOLDERS)


def read_manifest(folder: Path) -> dict[str, set[str]] | None:
    """path -> the hashes the marker lists for it; None when the folder holds no marker in pytest-mlip's form (no
    file, a link, a hand-made or empty file). An older marker (its text alone) lists nothing: it owns no file."""
    marker = Path(folder) / MARKER
    try:
        if marker.is_symlink() or not marker.is_file():
            return None
        text = marker.read_text(errors="replace")
    except OSError:
        return None
    old = "written by pytest-mlip: this folder is replaced on every --mlip-report run\n"
    if text == old:
        return {}
    if not text.startswith(HEAD):
        return None
    out: dict[str, set[str]] = {}
    for line in text[len(HEAD):].splitlines():
        m = _LINE.match(line)
        if m and is_report_path(m.group(2)):
            out.setdefault(m.group(2), set()).add(m.group(1))
    return out


def owned(folder: Path, rel: str, manifest: dict[str, set[str]]) -> bool:
    """The file at ``rel`` is a plain file holding bytes the marker lists for that path (and no folder on the way
    is a link: a listed path must not lead out of the folder)."""
    p = Path(folder) / rel
    if rel not in manifest or any((Path(folder) / q).is_symlink() for q in _parents(rel)):
        return False
    try:
        return not p.is_symlink() and p.is_file() and sha256_of(p) in manifest[rel]
    except OSError:
        return False


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _fix(folder: Path, option: str) -> str:
    return f"move it out of {folder}, or pass a new folder with {option}=DIR"


def first_conflict(folder: Path, manifest: dict[str, set[str]], option: str = "--mlip-report") -> str | None:
    """The first thing in the folder that a report run would overwrite or remove but is not ours, in one line; None
    when there is none. Files elsewhere in the folder (the user's notes) are left alone and not named."""
    folder = Path(folder)
    for name in PAGES:
        p = folder / name
        if p.is_symlink():
            return f"{p} is a symbolic link; pytest-mlip never writes through links: remove the link, or " \
                   f"pass a new folder with {option}=DIR"
        if p.exists() and not owned(folder, name, manifest):
            return f"{p} was not written by pytest-mlip (or was changed since); the report would overwrite it: " \
                   + _fix(folder, option)
    for sub in SUBFOLDERS:
        problem = _subfolder_conflict(folder, sub, manifest, option)
        if problem:
            return problem
    return None


def _subfolder_conflict(folder: Path, sub: str, manifest: dict[str, set[str]], option: str) -> str | None:
    """figures/ and worst/ hold only the report's files: a link or a file of the user's in them is named (the
    report replaces their content, and a link would take the writes outside the folder)."""
    top = folder / sub
    if top.is_symlink():
        return f"{top} is a symbolic link; pytest-mlip never writes through links: remove the link, or pass a " \
               f"new folder with {option}=DIR"
    if not top.exists():
        return None
    if not top.is_dir():
        return f"{top} is a file of yours where the report writes its {sub} folder: " + _fix(folder, option)
    for here, dirs, files in os.walk(top, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(here) / name
            rel = p.relative_to(folder).as_posix()
            if p.is_symlink():
                return f"{p} is a symbolic link inside the report's {sub} folder; pytest-mlip never follows links: " \
                       f"remove it, or pass a new folder with {option}=DIR"
            if name in files and not owned(folder, rel, manifest):
                return f"{p} was not written by pytest-mlip (or was changed since); the report replaces its {sub} " \
                       f"folder: " + _fix(folder, option)
    return None


def _write_marker(folder: Path, entries: list[tuple[str, str]]) -> None:
    """The marker, written atomically (a run stopped half-way leaves the old or the new list, never a torn one)."""
    text = HEAD + "".join(f"{digest}  {rel}\n" for rel, digest in sorted(set(entries)))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".mlip-marker-")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o666 & ~_umask())
    os.replace(tmp, folder / MARKER)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def staged_files(stage: Path) -> dict[str, str]:
    """Every file of a staged report by relative path, with its SHA-256."""
    out = {}
    for here, _, files in os.walk(stage):
        for name in files:
            p = Path(here) / name
            out[p.relative_to(stage).as_posix()] = sha256_of(p)
    return out


def install(stage: Path, folder: Path) -> None:
    """Move a staged report into ``folder``: the staged files replace ours, our files the new report no longer has
    are removed, and the marker then lists exactly the new files. Before any file moves, the marker lists the old
    and the new files together, so a run stopped half-way still owns every file it may have left behind."""
    folder = Path(folder)
    new = staged_files(stage)
    if not folder.exists():  # a new folder: the staged one becomes it, marker included, in one rename
        _write_marker(stage, list(new.items()))
        os.replace(stage, folder)
        return
    manifest = read_manifest(folder)
    if manifest is None and any(e.name != stage.name for e in folder.iterdir()):
        raise FolderError(f"{folder} is not empty and was not written by pytest-mlip (no {MARKER} file with "
                          "pytest-mlip's text); pass a new or empty folder, e.g. --mlip-report=mlip-report")
    manifest = manifest or {}
    problem = first_conflict(folder, manifest)
    if problem:  # the folder changed during the run: checked again just before writing
        raise FolderError(problem)
    old = [(rel, d) for rel, ds in manifest.items() for d in ds if owned(folder, rel, {rel: {d}})]
    _write_marker(folder, old + list(new.items()))
    for rel in sorted(new):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / rel, folder / rel)
    for rel, _ in old:
        if rel not in new and owned(folder, rel, manifest):
            (folder / rel).unlink()
    _prune_empty(folder)
    _write_marker(folder, list(new.items()))


def _prune_empty(folder: Path) -> None:
    """Remove figures/, worst/ and their sub-folders where our removals left them empty (deepest first; rmdir
    removes only an empty folder, so nothing is lost)."""
    for sub in SUBFOLDERS:
        if (folder / sub).is_symlink():
            continue
        for here, _, _ in sorted(os.walk(folder / sub, followlinks=False), reverse=True):
            try:
                os.rmdir(here)
            except OSError:
                pass


def record_written(folder: Path, manifest: dict[str, set[str]], rels: list[str]) -> None:
    """Add files just written in place (``pytest-mlip render``) to the marker, the others it lists kept as they are
    (an edited report.json stays the user's: its notes are not replaced by a later run)."""
    kept = [(rel, d) for rel, ds in manifest.items() if rel not in rels for d in ds]
    _write_marker(folder, kept + [(rel, sha256_of(folder / rel)) for rel in rels])


def not_plain_entry(folder: Path, only: tuple[str, ...] | None = None) -> str:
    """The first entry under ``folder`` (among the top-level names ``only``, when given) that is a symbolic link or a
    special file (FIFO, device, socket), named, or "". Output folders pytest-mlip writes into (detect's --output,
    --mlip-output) must hold none: a link swapped in for a file it writes had the user's file it pointed to
    overwritten (held-out round 11)."""
    import stat

    if folder.is_symlink() or not folder.is_dir():
        return ""
    tops = [folder / name for name in only] if only is not None else sorted(folder.iterdir())
    for top in tops:
        for path in [top] + (sorted(p for p in top.rglob("*")) if top.is_dir() and not top.is_symlink() else []):
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode):
                return f"a symbolic link, {path}"
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return f"a special file (a pipe, device or socket), {path}"
    return ""
