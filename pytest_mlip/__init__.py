"""pytest-mlip: physics-contract tests for machine-learning interatomic potentials.

Importing the package sets ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` (unless the user
set it) because e3nn 0.4.4, which mace-torch pins, loads its constants with a
pickle that torch >= 2.6 refuses by default.
"""

import os

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

__version__ = "0.1.0"
