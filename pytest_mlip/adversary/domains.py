"""Admissible input domains Z: the base every law's typed domain derives from.

A law's domain lives in its own folder (``pytest_mlip/laws/<law>/domain.py``):
plain pydantic data a contract file states in its ``adversary`` field (or
leaves out: the law's objective then derives Z from the contract's own
sampled setting). The search (``pytest_mlip.adversary.search``) only ever
evaluates points of Z: box bounds by projection, other constraints by a
retraction onto Z. The old names (``DimerDomain``...) are still importable
from here for code written against an earlier layout.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Domain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def __getattr__(name):
    """Domain classes that lived here before the laws got their own folders, found in the laws' ``domain.py``."""
    import importlib.util

    from ..laws import LAWS

    for law in LAWS.values():
        module = f"{law.package}.domain"
        if importlib.util.find_spec(module) is not None:
            found = getattr(importlib.import_module(module), name, None)
            if found is not None:
                return found
    raise AttributeError(name)


__all__ = ["_Domain"]
