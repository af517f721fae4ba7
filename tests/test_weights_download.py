"""Weights on first use, without a network: a local HTTP server (127.0.0.1 only) serves the files.

The registry's URL table (pytest_mlip.models.weights) is pointed at the local
server; each family's own downloader (mace's, cached_path for Orb) fetches the
file into its own cache once; the next load finds it there and asks nothing.
"""

from __future__ import annotations

import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from pytest_mlip.errors import ModelUnavailableError
from pytest_mlip.models import mace as mace_adapter
from pytest_mlip.models import orb as orb_adapter
from pytest_mlip.models import registry, weights

ROOT = Path(__file__).resolve().parent.parent


class _Server:
    def __init__(self, folder: Path):
        self.folder = folder
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_GET(self):
                server.requests.append(self.path)
                super().do_GET()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    s = _Server(folder)
    yield s
    s.close()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "_LOADED", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(weights.OFFLINE_ENV, raising=False)
    monkeypatch.delenv(orb_adapter.ENV_DIR, raising=False)
    weights.set_offline(None)
    yield
    weights.set_offline(None)


def _molecule():
    from ase.build import molecule

    atoms = molecule("CH3OH")
    atoms.center(vacuum=5.0)
    return atoms


def test_mace_downloads_once_into_maces_cache_and_loads(server, mace_file, monkeypatch, capfd):
    shutil.copy(mace_file, server.folder / "tiny-mace.model")
    url = server.url("tiny-mace.model")
    monkeypatch.setitem(weights.MACE_URLS, "mace-mp-0-small", url)
    entry = registry.resolve("mace-mp-0-small")
    assert entry.fetchable and "not in MACE's cache" in entry.unavailable(None)
    assert registry.describe(entry)["weights"] == "fetch"

    loaded = registry.load("mace-mp-0-small")  # downloads, then loads
    cached = mace_adapter.cache_file(url)
    assert cached == mace_adapter.cache_dir() / "tinymacemodel"
    assert cached.read_bytes() == Path(mace_file).read_bytes()
    assert server.requests == ["/tiny-mace.model"]
    assert loaded.info.weights == str(cached) and loaded.info.elements == ("H", "C", "O")
    out = loaded.compute(_molecule(), ["energy", "forces"])
    assert np.isfinite(float(out["energy"]))
    assert "Downloading" in capfd.readouterr().out  # mace's own progress line

    # once: a new process (a fresh _LOADED) finds the file in MACE's cache and asks nothing
    monkeypatch.setattr(registry, "_LOADED", {})
    assert registry.describe(registry.resolve("mace-mp-0-small"))["weights"] == "cached"
    registry.load("mace-mp-0-small")
    assert server.requests == ["/tiny-mace.model"]


def test_prefilled_cache_asks_nothing(server, mace_file, monkeypatch):
    url = server.url("never-served.model")
    monkeypatch.setitem(weights.MACE_URLS, "mace-mp-0-small", url)
    cached = mace_adapter.cache_file(url)
    cached.parent.mkdir(parents=True)
    shutil.copy(mace_file, cached)
    assert registry.resolve("mace-mp-0-small").unavailable(None) is None
    registry.load("mace-mp-0-small")
    assert server.requests == []


def test_offline_keeps_the_precise_message_and_asks_nothing(server, mace_file, monkeypatch):
    shutil.copy(mace_file, server.folder / "tiny-mace.model")
    url = server.url("tiny-mace.model")
    monkeypatch.setitem(weights.MACE_URLS, "mace-mp-0-small", url)
    weights.set_offline(True)
    with pytest.raises(ModelUnavailableError) as err:
        registry.load("mace-mp-0-small")
    msg = str(err.value)
    assert "\n" not in msg
    assert f"not in MACE's cache: download {url} to {mace_adapter.cache_file(url)}" in msg
    assert "mace-mp-0-small=/path/to/file.model" in msg and "--mlip-offline" in msg
    assert server.requests == [] and not mace_adapter.cache_file(url).exists()


