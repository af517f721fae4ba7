"""What a model may not change of the process: the functions pytest-mlip's own checks and reports call.

A model's code runs in pytest-mlip's process. One that replaced ``numpy.isfinite`` (always True) passed NaN, one that
replaced ``numpy.linalg.norm`` hid a net force (held-out rounds 13 and 14), one that replaced ``builtins.max`` or
``json.dumps`` during a call crashed the report (round 15). A :class:`SharedFunctions` snapshot names what was
replaced and puts it back.
"""

from __future__ import annotations

import contextlib
import importlib

#: the modules and classes whose public names a model may not rebind ("module:Class" for a class's attributes)
SHARED_MODULES = ("builtins", "math", "numpy", "numpy.linalg", "json", "os", "os.path", "shutil", "hashlib",
                  "sqlite3", "pathlib:Path", "ase.atoms:Atoms", "ase.geometry", "ase.calculators.calculator:Calculator")

_MISSING = object()


def _space(path: str):
    module, _, cls = path.partition(":")
    space = importlib.import_module(module)
    return getattr(space, cls) if cls else space


class SharedFunctions:
    """The objects bound to every public name of :data:`SHARED_MODULES` when it was taken. Names that appear later
    are not compared (lazy submodules); private names are not either (``builtins._`` is the last value an
    interactive session printed)."""

    def __init__(self):
        self.names = {path: {k: v for k, v in vars(_space(path)).items() if not k.startswith("_")}
                      for path in SHARED_MODULES}
        # (live namespace, name, object): one flat loop per call (the namespaces are the modules' own, so a later
        # rebinding shows in them)
        self._flat = [(vars(_space(path)), path, k, v) for path, names in self.names.items() for k, v in names.items()]
        self.process = process_state()

    def replaced(self, process: dict | None = None) -> list[str]:
        """``module.name`` of each name bound to another object now (or deleted), in a stable order, then what
        changed of the process state the run depends on since ``process`` (:func:`process_state` before a call;
        by default when this snapshot was taken): the working directory, the recursion limit, the standard
        streams (held-out round 16 lowered the limit and closed sys.stdout in a call)."""
        before, now = process or self.process, process_state()
        return [f"{path.replace(':', '.')}.{k}" for space, path, k, v in self._flat
                if space.get(k, _MISSING) is not v] + [PROCESS_NAMES[k] for k in before if now[k] != before[k]]

    def restore(self, process: dict | None = None) -> list[str]:
        """Put back what was replaced (a closed stream cannot be reopened: it is replaced by a fresh one on the
        same file descriptor); returns its names."""
        import os
        import sys

        process = process or self.process
        replaced = self.replaced(process)
        for name in replaced:
            if name in PROCESS_NAMES.values():
                continue
            head, _, key = name.rpartition(".")
            path = next(p for p in self.names if p.replace(":", ".") == head)
            setattr(_space(path), key, self.names[path][key])
        cwd, limit, streams = process["cwd"], process["limit"], process["streams"]
        try:
            if cwd is not None and os.getcwd() != cwd:
                os.chdir(cwd)
        except OSError:
            pass
        if sys.getrecursionlimit() != limit:
            sys.setrecursionlimit(limit)
        kept = []
        for stream, fallback in zip(streams[0], (sys.__stdin__, sys.__stdout__, sys.__stderr__)):
            kept.append(stream if not getattr(stream, "closed", False) else fallback)
        sys.stdin, sys.stdout, sys.stderr = kept
        return replaced


#: what :func:`process_state` compares, as a replaced name says it
PROCESS_NAMES = {"cwd": "the working directory (os.chdir)", "limit": "the recursion limit (sys.setrecursionlimit)",
                 "streams": "the standard streams (sys.stdin, sys.stdout, sys.stderr: replaced or closed)"}


def process_state() -> dict:
    """What a call may not change of the process (compared before and after it)."""
    import os
    import sys

    try:
        cwd = os.getcwd()
    except OSError:  # the folder was removed
        cwd = None
    streams = (sys.stdin, sys.stdout, sys.stderr)
    return {"cwd": cwd, "limit": sys.getrecursionlimit(),
            "streams": (streams, tuple(bool(getattr(s, "closed", False)) for s in streams))}


def named(replaced: list[str], most: int = 3) -> str:
    return ", ".join(replaced[:most]) + (f" and {len(replaced) - most} more" if len(replaced) > most else "")


class _Unclosable:
    """A standard stream as a model call sees it: everything goes to the real stream, except ``close()``, which is
    only noted (held-out round 16: a model that closed sys.stdout, pytest's capture, broke every later item)."""

    def __init__(self, stream):
        self._stream = stream
        self._closed_by_model = False

    def close(self):
        self._closed_by_model = True

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def __iter__(self):
        return iter(self._stream)


@contextlib.contextmanager
def guarded_call(shared: SharedFunctions, changed: list):
    """Around one model call: ``changed`` receives what the call changed (put back) of :data:`SHARED_MODULES` and
    of the process state, and ``sys.<stream> (closed)`` for a standard stream it tried to close."""
    import os
    import sys

    pid = os.getpid()
    before = process_state()
    names = ("stdin", "stdout", "stderr")
    real = [getattr(sys, n) for n in names]
    proxies = [_Unclosable(s) if s is not None else None for s in real]
    for n, p in zip(names, proxies):
        if p is not None:
            setattr(sys, n, p)
    try:
        yield
    finally:
        if os.getpid() != pid:  # a process the model forked came back from the call: it must not run the session on
            print("pytest-mlip: a process the model forked during a call returned into the run; it was ended "
                  "(a model's child process must end itself)", file=sys.__stderr__, flush=True)
            os._exit(0)  # held-out round 17: the child ran the rest of the items, a second run in the store
        for n, s, p in zip(names, real, proxies):
            if p is not None and getattr(sys, n) is p:
                setattr(sys, n, s)
        changed += shared.restore(before)
        changed += [f"sys.{n} (closed)" for n, p in zip(names, proxies) if p is not None and p._closed_by_model]
