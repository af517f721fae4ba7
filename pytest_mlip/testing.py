"""Reusable test helpers: run a contract on a model, and prove a contract bites.

``assert_bites(contract, mutant, clean)`` is the pattern every contract's test
follows: the planted-defect model must fail, the clean model must pass.
Other projects can use the same helpers for their own contracts and mutants.
"""

from __future__ import annotations

from .contracts.suite import load_suite
from .evaluation import evaluator_for
from .laws import run_contract as run


def builtin_contracts() -> dict:
    """Every built-in contract's settings, by contract name."""
    return load_suite()


def run_contract(contract, model: str, role: str = "target", recheck_guaranteed: bool = True, **overrides):
    """Verdict of a contract (a built-in name or a settings object) on a model spec."""
    settings = builtin_contracts()[contract] if isinstance(contract, str) else contract
    if overrides:
        settings = type(settings).model_validate({**settings.model_dump(), **overrides})
    return run(settings, evaluator_for(model), role=role, recheck_guaranteed=recheck_guaranteed)


def assert_bites(contract, mutant: str, clean: str, **overrides):
    """The mutant must fail the contract and the clean model must pass it."""
    bad = run_contract(contract, mutant, recheck_guaranteed=True, **overrides)
    good = run_contract(contract, clean, recheck_guaranteed=True, **overrides)
    assert bad.status == "fail", f"{contract}: mutant {mutant} was not caught: {bad.status} {bad.reason}"
    assert good.status == "pass", f"{contract}: clean {clean} did not pass: {good.status} {good.reason}"
    return bad, good