def test_failed_download_is_one_line_naming_the_fixes(server, monkeypatch):
    url = server.url("missing.model")  # the server answers 404
    monkeypatch.setitem(weights.MACE_URLS, "mace-mp-0-small", url)
    with pytest.raises(ModelUnavailableError) as err:
        registry.load("mace-mp-0-small")
    msg = str(err.value)
    assert "\n" not in msg and "could not download" in msg and url in msg
    assert str(mace_adapter.cache_file(url)) in msg and "mace-mp-0-small=/path/to/file" in msg
    assert not mace_adapter.cache_file(url).exists()  # no truncated file left behind


def test_orb_downloads_once_with_cached_path(server, tmp_path, monkeypatch):
    pytest.importorskip("orb_models")
    import cached_path.common

    cache = tmp_path / "cached_path"
    monkeypatch.setattr(cached_path.common, "CACHE_DIRECTORY", cache)
    monkeypatch.setenv("CACHED_PATH_CACHE_ROOT", str(cache))
    payload = np.random.default_rng(0).bytes(4096)  # the bytes travel; loading Orb checkpoints is tested elsewhere
    (server.folder / "orb-small.ckpt").write_bytes(payload)
    name = "orb-v3-conservative-inf-omat"
    url = server.url("orb-small.ckpt")
    monkeypatch.setitem(weights.ORB_URLS, name, url)
    entry = registry.resolve(name)
    assert "weights not found locally" in entry.unavailable(None)
    assert registry.make_available(entry) is None
    local = orb_adapter.local_weights(url)
    assert local and Path(local).parent == cache and Path(local).read_bytes() == payload
    assert server.requests == ["/orb-small.ckpt"]
    assert registry.make_available(entry) is None  # once
    assert server.requests == ["/orb-small.ckpt"]


def test_shipped_and_analytic_models_fetch_nothing():
    for name in ("sevennet-0", "chgnet-0.3.0", "emt"):
        entry = registry.resolve(name)
        assert not entry.fetchable
        assert registry.describe(entry)["weights"] in ("in wheel", "none")


def test_pytest_offline_option_and_ini(pytester, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    result = pytester.runpytest_inprocess("--mlip=mace-mp-0-medium", "--mlip-offline", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*model 'mace-mp-0-medium' is not usable here: not in MACE's cache: download "
                                 "https://*2023-12-03-mace-128-L1_epoch-199.model to *mace-mp-0-medium=*"])
    pytester.makeini("[pytest]\nmlip_offline = true\n")
    result = pytester.runpytest_inprocess("--mlip=mace-mp-0-medium", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "downloads are off: --mlip-offline" in result.stderr.str()
    assert not weights.offline()  # the run did not leave the process offline


def test_pytest_downloads_on_first_use(pytester, server, mace_file, monkeypatch, tmp_path):
    """What a fresh runner does for ``pytest --mlip=NAME``: fetch once with a progress line, then run."""
    monkeypatch.syspath_prepend(str(ROOT))
    shutil.copy(mace_file, server.folder / "tiny-mace.model")
    monkeypatch.setitem(weights.MACE_URLS, "mace-mp-0-small", server.url("tiny-mace.model"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-cache"))
    pytester.makefile(".toml", mlip_tiny=(
        '[[contract]]\nname = "tiny-translation"\ncheck = "symmetry"\ntransform = "translation"\n'
        'structures = [{kind = "molecule", name = "CH3OH"}]\n'))
    result = pytester.runpytest_inprocess
    out = result("--mlip=mace-mp-0-small", "--mlip-committee=none", "--mlip-no-builtin", "mlip_tiny.toml",
                 "-p", "no:cacheprovider")
    assert out.ret == 0, out.stdout.str()[-2000:]
    assert server.requests == ["/tiny-mace.model"]
    out = result("--mlip=mace-mp-0-small", "--mlip-committee=none", "--mlip-no-builtin", "mlip_tiny.toml",
                 "-p", "no:cacheprovider")
    assert out.ret == 0 and server.requests == ["/tiny-mace.model"]  # cached: not fetched again
