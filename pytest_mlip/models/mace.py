"""MACE: foundation models from MACE's own cache, or any local ``.model`` file.

MACE ships no weights and ``mace_mp(model="medium")`` downloads on first use,
so nothing here calls it with a name. A foundation model is usable when its
file is already where mace-torch 0.3.16 caches it:

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
from .registry import ModelEntry, missing_package, package_version

_GH = "https://github.com/ACEsuit"
# name -> (mace_mp key, download URL, training data, functional, aliases), as in
# mace.calculators.foundations_models.mace_mp_urls of mace-torch 0.3.16.
_MODELS = {
    "mace-mp-0-small": (
        "small",
        f"{_GH}/mace-mp/releases/download/mace_mp_0/2023-12-10-mace-128-L0_energy_epoch-249.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0-medium": (
        "medium",
        f"{_GH}/mace-mp/releases/download/mace_mp_0/2023-12-03-mace-128-L1_epoch-199.model",
        "MPtrj", "PBE/PBE+U", ("mace-mp-0",),
    ),
    "mace-mp-0-large": (
        "large",
        f"{_GH}/mace-mp/releases/download/mace_mp_0/MACE_MPtrj_2022.9.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b-small": (
        "small-0b",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b/mace_agnesi_small.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b-medium": (
        "medium-0b",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b/mace_agnesi_medium.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b2-small": (
        "small-0b2",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-small-density-agnesi-stress.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b2-medium": (
        "medium-0b2",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-medium-density-agnesi-stress.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b2-large": (
        "large-0b2",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-large-density-agnesi-stress.model",
        "MPtrj", "PBE/PBE+U", (),
    ),
    "mace-mp-0b3-medium": (
        "medium-0b3",
        f"{_GH}/mace-mp/releases/download/mace_mp_0b3/mace-mp-0b3-medium.model",
        "MPtrj", "PBE/PBE+U", ("mace-mp-0b3",),
    ),
    "mace-mpa-0": (
        "medium-mpa-0",
        f"{_GH}/mace-mp/releases/download/mace_mpa_0/mace-mpa-0-medium.model",
        "MPtrj+sAlex", "PBE/PBE+U", ("mace-mpa-0-medium",),
    ),
    "mace-omat-0-small": (
        "small-omat-0",
        f"{_GH}/mace-mp/releases/download/mace_omat_0/mace-omat-0-small.model",
        "OMat24", "PBE/PBE+U", (),
    ),
    "mace-omat-0-medium": (
        "medium-omat-0",
        f"{_GH}/mace-mp/releases/download/mace_omat_0/mace-omat-0-medium.model",
        "OMat24", "PBE/PBE+U", ("mace-omat-0",),
    ),
    "mace-matpes-pbe-0": (
        "mace-matpes-pbe-0",
        f"{_GH}/mace-foundations/releases/download/mace_matpes_0/MACE-matpes-pbe-omat-ft.model",
        "MatPES-PBE (fine-tuned from OMat24)", "PBE", (),
    ),
    "mace-matpes-r2scan-0": (
        "mace-matpes-r2scan-0",
        f"{_GH}/mace-foundations/releases/download/mace_matpes_0/MACE-matpes-r2scan-omat-ft.model",
        "MatPES-r2SCAN (fine-tuned from OMat24)", "r2SCAN", (),
    ),
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


def _foundation_loader(name: str, key: str, url: str, dtype: str):
    def load(weights):
        from ..errors import ModelUnavailableError

        path = weights or _default_file(key, url)
        if path is None:  # never fall back to mace_mp's download
            raise ModelUnavailableError(_foundation_unavailable(name, key, url)(None))
        return load_file(path, dtype)

    return load


def _file_unavailable(weights: str | None) -> str | None:
    reason = missing_package("mace", "mace")
    if reason:
        return reason
    if weights and not os.path.isfile(weights):
        return f"file not found: {weights}"
    return None


def _foundation_unavailable(name: str, key: str, url: str):
    def check(weights):
        if weights:
            return _file_unavailable(weights)
        reason = missing_package("mace", "mace")
        if reason:
            return reason
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
    for name, (key, url, data, functional, aliases) in _MODELS.items():
        weights = _default_file(key, url)
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
                    load=_foundation_loader(name + suffix, key, url, dtype),
                    unavailable=_foundation_unavailable(name + suffix, key, url),
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
