"""Settle one failing probe against a reference: compute the card's configurations, derive, decide.

The reference energies are cached on disk by configuration and method (a
rerun costs nothing) and every number becomes an artifact: one ``reference``
artifact per configuration (engine, version, functional, basis or mode, spin,
convergence, seconds), the reference observables (kind ``observable``, named
as the model's, citing those), and the decision (kind ``reference_decision``,
citing the model's number and the reference's, with the band and the table in
its parameters).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import loads_json
from ..provenance.artifact import Artifact, ModelIdentity, canonical
from .cards import CONFIRMED, REFUTED, UNDECIDED, Card, ProbeCase, RefConfig, Undecidable  # noqa: F401
from .engines import Engine, EngineFailure, OutOfTime, OutsideDomain, Result

DECISION_ROUTINE = "pytest_mlip.reference.cards.Card.decide"


def config_key(atoms, engine: Engine) -> str:
    """Cache key: the configuration (numbers, positions to 1e-6 A, cell, pbc, spin, moments) and the method."""
    doc = {"numbers": [int(z) for z in atoms.numbers],
           "positions": np.round(np.asarray(atoms.positions, float), 6).tolist(),
           "cell": np.round(np.asarray(atoms.cell.array, float), 6).tolist(), "pbc": [bool(x) for x in atoms.pbc],
           "spin": atoms.info.get("spin"), "charge": atoms.info.get("charge", 0),
           "moments": np.round(atoms.get_initial_magnetic_moments(), 6).tolist(),
           "method": engine.method.model_dump(mode="json", exclude={"ranks"}), "version": engine.version()}
    return hashlib.sha256(canonical(doc).encode()).hexdigest()[:32]


class Cache:
    """One JSON file per reference result under ``folder`` (written atomically). Each entry carries a digest of its
    key and values: an entry edited since it was written (held-out round 14: a PySCF energy shifted by 0.03 eV flipped
    a decision, with 0 points computed) does not match it and is computed again, and its file replaced."""

    def __init__(self, folder):
        self.folder = Path(folder)

    @staticmethod
    def digest(key: str, fields: dict) -> str:
        return hashlib.sha256(f"pytest-mlip reference cache {key}\n{canonical(fields)}".encode()).hexdigest()

    def get(self, key: str) -> Result | None:
        p = self.folder / f"{key}.json"
        try:
            d = loads_json(p.read_text())
            fields = {k: d[k] for k in ("energy", "converged", "seconds", "spin", "details")}
            if d.get("digest") != self.digest(key, fields):
                return None  # edited, or written by an older pytest-mlip: computed again
            return Result(fields["energy"], fields["converged"], fields["seconds"], fields["spin"], fields["details"])
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def put(self, key: str, r: Result) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{key}.{os.getpid()}.tmp"
        fields = {"energy": r.energy, "converged": r.converged, "seconds": r.seconds, "spin": r.spin,
                  "details": r.details}
        tmp.write_text(json.dumps({**fields, "digest": self.digest(key, fields)}, sort_keys=True))
        os.replace(tmp, self.folder / f"{key}.json")


class Budget:
    """Seconds of engine time this process may still spend (cached results are free)."""

    def __init__(self, seconds: float | None):
        self.total = seconds
        self.spent = 0.0

    @property
    def exhausted(self) -> bool:
        return self.total is not None and self.spent >= self.total

    def deadline(self) -> float | None:
        """time.monotonic() by which the next computation must stop (None: no budget)."""
        return None if self.total is None else time.monotonic() + max(0.0, self.total - self.spent)


@dataclass
class Settlement:
    """One probe settled (or not) against one engine."""

    contract: str
    probe: str
    engine: str
    decision: str
    reason: str
    quantity: str
    model_value: float | None = None
    observables: dict[str, float] = field(default_factory=dict)
    band: dict | None = None
    points: list[dict] = field(default_factory=list)  # per configuration: name, role, key, result fields, cached
    seconds: float = 0.0
    curve: tuple[list, list] | None = None  # reference points on the model's curve (x, y)
    artifacts: list[Artifact] = field(default_factory=list)
    ids: dict = field(default_factory=dict)  # engine, observables{name: id}, decision id, points{name: id}
    inputs: str | None = None  # where the card's inputs for an external code were written (not computed here)


def settle(card: Card, settings, case: ProbeCase, engine: Engine, cache: Cache | None, budget: Budget,
           model=None, parents: dict | None = None, code_version: str = "", run: str | None = None,
           inputs: Path | None = None) -> Settlement:
    """Apply ``card`` to one probe with ``engine``; ``parents`` maps model quantity names to artifact ids.

    When the card is not run here, or a configuration is outside the engine's domain, and ``inputs`` is a folder,
    the card's configurations are written under it for an external code (:mod:`.inputs`) and the reason says where.
    """
    parents = parents or {}
    st = Settlement(case.contract, case.probe, engine.name, UNDECIDED, "", card.quantity,
                    model_value=_num(case.values.get(card.quantity)))
    why = card.domain_error(settings, case)
    configs: list[RefConfig] = []
    if not why:
        configs = card.configurations(settings, case)
        if card.not_run_here:
            st.reason = f"not run here: {card.not_run_here}"
        for c in configs:
            why = why or engine.domain_error(c.atoms)
    energies: dict[str, float] = {}
    if st.reason:
        pass
    elif why:
        st.reason = f"outside the engine's domain: {why}"
    else:
        for c in configs:
            key = config_key(c.atoms, engine)
            hit = cache.get(key) if cache else None
            if hit is None:
                if budget.exhausted:
                    st.reason = (f"reference budget spent ({budget.spent:.0f} s of {budget.total:g} s) before "
                                 f"configuration {c.name}")
                    break
                t0 = time.monotonic()
                try:
                    hit = engine.compute(c.atoms, deadline=budget.deadline())
                except OutsideDomain as exc:
                    st.reason = f"outside the engine's domain: {exc}"
                    break
                except OutOfTime as exc:
                    budget.spent += time.monotonic() - t0
                    st.seconds += time.monotonic() - t0
                    st.reason = f"reference budget spent during configuration {c.name} (nothing cached): {exc}"
                    break
                except EngineFailure as exc:
                    st.reason = f"the engine failed on {c.name} (nothing cached): {exc}"
                    break
                except Exception as exc:  # noqa: BLE001 - the engine's own crash (a PySCF RuntimeError): undecided,
                    # never an item that does not finish (held-out round 11: the run read complete, the item crashed)
                    first = (str(exc).splitlines() or [""])[0][:200]
                    st.seconds += time.monotonic() - t0
                    st.reason = f"the engine crashed on {c.name} (nothing cached): {type(exc).__name__}: {first}"
                    break
                budget.spent += hit.seconds
                st.seconds += hit.seconds
                if cache:
                    cache.put(key, hit)
                cached = False
            else:
                cached = True
            st.points.append({"name": c.name, "role": c.role, "key": key, "energy": hit.energy,
                              "converged": hit.converged, "seconds": hit.seconds, "spin": hit.spin,
                              "details": hit.details, "cached": cached, "formula": c.atoms.get_chemical_formula()})
            if not hit.converged or hit.energy is None:
                st.reason = f"the reference did not converge on {c.name} ({c.role})"
                break
            energies[c.name] = hit.energy
    if configs and inputs is not None and (card.not_run_here or why):
        st.inputs = str(_write_inputs(configs, case, inputs))
        st.reason += f"; inputs for an external code written to {st.inputs}"
    if not st.reason:
        try:
            st.observables = {k: v for k, v in card.observables(settings, case, energies).items() if _finite(v)}
            st.curve = card.curve(settings, case, energies)
        except Undecidable as exc:
            st.reason = str(exc)
        ref = st.observables.get(card.quantity)
        if st.reason:
            pass
        elif ref is None:
            st.reason = f"the reference gives no {card.quantity} here (e.g. an unbound reference curve)"
        elif st.model_value is None:
            st.reason = f"the model reported no {card.quantity} on this probe"
        else:
            band = card.band(settings, case, ref)
            st.band = band.as_dict()
            st.decision, st.reason = card.decide(st.model_value, band)
    _artifacts(st, card, engine, model, parents, code_version, run)
    return st


def _write_inputs(configs: list[RefConfig], case: ProbeCase, folder) -> Path:
    """The card's configurations as extxyz, VASP and Quantum ESPRESSO inputs in ``folder/<contract>/<probe>``."""
    import re
    from types import SimpleNamespace

    from .inputs import write_inputs

    safe = lambda x: re.sub(r"[^A-Za-z0-9_.@+-]+", "_", x)  # noqa: E731
    out = Path(folder) / safe(case.contract) / safe(case.probe)
    write_inputs([SimpleNamespace(name=c.name, probe=case.probe, role=c.role, atoms=c.atoms, distance=c.distance)
                  for c in configs], out)
    return out


