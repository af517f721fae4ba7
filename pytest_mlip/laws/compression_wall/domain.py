"""The compression wall's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class ScaleDomain(_Domain):
    """Z of the compression wall: pairs of uniform scales s_in < s_out <= s_eq of each crystal (fractions of the
    reference size; s_eq is the model's own equilibrium, as the sampled check finds it), s_in at least
    ``scale_min`` x s_eq. The energy per atom must not fall going inward: v = (E(s_out) - E(s_in)) / N."""

    kind: Literal["scale"] = "scale"
    scale_min: float | None = Field(None, gt=0.05, lt=1.0, description="innermost scale / equilibrium; default: "
                                                                       "the contract's scale_min")
    min_separation: float = Field(0.002, gt=0.0, le=0.1, description="s_out - s_in at least this (fraction)")
