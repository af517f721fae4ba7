"""Orb (orb-models): pretrained forcefields, fetched on first use or from a local file.

Orb ships no weights and its pretrained constructors fetch them through
``cached_path``. The registry calls the entry's ``fetch`` (cached_path on the
URL in ``weights.ORB_URLS``, into cached_path's cache) when nothing local is
found and ``--mlip-offline`` is not set; the constructor itself is only ever
given a local file. A model is usable when its checkpoint is found, in this order:

1. an explicit path: ``orb-v3-conservative-inf-omat=/path/to/file.ckpt``;
2. ``$ORB_WEIGHTS_DIR/<URL basename>``, e.g.
   ``$ORB_WEIGHTS_DIR/orb-v3-conservative-inf-omat-20250404.ckpt``;
3. the copy ``cached_path`` already downloaded: ``<cache>/<sha256(URL)>[.<sha256(etag)>]``
   with ``<cache>`` = ``$CACHED_PATH_CACHE_ROOT`` or ``~/.cache/cached_path``
   (the newest match, as ``cached_path.util.find_latest_cached`` picks it).

Loading uses the pretrained constructor with ``weights_path=<local file>``,
``device="cpu"``, ``compile=False`` (compiling made the first call take ~50 s on
CPU). The constructor sets torch's float32 matmul precision to "high" for the
whole process; the loader restores the previous setting so other models keep
their numerics. The omol models (which need charge and spin in ``atoms.info``)
and the separate D3/D4 correction models are not registered.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .info import ModelInfo
from . import weights as _weights
from .entry import ModelEntry, missing_package, package_version

# name (= key of orb_models.forcefield.pretrained.ORB_PRETRAINED_MODELS) ->
# (conservative, training data, functional); the weights URLs are in .weights.ORB_URLS.
_MODELS = {
    "orb-v3-conservative-inf-omat": (True, "OMat24", "PBE/PBE+U"),
    "orb-v3-conservative-20-omat": (True, "OMat24", "PBE/PBE+U"),
    "orb-v3-direct-inf-omat": (False, "OMat24", "PBE/PBE+U"),
    "orb-v3-direct-20-omat": (False, "OMat24", "PBE/PBE+U"),
    "orb-v3-conservative-inf-mpa": (True, "MPtrj+Alex", "PBE/PBE+U"),
    "orb-v3-conservative-20-mpa": (True, "MPtrj+Alex", "PBE/PBE+U"),
    "orb-v3-direct-inf-mpa": (False, "MPtrj+Alex", "PBE/PBE+U"),
    "orb-v3-direct-20-mpa": (False, "MPtrj+Alex", "PBE/PBE+U"),
    "orb-v2": (False, "MPtrj+Alex", "PBE/PBE+U"),
    "orb-mptraj-only-v2": (False, "MPtrj", "PBE/PBE+U"),
    "orb-d3-v2": (False, "MPtrj+Alex", "PBE/PBE+U + D3"),
    "orb-d3-sm-v2": (False, "MPtrj+Alex", "PBE/PBE+U + D3"),
    "orb-d3-xs-v2": (False, "MPtrj+Alex", "PBE/PBE+U + D3"),
}

ENV_DIR = "ORB_WEIGHTS_DIR"


def cached_path_dir() -> Path:
    """The folder cached_path downloads into (its live setting once imported)."""
    module = sys.modules.get("cached_path.common")
    if module is not None:
        return Path(module.get_cache_dir())
    return Path(os.getenv("CACHED_PATH_CACHE_ROOT", Path.home() / ".cache" / "cached_path"))


def _cached_copy(url: str) -> Path | None:
    """cached_path's copy of ``url`` (newest first), found without touching the network."""
    from hashlib import sha256

    folder = cached_path_dir()
    if not folder.is_dir():
        return None
    stem = sha256(url.encode("utf-8")).hexdigest()
    found = [
        p
        for p in folder.glob(f"{stem}*")
        if p.is_file() and p.suffix not in {".json", ".lock"} and not p.name.endswith("-extracted")
    ]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def local_weights(url: str, weights: str | None = None) -> str | None:
    """The local checkpoint to load: explicit path, $ORB_WEIGHTS_DIR, or cached_path's copy."""
    if weights:
        return weights if os.path.isfile(weights) else None
    folder = os.environ.get(ENV_DIR)
    if folder:
        path = Path(folder).expanduser() / os.path.basename(url)
        if path.is_file():
            return str(path)
    cached = _cached_copy(url)
    return str(cached) if cached else None


def _unavailable(name: str):
    def check(weights):
        url = _weights.ORB_URLS[name]
        reason = missing_package("orb_models", "orb")
        if reason:
            return reason
        if weights:
            return None if os.path.isfile(weights) else f"file not found: {weights}"
        if local_weights(url):
            return None
        base = os.path.basename(url)
        return (
            f"weights not found locally (${ENV_DIR}/{base}, or cached_path's cache {cached_path_dir()}); "
            f"download {url} and pass {name}=/path/to/{base} or set {ENV_DIR} to its folder"
        )

    return check


def _fetch(name: str):
    """Download the checkpoint once with cached_path, as orb-models does, into its cache."""

    def fetch():
        from ..errors import ModelUnavailableError

        reason = missing_package("orb_models", "orb")
        if reason:
            raise ModelUnavailableError(reason)
        url = _weights.ORB_URLS[name]
        return local_weights(url) or _weights.fetch(name, url, _weights.fetch_orb, str(cached_path_dir()))

    return fetch


def _loader(name: str):
    def load(weights):
        import warnings

        import torch
        from orb_models.forcefield.calculator import ORBCalculator
        from orb_models.forcefield.pretrained import ORB_PRETRAINED_MODELS

        from ..errors import ModelUnavailableError

        path = local_weights(_weights.ORB_URLS[name], weights)
        if path is None:  # the registry fetches first (unless offline); cached_path never goes out from here
            raise ModelUnavailableError(_unavailable(name)(weights))
        matmul = torch.get_float32_matmul_precision()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Setting global torch default dtype ..."
                model = ORB_PRETRAINED_MODELS[name](
                    weights_path=path, device="cpu", precision="float32-high", compile=False
                )
        finally:
            torch.set_float32_matmul_precision(matmul)
        calc = ORBCalculator(model, device="cpu")
        calc.mlip_metadata = {
            "cutoff": float(model.system_config.radius),
            "conservative": bool(calc.conservative),
            "weights": path,
        }
        return calc

    return load


def entries() -> list[ModelEntry]:
    from ase.data import chemical_symbols

    version = package_version("orb-models")
    out = []
    for name, (conservative, data, functional) in _MODELS.items():
        url = _weights.ORB_URLS[name]
        info = ModelInfo(
            name=name,
            family="orb",
            description=f"Orb {name} ({'conservative' if conservative else 'direct'} forces)",
            # The atom embedding takes Z 1-118; training data cover fewer.
            elements=tuple(chemical_symbols[1:119]),
            cutoff=6.0,
            dtype="float32",
            implemented_properties=("energy", "forces", "stress"),
            conservative=conservative,
            training_data=data,
            functional=functional,
            version=version,
            weights=local_weights(url),
        )
        out.append(ModelEntry(info=info, load=_loader(name), unavailable=_unavailable(name),
                              fetch=_fetch(name)))
    return out
