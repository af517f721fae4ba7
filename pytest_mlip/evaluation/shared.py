"""What a model may not change of the process: the functions pytest-mlip's own checks and reports call.

A model's code runs in pytest-mlip's process. One that replaced ``numpy.isfinite`` (always True) passed NaN, one that
replaced ``numpy.linalg.norm`` hid a net force (held-out rounds 13 and 14), one that replaced ``builtins.max`` or
``json.dumps`` during a call crashed the report (round 15). A :class:`SharedFunctions` snapshot names what was
replaced and puts it back.
"""

from __future__ import annotations

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

    def replaced(self) -> list[str]:
        """``module.name`` of each name bound to another object now (or deleted), in a stable order."""
        return [f"{path.replace(':', '.')}.{k}" for space, path, k, v in self._flat
                if space.get(k, _MISSING) is not v]

    def restore(self) -> list[str]:
        """Put back what was replaced; returns its names."""
        replaced = self.replaced()
        for name in replaced:
            head, _, key = name.rpartition(".")
            path = next(p for p in self.names if p.replace(":", ".") == head)
            setattr(_space(path), key, self.names[path][key])
        return replaced


def named(replaced: list[str], most: int = 3) -> str:
    return ", ".join(replaced[:most]) + (f" and {len(replaced) - most} more" if len(replaced) > most else "")
