"""Artifacts: one stored result (a model call or a number derived from calls).

An artifact bundles a value with how it was produced (the fixed routine and
its parameters), why (reason) and in what context (contract, probe, item), the
artifacts it was derived from (parents), the model identity and the code
version. Its id is a hash of everything that determines the value, so the
same result always gets the same id (duplicates from parallel workers or
re-runs collapse) and an edited value no longer matches its id.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

#: hex digits of an artifact id (128 bits)
ID_LENGTH = 32
#: hex digits shown next to a number in reports; the judge resolves any unique prefix of at least 6
SHORT_ID = 12

#: kinds whose value is computed from other artifacts: they must cite parents
DERIVED_KINDS = ("probe", "violation", "normalized", "max_normalized", "observable", "series", "verdict", "run")


def _default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def canonical(obj) -> str:
    """Deterministic JSON (sorted keys, exact float repr) used for hashing and storage."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_default)


@dataclass(frozen=True)
class ModelIdentity:
    """What makes two results come from 'the same model': name, package version, weights hash."""

    name: str
    version: str | None = None
    weights_hash: str | None = None

    @classmethod
    def of(cls, loaded) -> "ModelIdentity":
        """Identity of a :class:`~pytest_mlip.models.registry.LoadedModel`."""
        return cls(loaded.info.name, loaded.info.version, getattr(loaded, "weights_hash", None))

    def as_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "weights_hash": self.weights_hash}

    @classmethod
    def from_dict(cls, d: dict | None) -> "ModelIdentity | None":
        if not d:
            return None
        return cls(d["name"], d.get("version"), d.get("weights_hash"))


@dataclass
class Artifact:
    kind: str
    value: Any
    routine: str
    params: dict
    parents: tuple[str, ...]
    model: ModelIdentity | None
    code_version: str
    reason: str = ""
    context: dict = field(default_factory=dict)
    payload: bytes | None = None  # optional evidence (e.g. the configuration); not part of the id
    run: str | None = None
    created: float | None = None
    id: str = field(default="", compare=False)

    def __post_init__(self):
        self.parents = tuple(sorted(set(self.parents)))
        if not self.id:
            self.id = self.content_id()

    def content(self) -> dict:
        """The fields the id is computed from."""
        return {
            "kind": self.kind,
            "value": self.value,
            "routine": self.routine,
            "params": self.params,
            "parents": list(self.parents),
            "model": self.model.as_dict() if self.model else None,
            "code_version": self.code_version,
        }

    def content_id(self) -> str:
        return hashlib.sha256(canonical(self.content()).encode()).hexdigest()[:ID_LENGTH]

    def verifies(self) -> bool:
        """Does the stored id still match the stored content (no edit since it was written)?"""
        return self.id == self.content_id()

    @property
    def short(self) -> str:
        return self.id[:SHORT_ID]


def finite_or_str(x: float | None):
    """JSON-safe number: non-finite floats become the strings 'inf', '-inf', 'nan'."""
    if x is None or not isinstance(x, float) or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def from_finite_or_str(x):
    if isinstance(x, str) and x in ("inf", "-inf", "nan"):
        return float(x)
    return x


# --- code version ------------------------------------------------------------------------------------------------

_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=10,
                             env={**os.environ, **_GIT_ENV})
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode(errors="replace") if out.returncode == 0 else None


@lru_cache(maxsize=1)
def code_version() -> str:
    """``pytest_mlip.__version__`` plus ``git describe`` of the source tree, if it is a checkout.

    Uncommitted changes to the package or the built-in contracts add a short
    hash of the diff (and of untracked files there), so results of edited code
    are never mistaken for results of the committed code. Only read-only git
    commands run (GIT_OPTIONAL_LOCKS=0: the index is never rewritten).
    """
    from .. import __version__

    package = Path(__file__).resolve().parent.parent
    root = _git(package, "rev-parse", "--show-toplevel")
    if not root:
        return __version__
    root = Path(root.strip())
    describe = (_git(root, "describe", "--always", "--tags") or "").strip()
    if not describe:
        return __version__
    paths = [str(p.relative_to(root)) for p in (package, root / "contracts") if p.exists()]
    diff = _git(root, "diff", "HEAD", "--no-ext-diff", "--", *paths) or ""
    untracked = (_git(root, "ls-files", "--others", "--exclude-standard", "--", *paths) or "").split()
    if not diff and not untracked:
        return f"{__version__}+g{describe}"
    h = hashlib.sha256(diff.encode())
    for rel in sorted(untracked):
        h.update(rel.encode())
        try:
            h.update((root / rel).read_bytes())
        except OSError:
            pass
    return f"{__version__}+g{describe}.dirty-{h.hexdigest()[:8]}"
