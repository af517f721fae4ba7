"""Energy-force consistency: the forces a model returns are -dE/dx of its own energy."""

from __future__ import annotations

import zlib
from typing import Literal

import numpy as np
from pydantic import Field

from ..base import Check, ContractSettings, Measurement


class EnergyForceSettings(ContractSettings):
    check: Literal["energy_force"] = "energy_force"
    step: float = Field(3e-3, ge=1e-4, le=0.05, description="central-difference displacement (A); below 1e-4 A float32 rounding swamps the difference")
    components: int = Field(6, ge=1, le=600, description="Cartesian force components sampled per larger structure")
    full_below: int = Field(12, ge=0, le=64, description="structures of at most this many atoms have every force "
                                                         "component checked")
    seed: int = 0

    default_tolerance = {"forces": 0.05}


def sample_components(natoms: int, count: int, rng) -> list[tuple[int, int]]:
    """``count`` distinct (atom, axis) pairs: one axis of every atom (random order) before any second axis."""
    order = rng.permutation(natoms)
    axes = [rng.permutation(3) for _ in range(natoms)]
    picks = [(int(i), int(axes[i][r])) for r in range(3) for i in order]
    return picks[:count]


def displaced(atoms, index: int, axis: int, h: float):
    new = atoms.copy()
    new.positions[index, axis] += h
    return new


def fd_force(evaluator, atoms, index: int, axis: int, h: float) -> float:
    """-dE/dx of one Cartesian component by central differences."""
    e_plus = evaluator.energy(displaced(atoms, index, axis, h))
    e_minus = evaluator.energy(displaced(atoms, index, axis, -h))
    return -(e_plus - e_minus) / (2.0 * h)


def probe_rng(seed: int, probe_id: str):
    """A generator seeded by the contract seed and the probe id (stable across runs and orders)."""
    return np.random.default_rng([seed, zlib.crc32(probe_id.encode())])


class EnergyForce(Check):
    name = "energy_force"
    title = "Energy-force consistency (F = -dE/dx)"
    statement = ("Each force component a model returns equals minus the derivative of its own energy with respect "
                 "to that coordinate.")
    rationale = ("Molecular dynamics conserves energy, and geometry optimisers converge, only when forces are the "
                 "gradient of the energy that is reported. Direct-force heads and bugs in custom force code break "
                 "this silently. Autograd models satisfy it by construction, which is a claim about code, not a "
                 "measurement: the check runs on every model (--mlip-skip-guaranteed opts out, and the summary "
                 "says so).")
    procedure = ("On a cheap structure set that covers a ring (C6H6), linear (C2H2) and branched (isobutane, "
                 "ethanol) molecules, small molecules, a cluster, a slab and bulk cells (the structures of the "
                 "symmetry contracts among them, so a symmetry failure can be read against this law on the same "
                 "structure), displace each Cartesian coordinate by +-h (default h = 3e-3 A, the step with the "
                 "smallest worst-case error over the shipped float32 models) and compare -(E+ - E-)/2h with the "
                 "model's force: every component of structures up to full_below atoms, a seeded sample spread over "
                 "the atoms of larger ones. A component past tau is refined at h/2: when its mismatch at least "
                 "halves (central-difference truncation shrinks as h^2), the Richardson estimate (4 F(h/2) - F(h))/3 "
                 "replaces F_FD, so a steep but conservative wall is not reported; a force that is not the gradient "
                 "does not shrink with h. Label-free: only the model's own energies and forces. Cost: 2 calls per "
                 "component (4 for a refined one).")
    threshold = ("max |F_model - F_FD| <= tau_F (0.05 eV/A): >= 3x the worst central-difference error over the six "
                 "shipped float32 models (1.45e-2 eV/A at h = 1e-3 A); at h = 3e-3 A the worst on sevennet-0, "
                 "chgnet-0.3.0 and diep is 5.1e-3 eV/A (diep, rattled Si). Hard, exact.")
    units = {"forces": "eV/A"}
    Settings = EnergyForceSettings
    guaranteed_for_conservative = True

    def measure(self, settings, evaluator, probe):
        atoms = probe.atoms
        ref = evaluator.evaluate(atoms)
        rng = probe_rng(settings.seed, probe.id)
        count = 3 * len(atoms) if len(atoms) <= settings.full_below else settings.components
        picks = sample_components(len(atoms), count, rng)
        tau = {**EnergyForceSettings.default_tolerance, **dict(settings.tolerance)}["forces"]
        diffs, rows, refined = [], [], 0
        for i, a in picks:
            f_fd = fd_force(evaluator, atoms, i, a, settings.step)
            if abs(ref.forces[i, a] - f_fd) > tau:
                # Past tau, tell the step's own truncation error from a force that is not the gradient: halve the
                # step. Truncation shrinks as h^2 (about 4x), so a mismatch that at least halves is truncation and
                # the Richardson estimate (4 F(h/2) - F(h)) / 3 replaces F_FD; a defect does not shrink with h.
                f_half = fd_force(evaluator, atoms, i, a, settings.step / 2)
                if abs(ref.forces[i, a] - f_half) <= abs(ref.forces[i, a] - f_fd) / 2:
                    f_fd, refined = (4.0 * f_half - f_fd) / 3.0, refined + 1
            diffs.append(abs(ref.forces[i, a] - f_fd))
            rows.append((i, a, float(ref.forces[i, a]), float(f_fd)))
        k = int(np.argmax(diffs))
        i, a, f_model, f_fd = rows[k]
        return Measurement(
            violations={"forces": float(diffs[k])},
            observables={
                "worst_atom": i, "worst_axis": "xyz"[a], "F_model": f_model, "F_fd": f_fd,
                "mean_abs_diff": float(np.mean(diffs)), "components": len(picks), "step": settings.step,
                "refined": refined,
                "max_abs_force": float(np.abs(ref.forces).max()),
            },
        )

    def setting_details(self, settings) -> str:
        return (f"central differences, step {settings.step:g} A, every component of structures up to "
                f"{settings.full_below} atoms, {settings.components} seeded component(s) of larger ones "
                f"(seed {settings.seed})")
