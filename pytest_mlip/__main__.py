"""``python -m pytest_mlip``: the ``pytest-mlip`` console command (judge, render, verify, ...)."""

import sys

from .cli import main

sys.exit(main())
