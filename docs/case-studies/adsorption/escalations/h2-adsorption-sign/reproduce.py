"""Minimal reproduction of H2 (narrow:adsorption-sign:u-block): runs in minutes, prints the headline numbers.

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
TABLES = [{"name": "h2-adsorption-sign-thicker", "check": "adsorption_sign", "hard": true, "basis": "exact", "description": "scope (narrowed): the failing cells on a thicker slab of H2", "metals": ["Ni"], "adsorbates": ["OH"], "sites": ["ontop", "bridge", "hollow"], "size": [2, 2, 4], "free_layers": 2, "fmax": 0.1, "steps": 200, "tolerance": {"E_rel": 0.05, "unbound": 0.5, "not_converged": 0.5}, "relax_sites": 3}]


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
