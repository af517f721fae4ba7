"""The symmetry laws' admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class RandomCluster(_Domain):
    """An extra base structure: ``symbols`` placed at random in a cube, ``min_distance`` apart."""

    symbols: str
    box: float = Field(gt=0.0, description="cube edge (A)")
    seed: int = 0


class DisplacementDomain(_Domain):
    """Z of the symmetry contracts: probe structures displaced by at most ``delta`` per coordinate,
    never closer than ``min_distance``, under any transformation of the contract's kind.

    Rotations are rotation vectors with components in [-max_angle, max_angle]
    (degrees; 180 covers every rotation), translations have components in
    [-max_shift, max_shift] (A); permutations are the contract's sampled ones.
    """

    kind: Literal["displacements"] = "displacements"
    delta: float = Field(0.2, ge=0.0, le=2.0, description="largest displacement per Cartesian component (A)")
    min_distance: float = Field(0.7, gt=0.0, description="smallest interatomic distance (A)")
    max_angle: float = Field(180.0, gt=0.0, le=180.0)
    max_shift: float = Field(5.0, gt=0.0, le=50.0)
    clusters: list[RandomCluster] = Field(default_factory=list)
    contract_structures: bool = Field(True, description="use the contract's structures as bases")
