"""Any ASE calculator factory given as ``module:function``."""

from __future__ import annotations

import importlib

from ..errors import ModelUnavailableError, UnknownModelError
from .info import ModelInfo
from .registry import ModelEntry


def entry_from_factory(spec: str) -> ModelEntry:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownModelError(
            f"cannot import module {module_name!r} for factory {spec!r} ({exc}); "
            "check the module is importable (installed or on sys.path)"
        ) from exc
    except Exception as exc:  # the module itself is broken (SyntaxError, an error at import): the user's to fix
        raise UnknownModelError(f"cannot import module {module_name!r} for factory {spec!r}: importing it raised "
                                f"{type(exc).__name__}: {exc}; fix the module") from exc
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise UnknownModelError(f"module {module_name!r} has no attribute {attr!r} (factory {spec!r})")
    if not callable(factory):
        raise UnknownModelError(f"{spec!r} is not callable; give a function that returns an ASE calculator")

    def load(weights):
        calc = factory()
        from ase.calculators.calculator import BaseCalculator

        if not isinstance(calc, BaseCalculator):
            raise ModelUnavailableError(
                f"factory {spec!r} returned {type(calc).__name__}, not an ASE calculator; "
                "return an ase.calculators.calculator.Calculator"
            )
        return calc

    info = ModelInfo(
        name=spec,
        family="factory",
        description=(factory.__doc__ or "").strip().splitlines()[0] if factory.__doc__ else f"factory {spec}",
        dtype="unknown",
        conservative=None,
    )
    return ModelEntry(info=info, load=load)
