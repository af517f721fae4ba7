"""An ASE calculator in front of an :class:`~.evaluator.Evaluator` (what ``mlip_model.calc`` is).

Every call goes through the evaluator: answered from its cache when the
configuration was computed before, counted, checked for non-finite output and,
inside a pytest-mlip run, recorded in the provenance store like any contract's
model call. ASE optimizers, NEB, phonons and equations of state can use it as
they use any calculator.
"""

from __future__ import annotations

from ase.calculators.calculator import Calculator, all_changes


class EvaluatorCalculator(Calculator):
    implemented_properties = ["energy", "free_energy", "forces", "stress"]

    def __init__(self, evaluator, **kwargs):
        super().__init__(**kwargs)
        self.evaluator = evaluator

    @property
    def name(self) -> str:  # what ASE prints for the calculator
        return f"mlip:{self.evaluator.name}"

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        result = self.evaluator.evaluate(self.atoms)  # raises ModelEvaluationError with the configuration
        self.results = {"energy": result.energy, "free_energy": result.energy, "forces": result.forces.copy()}
        if result.stress is not None:
            self.results["stress"] = result.stress.copy()
        elif "stress" in properties:
            from ase.calculators.calculator import PropertyNotImplementedError

            raise PropertyNotImplementedError(
                f"{self.evaluator.name}: stress is computed only for fully periodic cells of a model with stress")
