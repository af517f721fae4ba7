"""Contracts as fixtures: ``mlip_model`` (one test per committee member) and ``mlip_check``.

::

    def test_copper_wall(mlip_model, mlip_check):
        mlip_check("repulsive_wall", pairs=[["Cu", "Cu"]])

    def test_my_own_number(mlip_model):
        atoms = ase.build.bulk("Cu")
        atoms.calc = mlip_model.calc          # calls go through the evaluator: cached, recorded
        assert atoms.get_potential_energy() < 0

- ``mlip_model`` is parametrized over the target and the committee of the run
  (``--mlip``, ``--mlip-committee``); the ids are the model names. Without
  ``--mlip`` the test is skipped with the reason.
- ``mlip_check(check_or_contract, **settings)`` runs one fixed check routine on
  the current model: a check name (``"repulsive_wall"``, settings from the
  keywords), a built-in contract name (``"repulsive-wall-dimers"``, keywords
  override its settings) or a settings object. Its verdict is recorded
  (provenance store, summary table, report, baseline) under the test's name,
  exactly like a contract file's item: on the target a violated hard check
  fails the test; on a committee member, or a soft check, it is reported as
  ``violated`` and the test passes. A skipped check skips the test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import pytest


@dataclass
class MlipModel:
    """The model a test runs on: its spec, registry name, role in the run, metadata and evaluator."""

    spec: str
    role: str  # "target" or "committee"

    @cached_property
    def evaluator(self):
        from .evaluation import evaluator_for

        return evaluator_for(self.spec)

    @property
    def name(self) -> str:
        return self.evaluator.name

    @property
    def info(self):
        """:class:`~pytest_mlip.models.info.ModelInfo`: elements, cutoff, dtype, conservative, ..."""
        return self.evaluator.model.info

    @property
    def calc(self):
        """A fresh ASE calculator whose calls go through the evaluator (cached, counted, recorded)."""
        from .evaluation.calculator import EvaluatorCalculator

        return EvaluatorCalculator(self.evaluator)

    def __repr__(self) -> str:
        return f"MlipModel({self.spec!r}, role={self.role!r})"


def _state(config):
    from .plugin import STATE_KEY

    return config.stash.get(STATE_KEY, None)


def _model_id(spec: str) -> str:
    from .models.registry import resolve

    try:
        return resolve(spec).name
    except Exception:
        return spec


def pytest_generate_tests(metafunc):
    if "mlip_model" not in metafunc.fixturenames:
        return
    state = _state(metafunc.config)
    if state is None:
        metafunc.parametrize("mlip_model", [pytest.param(None, marks=pytest.mark.skip(
            reason="no target model: run with --mlip=MODEL (or set mlip in the ini file)"))], ids=["no-mlip"],
                             indirect=True)
        return
    specs = state.models
    metafunc.parametrize("mlip_model", specs, ids=[_model_id(s) for s in specs], indirect=True)


@pytest.fixture
def mlip_model(request) -> MlipModel:
    """The current model of a test parametrized over the target and the committee (see module doc)."""
    state = _state(request.config)
    spec = getattr(request, "param", None)
    if state is None or spec is None:
        pytest.skip("no target model: run with --mlip=MODEL (or set mlip in the ini file)")
    model = MlipModel(spec=spec, role="target" if spec == state.target else "committee")
    from .errors import MlipError

    try:
        model.evaluator  # load now: a model that cannot load errors in setup, naming the fix
    except MlipError as exc:
        pytest.fail(str(exc), pytrace=False)
    node = request.node
    node.mlip_spec = spec
    node.mlip_reproduce = f"pytest --mlip={spec} --mlip-committee=none '{node.nodeid}'"
    return model


def _own_params(node) -> dict:
    """A test's own parameters (the model it runs on aside)."""
    return {k: v for k, v in getattr(getattr(node, "callspec", None), "params", {}).items() if k != "mlip_model"}


def _test_name(node) -> str:
    """The verdict name of a test: its function name, after its class (``TestA.test_x``) and with its own
    parameters (``test_x_H2O_``), not the model's; unique within a file by pytest's own rules."""
    name = getattr(node, "originalname", None) or node.name
    cls = getattr(node, "cls", None)
    if cls is not None:
        name = f"{cls.__name__}.{name}"
    params = _own_params(node)
    if params:
        name += "[" + ",".join(str(params[k]) for k in sorted(params)) + "]"
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "_", name)
    if len(name) > 80:
        import hashlib

        name = name[:71] + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return name or "test"


