"""The model registry: names -> lazily loaded ASE calculators with metadata.

Each model family has one small adapter module (``sevennet``, ``chgnet``,
``diep``, ``mace``, ``orb``, ``analytic``) that lists its :class:`ModelEntry`
objects; nothing heavy is imported until a model is loaded. Third-party
packages add names through the ``pytest_mlip.models`` entry-point group: each
entry point is a callable returning an iterable of :class:`ModelEntry`.

A model spec (what ``--mlip`` takes) is one of
- a registered name: ``sevennet-0``;
- a name with an explicit weights path: ``mace-mpa-0=/path/to/file.model``;
- a MACE model file: ``path/to/x.model``;
- a factory: ``some.module:factory`` (a callable returning an ASE calculator).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

from ..errors import ModelUnavailableError, UnknownModelError
from .dtype import torch_default_dtype
from .entry import ModelEntry, missing_package, package_version  # noqa: F401  (the vocabulary, re-exported)
from .info import ModelInfo

ENTRY_POINT_GROUP = "pytest_mlip.models"


def _builtin_entries() -> list[ModelEntry]:
    from . import analytic, chgnet, diep, mace, orb, sevennet

    out: list[ModelEntry] = []
    for module in (sevennet, chgnet, diep, mace, orb, analytic):
        out.extend(module.entries())
    return out


_REGISTRY: dict[str, ModelEntry] | None = None


def registry() -> dict[str, ModelEntry]:
    """All registered models by name (and alias), built once per process."""
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, ModelEntry] = {}
        entries = _builtin_entries()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                entries.extend(ep.load()())
            except Exception as exc:  # a broken third-party plugin must not hide ours
                import warnings

                warnings.warn(f"pytest-mlip: entry point {ep.name!r} failed: {exc}")
        for entry in entries:
            reg[entry.name] = entry
            for alias in entry.aliases:
                reg.setdefault(alias, entry)
        _REGISTRY = reg
    return _REGISTRY


def model_names() -> list[str]:
    """Canonical names (no aliases), in registration order."""
    seen, out = set(), []
    for entry in registry().values():
        if entry.name not in seen:
            seen.add(entry.name)
            out.append(entry.name)
    return out


def resolve(spec: str) -> ModelEntry:
    """The :class:`ModelEntry` for a model spec; raises a one-line error if unknown."""
    spec = spec.strip()
    reg = registry()
    if "=" in spec:
        name, path = spec.split("=", 1)
        entry = resolve(name)
        if entry.info.family == "analytic":  # a held-out case: emt=mymod:model ran plain EMT without a word
            raise UnknownModelError(f"{name} is an analytic model and takes no weights ({spec!r}); pass --mlip={name}, "
                                    "or your own model as module:factory")
        return entry.with_weights(os.path.expanduser(path))
    if spec in reg:
        return reg[spec]
    lowered = {k.lower(): v for k, v in reg.items()}
    if spec.lower() in lowered:
        return lowered[spec.lower()]
    if spec.endswith(".model") or (os.sep in spec and Path(spec).exists()):
        from . import mace

        return mace.entry_from_path(spec)
    if ":" in spec and not os.path.exists(spec):
        from . import factory

        return factory.entry_from_factory(spec)
    close = difflib.get_close_matches(spec, list(reg), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownModelError(
        f"unknown model {spec!r}{hint} (pytest --mlip-list shows every registered model; "
        "a factory is given as module:function, a MACE file by its path)"
    )


def make_available(entry: ModelEntry, announce: Callable[[str], None] | None = None) -> str | None:
    """None when ``entry`` can load here, downloading its default weights first where its family
    allows it and the network is not forbidden (``--mlip-offline``); else the one-line reason.

    A failed download raises :class:`ModelUnavailableError` naming the URL and the fixes.
    """
    reason = entry.unavailable(entry.weights)
    if reason is None or not entry.fetchable:
        return reason
    from . import weights

    if weights.offline():
        return reason + " (downloads are off: --mlip-offline)"
    if announce is not None:
        announce(f"pytest-mlip: {entry.name} is not cached here; downloading it once (--mlip-offline forbids this)")
    entry.fetch()
    return entry.unavailable(entry.weights)


def weights_hash(path: str | None) -> str | None:
    """sha256 (first 16 hex digits) of a weights file, or of every file in a folder."""
    if not path or not os.path.exists(path):
        return None
    digest = hashlib.sha256()
    files = [Path(path)] if os.path.isfile(path) else sorted(p for p in Path(path).rglob("*") if p.is_file())
    for f in files:
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


@dataclass
class LoadedModel:
    """A loaded calculator with its metadata and the torch dtype it runs in."""

    spec: str
    info: ModelInfo
    calc: object
    torch_dtype: object = None
    weights_hash: str | None = None
    load_seconds: float = 0.0
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: the model's first real call when it was made outside the evaluator (the element probe): (atoms, results);
    #: the evaluator repeats it with its own first call, so a warm-up glitch is a determinism violation
    first_call: tuple | None = None
    #: what the element probe's calls give the no-interaction check ([calls, flat calls, energies per atom])
    probe_counts: list | None = None
    #: were ``info.elements`` found by the element probe (a factory that declares none), not declared?
    elements_probed: bool = False

    @property
    def name(self) -> str:
        return self.info.name

    def compute(self, atoms, properties):
        """Run the calculator on a copy of ``atoms`` in the model's own dtype."""
        with self.lock, torch_default_dtype(self.torch_dtype):
            from ..evaluation.evaluator import named_call, read_outputs

            work = atoms.copy()
            work.calc = self.calc
            out = named_call(self.spec)(read_outputs, self.name, self.calc, work, properties)
            changed = changed_structure(atoms, work)
            if changed:
                from ..errors import ModelEvaluationError

                raise ModelEvaluationError(self.name, atoms, f"the model changed the structure it was given ({changed}) "
                                                             "and returned outputs of another one; a calculator must "
                                                             "not modify its input atoms")
            return out


