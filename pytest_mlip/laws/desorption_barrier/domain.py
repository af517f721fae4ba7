"""The desorption barrier's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class AdsorbateDomain(_Domain):
    """A generic Z for slab + adsorbate contracts: the adsorbate, rigid, lifted along the surface
    normal by ``height`` (A, from the adsorbed state the contract prepares; default: the contract's
    own range) and shifted laterally by up to ``lateral`` of each surface cell vector (default 0: the
    contract's site only, since away from its own site a rigid path may climb a real barrier).

    A check opts in by having an ``adversary: AdsorbateDomain | None`` setting (optional: defaults
    apply without it) and an objective built on
    :class:`pytest_mlip.adversary.objectives.AdsorbateProblem` (the desorption barrier has one).
    """

    kind: Literal["adsorbate"] = "adsorbate"
    height: tuple[float, float] | None = None
    lateral: float = Field(0.0, ge=0.0, le=0.5)