def _num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _finite(x) -> bool:
    return _num(x) is not None


def _artifacts(st: Settlement, card: Card, engine: Engine, model, parents: dict, code_version: str, run):
    ident = ModelIdentity.of(model) if model is not None and hasattr(model, "info") else model
    base = {"contract": st.contract, "check": card.check, "probe": st.probe, "engine": engine.name}
    method = engine.describe()
    point_ids = {}
    for p in st.points:
        a = Artifact(kind="reference", value={k: p[k] for k in ("energy", "converged", "seconds", "spin", "details")},
                     routine=f"pytest_mlip.reference.engines.{type(engine).__name__}.compute",
                     params={**base, **method, "config": p["name"], "role": p["role"], "cache_key": p["key"],
                             "units": "eV"},
                     parents=(), model=None, code_version=code_version,
                     reason=f"reference single point {p['name']} ({p['role']}) of the {card.check} card",
                     context={"cached": p["cached"], "formula": p["formula"]}, run=run)
        st.artifacts.append(a)
        point_ids[p["name"]] = a.id
    obs_ids = {}
    card_routine = f"{type(card).__module__}.{type(card).__qualname__}.observables"
    for name, v in st.observables.items():
        a = Artifact(kind="observable", value=float(v), routine=card_routine,
                     params={**base, "name": name, "reference": method["engine"], "method": engine.method.label()},
                     parents=tuple(point_ids.values()), model=None, code_version=code_version,
                     reason=f"reference {name} on probe {st.probe} from the card's configurations", context={},
                     run=run)
        st.artifacts.append(a)
        obs_ids[name] = a.id
    series_ids = {}
    if st.curve is not None:
        for name, values in zip(("x", "y"), st.curve):
            a = Artifact(kind="series", value=[float(v) for v in values], routine=card_routine.replace(
                         ".observables", ".curve"), params={**base, "name": f"reference_{name}"},
                         parents=tuple(point_ids.values()), model=None, code_version=code_version,
                         reason=f"reference points ({name}) on the model's curve of probe {st.probe}", context={},
                         run=run)
            st.artifacts.append(a)
            series_ids[name] = a.id
    cited = [parents[st.quantity]] if parents.get(st.quantity) else []
    cited += (list(obs_ids.values()) + list(series_ids.values())) or list(point_ids.values())
    dec = Artifact(kind="reference_decision", value=st.decision, routine=DECISION_ROUTINE,
                   params={**base, "quantity": st.quantity, "model_value": st.model_value, "band": st.band,
                           "reason": st.reason, "table": [list(r) for r in card.table_rows()],
                           "method": engine.method.label()},
                   parents=tuple(cited), model=ident, code_version=code_version,
                   reason="the card's pre-registered decision table applied to the model's and the reference's "
                          f"{st.quantity}", context={}, run=run)
    st.artifacts.append(dec)
    st.ids = {"engine": engine.name, "method": engine.method.label(), "observables": obs_ids, "points": point_ids,
              "curve": series_ids, "decision": dec.id}


