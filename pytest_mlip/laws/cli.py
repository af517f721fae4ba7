"""``pytest-mlip laws``: the law x engine coverage table, read from the law records (with every opt-out's reason)."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("laws", help="print which engines serve each law, and why a law opts out of one",
                       description=__doc__)
    p.add_argument("--json", action="store_true", help="print the table as JSON (law -> engine -> served, detail)")
    p.set_defaults(func=run)


def run(args) -> int:
    from . import LAWS
    from .law import coverage_rows, coverage_text

    if args.json:
        rows = {r["law"]: {k: {"served": v[0], "detail": v[1]} for k, v in r.items() if k != "law"}
                for r in coverage_rows(LAWS)}
        print(json.dumps(rows, indent=1, ensure_ascii=False))
    else:
        print(coverage_text(LAWS))
    return 0
