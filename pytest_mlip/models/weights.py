"""Where foundation-model weights come from, and fetching them on first use.

The URL tables of every family whose package downloads its weights live here,
in one place (the adapters look their URLs up by model name at call time, so a
test can point a name at a local server). A registered model whose weights are
not cached is downloaded once, through its own package's downloader, into that
package's own cache, and the run goes on:

- MACE: ``mace.calculators.foundations_models.download_mace_mp_checkpoint(url)``
  (what ``mace_mp(model=...)`` calls) into ``$XDG_CACHE_HOME/mace`` (default
  ``~/.cache/mace``); it prints its own progress line;
- Orb: ``cached_path.cached_path(url)`` (what orb-models' pretrained
  constructors call) into ``$CACHED_PATH_CACHE_ROOT`` (default
  ``~/.cache/cached_path``), with its progress bar;
- SevenNet, CHGNet, DIEP: the weights ship inside the wheels; nothing to fetch.

``--mlip-offline`` (ini ``mlip_offline``, or ``PYTEST_MLIP_OFFLINE=1``) forbids
the network: a missing file is then a one-line error naming where to put it.
"""

from __future__ import annotations

import os

from ..errors import ModelUnavailableError

_GH = "https://github.com/ACEsuit"
_S3 = "https://orbitalmaterials-public-models.s3.us-west-1.amazonaws.com/forcefields"

#: MACE foundation models: name -> download URL, as in mace.calculators.foundations_models.mace_mp_urls
#: of mace-torch 0.3.16 (tests check both tables agree)
MACE_URLS: dict[str, str] = {
    "mace-mp-0-small": f"{_GH}/mace-mp/releases/download/mace_mp_0/2023-12-10-mace-128-L0_energy_epoch-249.model",
    "mace-mp-0-medium": f"{_GH}/mace-mp/releases/download/mace_mp_0/2023-12-03-mace-128-L1_epoch-199.model",
    "mace-mp-0-large": f"{_GH}/mace-mp/releases/download/mace_mp_0/MACE_MPtrj_2022.9.model",
    "mace-mp-0b-small": f"{_GH}/mace-mp/releases/download/mace_mp_0b/mace_agnesi_small.model",
    "mace-mp-0b-medium": f"{_GH}/mace-mp/releases/download/mace_mp_0b/mace_agnesi_medium.model",
    "mace-mp-0b2-small": f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-small-density-agnesi-stress.model",
    "mace-mp-0b2-medium": f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-medium-density-agnesi-stress.model",
    "mace-mp-0b2-large": f"{_GH}/mace-mp/releases/download/mace_mp_0b2/mace-large-density-agnesi-stress.model",
    "mace-mp-0b3-medium": f"{_GH}/mace-mp/releases/download/mace_mp_0b3/mace-mp-0b3-medium.model",
    "mace-mpa-0": f"{_GH}/mace-mp/releases/download/mace_mpa_0/mace-mpa-0-medium.model",
    "mace-omat-0-small": f"{_GH}/mace-mp/releases/download/mace_omat_0/mace-omat-0-small.model",
    "mace-omat-0-medium": f"{_GH}/mace-mp/releases/download/mace_omat_0/mace-omat-0-medium.model",
    "mace-matpes-pbe-0": f"{_GH}/mace-foundations/releases/download/mace_matpes_0/MACE-matpes-pbe-omat-ft.model",
    "mace-matpes-r2scan-0": f"{_GH}/mace-foundations/releases/download/mace_matpes_0/MACE-matpes-r2scan-omat-ft.model",
}

#: Orb pretrained forcefields: name (a key of orb_models.forcefield.pretrained.ORB_PRETRAINED_MODELS)
#: -> the default weights URL of its constructor (orb-models 0.5.5)
ORB_URLS: dict[str, str] = {
    "orb-v3-conservative-inf-omat": f"{_S3}/orb-v3/orb-v3-conservative-inf-omat-20250404.ckpt",
    "orb-v3-conservative-20-omat": f"{_S3}/orb-v3/orb-v3-conservative-20-omat-20250404.ckpt",
    "orb-v3-direct-inf-omat": f"{_S3}/orb-v3/orb-v3-direct-inf-omat-20250404.ckpt",
    "orb-v3-direct-20-omat": f"{_S3}/orb-v3/orb-v3-direct-20-omat-20250404.ckpt",
    "orb-v3-conservative-inf-mpa": f"{_S3}/orb-v3/orb-v3-conservative-inf-mpa-20250404.ckpt",
    "orb-v3-conservative-20-mpa": f"{_S3}/orb-v3/orb-v3-conservative-20-mpa-20250404.ckpt",
    "orb-v3-direct-inf-mpa": f"{_S3}/orb-v3/orb-v3-direct-inf-mpa-20250404.ckpt",
    "orb-v3-direct-20-mpa": f"{_S3}/orb-v3/orb-v3-direct-20-mpa-20250404.ckpt",
    "orb-v2": f"{_S3}/orb-v2-20241011.ckpt",
    "orb-mptraj-only-v2": f"{_S3}/orb-mptraj-only-v2-20241014.ckpt",
    "orb-d3-v2": f"{_S3}/orb-d3-v2-20241011.ckpt",
    "orb-d3-sm-v2": f"{_S3}/orb-d3-sm-v2-20241011.ckpt",
    "orb-d3-xs-v2": f"{_S3}/orb-d3-xs-v2-20241011.ckpt",
}

OFFLINE_ENV = "PYTEST_MLIP_OFFLINE"
_offline: bool | None = None


def set_offline(value: bool | None) -> None:
    """Forbid (True) or allow (False) downloads in this process; None: back to the environment."""
    global _offline
    _offline = value


def offline() -> bool:
    if _offline is not None:
        return _offline
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def fetch_mace(url: str) -> str:
    """Download ``url`` into MACE's cache with mace's own downloader (once) and return the file."""
    from mace.calculators.foundations_models import download_mace_mp_checkpoint

    return str(download_mace_mp_checkpoint(url))


def fetch_orb(url: str) -> str:
    """Download ``url`` into cached_path's cache (as orb-models does, once) and return the file."""
    from cached_path import cached_path

    return str(cached_path(url))


def fetch(name: str, url: str, fetcher, where: str) -> str:
    """Run ``fetcher(url)`` for model ``name``; a download failure becomes one line naming the fixes."""
    import warnings

    try:
        with warnings.catch_warnings():  # the packages' import-time warnings say nothing about the download
            warnings.simplefilter("ignore")
            path = fetcher(url)
    except Exception as exc:  # urllib/requests errors, a truncated or refused download
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelUnavailableError(
            f"model {name!r} is not usable here: could not download it from {url} ({type(exc).__name__}: {detail[:200]}); "
            f"download it to {where} yourself, or pass {name}=/path/to/file"
        ) from None
    if not path or not os.path.isfile(path):
        raise ModelUnavailableError(f"downloading {name} from {url} left no file; pass {name}=/path/to/file")
    return path
