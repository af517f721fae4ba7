"""Moved to :mod:`pytest_mlip.laws.base`; kept so users' own checks (``pytest_mlip.contracts.base.Check``) and
provenance routine names written by earlier runs keep resolving."""

from ..laws.base import *  # noqa: F401,F403
from ..laws.base import CHECKS, MISSING_DEPENDENCY, Check, ContractSettings, Measurement, Probe, ProbeResult, \
    Verdict, unit_text  # noqa: F401
