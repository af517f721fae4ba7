"""The desorption barrier's adversary objective: the relaxed adsorbate lifted rigidly to any height."""

from __future__ import annotations

import numpy as np

from ...adversary.objectives import AdsorbateProblem, DomainError, Objective, _supported, register
from ...adversary.problem import admitted
from .domain import AdsorbateDomain

class DesorptionProblem(AdsorbateProblem):
    """v = E(lifted by dz) - E(lifted by dz_max): the energy may never pass above the desorbed asymptote."""

    energy_only = True

    def violations(self, outs, x):
        return {"barrier": outs[0].energy - outs[1].energy}

    def repro(self, x):
        return "viol = {'barrier': out[0].energy - out[1].energy}  # E(dz) - E(asymptote at dz_max)"

    def kept_setting(self, settings, x):
        """This case alone, its rigid scan on the grid dz_max / k (a step the validator admits) whose
        nearest point to the found height is closest; the scan lifts at the relaxed site only, so a finding
        shifted laterally is not kept. The runner keeps the file only if the check under it fails (with the
        contract's CI-NEB confirmation, when it asks for one)."""
        import math

        dz, da, db = (float(v) for v in x)
        if abs(da) > 1e-9 or abs(db) > 1e-9:
            return (f"the finding is shifted laterally (da {da:.3g}, db {db:.3g} of the cell vectors) and the "
                    "check lifts the adsorbate at its relaxed site only")

        def off(k):
            step = settings.dz_max / k
            return abs(round(dz / step) * step - dz), k

        lo, hi = admitted("desorption_barrier", "dz_step", (0.01, 1.0))
        k = min(off(k) for k in range(math.ceil(settings.dz_max / hi), math.floor(settings.dz_max / lo) + 1))[1]
        case = next(c for c in settings.cases if c.label() == self.label)
        return {"cases": [case], "dz_step": settings.dz_max / k}


@register
class DesorptionBarrierObjective(Objective):
    """The desorption barrier's Z: the relaxed adsorbate lifted rigidly to any height in [0, dz_max)
    (continuous, where the sampled scan steps by dz_step), optionally shifted laterally."""

    check = "desorption_barrier"

    def domain(self, settings):
        dom = getattr(settings, "adversary", None)
        return dom if dom is not None else AdsorbateDomain()

    def problems(self, settings, evaluator):
        from ...laws import CHECKS
        from .check import lifted
        from ...structures.adsorbates import build_slab, classify, place, relax

        dom = self.domain(settings)
        lo, hi = dom.height if dom.height is not None else (0.0, settings.dz_max)
        hi = min(hi, settings.dz_max - 1e-6)  # the asymptote itself is the reference
        if hi < lo:
            raise DomainError(f"no admissible point: height range ({lo:g}, {hi:g}) A is empty below dz_max")
        check = CHECKS[self.check]()
        problems, notes = [], []
        tol = {"barrier": settings.tolerance["barrier"]}
        for probe in check.probes(settings):
            case = probe.params["case"]
            reason = _supported(evaluator, probe.atoms.get_chemical_symbols())
            if reason:
                notes.append(f"{probe.id}: {reason}")
                continue
            # the adsorbed state exactly as the sampled check prepares it (cached when it ran first)
            cutoff = evaluator.model.info.cutoff or 6.0
            vacuum = max(settings.vacuum, 0.5 * (settings.dz_max + 4.0 + cutoff + 2.0))
            slab = build_slab(case.metal, size=settings.size, facet=case.surface, vacuum=vacuum, free_layers=0)
            n = len(slab)
            rel = relax(place(slab, case.adsorbate, case.site), evaluator, fmax=settings.fmax, steps=settings.steps)
            outcome = classify(rel.atoms, n, case.site, settings.gamma)
            if outcome.status in ("dissociated", "desorbed") or not rel.converged:
                notes.append(f"{probe.id}: no bound, relaxed adsorbed state to lift (left out)")
                continue
            grid = np.round(np.arange(0.0, settings.dz_max + 1e-9, settings.dz_step), 6)
            seeds = [(d, 0.0, 0.0) for d in grid if lo <= d <= hi]
            problems.append(DesorptionProblem(rel.atoms, n, (lo, hi), dom.lateral,
                                              [lifted(rel.atoms, n, settings.dz_max)], tol, seeds, probe.id))
        return problems, notes

    def describe(self, settings, evaluator):
        dom = self.domain(settings)
        lo, hi = dom.height if dom.height is not None else (0.0, settings.dz_max)
        lat = f", lateral shifts up to {dom.lateral:g} of the cell vectors" if dom.lateral else ", at the relaxed site"
        return (f"Z: each relaxed adsorbate lifted rigidly by {lo:g} to {hi:g} A (asymptote {settings.dz_max:g} A){lat}; "
                "a rise on this rigid path is an upper bound on the barrier: the sampled check's CI-NEB is what "
                "confirms or dismisses it on the minimum-energy path")
