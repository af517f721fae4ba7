"""What we know about a model: metadata that every verdict carries."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ModelInfo(BaseModel):
    """Metadata of one registered model; ``usable`` says whether it loads here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    family: str
    description: str = ""
    elements: tuple[str, ...] | None = None  # None: every element (analytic) or not yet probed
    cutoff: float | None = None  # Angstrom
    dtype: str = "float32"
    implemented_properties: tuple[str, ...] = ("energy", "forces")
    conservative: bool | None = None  # forces are -dE/dx by construction (autograd)
    training_data: str = ""
    functional: str = ""
    channel: str | None = None  # modal / head / task, where the model has several
    version: str | None = None  # package version
    weights: str | None = None  # path of the weights file or folder
    shipped: bool = False  # weights travel inside a wheel (offline)

    def supports(self, symbols) -> list[str]:
        """The symbols of ``symbols`` this model does not support (empty: all supported)."""
        if self.elements is None:
            return []
        allowed = set(self.elements)
        return sorted({s for s in symbols if s not in allowed})
