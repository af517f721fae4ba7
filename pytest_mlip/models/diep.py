"""DIEP: the released diep_fold1 ships inside the wheel."""

from __future__ import annotations

from .info import ModelInfo
from .entry import ModelEntry, missing_package, package_version


def _default_dir() -> str | None:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("diep")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(list(spec.submodule_search_locations)[0]) / "pretrained_models" / "diep_fold1")


def _load(weights):
    from diep.pretrained import make_calculator

    return make_calculator(weights, device="cpu", stress=True)


def _unavailable(weights):
    reason = missing_package("diep", "diep")
    if reason:
        return reason
    import os

    path = weights or _default_dir()
    if not path or not os.path.isdir(path):
        return f"model folder {path} not found; pass one as diep=/path/to/diep_model_dir"
    return None


def entries() -> list[ModelEntry]:
    from ase.data import chemical_symbols

    info = ModelInfo(
        name="diep",
        family="diep",
        description="DIEP diep_fold1",
        elements=tuple(chemical_symbols[z] for z in list(range(1, 84)) + list(range(89, 95))),
        cutoff=5.0,
        dtype="float32",
        implemented_properties=("energy", "forces", "stress"),
        conservative=True,
        training_data="MatPES r2SCAN (fold 1)",
        functional="r2SCAN",
        version=package_version("diep"),
        weights=_default_dir(),
        shipped=True,
    )
    return [ModelEntry(info=info, load=_load, unavailable=_unavailable, aliases=("diep-fold1", "diep_fold1"))]
