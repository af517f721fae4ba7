"""Zero net force's detective playbook: neighbouring structures, distortion switched, a crystal."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook


class ZeroNetForcePlaybook(StructuresPlaybook):
    check = "zero_net_force"
    importance = {"": 0.9}  # a net force drives the centre of mass: NVE drift and heating
    mechanisms = {"": ("the energy is not exactly translation invariant (absolute positions, a frame or a grid "
                       "enters the features) or a direct-force head does not sum to zero")}
    decision = (
        ("scope fails, control passes", "the net force belongs to the structure class that failed"),
        ("the switched distortion still fails", "not one configuration: the sum of forces is not zero on the class"),
    )

    def vary(self, settings):
        return ({}, "the same structures: a residual net force is not one configuration's, it reappears on them")

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        preds = super().predictions(desk, h, table, settings, failing, passing, claim, clean, base, narrowed)
        for p in preds:  # the mechanism: every failing structure with its distortion switched (rattled <-> not)
            if p.kind in ("mechanism",) or p.name.endswith("-varied"):
                p.protocol["structures"] = [
                    {k: v for k, v in u.items() if k not in ("rattle", "seed")} if u.get("rattle") else
                    {**u, "rattle": 0.1} for u in p.protocol["structures"] if u.get("kind") != "atom"]
        return [p for p in preds if p.protocol.get("structures")]
