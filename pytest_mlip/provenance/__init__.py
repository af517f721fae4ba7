"""Provenance: every model call and every derived number is a stored, content-addressed artifact.

- :mod:`.artifact`: the artifact (value, routine, parameters, reason, context,
  parents, model identity, code version) and its content id;
- :mod:`.store`: the SQLite store (WAL, schema version, safe for xdist workers
  and killed runs);
- :mod:`.recorder`: model calls (through the evaluator's ``recorder`` hook) and
  verdicts turned into artifacts;
- :mod:`.plugin`: the pytest hooks and options (store, report, CI gate).

Reports cite artifacts by id; ``pytest-mlip judge`` re-verifies them
(:mod:`pytest_mlip.reporting.judge`).
"""

from .artifact import Artifact, ModelIdentity, code_version
from .store import Store, StoreError

__all__ = ["Artifact", "ModelIdentity", "Store", "StoreError", "code_version"]
