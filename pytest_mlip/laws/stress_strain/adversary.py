"""Stress-strain consistency's adversary objective: any Voigt strain of the contract's cells."""

from __future__ import annotations

import numpy as np

from ...adversary.objectives import DomainError, Objective, _supported, _torch, register
from ...adversary.problem import Config, DisplacedProblem, min_distance, tensor
from .domain import StrainDomain

_VOIGT = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]


def _strain_matrix(e, scale=None):
    """I + eps for Voigt strain ``e`` (torch, engineering shears), as in Bulk.strain and stress_strain."""
    torch = _torch()
    rows = [[e[0], e[5] / 2, e[4] / 2], [e[5] / 2, e[1], e[3] / 2], [e[4] / 2, e[3] / 2, e[2]]]
    return torch.eye(3, dtype=torch.float64) + torch.stack([torch.stack(r) for r in rows])


class StrainProblem(DisplacedProblem):
    """x = (displacements, 6 Voigt strains): the model's stress against central differences of its energy."""

    def __init__(self, base, dom, h, tolerance, seeds, label):
        self.label = label
        self.h = float(h)
        self.names = self.displacement_names(len(base)) + tuple(f"strain_{k}" for k in ("xx", "yy", "zz", "yz", "xz", "xy"))
        self.roles = ("cell",) + tuple(f"{s}{k}" for k in ("xx", "yy", "zz", "yz", "xz", "xy") for s in "+-")
        e = dom.max_strain
        super().__init__(base, dom.delta, dom.min_distance, [-e] * 6, [e] * 6, tolerance, seeds)

    def strained_base(self, x):
        m = _strain_matrix(x[-6:])
        pos = tensor(self.base.positions) @ m + x[: 3 * self.n].reshape(self.n, 3)
        return pos, tensor(self.base.cell.array) @ m

    def constraint(self, x):
        pos, cell = self.strained_base(tensor(x))
        dmin = min_distance(pos.numpy(), cell.numpy(), self.base.pbc)
        if dmin < self.min_distance - 1e-9:
            return f"atoms {dmin:.4g} A apart (< min_distance {self.min_distance:g} A)"
        return None

    def configs(self, x):
        torch = _torch()
        pos, cell = self.strained_base(x)
        pbc = (True, True, True)
        out = [Config(self.base.numbers, pos, cell, pbc)]
        for k, (i, j) in enumerate(_VOIGT):
            for sign in (1.0, -1.0):
                eps = torch.zeros((3, 3), dtype=torch.float64)
                if i == j:
                    eps[i, i] = sign * self.h
                else:
                    eps[i, j] = eps[j, i] = sign * self.h / 2
                m = torch.eye(3, dtype=torch.float64) + eps
                out.append(Config(self.base.numbers, pos @ m, cell @ m, pbc))
        return out

    def violations(self, outs, x):
        torch = _torch()
        volume = torch.abs(torch.det(self.strained_base(x)[1]))
        fd = torch.stack([(outs[1 + 2 * k].energy - outs[2 + 2 * k].energy) / (2 * self.h) / volume for k in range(6)])
        return {"stress": torch.abs(outs[0].stress - fd).max()}

    def kept_setting(self, settings, x):
        """The strained, displaced cell, written as its bulk spec with the Voigt strain and the displacements."""
        pos, _ = self.strained_base(tensor(x))
        spec = self.kept_structure(settings, pos.numpy(), strain=np.asarray(x[-6:], dtype=float))
        return spec if isinstance(spec, str) else {"structures": [spec]}

    def repro(self, x):
        return (f"h = {self.h!r}\n"
                "volume = frames[0].get_volume()\n"
                "fd = np.array([(out[1 + 2 * k].energy - out[2 + 2 * k].energy) / (2 * h) / volume for k in range(6)])\n"
                "viol = {'stress': float(np.abs(out[0].stress - fd).max())}")


@register
class StressStrainObjective(Objective):
    check = "stress_strain"
    Domain = StrainDomain

    def problems(self, settings, evaluator):
        from ...laws import CHECKS

        dom = self.domain(settings)
        check = CHECKS[self.check]()
        problems, notes = [], []
        if "stress" not in evaluator.model.info.implemented_properties:
            raise DomainError(f"stress not implemented by {evaluator.name}")
        for probe in check.probes(settings):
            atoms = probe.atoms
            reason = _supported(evaluator, atoms.get_chemical_symbols())
            if reason is None and not (np.all(atoms.pbc) and atoms.cell.rank == 3):
                reason = "cell not fully periodic: stress undefined"
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            zero = np.zeros(3 * len(atoms) + 6)
            prob = StrainProblem(atoms, dom, settings.strain_step, dict(settings.tolerance), [zero], probe.id)
            why = prob.base_reason()
            if why:
                notes.append(why)
                continue
            problems.append(prob)
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        return (f"Z: the contract's cells under Voigt strains in [-{dom.max_strain:g}, {dom.max_strain:g}], atoms "
                f"displaced <= {dom.delta:g} A, >= {dom.min_distance:g} A apart; finite-difference step "
                f"{settings.strain_step:g}")
