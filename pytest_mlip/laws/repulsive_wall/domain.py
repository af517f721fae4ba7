"""The repulsive wall's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class DimerDomain(_Domain):
    """Z of the repulsive wall: pairs (r_in < r_out <= r_eq) of dimers, any bond direction.

    The wall's violation is the largest E(r_out) - E(r_in) over r_min <= r_in <
    r_out <= r_eq (the contract's ``drop``); r_eq is the model's own minimum on
    the contract's grid. Surface approaches search both heights at the
    contract's top site (their r_eq differs from site to site, so the lateral
    position stays where the contract put it).
    """

    kind: Literal["dimer"] = "dimer"
    pairs: list[tuple[str, str]] | None = Field(None, description="species pairs (default: the contract's)")
    r_min: float | None = Field(None, gt=0.0, le=3.0, description="smallest distance in Angstrom (not pm); default: "
                                                                   "the contract's r_inner")
    min_separation: float = Field(0.01, gt=0.0, le=1.0, description="r_out - r_in at least this, in Angstrom (not pm)")
    orientation: bool = Field(True, description="search the bond direction too (polar, azimuth)")
    surfaces: bool = Field(True, description="also search the contract's surface approaches")
