"""Minimal reproduction of H1 (dimer-tail:transition-metal): runs in minutes, prints the headline numbers.

Runs the pre-registered protocol(s) the target violated on the target and the committee with the
fixed check routines of pytest-mlip (pytest_mlip.testing.run_contract).
"""

import json
import time
from pathlib import Path

from pytest_mlip.contracts.files import parse_contracts
from pytest_mlip.testing import run_contract

MODELS = ['sevennet-0', 'chgnet-0.3.0', 'diep']
PROTOCOL = None
TABLES = [{"name": "h1-dimer-tail-scope", "check": "dimer_tail", "hard": false, "basis": "disagreement", "description": "scope: neighbouring elements of H1", "elements": ["Mn", "V", "Fe", "Ti"], "distance": 4.5, "tolerance": {"tail": 0.1}}]


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
            raw = ", ".join(f"{k}={x:.4g}" for k, x in (worst.violations if worst else {}).items())
            mx = "-" if v.max_normalized is None else f"{v.max_normalized:.4g}"
            print(f"{settings.name:<45} {model:<28} {v.status:<5} max v/tau {mx:<10} "
                  f"worst {v.worst_probe} {raw} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
