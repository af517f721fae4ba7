"""MACE and Orb adapters, exercised offline with randomly initialised models.

No weights can be downloaded here, so each test builds a small random model,
saves it where the adapter expects a file, and loads it through the registry.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import pytest_mlip  # noqa: F401  (sets TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD before torch loads)
from pytest_mlip.errors import ModelUnavailableError
from pytest_mlip.models import mace as mace_adapter
from pytest_mlip.models import orb as orb_adapter
from pytest_mlip.models import registry, weights

torch = pytest.importorskip("torch")


def _molecule():
    from ase.build import molecule

    atoms = molecule("CH3OH")
    atoms.center(vacuum=5.0)
    atoms.pbc = False
    return atoms


def _assert_finite(out, n_atoms):
    assert np.isfinite(float(out["energy"]))
    forces = np.asarray(out["forces"])
    assert forces.shape == (n_atoms, 3)
    assert np.all(np.isfinite(forces))


@pytest.fixture(autouse=True)
def _fresh_loaded_cache(monkeypatch):
    """Models loaded here (some under real names) must not leak into other tests; nothing downloads
    (tests/test_weights_download.py tests the download path against a local server)."""
    monkeypatch.setattr(registry, "_LOADED", {})
    monkeypatch.setenv(weights.OFFLINE_ENV, "1")


# --------------------------------------------------------------------------- MACE


def test_mace_bare_path_loads_with_metadata(mace_file):
    loaded = registry.load(str(mace_file))
    assert loaded.info.name == "mace:x.model"
    assert loaded.info.family == "mace"
    assert loaded.info.elements == ("H", "C", "O")
    assert loaded.info.cutoff == pytest.approx(4.0)
    assert loaded.info.dtype == "float32"
    assert loaded.info.conservative is True
    assert loaded.info.weights == str(mace_file)
    assert loaded.weights_hash
    assert loaded.torch_dtype == torch.float32
    atoms = _molecule()
    _assert_finite(loaded.compute(atoms, ["energy", "forces"]), len(atoms))


def test_mace_named_with_explicit_path(mace_file):
    loaded = registry.load(f"mace-mpa-0={mace_file}")
    assert loaded.info.name == "mace-mpa-0"
    assert loaded.info.training_data == "MPtrj+sAlex"
    # Metadata read from the loaded model replaces the foundation model's.
    assert loaded.info.elements == ("H", "C", "O")
    assert loaded.info.cutoff == pytest.approx(4.0)
    assert loaded.info.weights == str(mace_file)
    atoms = _molecule()
    out = loaded.compute(atoms, ["energy", "forces"])
    _assert_finite(out, len(atoms))
    # The same file as a bare path gives the same numbers.
    bare = registry.load(str(mace_file)).compute(atoms, ["energy", "forces"])
    assert float(out["energy"]) == pytest.approx(float(bare["energy"]), abs=1e-5)


def test_mace_missing_file_reason(tmp_path):
    missing = tmp_path / "nope.model"
    entry = registry.resolve(str(missing))
    assert entry.unavailable(entry.weights) == f"file not found: {missing}"
    with pytest.raises(ModelUnavailableError, match="file not found"):
        registry.load(str(missing))
    entry = registry.resolve(f"mace-mp-0-small={missing}")
    assert entry.unavailable(entry.weights) == f"file not found: {missing}"
    assert "pass mace=" in registry.resolve("mace").unavailable(None)


def test_mace_cache_only_name_unavailable_names_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    expected = tmp_path / "mace" / "20231203mace128L1_epoch199model"
    entry = registry.resolve("mace-mp-0-medium")
    reason = entry.unavailable(None)
    assert reason is not None and "\n" not in reason
    assert str(expected) in reason
    assert "mace-mp-0-medium=/path/to/file.model" in reason
    with pytest.raises(ModelUnavailableError, match="not in MACE's cache"):
        registry.load("mace-mp-0-medium")
    assert not expected.exists()  # nothing was downloaded
    reason = registry.resolve("mace-mpa-0").unavailable(None)
    assert str(tmp_path / "mace" / "macempa0mediummodel") in reason


def test_mace_cache_file_is_found_and_loaded(mace_file, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    target = tmp_path / "mace" / "20231210mace128L0_energy_epoch249model"
    target.parent.mkdir()
    shutil.copy(mace_file, target)
    assert registry.resolve("mace-mp-0-small").unavailable(None) is None
    loaded = registry.load("mace-mp-0-small")
    assert loaded.info.weights == str(target)
    assert loaded.info.elements == ("H", "C", "O")
    _assert_finite(loaded.compute(_molecule(), ["energy", "forces"]), 6)


def test_mace_cache_names_match_mace(tmp_path, monkeypatch):
    """Our cache paths are the ones mace-torch itself looks up (no download happens)."""
    pytest.importorskip("mace")
    from mace.calculators import foundations_models as fm
    from mace.tools.utils import get_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert mace_adapter.cache_dir() == get_cache_dir()

    def no_network(url, filename, *args, **kwargs):
        raise AssertionError(f"mace tried to download {url}")

    monkeypatch.setattr(fm, "_urlretrieve_with_timeout", no_network)
    monkeypatch.setattr(fm, "local_model_path", str(tmp_path / "absent.model"))
    for name, (key, *_rest) in mace_adapter._MODELS.items():
        url = weights.MACE_URLS[name]
        assert fm.mace_mp_urls[key] == url, name
        path = mace_adapter.cache_file(url)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
        assert fm.download_mace_mp_checkpoint(key) == str(path), name


def test_mace_float64_does_not_leak_dtype(mace_file):
    from ase.calculators.calculator import Calculator, all_changes

    class TorchToy(Calculator):
        """Energy computed in torch's *current default* dtype."""

        implemented_properties = ["energy", "forces"]

        def calculate(self, atoms=None, properties=None, system_changes=all_changes):
            super().calculate(atoms, properties, system_changes)
            pos = torch.tensor(self.atoms.positions.tolist(), requires_grad=True)
            diff = pos[:, None, :] - pos[None, :, :]
            r2 = (diff**2).sum(-1) + torch.eye(len(pos))
            energy = (torch.exp(-r2 / 3.7) * 0.731).sum() / 7.0
            energy.backward()
            self.results = {"energy": energy.item(), "forces": -pos.grad.numpy().astype(float)}

    def toy_result(atoms):
        work = atoms.copy()
        work.calc = TorchToy()
        return work.get_potential_energy(), work.get_forces()

    atoms = _molecule()
    before_dtype = torch.get_default_dtype()
    e0, f0 = toy_result(atoms)
    # The check has teeth: the toy's output changes with the default dtype.
    torch.set_default_dtype(torch.float64)
    try:
        e64, _ = toy_result(atoms)
    finally:
        torch.set_default_dtype(before_dtype)
    assert e64 != e0

    loaded = registry.load(f"mace@float64={mace_file}")
    assert torch.get_default_dtype() == before_dtype
    assert loaded.info.dtype == "float64"
    assert loaded.torch_dtype == torch.float64
    assert next(loaded.calc.models[0].parameters()).dtype == torch.float64
    out64 = loaded.compute(atoms, ["energy", "forces"])
    assert torch.get_default_dtype() == before_dtype
    _assert_finite(out64, len(atoms))

    e1, f1 = toy_result(atoms)
    assert e1 == e0
    assert np.array_equal(f1, f0)

    out32 = registry.load(str(mace_file)).compute(atoms, ["energy", "forces"])
    assert float(out64["energy"]) == pytest.approx(float(out32["energy"]), abs=1e-4)


