"""The ``pytest-mlip`` console script: subcommands beside the pytest plugin.

Each subcommand lives in its own module exposing ``add_parser(subparsers)``
(which sets ``func`` on its parser); :data:`SUBCOMMANDS` lists those modules.
Errors from our code reach the user as one line and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import MlipError
from .numbers import OneLineParser

#: modules providing subcommands; a missing module (not yet installed extra) is skipped
SUBCOMMANDS = [
    "pytest_mlip.reporting.judge_cli",
    "pytest_mlip.agent.cli",
    "pytest_mlip.docs",
    "pytest_mlip.reference.cli",
    "pytest_mlip.laws.cli",
]


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = OneLineParser(prog="pytest-mlip", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pytest-mlip {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    final: list = [None]
    restore = guard_os_exit(final)
    try:
        final[0] = int(args.func(args) or 0)
    except MlipError as exc:
        print(f"pytest-mlip: error: {exc}", file=sys.stderr)
        final[0] = 2
    finally:
        restore()
    return final[0] if final[0] is not None else 1


def guard_os_exit(final: list):
    """``os._exit(0)`` from model code (a thread the model starts) while a command re-runs or probes it ended the
    judge with status 0 and no output, which a CI reads as approved (a held-out case). Until the command has its
    result, status 0 becomes 1 with one line; after it, the command's own status. Returns the undo, which keeps the
    guard while a thread other than the main one is still alive (it may call os._exit as the process ends)."""
    import os
    import threading

    real = os._exit

    def guarded(status=0):
        if status == 0:
            if final[0] is None:
                try:
                    print("pytest-mlip: os._exit(0) was called by model code before the command finished (a thread of "
                          "the model?): no result was reached; exit 1", file=sys.stderr, flush=True)
                except Exception:  # noqa: BLE001 - the status still says it
                    pass
                real(1)
            real(final[0])
        real(status)

    os._exit = guarded

    def restore():
        alive = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
        if os._exit is guarded and not alive:
            os._exit = real

    return restore


if __name__ == "__main__":
    sys.exit(main())
