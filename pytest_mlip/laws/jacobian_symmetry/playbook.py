"""Jacobian symmetry's detective playbook: neighbouring structures, another atom subset and step, a crystal."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook


class JacobianSymmetryPlaybook(StructuresPlaybook):
    check = "jacobian_symmetry"
    bounds = {"step": (1e-3, 1e-2), "max_atoms": (2, 12)}
    importance = {"": 0.8}  # a non-symmetric Hessian: forces with a curl, energy pumped in closed loops
    mechanisms = {"": ("the forces have a curl (a non-conservative direct-force head), so the force Jacobian is not "
                       "a symmetric Hessian")}
    conditions = ("step", "max_atoms")
    decision = (
        ("scope fails, control passes", "the curl belongs to the structure class that failed"),
        ("another subset and step still fail", "not a draw nor a truncation error: the forces are not a gradient"),
    )

    def vary(self, settings):
        return ({"step": max(1e-3, settings.step / 2), "seed": settings.seed + 1},
                "half the difference step and another seeded subset of atoms: a real asymmetry survives both")
