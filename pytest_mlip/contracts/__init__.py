"""Contract files (data): loading and validating ``mlip_*.toml`` (``files``).

The check routines moved to :mod:`pytest_mlip.laws` (one folder per law):
"contracts" now names the data only, here and in the ``contracts/`` folders.
The names below are re-exported for code written against the old layout
(``from pytest_mlip.contracts import CHECKS``, ``pytest_mlip.contracts.base.Check``).
"""

from ..laws import CHECKS, Check, ContractSettings, Measurement, Probe, ProbeResult, Verdict

__all__ = ["CHECKS", "Check", "ContractSettings", "Measurement", "Probe", "ProbeResult", "Verdict"]
