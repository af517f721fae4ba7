"""Test-suite configuration: pytester runs the plugin in-process on small models.

pytester restores ``sys.modules`` after each in-process run, and extension
modules (numpy, torch) cannot be imported twice in one process; importing
them here, before any inner run, keeps them in the snapshot.
"""

import numpy  # noqa: F401
import scipy.spatial.transform  # noqa: F401
import ase.build  # noqa: F401
import ase.io  # noqa: F401
import ase.neighborlist  # noqa: F401
import ase.calculators.emt  # noqa: F401
import ase.calculators.lj  # noqa: F401
import ase.calculators.morse  # noqa: F401

import pytest_mlip.contracts  # noqa: F401
import pytest_mlip.contracts.files  # noqa: F401
import pytest_mlip.reporting.verdicts  # noqa: F401
import pytest_mlip.testing  # noqa: F401
from pytest_mlip.models.registry import registry

import tests.mutants.foundation  # noqa: F401

registry()

pytest_plugins = ["pytester"]
