"""MACE: foundation models from MACE's own cache, or any local ``.model`` file.

MACE ships no weights: like ``mace_mp(model="medium")``, a foundation model not
yet cached is downloaded on first use with mace's own downloader (the registry
calls the entry's ``fetch``; never under ``--mlip-offline``), from the URL in
``weights.MACE_URLS``. A foundation model is usable when its file is where
mace-torch 0.3.16 caches it:

    $XDG_CACHE_HOME/mace/<URL basename without '.', '-'>   (default ~/.cache/mace)

e.g. ``~/.cache/mace/20231203mace128L1_epoch199model`` for ``mace-mp-0-medium``
(``mace-mpa-0`` is also found in mace's module-local ``foundations_models``
folder), or when a path is given: ``mace-mpa-0=/path/to/file.model``. Any MACE
file also loads by its path alone (``path/to/x.model``) or as ``mace=PATH``.

Models run in float32 unless the name ends in ``@float64``
(``mace-mpa-0@float64``, ``mace@float64=PATH``). MACE converts its own dtype
per call; the loader also sets torch's default dtype to the model's so that
the registry records which dtype the model runs in (its guard restores it).
"""

from __future__ import annotations

import os
from pathlib import Path

from .info import ModelInfo
from . import weights as _weights
from .entry import ModelEntry, missing_package, package_version

