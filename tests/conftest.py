"""Test-suite configuration: pytester runs the plugin in-process on small models.

pytester restores ``sys.modules`` after each in-process run, and extension
modules (numpy, torch) cannot be imported twice in one process; importing
them here, before any inner run, keeps them in the snapshot.
"""

import numpy  # noqa: F401
import numpy as np
import pytest

try:  # torch too: an inner run that imports it first drops it, and a second import breaks torch's numpy bridge
    import torch  # noqa: F401
    # and torch._dynamo, which registers torch._inductor's test operators: an inner run that loaded a model through
    # it first dropped it, and the MACE download tests' fixture then failed on a second registration (CI, round 14)
    import torch._dynamo  # noqa: F401
except ImportError:  # pragma: no cover - the suite runs without the model extras too
    pass
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


@pytest.fixture
def pytester(pytester):
    """pytester whose subprocess runs end after 10 minutes: a hang fails its test, not the CI job (a plain run
    with --looponfail in its addopts watched its folder until CI's 90 minutes were spent)."""
    bare = pytester.runpytest_subprocess

    def bounded(*args, timeout: float = 600):
        return bare(*args, timeout=timeout)

    pytester.runpytest_subprocess = bounded
    return pytester


@pytest.fixture
def run(pytester, monkeypatch):
    """Run pytest in a scratch folder with the repository importable (for tests.mutants)."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))

    def _run(*args):
        return pytester.runpytest_inprocess(*args, "-p", "no:cacheprovider")

    return _run


@pytest.fixture(scope="session")
def mace_file(tmp_path_factory):
    """A tiny random ScaleShiftMACE for H, C, O with r_max 4 A, saved as x.model."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("mace")
    import pytest_mlip  # noqa: F401  (sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD before e3nn loads)
    from e3nn import o3
    from mace import modules

    before = torch.get_default_dtype()
    torch.manual_seed(0)
    block = modules.interaction_classes["RealAgnosticResidualInteractionBlock"]
    model = modules.ScaleShiftMACE(
        r_max=4.0,
        num_bessel=4,
        num_polynomial_cutoff=5,
        max_ell=2,
        interaction_cls=block,
        interaction_cls_first=block,
        num_interactions=2,
        num_elements=3,
        hidden_irreps=o3.Irreps("8x0e+8x1o"),
        MLP_irreps=o3.Irreps("8x0e"),
        atomic_energies=np.array([-1.0, -3.0, -5.0]),
        avg_num_neighbors=3.0,
        atomic_numbers=[1, 6, 8],
        correlation=2,
        gate=torch.nn.functional.silu,
        atomic_inter_scale=1.0,
        atomic_inter_shift=0.0,
    )
    path = tmp_path_factory.mktemp("mace") / "x.model"
    torch.save(model, path)
    assert torch.get_default_dtype() == before
    return path

