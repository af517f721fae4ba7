"""Registry errors and metadata, the evaluation cache, dtype isolation, calibration."""

import json
from pathlib import Path

import numpy as np
import pytest
from ase.build import molecule

from pytest_mlip.errors import ModelEvaluationError, UnknownModelError
from pytest_mlip.evaluation.evaluator import Evaluator
from pytest_mlip.models import registry as reg
from pytest_mlip.testing import builtin_contracts


def test_unknown_name_suggests():
    with pytest.raises(UnknownModelError, match="did you mean chgnet-0.3.0"):
        reg.resolve("chgnet-0.3")


def test_factory_module_missing():
    with pytest.raises(UnknownModelError, match="cannot import module"):
        reg.resolve("no_such_module_xyz:factory")


def test_shipped_models_have_metadata():
    for name in ("sevennet-0", "sevennet-l3i5", "chgnet-0.3.0", "chgnet-0.2.0", "chgnet-r2scan", "diep"):
        info = reg.resolve(name).info
        assert info.shipped and info.cutoff and info.elements and len(info.elements) >= 89
        assert info.conservative is True and info.training_data and info.functional
        assert reg.resolve(name).unavailable(None) is None, name


def test_entry_point_group_registers_third_party_models(monkeypatch):
    from pytest_mlip.models.info import ModelInfo

    class EP:
        name = "thirdparty"

        def load(self):
            return lambda: [reg.ModelEntry(info=ModelInfo(name="my-model", family="mine"),
                                           load=lambda w: __import__("ase.calculators.emt").calculators.emt.EMT())]

    monkeypatch.setattr(reg, "entry_points", lambda group: [EP()] if group == reg.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(reg, "_REGISTRY", None)
    assert "my-model" in reg.registry()
    monkeypatch.setattr(reg, "_REGISTRY", None)


def test_bare_factory_elements_are_probed():
    info = reg.load("tests.mutants:clean_morse").info
    assert info.elements and "Ni" in info.elements and info.family == "factory"


def test_cache_never_evaluates_a_configuration_twice():
    ev = Evaluator(reg.load("emt"))
    a = molecule("H2O")
    first = ev.evaluate(a)
    again = ev.evaluate(a.copy())
    assert ev.stats.calls == 1 and ev.stats.hits == 1 and again is first
    b = a.copy()
    b.positions[0, 0] += 1e-9
    ev.evaluate(b)
    assert ev.stats.calls == 2


def test_nan_is_a_model_evaluation_error_carrying_the_configuration():
    ev = Evaluator(reg.load("tests.mutants:NanAtShortRange"))
    from ase import Atoms

    a = Atoms("H2", positions=[[0, 0, 0], [0, 0, 0.5]])
    with pytest.raises(ModelEvaluationError) as err:
        ev.evaluate(a)
    assert len(err.value.atoms) == 2 and "non-finite energy" in str(err.value)
    with pytest.raises(ModelEvaluationError):  # the failure is cached too, not recomputed
        ev.evaluate(a)
    assert ev.stats.calls == 1


def test_isolated_systems_get_a_box_but_stay_non_periodic():
    ev = Evaluator(reg.load("emt"))
    a = molecule("CO")
    a.cell = [0, 0, 0]
    out = ev.evaluate(a)
    assert np.isfinite(out.energy) and out.stress is None


def test_tolerances_are_at_least_3x_measured_noise():
    calib = json.loads((Path(reg.__file__).parent.parent / "calibration.json").read_text())["noise"]
    contracts = builtin_contracts()
    checked = 0
    for model, per in calib.items():
        for name, noise in per.items():
            if name not in contracts:
                continue
            for key, value in noise.items():
                tau = contracts[name].tolerance.get(key)
                if tau is not None:
                    checked += 1
                    assert tau >= 3 * value, f"{name}.{key} tau {tau} < 3x noise {value} of {model}"
    assert checked > 20


def test_docs_are_generated_from_the_checks():
    from pytest_mlip.docs import render

    text = render()
    root = Path(reg.__file__).resolve().parent.parent.parent
    assert (root / "docs" / "contracts.md").read_text() == text, "run: pytest-mlip docs --out docs/contracts.md"
