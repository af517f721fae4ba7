"""Model outputs as torch tensors: values through the Evaluator, gradients three ways.

* ``autograd``: the model itself is differentiated (SevenNet checkpoints, or
  any calculator that offers ``mlip_torch_outputs``), second derivatives
  included, so objectives on forces and stresses get exact gradients. The
  neighbour list is rebuilt from the current positions at every call.
* ``forces``: for models that are conservative by construction, the model's
  own forces (and stress) are exactly -dE/dx (and (1/V) dE/d(strain)), so an
  objective that depends on energies only gets its gradient from one ordinary
  (cached) call; the search prefers this to autograd for such objectives.
* ``finite-differences``: central differences of values computed through the
  cached, counted Evaluator; the fallback for everything else (and wherever
  autograd returns a non-finite gradient).

The Evaluator path wraps outputs in an autograd function whose backward uses
the forces; if the objective also needs derivatives of forces or stresses
(or the model is not conservative) it records that, and the search falls back
to finite differences for that point.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .problem import Config, Outputs

AUTOGRAD, FORCES, FINITE_DIFFERENCES = "autograd", "forces", "finite-differences"


def _voigt_to_tensor(s):
    import torch

    return torch.stack([torch.stack([s[0], s[5], s[4]]), torch.stack([s[5], s[1], s[3]]),
                        torch.stack([s[4], s[3], s[2]])])


def _function():
    import torch

    class FromEvaluation(torch.autograd.Function):
        """Energy/forces/stress from the Evaluator; backward = model forces (energy terms only)."""

        @staticmethod
        def forward(ctx, positions, cell, energy, forces, stress, periodic, conservative, flags):
            ctx.save_for_backward(positions, cell, forces, stress)
            ctx.periodic, ctx.conservative, ctx.flags = periodic, conservative, flags
            return energy.clone(), forces.clone(), stress.clone()

        @staticmethod
        def backward(ctx, g_energy, g_forces, g_stress):
            positions, cell, forces, stress = ctx.saved_tensors
            if bool(g_forces.abs().sum() > 0) or bool(g_stress.abs().sum() > 0):
                ctx.flags.append("the objective differentiates forces or stress")
            if not ctx.conservative and bool(g_energy.abs() > 0):
                ctx.flags.append("the model is not known to be conservative")
            g_pos = -g_energy * forces
            g_cell = torch.zeros_like(cell)
            if ctx.periodic:
                volume = torch.abs(torch.det(cell))
                virial = volume * _voigt_to_tensor(stress) + positions.T @ forces
                g_cell = g_energy * (torch.linalg.inv(cell).T @ virial)
            return g_pos, g_cell, None, None, None, None, None, None

    return FromEvaluation


_FN = None


class EvaluatorBackend:
    """Values (and force-based energy gradients) through the cached Evaluator."""

    name = FORCES

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.conservative = bool(evaluator.model.info.conservative)
        self.flags: list[str] = []

    def outputs(self, configs: list[Config]) -> list[Outputs]:
        """Outputs of every configuration; raises ModelEvaluationError like the Evaluator."""
        import torch

        global _FN
        if _FN is None:
            _FN = _function()
        out = []
        for c in configs:
            ev = self.evaluator.evaluate(c.to_atoms())
            periodic = bool(all(c.pbc)) and ev.stress is not None
            stress = torch.tensor(ev.stress if ev.stress is not None else np.zeros(6), dtype=torch.float64)
            e, f, s = _FN.apply(c.positions, c.cell, torch.tensor(ev.energy, dtype=torch.float64),
                                torch.tensor(ev.forces, dtype=torch.float64), stress, periodic,
                                self.conservative, self.flags)
            out.append(Outputs(energy=e, forces=f, stress=s if ev.stress is not None else None))
        return out


class TorchBackend:
    """Exact gradients through a differentiable model function.

    ``fn(numbers, positions, cell, pbc, want_stress)`` returns a dict with
    ``energy`` (scalar), ``forces`` (N, 3) and, when asked for a fully
    periodic cell, ``stress`` (6, ASE Voigt order and sign), all connected to
    ``positions`` and ``cell`` by autograd (forces built with create_graph).
    """

    name = AUTOGRAD

    def __init__(self, fn: Callable, implements_stress: bool):
        self.fn = fn
        self.implements_stress = implements_stress

    def outputs(self, configs: list[Config]) -> list[Outputs]:
        import torch

        out = []
        for c in configs:
            periodic = bool(all(c.pbc))
            cell = c.cell
            if not any(c.pbc) and np.linalg.matrix_rank(cell.detach().numpy()) < 3:
                from ..evaluation.evaluator import prepare  # the box every model gets for an isolated system

                cell = torch.tensor(prepare(c.to_atoms()).cell.array, dtype=torch.float64)
            positions = c.positions
            if not positions.requires_grad:  # a configuration independent of x: still give the model a leaf
                positions = positions.detach().clone().requires_grad_(True)
            res = self.fn(c.numbers, positions, cell, c.pbc, periodic and self.implements_stress)
            energy = res["energy"].reshape(()).to(torch.float64)
            forces = res["forces"].reshape(len(c.numbers), 3).to(torch.float64)
            stress = res.get("stress")
            if stress is not None and periodic and self.implements_stress:
                stress = stress.reshape(6).to(torch.float64)
            else:
                stress = None
            out.append(Outputs(energy=energy, forces=forces, stress=stress))
        return out


def sevennet_function(calc) -> Callable:
    """Differentiable (energy, forces, stress) of a SevenNet calculator's checkpoint.

    Edge vectors are rebuilt from the position (and cell) tensors on the
    neighbour list of the current configuration; the model's own force/stress
    module runs in training mode so its outputs keep their graph.
    """
    import torch
    import sevenn._keys as KEY
    from ase import Atoms
    from sevenn.atom_graph_data import AtomGraphData
    from sevenn.train.dataload import unlabeled_atoms_to_graph

    model = calc.model
    force_module = model._modules.get("force_output")
    dtype = next(model.parameters()).dtype

    def fn(numbers, positions, cell, pbc, want_stress):
        atoms = Atoms(numbers=numbers, positions=positions.detach().cpu().numpy(),
                      cell=cell.detach().cpu().numpy(), pbc=pbc)
        if not np.any(pbc) and atoms.cell.rank < 3:
            from ..evaluation.evaluator import prepare

            atoms = prepare(atoms)
        graph = unlabeled_atoms_to_graph(atoms, calc.cutoff)
        data = AtomGraphData.from_numpy_dict(graph)
        pos = positions.to(dtype)
        lattice = cell.to(dtype)
        src, dst = data[KEY.EDGE_IDX]
        shifts = torch.as_tensor(np.asarray(graph[KEY.CELL_SHIFT]), dtype=dtype)
        if np.any(pbc):
            data[KEY.EDGE_VEC] = pos[dst] - pos[src] + shifts @ lattice
        else:
            data[KEY.EDGE_VEC] = pos[dst] - pos[src]
        data[KEY.POS] = pos
        if want_stress:
            data[KEY.CELL_VOLUME] = torch.abs(torch.det(lattice))
        training = force_module.training
        force_module.train()
        try:
            out = model(data)
        finally:
            force_module.train(training)
        res = {"energy": out[KEY.PRED_TOTAL_ENERGY].reshape(()), "forces": out[KEY.PRED_FORCE]}
        if want_stress:
            res["stress"] = -out[KEY.PRED_STRESS].reshape(-1)[[0, 1, 2, 4, 5, 3]]
        return res

    return fn


def gradient_backend(evaluator):
    """The autograd backend for this model, or None (then forces or finite differences)."""
    calc = evaluator.model.calc
    info = evaluator.model.info
    stress = "stress" in info.implemented_properties
    custom = getattr(calc, "mlip_torch_outputs", None)
    if callable(custom):
        return TorchBackend(custom, stress)
    if not type(calc).__module__.startswith("sevenn"):
        return None
    from sevenn.calculator import SevenNetCalculator

    if isinstance(calc, SevenNetCalculator) and hasattr(calc.model, "_modules") \
            and "force_output" in calc.model._modules:
        return TorchBackend(_locked(sevennet_function(calc), evaluator), stress)
    return None


def _locked(fn, evaluator):
    """Run ``fn`` under the loaded model's lock and torch dtype guard, like every other model call."""
    from ..models.dtype import torch_default_dtype

    def wrapped(*args):
        model = evaluator.model
        with model.lock, torch_default_dtype(model.torch_dtype):
            return fn(*args)

    return wrapped
