"""An escalation's minimal reproduction: a script that runs the violated protocol on every model of the run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .escalation import EscalationWriter


def reproduce_script(w: EscalationWriter, protocol_file: str | None) -> str:
    models = [w.det.target] + list(w.det.committee)
    if protocol_file:
        source = f"PROTOCOL = Path(__file__).with_name({protocol_file!r})"
        tables = None
    else:
        source = "PROTOCOL = None"
        tables = [w.pred[r.name].protocol for r in w.scope]
    return f'''"""Minimal reproduction of {w.h.id} ({w.h.key}): runs in minutes, prints the headline numbers.

Runs the pre-registered protocol(s) the target violated on the target and the committee with the
fixed check routines of pytest-mlip (pytest_mlip.testing.run_contract).
"""

import json
import time
from pathlib import Path

from pytest_mlip.contracts.files import parse_contracts
from pytest_mlip.testing import run_contract

MODELS = {models!r}
{source}
TABLES = {json.dumps(tables) if tables else None}


def protocols():
    if PROTOCOL is not None:
        return parse_contracts(PROTOCOL)
    from pytest_mlip.agent.protocols import to_toml

    return parse_contracts(Path("protocol.toml"), text=to_toml(TABLES))


def main():
    for settings in protocols():
        for model in MODELS:
            t0 = time.perf_counter()
            v = run_contract(settings, model, role="target" if model == MODELS[0] else "committee")
            worst = v.worst()
            raw = ", ".join(f"{{k}}={{x:.4g}}" for k, x in (worst.violations if worst else {{}}).items())
            mx = "-" if v.max_normalized is None else f"{{v.max_normalized:.4g}}"
            print(f"{{settings.name:<45}} {{model:<28}} {{v.status:<5}} max v/tau {{mx:<10}} "
                  f"worst {{v.worst_probe}} {{raw}} ({{time.perf_counter() - t0:.1f}} s)")


if __name__ == "__main__":
    main()
'''
