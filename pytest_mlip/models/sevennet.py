"""SevenNet (sevenn): 7net-0 and 7net-l3i5 ship inside the wheel."""

from __future__ import annotations

from .info import ModelInfo
from .entry import ModelEntry, missing_package, package_version

# name -> (sevenn checkpoint key, training data, description)
_MODELS = {
    "sevennet-0": ("7net-0", "MPtrj", "SevenNet-0 (11Jul2024)"),
    "sevennet-0-22may2024": ("7net-0_22May2024", "MPtrj", "SevenNet-0 (22May2024)"),
    "sevennet-l3i5": ("7net-l3i5", "MPtrj", "SevenNet-l3i5 (lmax 3, 5 layers)"),
}

# Where sevenn 0.10 keeps the shipped checkpoints (sevenn._const), found
# without importing sevenn: importing it pulls in torch and e3nn (~1.5 s).
_FILES = {
    "7net-0": "SevenNet_0__11Jul2024/checkpoint_sevennet_0.pth",
    "7net-0_22May2024": "SevenNet_0__22May2024/checkpoint_sevennet_0.pth",
    "7net-l3i5": "SevenNet_l3i5/checkpoint_l3i5.pth",
}


def _checkpoint(key: str, weights: str | None) -> str:
    if weights:
        return weights
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sevenn")
    if spec is None or not spec.submodule_search_locations:
        return ""
    return str(Path(list(spec.submodule_search_locations)[0]) / "pretrained_potentials" / _FILES[key])


def _unavailable(key):
    def check(weights):
        reason = missing_package("sevenn", "sevennet")
        if reason:
            return reason
        import os

        path = _checkpoint(key, weights)
        if not os.path.exists(path):
            return f"checkpoint {path} not found; pass one as {key}=/path/to/checkpoint.pth"
        return None

    return check


def _loader(key):
    def load(weights):
        from sevenn.calculator import SevenNetCalculator

        return SevenNetCalculator(_checkpoint(key, weights), device="cpu")

    return load


def entries() -> list[ModelEntry]:
    version = package_version("sevenn")
    out = []
    for name, (key, data, desc) in _MODELS.items():
        weights = None
        if missing_package("sevenn", "sevennet") is None:
            try:
                weights = _checkpoint(key, None)
            except Exception:
                weights = None
        info = ModelInfo(
            name=name,
            family="sevennet",
            description=desc,
            elements=_ELEMENTS,
            cutoff=5.0,
            dtype="float32",
            implemented_properties=("energy", "forces", "stress"),
            conservative=True,
            training_data=data,
            functional="PBE/PBE+U",
            version=version,
            weights=weights,
            shipped=True,
        )
        out.append(ModelEntry(info=info, load=_loader(key), unavailable=_unavailable(key), aliases=(key,)))
    return out


# Z 1-83 and 89-94, as listed in the checkpoints' chemical_species.
def _elements() -> tuple[str, ...]:
    from ase.data import chemical_symbols

    return tuple(chemical_symbols[z] for z in list(range(1, 84)) + list(range(89, 95)))


_ELEMENTS = _elements()
