"""Zero net force's adversary objective: the contract's structures displaced, |sum_i F_i| maximised."""

from __future__ import annotations

import numpy as np

from ...adversary.objectives import Objective, _supported, register
from ...adversary.problem import Config, DisplacedProblem, tensor
from .domain import NetForceDomain


class NetForceProblem(DisplacedProblem):
    """x = displacements of a base structure; v = |sum_i F_i| of the displaced structure."""

    def __init__(self, base, dom, tolerance, label):
        self.label = label
        self.names = self.displacement_names(len(base))
        self.roles = ("displaced",)
        super().__init__(base, dom.delta, dom.min_distance, (), (), tolerance, [np.zeros(3 * len(base))])

    def configs(self, x):
        pos = tensor(self.base.positions) + x[: 3 * self.n].reshape(self.n, 3)
        return [Config(self.base.numbers, pos, tensor(self.base.cell.array), tuple(bool(p) for p in self.base.pbc))]

    def violations(self, outs, x):
        import torch

        return {"net_force": torch.linalg.norm(outs[0].forces.sum(dim=0))}

    def repro(self, x):
        return "viol = {'net_force': float(np.linalg.norm(np.asarray(out[0].forces).sum(axis=0)))}"

    def kept_setting(self, settings, x):
        """The displaced structure, written as its spec with the displacements (data)."""
        spec = self.kept_structure(settings, self.displaced_positions(x))
        return spec if isinstance(spec, str) else {"structures": [spec]}


@register
class ZeroNetForceObjective(Objective):
    check = "zero_net_force"
    Domain = NetForceDomain

    def problems(self, settings, evaluator):
        from ...laws import CHECKS

        dom = self.domain(settings)
        problems, notes = [], []
        tol = {"net_force": settings.tolerance["net_force"]}
        for probe in CHECKS[self.check]().probes(settings):
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            prob = NetForceProblem(probe.atoms, dom, tol, probe.id)
            why = prob.base_reason()
            if why:
                notes.append(why)
                continue
            problems.append(prob)
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        return (f"Z: the contract's {len(settings.structures)} structure(s) displaced <= {dom.delta:g} A per "
                f"coordinate, atoms >= {dom.min_distance:g} A apart")
