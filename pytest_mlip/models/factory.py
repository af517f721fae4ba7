"""Any ASE calculator factory given as ``module:function``."""

from __future__ import annotations

import importlib
import sys

from ..errors import ModelUnavailableError, UnknownModelError
from .info import ModelInfo
from .entry import ModelEntry


#: folders a factory's module is also looked up in, like pytest's own imports: the rootdir and the
#: folders of the ``pythonpath`` ini option (the plugin sets them at configure time)
SEARCH_PATHS: list[str] = []


def project_paths(folder) -> list[str]:
    """What pytest run in ``folder`` would put on ``sys.path`` for a factory: the folder and the ``pythonpath``
    entries of its ini file (pytest.ini, pyproject.toml's [tool.pytest.ini_options], tox.ini or setup.cfg), for
    the commands that run outside pytest (detect, judge)."""
    import configparser
    import tomllib
    from pathlib import Path

    folder = Path(folder).resolve()
    entries: list[str] = []
    for name in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            if name == "pyproject.toml":
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
                if "ini_options" not in table:
                    continue
                value = table["ini_options"].get("pythonpath", [])
                entries = [value] if isinstance(value, str) else [str(v) for v in value]
            else:
                parser = configparser.ConfigParser(interpolation=None)
                parser.read_string(path.read_text(encoding="utf-8"))
                section = "tool:pytest" if name == "setup.cfg" else "pytest"
                if not parser.has_section(section):
                    continue
                entries = parser.get(section, "pythonpath", fallback="").split()
        except (OSError, ValueError, configparser.Error, tomllib.TOMLDecodeError):
            continue  # an unreadable ini file adds nothing; pytest itself reports it when it runs
        break  # pytest reads the first ini file that configures it
    return list(dict.fromkeys([str(folder)] + [str((folder / e).resolve()) for e in entries]))


def _import(module_name: str):
    """Import ``module_name``; when it is not found, again with :data:`SEARCH_PATHS` on ``sys.path``."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.split(".")[0]
        extra = [p for p in SEARCH_PATHS if p not in sys.path]
        if exc.name not in (top, module_name) or not extra:
            raise
        sys.path[:0] = extra  # kept, as pytest's prepend import mode keeps the rootdir: lazy imports need it
        importlib.invalidate_caches()
        return importlib.import_module(module_name)


def entry_from_factory(spec: str) -> ModelEntry:
    module_name, _, attr = spec.partition(":")
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        dotted = module_name.removesuffix(".py").replace("\\", "/").strip("./").replace("/", ".")
        raise UnknownModelError(f"{spec!r} names a file path, not a module; give the module by its import name, "
                                f"like --mlip={dotted}:{attr} (a module in the rootdir or on the ini's pythonpath)")
    try:
        module = _import(module_name)
    except ImportError as exc:
        inner = getattr(exc, "name", None)
        if inner and inner not in (module_name, module_name.split(".")[0]) and not module_name.startswith(inner + "."):
            raise UnknownModelError(f"module {module_name!r} of factory {spec!r} imports {inner!r}, which is not "
                                    f"installed in this environment ({exc}); install the package that provides it"
                                    ) from exc
        where = ", ".join(SEARCH_PATHS) or "sys.path"
        raise UnknownModelError(
            f"cannot import module {module_name!r} for factory {spec!r} ({exc}); "
            f"looked in the installed packages and {where}: install it, or set pythonpath in the pytest ini file"
        ) from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the module itself is broken (SyntaxError, sys.exit at import): the user's to fix
        raise UnknownModelError(f"cannot import module {module_name!r} for factory {spec!r}: importing it raised "
                                f"{type(exc).__name__}: {exc}; fix the module") from exc
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            where = getattr(module, "__file__", None) or "a namespace package"
            raise UnknownModelError(f"module {module_name!r} ({where}) has no attribute {attr!r} (factory {spec!r}); "
                                    "name a function that module defines, or rename your module if that file is not "
                                    "yours")
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