def test_mace_float64_does_not_change_sevennet(mace_file):
    entry = registry.resolve("sevennet-0")
    reason = entry.unavailable(entry.weights)
    if reason:
        pytest.skip(reason)
    atoms = _molecule()
    seven = registry.load("sevennet-0")
    # TorchScript optimises after its first calls (forces move by ~3e-8): warm up first.
    for _ in range(3):
        first = seven.compute(atoms, ["energy", "forces"])
    mace64 = registry.load(f"mace@float64={mace_file}")
    mace64.compute(atoms, ["energy", "forces"])
    again = seven.compute(atoms, ["energy", "forces"])
    assert float(again["energy"]) == float(first["energy"])
    assert np.array_equal(again["forces"], first["forces"])


# --------------------------------------------------------------------------- Orb


@pytest.fixture
def orb_checkpoint(tmp_path):
    """Factory of random Orb checkpoints (~100 MB each), deleted after the test."""
    made = []

    def make(name, direct=False):
        made.append(_orb_checkpoint(tmp_path / name, direct))
        return made[-1]

    yield make
    for path in made:
        path.unlink(missing_ok=True)


def _orb_checkpoint(path, direct: bool = False):
    """A random Orb v3 state dict (default sizes: the pretrained constructor loads strictly)."""
    pytest.importorskip("orb_models")
    from orb_models.forcefield import pretrained
    from orb_models.forcefield.atomic_system import SystemConfig

    before = torch.get_default_dtype()
    torch.manual_seed(1)
    build = pretrained.orb_v3_direct_architecture if direct else pretrained.orb_v3_conservative_architecture
    model = build(system_config=SystemConfig(radius=6.0, max_num_neighbors=120))
    torch.save(model.state_dict(), path)
    assert torch.get_default_dtype() == before
    return path


