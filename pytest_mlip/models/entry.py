"""The registry's vocabulary: what a family adapter module declares (:class:`ModelEntry`) and its helpers.

The family modules (``sevennet``, ``chgnet``, ...) import this module only;
the registry (:mod:`.registry`) imports them lazily, so there is no circle.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import Callable

from .info import ModelInfo


@dataclass(frozen=True)
class ModelEntry:
    """A registered model: static metadata plus how to load it.

    ``load(weights)`` returns an ASE calculator; ``weights`` is an explicit path
    or None for the default location. ``unavailable(weights)`` returns None when
    the model can load here, else a one-line reason that names the fix.
    ``fetch()``, where the family downloads its weights, puts the default
    weights into the package's own cache with the package's own downloader
    and returns the file (see :mod:`.weights`); :func:`make_available` calls it.
    """

    info: ModelInfo
    load: Callable[[str | None], object]
    unavailable: Callable[[str | None], str | None] = lambda weights: None
    weights: str | None = None
    aliases: tuple[str, ...] = ()
    fetch: Callable[[], str] | None = None

    @property
    def fetchable(self) -> bool:
        """Can the default weights be downloaded on first use (no explicit path given)?"""
        return self.fetch is not None and self.weights is None

    @property
    def name(self) -> str:
        return self.info.name

    def with_weights(self, path: str) -> "ModelEntry":
        return replace(self, weights=path, info=self.info.model_copy(update={"weights": path}))


def missing_package(package: str, extra: str) -> str | None:
    """Reason string when ``package`` is not importable, else None."""
    if importlib.util.find_spec(package) is None:
        return f"the '{package}' package is not installed: pip install 'pytest-mlip[{extra}]'"
    return None


def package_version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None
