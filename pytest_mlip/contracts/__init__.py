"""Contract checks: one module per law; each ``Check`` subclass registers itself in :data:`CHECKS`.

Every module in this package is imported here, so adding a contract means
adding one module with one ``Check`` subclass.
"""

import importlib
import pkgutil

from .base import CHECKS, Check, ContractSettings, Measurement, Probe, ProbeResult, Verdict

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name not in ("base", "files"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["CHECKS", "Check", "ContractSettings", "Measurement", "Probe", "ProbeResult", "Verdict"]