def test_orb_conservative_from_explicit_path(orb_checkpoint):
    ckpt = orb_checkpoint("random-conservative.ckpt")
    matmul = torch.get_float32_matmul_precision()
    dtype = torch.get_default_dtype()
    loaded = registry.load(f"orb-v3-conservative-inf-omat={ckpt}")
    assert torch.get_float32_matmul_precision() == matmul
    assert torch.get_default_dtype() == dtype
    assert loaded.info.family == "orb"
    assert loaded.info.conservative is True
    assert loaded.info.cutoff == pytest.approx(6.0)
    assert loaded.info.weights == str(ckpt)
    assert "H" in loaded.info.elements and "Og" in loaded.info.elements
    atoms = _molecule()
    _assert_finite(loaded.compute(atoms, ["energy", "forces"]), len(atoms))


def test_orb_random_direct_model_is_not_rotation_invariant(orb_checkpoint):
    """A ready negative control: a direct Orb model has no built-in rotational symmetry."""
    from scipy.spatial.transform import Rotation

    ckpt = orb_checkpoint("random-direct.ckpt", direct=True)
    loaded = registry.load(f"orb-v3-direct-inf-omat={ckpt}")
    assert loaded.info.conservative is False
    atoms = _molecule()
    rotated = atoms.copy()
    centre = atoms.cell.sum(axis=0) / 2
    rot = Rotation.random(random_state=7).as_matrix()
    rotated.positions = (atoms.positions - centre) @ rot.T + centre
    e0 = float(loaded.compute(atoms, ["energy"])["energy"])
    e1 = float(loaded.compute(rotated, ["energy"])["energy"])
    assert np.isfinite(e0) and np.isfinite(e1)
    assert abs(e1 - e0) > 1e-3  # 0.04 eV with this seed


def test_orb_unavailable_and_local_lookup(tmp_path, monkeypatch):
    pytest.importorskip("orb_models")
    import cached_path.common
    from cached_path.util import find_latest_cached

    cache = tmp_path / "cached_path"
    cache.mkdir()
    monkeypatch.setattr(cached_path.common, "CACHE_DIRECTORY", cache)
    monkeypatch.setenv("CACHED_PATH_CACHE_ROOT", str(cache))
    monkeypatch.delenv(orb_adapter.ENV_DIR, raising=False)

    name = "orb-v3-conservative-inf-omat"
    url = weights.ORB_URLS[name]
    base = os.path.basename(url)
    entry = registry.resolve(name)
    reason = entry.unavailable(None)
    assert reason is not None and "\n" not in reason
    assert f"{name}=/path/to/{base}" in reason and str(cache) in reason
    with pytest.raises(ModelUnavailableError, match="weights not found"):
        registry.load(name)

    missing = tmp_path / "missing.ckpt"
    assert registry.resolve(f"{name}={missing}").unavailable(str(missing)) == f"file not found: {missing}"

    # $ORB_WEIGHTS_DIR/<URL basename>
    weights_dir = tmp_path / "orb"
    weights_dir.mkdir()
    (weights_dir / base).write_bytes(b"")
    monkeypatch.setenv(orb_adapter.ENV_DIR, str(weights_dir))
    assert entry.unavailable(None) is None
    assert orb_adapter.local_weights(url) == str(weights_dir / base)
    monkeypatch.delenv(orb_adapter.ENV_DIR)

    # cached_path's own copy, named as cached_path names it
    from cached_path.util import resource_to_filename

    copy = cache / resource_to_filename(url, '"some-etag"')
    copy.write_bytes(b"")
    (cache / (resource_to_filename(url, '"some-etag"') + ".json")).write_text("{}")
    assert entry.unavailable(None) is None
    assert orb_adapter.local_weights(url) == str(copy) == str(find_latest_cached(url, cache))


def test_orb_urls_match_constructors():
    pytest.importorskip("orb_models")
    import inspect

    from orb_models.forcefield.pretrained import ORB_PRETRAINED_MODELS

    for name, url in weights.ORB_URLS.items():
        default = inspect.signature(ORB_PRETRAINED_MODELS[name]).parameters["weights_path"].default
        assert default == url, name
