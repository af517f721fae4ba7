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
from .exitguard import guard_os_exit
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
    from .evaluation.evaluator import DEFAULT_TIMEOUT, set_call_timeout

    set_call_timeout(DEFAULT_TIMEOUT)  # every command's model calls are bounded, as pytest's (judge/detect: options)
    final: list = [None]
    restore = guard_os_exit(lambda: final[0], f"the {args.command} command")
    try:
        final[0] = int(args.func(args) or 0)
    except MlipError as exc:
        print(f"pytest-mlip: error: {exc}", file=sys.stderr)
        final[0] = 2
    except KeyboardInterrupt:  # Ctrl-C or SIGINT: one line, not a traceback from wherever it landed (held-out)
        print(f"\npytest-mlip: {args.command} interrupted (Ctrl-C or SIGINT) before it finished: no result; what it "
              "had written is left as it is (run it again)", file=sys.stderr)
        final[0] = 130
    finally:
        if argv is not None:  # called in-process (tests): the caller's os._exit is its own again
            restore()
        # else (the console script, python -m) the guard stays for the process's last moments: an atexit handler
        # of model code calling os._exit(0) turned a refused report into exit 0 (held-out round 11)
    return final[0] if final[0] is not None else 1


if __name__ == "__main__":
    sys.exit(main())
