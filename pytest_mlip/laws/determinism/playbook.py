"""Determinism's detective playbook: neighbouring structures, more repeats, a crystal."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook


class DeterminismPlaybook(StructuresPlaybook):
    check = "determinism"
    bounds = {"repeats": (1, 8)}
    importance = {"": 0.6}  # reproducibility of every number the model gives; MD restarts
    mechanisms = {"": ("the forward pass is not deterministic: unordered parallel reductions, a random state "
                       "(dropout, sampling) left on at inference, or state carried between calls")}
    conditions = ("repeats",)
    decision = (
        ("scope fails, control passes", "the call-to-call noise belongs to the structure class that failed"),
        ("more repeats still fail", "not a rare event: the model's outputs change from call to call"),
    )

    def vary(self, settings):
        return ({"repeats": min(8, 2 * settings.repeats)}, "twice the fresh calls per structure: call-to-call noise "
                                                           "shows again, a one-off does not")
