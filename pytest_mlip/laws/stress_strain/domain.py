"""Stress-strain consistency's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class StrainDomain(_Domain):
    """Z of stress-strain consistency: the contract's cells under any Voigt strain with
    components in [-max_strain, max_strain], atoms displaced by at most ``delta``."""

    kind: Literal["strain"] = "strain"
    max_strain: float = Field(0.04, gt=0.0, le=0.2)
    delta: float = Field(0.05, ge=0.0, le=1.0)
    min_distance: float = Field(0.7, gt=0.0)