def refuse_repeated_models(target: str, committee: list[str]) -> None:
    """A committee holds other models than the target, each once (pytest and detect alike: detect ran a committee
    naming the target as an empty one without a word, held-out round 11)."""
    from ..errors import MlipError

    seen = {resolve(target).name: f"the target ({target})"}
    for c in committee:
        name = resolve(c).name
        if name in seen:
            raise MlipError(f"--mlip-committee lists {c!r}, which is {seen[name]} already; a committee holds other "
                            "models, each once: remove it from the list")
        seen[name] = f"listed as {c!r}"


def changed_structure(given, after) -> str:
    """What a model call changed of the structure it was given (its atoms, elements, cell, periodicity, or positions
    beyond a lattice translation: wrapping atoms into the cell is the same structure), or "". A model that rewrote its
    input (every atom made H) had its outputs checked as the given structure's (held-out round 11)."""
    import numpy as np

    if (len(after) == len(given) and np.array_equal(after.numbers, given.numbers)
            and np.array_equal(after.positions, given.positions) and np.array_equal(after.cell.array, given.cell.array)
            and np.array_equal(after.pbc, given.pbc)):
        return ""  # every call of a well-behaved model: no lattice arithmetic on the hot path
    if len(after) != len(given):
        return f"{len(given)} atoms became {len(after)}"
    if not np.array_equal(after.numbers, given.numbers):
        return f"elements {given.get_chemical_formula()} became {after.get_chemical_formula()}"
    if not np.array_equal(after.pbc, given.pbc):
        return "its periodicity"
    if not np.allclose(after.cell.array, given.cell.array, rtol=0, atol=1e-8):
        return "its cell"
    delta = after.positions - given.positions
    periodic = given.pbc & (given.cell.lengths() > 0)
    if periodic.any():  # a lattice translation along periodic directions is the same structure
        frac = np.linalg.lstsq(given.cell.array.T, delta.T, rcond=None)[0].T
        frac[:, ~periodic] = 0.0
        delta = delta - np.rint(frac) @ given.cell.array
    if not np.allclose(delta, 0.0, rtol=0, atol=1e-6):
        return f"positions moved by up to {float(np.abs(delta).max()):.3g} A"
    return ""


_LOADED: dict[str, LoadedModel] = {}


