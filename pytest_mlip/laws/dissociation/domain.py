"""The dissociation limit's admissible domain Z for the adversary (data a contract file may state)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...adversary.domains import _Domain


class FragmentDomain(_Domain):
    """Z of the dissociation limit: fragment B rotated and placed in any direction from A,
    with the closest A-B distance between cutoff + margin and ``gap_max``.

    Beyond the model's cutoff no edge joins the fragments, so the energies must
    add and A's forces must equal those of A alone at every such placement.
    Models with no stated cutoff use the contract's ``gap`` as the lower bound.
    """

    kind: Literal["fragments"] = "fragments"
    margin: float = Field(1.0, ge=0.0, le=20.0, description="closest gap >= cutoff + margin, in Angstrom (not pm)")
    gap_max: float | None = Field(None, gt=0.0, le=60.0, description="largest closest gap in Angstrom (not pm); "
                                                                    "default lower bound + 8 A")
    rotate: bool = Field(True, description="search B's orientation and its direction from A")
