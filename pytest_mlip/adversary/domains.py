"""Admissible input domains Z, as typed settings a contract file can state.

A contract's ``adversary`` field holds one of these (or is left out: the
defaults below then derive Z from the contract's own sampled setting). They
are plain pydantic data, light to import, so contract modules can name them
without pulling in torch. The search (``pytest_mlip.adversary.search``) only
ever evaluates points of Z: box bounds by projection, other constraints
(minimum interatomic distance, r_in < r_out <= r_eq) by a retraction onto Z.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Domain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    r_min: float | None = Field(None, gt=0.0, description="smallest distance (A); default: the contract's r_inner")
    min_separation: float = Field(0.01, gt=0.0, le=1.0, description="r_out - r_in at least this (A)")
    orientation: bool = Field(True, description="search the bond direction too (polar, azimuth)")
    surfaces: bool = Field(True, description="also search the contract's surface approaches")


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


class FragmentDomain(_Domain):
    """Z of the dissociation limit: fragment B rotated and placed in any direction from A,
    with the closest A-B distance between cutoff + margin and ``gap_max``.

    Beyond the model's cutoff no edge joins the fragments, so the energies must
    add and A's forces must equal those of A alone at every such placement.
    Models with no stated cutoff use the contract's ``gap`` as the lower bound.
    """

    kind: Literal["fragments"] = "fragments"
    margin: float = Field(1.0, ge=0.0, description="closest gap >= cutoff + margin (A)")
    gap_max: float | None = Field(None, gt=0.0, description="largest closest gap (A); default lower bound + 8 A")
    rotate: bool = Field(True, description="search B's orientation and its direction from A")


class StrainDomain(_Domain):
    """Z of stress-strain consistency: the contract's cells under any Voigt strain with
    components in [-max_strain, max_strain], atoms displaced by at most ``delta``."""

    kind: Literal["strain"] = "strain"
    max_strain: float = Field(0.04, gt=0.0, le=0.2)
    delta: float = Field(0.05, ge=0.0, le=1.0)
    min_distance: float = Field(0.7, gt=0.0)


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


__all__ = ["DimerDomain", "DisplacementDomain", "FragmentDomain", "StrainDomain", "AdsorbateDomain", "RandomCluster"]