def failing_probes(verdict) -> list:
    """The verdict's probes with v/tau above one, worst first."""
    bad = [p for p in verdict.probes if p.status == "ok" and p.normalized is not None and p.normalized > 1.0]
    return sorted(bad, key=lambda p: -p.normalized)


def settle_verdict(verdict, settings, engine: Engine, cache: Cache | None, budget: Budget, model=None,
                   probe_ids: dict | None = None, code_version: str = "", run: str | None = None,
                   inputs: Path | None = None) -> list[Settlement]:
    """Settle every failing probe of a verdict (worst first) whose check has a card; [] when it has none.

    ``probe_ids`` is the verdict's artifact map per probe (violations, observables), cited by the decisions.
    """
    from ..laws import CHECKS
    from .cards import card_for

    card = card_for(verdict.check)
    probes = failing_probes(verdict)
    if card is None or not probes:
        return []
    built = {p.id: p for p in CHECKS[verdict.check]().probes(settings)}
    out = []
    for p in probes:
        case = ProbeCase(verdict.contract, p.probe, built.get(p.probe), {**p.violations, **p.observables},
                         worst_atoms=p.atoms, tolerance=dict(verdict.tolerance))
        pid = (probe_ids or {}).get(p.probe, {})
        parents = {**pid.get("violations", {}), **pid.get("observables", {})}
        out.append(settle(card, settings, case, engine, cache, budget, model=model, parents=parents,
                          code_version=code_version, run=run, inputs=inputs))
    return out
