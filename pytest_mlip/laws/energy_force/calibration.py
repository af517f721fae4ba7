"""Energy-force consistency's calibration entry: the finite-difference noise of the check's own estimator."""

from __future__ import annotations

HOW = ("energy-force-consistency: the check's own worst |F - F_FD| at step 3e-3 A with its h/2 refinement applied to "
       "every component (the better of central differences and Richardson), over the structures on which the law "
       "holds at the default tolerance (a failing structure is a finding, not noise, e.g. DIEP's benzene): the "
       "finite-difference noise; its maximum over the models is the floor a contract's tolerance may not go below.")


def fd_noise(settings, evaluator) -> float:
    """The worst |F - F_FD| with the refinement applied to every component (tolerance ~0, so each component gets
    the better of the central difference at h and the Richardson estimate from h and h/2), over the contract's
    structures that the model covers and on which the law holds at the default tolerance."""
    from .check import EnergyForce

    holds = {p.probe for p in EnergyForce().run(settings, evaluator, recheck_guaranteed=True).probes
             if p.status == "ok" and p.normalized <= 1}
    strict = settings.model_copy(update={"tolerance": {"forces": 1e-12}})
    verdict = EnergyForce().run(strict, evaluator, recheck_guaranteed=True)
    return max((p.violations.get("forces", 0.0) for p in verdict.probes if p.probe in holds), default=0.0)


def noise(settings, ctx) -> dict:
    return {"forces": fd_noise(settings, ctx.evaluator)}