def limit_torch_threads() -> None:
    """One torch thread per process unless ``PYTEST_MLIP_THREADS`` says otherwise.

    Reproducibility first: with several threads, torch's parallel float32
    reductions sum in a varying order, so a model's forces change in the 7th
    digit from one run to the next (DIEP, measured here) -- enough for a BFGS
    relaxation to end on the other side of its step budget and a verdict to
    flip between a serial run and ``pytest -n 2``. One thread per process also
    shares the cores between pytest-xdist workers instead of oversubscribing
    them (spinning OpenMP threads make each call several times slower).
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return
    wanted = os.environ.get("PYTEST_MLIP_THREADS")
    n = max(1, int(wanted)) if wanted else 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def load(spec: str, probe: bool = True) -> LoadedModel:
    """Load a model once per process (dtype-isolated) and return it.

    A factory model that does not declare its elements has them probed with model calls; ``probe=False``
    (the plugin's start-up check of the user's factory) loads without calling the model, so every usage error
    is found before the first model call, and the probe runs on the first ``load`` that needs it.
    """
    if spec in _LOADED:
        loaded = _LOADED[spec]
        if probe and loaded.info.elements is None and loaded.info.family == "factory":
            from .probe import probe_elements

            first: list = []
            counts: list = []
            loaded.info = loaded.info.model_copy(update={"elements": probe_elements(loaded.calc, first=first, name=spec,
                                                                                    counts=counts)})
            loaded.first_call = first[0] if first else None
            loaded.probe_counts = counts or None
            loaded.elements_probed = True
        return loaded
    entry = resolve(spec)
    reason = make_available(entry)
    if reason:
        raise ModelUnavailableError(f"model {entry.name!r} is not usable here: {reason}")
    start = time.perf_counter()
    # Undo whatever global dtype the loader sets, but remember it: that is the
    # dtype the model expects to run in.
    from ..evaluation.evaluator import no_process_exit

    with torch_default_dtype(None):
        try:
            with no_process_exit(f"the model loader of {entry.name!r}"):
                calc = entry.load(entry.weights)
        except ModelUnavailableError:
            raise
        except ImportError as exc:
            if entry.info.family == "factory":  # the user's code imports something this environment lacks
                missing = getattr(exc, "name", None)
                fix = (f"install the package that provides {missing!r} into this environment" if missing
                       else "install what the factory's module imports into this environment")
                raise ModelUnavailableError(f"factory {entry.name!r} could not load its model ({exc}); {fix}") \
                    from exc
            raise ModelUnavailableError(
                f"model {entry.name!r} could not be imported ({exc}); "
                f"install its extra: pip install 'pytest-mlip[{entry.info.family}]'"
            ) from exc
        from .dtype import current_default_dtype

        model_dtype = current_default_dtype()
    limit_torch_threads()
    from ase.calculators.calculator import BaseCalculator

    if not isinstance(calc, BaseCalculator) and not hasattr(calc, "calculate"):
        raise ModelUnavailableError(
            f"model {entry.name!r}: the factory returned {type(calc).__name__}, not an ASE "
            "calculator; return an ase.calculators.calculator.Calculator instance"
        )
    info = entry.info
    extra = getattr(calc, "mlip_metadata", None)
    if extra is not None:
        from .info import read_metadata

        info = info.model_copy(update=read_metadata(f"model {entry.name!r}", extra))
    props = tuple(getattr(calc, "implemented_properties", info.implemented_properties))
    info = info.model_copy(update={"implemented_properties": props})
    probed = probe and info.elements is None and info.family == "factory"
    if probed:
        from .probe import probe_elements

        first_probe: list = []
        probe_counts: list = []
        info = info.model_copy(update={"elements": probe_elements(calc, first=first_probe, name=spec,
                                                                  counts=probe_counts)})
    else:
        first_probe, probe_counts = [], []
    loaded = LoadedModel(
        spec=spec,
        info=info,
        calc=calc,
        torch_dtype=model_dtype,
        weights_hash=weights_hash(info.weights),
        load_seconds=time.perf_counter() - start,
        first_call=first_probe[0] if first_probe else None,
        probe_counts=probe_counts or None,
        elements_probed=probed,
    )
    _LOADED[spec] = loaded
    return loaded


def describe(entry: ModelEntry) -> dict:
    """A row of ``--mlip-list``: metadata plus whether the model is usable here."""
    reason = entry.unavailable(entry.weights)
    info = entry.info
    return {
        "name": info.name,
        "usable": "yes" if reason is None else f"no: {reason}",
        "weights": _weights_source(entry, reason),
        "elements": "all" if info.elements is None else f"{len(info.elements)}",
        "cutoff": "-" if info.cutoff is None else f"{info.cutoff:g}",
        "dtype": info.dtype,
        "conservative": {True: "yes", False: "no", None: "?"}[info.conservative],
        "training": " / ".join(x for x in (info.training_data, info.functional) if x) or "-",
        "channel": info.channel or "-",
    }


def _weights_source(entry: ModelEntry, reason: str | None) -> str:
    """How a model gets its weights: in the wheel, cached, fetched on first use, a given file, none needed."""
    if entry.info.shipped:
        return "in wheel"
    if entry.info.family == "analytic":
        return "none"
    if entry.fetchable:
        if reason is None:
            return "cached"
        return "fetch" if "not installed" not in reason else "fetch (pkg)"
    return "local file"


def default_committee(target: str) -> list[str]:
    """One usable shipped model of each family other than the target's.

    Independent families make disagreement informative; one per family keeps
    the default run short (the target plus two members on the shipped set).
    """
    try:
        target_family = resolve(target).info.family
    except Exception:
        target_family = None
    out, families = [], {target_family, "analytic", "factory"}
    for name in model_names():
        entry = registry()[name]
        if entry.info.family in families or not entry.info.shipped and entry.info.family not in ("mace", "orb"):
            continue
        if entry.unavailable(entry.weights) is None:
            out.append(name)
            families.add(entry.info.family)
    return out
