"""NVE energy conservation's calibration entry: the integrator's own error at the contract's setting, told from a
model's own non-conservation by halving the time step, and the float32 noise of the total energy."""

from __future__ import annotations

import numpy as np

#: the structures an analytic reference is measured on, where its own physics differs: Lennard-Jones's one parameter
#: set (sigma 2 A) puts the 1 A bonds of a molecule deep in its r^-12 wall (forces ~1e4 eV/A): that run explodes,
#: which says nothing about the integrator
SCOPE = {"lennard-jones": lambda spec: spec.kind != "molecule"}
KEYS = ("drift", "excursion")


def noise(settings, ctx) -> dict:
    """Drift and excursion at the contract's setting (refinement off); each is a model's noise only when rerunning
    its worst run at half the time step, for the same simulated time with the same velocities, at least halved it
    (velocity Verlet's error shrinks ~4x; a force that is not a gradient does not). What did not halve is the
    model's own, a finding: it is in 'observed' (with the values at half the step) and not in the noise."""
    from .check import NVEConservation

    keep = SCOPE.get(ctx.evaluator.name)
    data = settings.model_dump()
    data["refine"] = False
    if keep is not None:
        data["structures"] = [s.model_dump() for s in settings.structures if keep(s)]
    raw = type(settings).model_validate(data)
    check = NVEConservation()
    verdict = check.run(raw, ctx.evaluator, recheck_guaranteed=True)
    ok = [p for p in verdict.probes if p.status == "ok"]
    if not ok:
        return {}
    worst = {k: max(p.violations[k] for p in ok) for k in KEYS}
    observed = dict(worst, unstable=max(p.violations["unstable"] for p in ok),
                    energy_noise_per_atom=energy_noise(ctx.evaluator, [p.atoms for p in ok]))
    out = {}
    for key in KEYS:
        p = max(ok, key=lambda r: r.violations[key])
        spec = next(s for s in raw.structures for t in raw.temperatures if p.probe == f"{s.label()}@{t:g}K")
        fine = type(raw).model_validate({**raw.model_dump(), "timestep": raw.timestep / 2, "steps": raw.steps * 2,
                                         "temperatures": [p.observables["temperature_K"]],
                                         "structures": [spec.model_dump()]})
        half = check.run(fine, ctx.evaluator, recheck_guaranteed=True).probes[0].violations.get(key)
        if half is not None:
            observed[f"{key}_at_half_step"] = half
            if half <= worst[key] / 2:
                out[key] = worst[key]
    ctx.observed_raw[settings.name] = observed
    return out


def energy_noise(evaluator, frames) -> float:
    """Largest change of the energy per atom of the runs' last frames under a rigid translation: the float32 noise
    of E_total (the kinetic part is float64)."""
    rng = np.random.default_rng(3)
    worst = 0.0
    for frame in frames:
        moved = frame.copy()
        moved.positions += rng.uniform(-2, 2, 3)
        worst = max(worst, abs(evaluator.energy(moved) - evaluator.energy(frame)) / len(frame))
    return worst
