"""The laws: one folder per physical law, discovered here; every engine reads a law through :data:`LAWS`.

``pytest_mlip/laws/<law>/`` holds everything about one law: ``check.py``
(statement, rationale, procedure, typed settings, measurement), and as the
law needs them ``domain.py`` + ``adversary.py`` (the adversary's admissible
domain and objective), ``playbook.py`` (the detective's playbook),
``card.py`` (the reference card), ``calibration.py`` (its noise entry); its
``__init__.py`` defines the record ``LAW`` (:class:`~pytest_mlip.laws.law.Law`)
that names them and states why the law opts out of any engine.

Adding a law: one folder (copy a small one, e.g. ``zero_net_force``), one
contract file ``contracts/mlip_<law>.toml``, one mutant in ``tests/mutants``.
The engines (contract engine, adversary, detective, reference, reporting,
calibration) name no law; ``pytest-mlip laws`` prints the coverage table.
"""

import importlib
import pkgutil

from .base import CHECKS, Check, ContractSettings, Measurement, Probe, ProbeResult, Verdict, run_contract
from .law import ENGINES, Law, LawRecordError, coverage_text

#: law name (= its check's name) -> record
LAWS: dict[str, Law] = {}

for _mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _mod.ispkg:
        continue
    _pkg = importlib.import_module(f"{__name__}.{_mod.name}")
    _law = getattr(_pkg, "LAW", None)
    if not isinstance(_law, Law):
        raise LawRecordError(f"pytest_mlip/laws/{_mod.name}/__init__.py defines no LAW = Law(...) record")
    _law.package = _pkg.__name__
    LAWS[_law.name] = _law


def law_for(check: str) -> Law | None:
    """The record of the law whose check is ``check`` (None for an unknown name)."""
    return LAWS.get(check)


__all__ = ["CHECKS", "Check", "ContractSettings", "Measurement", "Probe", "ProbeResult", "Verdict", "LAWS", "Law",
           "ENGINES", "law_for", "coverage_text", "run_contract"]