# name -> (mace_mp key, training data, functional, aliases), as in mace-torch 0.3.16;
# the download URLs are in .weights.MACE_URLS (one table for every family).
_MODELS = {
    "mace-mp-0-small": ("small", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0-medium": ("medium", "MPtrj", "PBE/PBE+U", ("mace-mp-0",)),
    "mace-mp-0-large": ("large", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b-small": ("small-0b", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b-medium": ("medium-0b", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b2-small": ("small-0b2", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b2-medium": ("medium-0b2", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b2-large": ("large-0b2", "MPtrj", "PBE/PBE+U", ()),
    "mace-mp-0b3-medium": ("medium-0b3", "MPtrj", "PBE/PBE+U", ("mace-mp-0b3",)),
    "mace-mpa-0": ("medium-mpa-0", "MPtrj+sAlex", "PBE/PBE+U", ("mace-mpa-0-medium",)),
    "mace-omat-0-small": ("small-omat-0", "OMat24", "PBE/PBE+U", ()),
    "mace-omat-0-medium": ("medium-omat-0", "OMat24", "PBE/PBE+U", ("mace-omat-0",)),
    "mace-matpes-pbe-0": ("mace-matpes-pbe-0", "MatPES-PBE (fine-tuned from OMat24)", "PBE", ()),
    "mace-matpes-r2scan-0": ("mace-matpes-r2scan-0", "MatPES-r2SCAN (fine-tuned from OMat24)", "r2SCAN", ()),
}
# mace-mh-0 / mace-mh-1 are multi-head models that need a head choice: not registered.

F64 = "@float64"


def cache_dir() -> Path:
    """MACE's cache folder, exactly as mace.tools.utils.get_cache_dir() computes it."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mace"


def cache_file(url: str) -> Path:
    """Where download_mace_mp_checkpoint stores ``url``: letters, digits and '_' of its basename."""
    name = "".join(c for c in os.path.basename(url) if c.isalnum() or c in "_")
    return cache_dir() / name


def _module_local(key: str) -> Path | None:
    """mace's bundled ``foundations_models/mace-mpa-0-medium.model`` (checked before the cache)."""
    if key != "medium-mpa-0":
        return None
    import importlib.util

    spec = importlib.util.find_spec("mace")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    return root / "calculators" / "foundations_models" / "mace-mpa-0-medium.model"


def _default_file(key: str, url: str) -> str | None:
    """The local file mace_mp(model=key) would use without downloading, or None."""
    for path in (_module_local(key), cache_file(url)):
        if path is not None and path.is_file():
            return str(path)
    return None


def _elements_mptrj() -> tuple[str, ...]:
    from ase.data import chemical_symbols

    # The 89 elements of MPtrj (Z 1-83, 89-94); read from the model once loaded.
    return tuple(chemical_symbols[z] for z in list(range(1, 84)) + list(range(89, 95)))


def load_file(path: str, dtype: str = "float32"):
    """A MACECalculator for a local file (never downloads), carrying ``mlip_metadata``."""
    import torch
    from ase.data import chemical_symbols
    from mace.calculators import MACECalculator

    from ..errors import ModelUnavailableError

    try:
        # A list, not a string: MACECalculator globs strings.
        calc = MACECalculator(model_paths=[str(path)], device="cpu", default_dtype=dtype)
    except ValueError as exc:
        if "head" in str(exc).lower():
            raise ModelUnavailableError(
                f"{path} is a multi-head MACE model with no 'default' head; "
                "pytest-mlip cannot pick a head yet: wrap it in a module:function factory"
            ) from exc
        raise
    # Let the registry record the dtype this model runs in (its guard restores the global).
    torch.set_default_dtype(getattr(torch, dtype))
    model = calc.models[0]
    meta = {
        "elements": tuple(chemical_symbols[int(z)] for z in model.atomic_numbers),
        "cutoff": float(calc.r_max),
        "dtype": dtype,
        "weights": str(path),
    }
    if len(calc.available_heads) > 1:
        meta["channel"] = str(calc.head)
    calc.mlip_metadata = meta
    return calc


def _foundation_loader(name: str, base: str, key: str, dtype: str):
    def load(weights):
        from ..errors import ModelUnavailableError

        path = weights or _default_file(key, _weights.MACE_URLS[base])
        if path is None:  # the registry fetches first (unless offline); never download from here
            raise ModelUnavailableError(_foundation_unavailable(name, base, key)(None))
        return load_file(path, dtype)

    return load


def _foundation_fetch(name: str, base: str, key: str):
    """Download the model once with mace's own downloader (into MACE's cache); return the file."""

    def fetch():
        from ..errors import ModelUnavailableError

        reason = missing_package("mace", "mace")
        if reason:
            raise ModelUnavailableError(reason)
        url = _weights.MACE_URLS[base]
        return _default_file(key, url) or _weights.fetch(name, url, _weights.fetch_mace, str(cache_file(url)))

    return fetch


def _file_unavailable(weights: str | None) -> str | None:
    reason = missing_package("mace", "mace")
    if reason:
        return reason
    if weights and not os.path.isfile(weights):
        return f"file not found: {weights}"
    return None


def _foundation_unavailable(name: str, base: str, key: str):
    def check(weights):
        if weights:
            return _file_unavailable(weights)
        reason = missing_package("mace", "mace")
        if reason:
            return reason
        url = _weights.MACE_URLS[base]
        if _default_file(key, url):
            return None
        return (
            f"not in MACE's cache: download {url} to {cache_file(url)}, "
            f"or pass {name}=/path/to/file.model"
        )

    return check


def _generic_unavailable(name: str):
    def check(weights):
        if not weights:
            return f"no MACE file given: pass {name}=/path/to/file.model (or give the file's path)"
        return _file_unavailable(weights)

    return check


def _file_loader(dtype: str):
    def load(weights):
        return load_file(weights, dtype)

    return load


def entries() -> list[ModelEntry]:
    version = package_version("mace-torch")
    elements = _elements_mptrj()
    out = []
    for name, (key, data, functional, aliases) in _MODELS.items():
        weights = _default_file(key, _weights.MACE_URLS[name])
        for dtype, suffix in (("float32", ""), ("float64", F64)):
            info = ModelInfo(
                name=name + suffix,
                family="mace",
                description=f"MACE foundation model {name} (mace_mp model={key!r}), {dtype}",
                elements=elements,
                cutoff=6.0,
                dtype=dtype,
                implemented_properties=("energy", "forces", "stress"),
                conservative=True,
                training_data=data,
                functional=functional,
                version=version,
                weights=weights,
            )
            out.append(
                ModelEntry(
                    info=info,
                    load=_foundation_loader(name + suffix, name, key, dtype),
                    unavailable=_foundation_unavailable(name + suffix, name, key),
                    fetch=_foundation_fetch(name + suffix, name, key),
                    aliases=tuple(a + suffix for a in aliases),
                )
            )
    for dtype, suffix in (("float32", ""), ("float64", F64)):
        info = ModelInfo(
            name="mace" + suffix,
            family="mace",
            description=f"any MACE .model file, given as mace{suffix}=PATH ({dtype})",
            elements=None,
            cutoff=None,
            dtype=dtype,
            implemented_properties=("energy", "forces", "stress"),
            conservative=True,
            version=version,
        )
        out.append(ModelEntry(info=info, load=_file_loader(dtype), unavailable=_generic_unavailable("mace" + suffix)))
    return out


def entry_from_path(path: str) -> ModelEntry:
    """A float32 entry for a MACE file given by its path alone, named ``mace:<basename>``."""
    path = os.path.expanduser(path)
    info = ModelInfo(
        name=f"mace:{os.path.basename(path)}",
        family="mace",
        description=f"MACE model file {path}",
        elements=None,  # read from the model when it loads
        cutoff=None,
        dtype="float32",
        implemented_properties=("energy", "forces", "stress"),
        conservative=True,
        version=package_version("mace-torch"),
        weights=path,
    )
    return ModelEntry(info=info, load=_file_loader("float32"), unavailable=_file_unavailable, weights=path)