def _owner(node) -> str:
    """The test a verdict name belongs to, without the model it runs on."""
    params = _own_params(node)
    cls = getattr(node, "cls", None)
    return f"test {node.path}::{(cls.__name__ + '::') if cls else ''}{getattr(node, 'originalname', node.name)}" + \
        (f" {sorted((k, repr(v)) for k, v in params.items())}" if params else "")


def settings_for(check_or_contract, name: str, overrides: dict, base_dir=None):
    """The settings ``mlip_check`` runs: a check name, a built-in contract name or a settings object,
    with the keyword overrides, named after the test (unless ``name=`` is among them)."""
    from .laws import CHECKS
    from .laws.base import ContractSettings
    from .errors import MlipError

    if isinstance(check_or_contract, ContractSettings):
        base = check_or_contract.model_dump(exclude={"tolerance"})
        base["tolerance"] = dict(check_or_contract.tolerance)
        cls = type(check_or_contract)
    elif isinstance(check_or_contract, str) and check_or_contract in CHECKS:
        cls = CHECKS[check_or_contract].Settings
        base = {"check": check_or_contract}
    elif isinstance(check_or_contract, str):
        from .testing import builtin_contracts

        contracts = builtin_contracts()
        if check_or_contract not in contracts:
            import difflib

            close = difflib.get_close_matches(check_or_contract, [*CHECKS, *contracts], n=3, cutoff=0.5)
            raise MlipError(f"mlip_check: {check_or_contract!r} is neither a check ({', '.join(sorted(CHECKS))}) "
                            "nor a built-in contract" + (f"; did you mean {', '.join(close)}?" if close else ""))
        settings = contracts[check_or_contract]
        cls = type(settings)
        base = settings.model_dump(exclude={"tolerance"})
        base["tolerance"] = dict(settings.tolerance)
    else:
        raise MlipError(f"mlip_check takes a check name, a contract name or a settings object, "
                        f"not {type(check_or_contract).__name__}")
    data = {**base, "name": name, **overrides}
    try:
        settings = cls.model_validate(data)
    except Exception as exc:  # pydantic's ValidationError: name the field
        first = str(exc).splitlines()
        raise MlipError(f"mlip_check({check_or_contract!r}): invalid settings: "
                        + "; ".join(line.strip() for line in first[1:3])) from None
    from .contracts.files import check_settings

    label = check_or_contract if isinstance(check_or_contract, str) else settings.check
    check_settings(settings, f"mlip_check({label!r}): settings", base=base_dir)  # what a contract file gets too
    return settings


@pytest.fixture
def mlip_check(request, mlip_model):
    """``mlip_check(check_or_contract, **settings)``: run a fixed check on ``mlip_model`` (see module doc)."""
    from .errors import MlipError
    from .plugin import run_check
    from .reporting.verdicts import format_failure

    state = _state(request.config)
    node = request.node

    def run(check_or_contract, **overrides):
        if getattr(node, "verdict", None) is not None:
            pytest.fail("mlip_check runs one check per test (one row of the summary per test); write one test per "
                        "check", pytrace=False)
        try:
            settings = settings_for(check_or_contract, _test_name(node), overrides, base_dir=node.path.parent)
        except MlipError as exc:
            refused = str(exc)
        else:
            refused = None
        if refused is None and state is not None:
            owner, other = _owner(node), state.names.get(settings.name)
            if other is not None and other != owner:
                refused = (f"mlip_check: the name {settings.name!r} is taken by {other}: names key the summary, "
                           "the report and the baseline; rename this test or pass name=... to mlip_check")
            else:
                state.names[settings.name] = owner
        if refused is not None:  # outside the except block: one line, no chained traceback
            # the user's mistake, found only as the test ran: the run ends with pytest's usage-error status (4)
            node.user_properties.append(("mlip_usage_error", refused))
            pytest.fail(refused, pytrace=False)
        verdict = run_check(node, settings, mlip_model.evaluator, mlip_model.role)
        if verdict.gating:
            pytest.fail(format_failure(verdict, state).replace(
                f"--mlip-committee=none --mlip-partial -k '{verdict.contract}'",
                f"--mlip-committee=none --mlip-partial '{node.nodeid}'"), pytrace=False)
        return verdict

    return run
