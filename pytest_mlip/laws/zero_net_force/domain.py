"""Zero net force's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class NetForceDomain(_Domain):
    """Z of the zero-net-force law: the contract's structures with every atom displaced by at most ``delta`` per
    Cartesian component, never closer than ``min_distance``. The law holds at every such point, so the search
    looks for the configuration whose forces sum furthest from zero."""

    kind: Literal["displacements"] = "displacements"
    delta: float = Field(0.2, ge=0.0, le=2.0, description="largest displacement per Cartesian component (A)")
    min_distance: float = Field(0.7, gt=0.0, description="smallest interatomic distance (A)")
