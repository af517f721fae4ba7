"""CHGNet: 0.3.0, 0.2.0 and r2scan ship inside the wheel.

CHGNet raises on a cell of zero volume, so the evaluation engine gives
isolated systems a real (non-periodic) box before any model sees them.
"""

from __future__ import annotations

from .info import ModelInfo
from .entry import ModelEntry, missing_package, package_version

# name -> (CHGNet.load model_name, atom-graph cutoff, training data, functional)
_MODELS = {
    "chgnet-0.3.0": ("0.3.0", 6.0, "MPtrj", "PBE/PBE+U"),
    "chgnet-0.2.0": ("0.2.0", 5.0, "MPtrj", "PBE/PBE+U"),
    "chgnet-r2scan": ("r2scan", 6.0, "MP r2SCAN (transfer from MPtrj)", "r2SCAN"),
}


def _loader(model_name):
    def load(weights):
        from chgnet.model import CHGNet, CHGNetCalculator

        if weights:
            model = CHGNet.from_file(weights, use_device="cpu", verbose=False)
        else:
            model = CHGNet.load(model_name=model_name, use_device="cpu", verbose=False)
        return CHGNetCalculator(model=model, use_device="cpu", on_isolated_atoms="ignore")

    return load


def _unavailable(weights):
    return missing_package("chgnet", "chgnet")


def entries() -> list[ModelEntry]:
    from ase.data import chemical_symbols

    version = package_version("chgnet")
    out = []
    for name, (key, cutoff, data, functional) in _MODELS.items():
        info = ModelInfo(
            name=name,
            family="chgnet",
            description=f"CHGNet {key}",
            elements=tuple(chemical_symbols[1:95]),
            cutoff=cutoff,
            dtype="float32",
            implemented_properties=("energy", "forces", "stress"),
            conservative=True,
            training_data=data,
            functional=functional,
            version=version,
            weights=_weights_path(key),
            shipped=True,
        )
        out.append(ModelEntry(info=info, load=_loader(key), unavailable=_unavailable))
    return out


def _weights_path(key: str) -> str | None:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("chgnet")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "pretrained" / key
    files = sorted(folder.glob("*.pth.tar"))
    return str(files[0]) if files else None
