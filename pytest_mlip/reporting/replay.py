"""Replay: re-run a contract's check routine on the run's stored model calls and compare what it measures.

The store's derived artifacts (v/tau, worst v/tau, the verdict) are recomputed
from their parents elsewhere; this recomputes their parents: the raw
violations and observables a check measured. A :class:`ReplayEvaluator`
serves the stored model-call artifacts (keyed by configuration, exactly as
the run's evaluator cached them) to the same check routine on the same
settings; the routine measures again and its violations, observables, worst
v/tau, worst probe and status must equal the stored ones. A configuration the
routine asks for that the store does not hold is a refusal (the store does not
back its numbers). No model runs: a replay costs the check's own arithmetic.

The settings are the built-in contract of the verdict's name whose one-line
setting (``describe_setting``) equals the one the verdict recorded; a verdict
of another contract file is reported as not replayed (the store keeps the
setting's description, not the file). The determinism law is not replayed
(it measures fresh calls, which the store cannot serve).
"""

from __future__ import annotations

import math
import random

from ..errors import NotInStore
from ..evaluation.evaluator import Evaluation, Evaluator, config_key
from ..provenance.artifact import SHORT_ID

#: verdicts replayed per run by default (``--all``: every one)
DEFAULT_REPLAY = 3


class ReplayEvaluator(Evaluator):
    """An evaluator whose cache is the stored model calls and which never calls the model."""

    def _call(self, work) -> Evaluation:
        raise NotInStore(config_key(self.model_id, work))

    def repeat(self, atoms) -> Evaluation:
        raise NotInStore(config_key(self.model_id, atoms))


def stored_calls(judge, model_name: str) -> tuple[dict, set]:
    """(configuration key -> Evaluation or ModelEvaluationError, keys recorded without their forces)."""
    import numpy as np
    from ase import Atoms

    from ..errors import ModelEvaluationError
    from ..provenance.recorder import decode_payload

    cache, bare = {}, set()
    for aid in judge.closure:
        a = judge.get(aid)
        if a is None or a.kind not in ("evaluation", "evaluation_error") or a.model is None \
                or a.model.name != model_name:
            continue
        key = a.params.get("config_key")
        blob = judge.store.payload(aid)
        try:
            cfg = decode_payload(blob) if blob else None
        except Exception:  # a damaged payload: the store check names it; the replay cannot serve it
            bare.add(key)
            continue
        if a.kind == "evaluation_error":
            atoms = Atoms(numbers=cfg["numbers"], positions=cfg["positions"], cell=cfg["cell"], pbc=cfg["pbc"]) \
                if cfg else None
            cache[key] = ModelEvaluationError(model_name, atoms, str((a.value or {}).get("error", "")))
            continue
        if not cfg:
            bare.add(key)
            continue
        if "forces" not in cfg:
            bare.add(key)
            continue
        stress = (a.value or {}).get("stress")
        cache[key] = Evaluation(energy=float(a.value["energy"]), forces=cfg["forces"],
                                stress=None if stress is None else np.asarray(stress, dtype=float))
    return cache, bare


def _stored_measure(judge, v) -> dict:
    """What the run stored for a verdict: violations and observables per probe, worst v/tau and probe, status."""
    out = {"violations": {}, "observables": {}, "max_normalized": None, "worst_probe": v.params.get("worst_probe"),
           "status": v.value}
    for pid in v.parents:
        a = judge.get(pid)
        if a is None:
            continue
        if a.kind == "violation":
            out["violations"][(a.params.get("probe"), a.params.get("key"))] = a.value
        elif a.kind in ("observable", "series"):
            out["observables"][(a.params.get("probe"), a.params.get("name"))] = a.value
        elif a.kind == "max_normalized":
            out["max_normalized"] = a.value
    return out


def _replayed_measure(verdict) -> dict:
    from ..provenance.recorder import _BAD, _json_value

    out = {"violations": {}, "observables": {}, "max_normalized": verdict.max_normalized,
           "worst_probe": verdict.worst_probe, "status": verdict.status}
    for p in verdict.probes:
        if p.status == "skip":
            continue
        for k, x in p.violations.items():
            out["violations"][(p.probe, k)] = float(x)
        for k, x in p.observables.items():
            value = _json_value(x)
            if value is not _BAD:
                out["observables"][(p.probe, k)] = value
    return out


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    from ..provenance.artifact import from_finite_or_str

    return from_finite_or_str(a) == from_finite_or_str(b) if isinstance(a, str) or isinstance(b, str) else a == b


def _differences(stored: dict, got: dict) -> list[str]:
    out = []
    for what in ("violations", "observables"):
        for k in sorted(set(stored[what]) | set(got[what]), key=str):
            if k not in got[what]:
                out.append(f"{what[:-1]} {k[1]} of probe {k[0]}: stored, but the replay does not measure it")
            elif k not in stored[what]:
                if what == "observables":
                    continue  # recorded by a newer check than the one that ran (the report never shows it)
                out.append(f"{what[:-1]} {k[1]} of probe {k[0]}: measured by the replay, not in the store")
            elif not _same(stored[what][k], got[what][k]):
                out.append(f"{what[:-1]} {k[1]} of probe {k[0]}: stored {str(stored[what][k])[:40]}, the replay "
                           f"measures {str(got[what][k])[:40]}")
    for k in ("max_normalized", "worst_probe", "status"):
        if not _same(stored[k], got[k]):
            out.append(f"{k}: stored {stored[k]!r}, the replay gives {got[k]!r}")
    return out


def _other_version(name: str, recorded: str, here: str):
    """A replay is a comparison of one code version with itself: a check that has changed since the report was
    made asks for other configurations or measures differently, which says nothing about the report. The store
    itself is still verified (content ids, derived values, the root hash, a sample of model calls re-run)."""
    from .judge import Finding

    return Finding(True, "replay", f"{name}: not comparable (recorded by code version {recorded}, this judge runs "
                                   f"{here}; replay with pytest-mlip {recorded} to compare the check itself)")


def replay(judge, load_model, sample: int | None = DEFAULT_REPLAY, seed: int | None = None) -> list:
    """Findings of replaying ``sample`` of the run's measured verdicts at random (None: every one).

    ``load_model(name)`` returns the run's loaded model of that name, or a Finding saying why it cannot.
    """
    from ..contracts import CHECKS
    from ..provenance.recorder import verdict_parents
    from ..testing import builtin_contracts
    from .judge import Finding

    if sample == 0:
        return [Finding(True, "replay", "no check replayed (asked for none)")]
    verdicts = [judge.get(x) for x in (verdict_parents(judge.run_art) if judge.run_art else ())]
    measured = sorted((v for v in verdicts if v is not None and v.value in ("pass", "fail", "error")
                       and v.model is not None), key=lambda v: v.id)
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    chosen = measured if sample is None else rng.sample(measured, min(sample, len(measured)))
    from ..provenance.artifact import code_version

    here = code_version()
    builtin = builtin_contracts()
    out, calls = [], {}
    replayed = 0
    for v in sorted(chosen, key=lambda v: (v.params.get("contract", ""), v.model.name)):
        name = f"{v.params.get('contract')} on {v.model.name}"
        check_name = v.params.get("check")
        settings = builtin.get(v.params.get("contract"))
        check = CHECKS.get(check_name)
        if check is None or check.not_replayable:
            why = check.not_replayable if check is not None else "its law is not installed here"
            out.append(Finding(True, "replay", f"{name}: not replayed ({why})"))
            continue
        if settings is None or check().describe_setting(settings) != v.params.get("setting"):
            out.append(Finding(True, "replay", f"{name}: not replayed (its settings are not a built-in contract's; "
                                               "the store keeps their description, not the file)"))
            continue
        model = load_model(v.model.name)
        if isinstance(model, Finding):
            out.append(model)
            continue
        if v.model.name not in calls:
            calls[v.model.name] = stored_calls(judge, v.model.name)
        cache, bare = calls[v.model.name]
        ev = ReplayEvaluator(model, cache=dict(cache))
        try:
            got = check().run(settings, ev, role=v.params.get("role", "target"))
        except NotInStore as exc:
            if v.code_version != here:
                out.append(_other_version(name, v.code_version, here))
            elif exc.key in bare:
                out.append(Finding(True, "replay", f"{name}: not replayed (a call it needs was recorded without "
                                                   "its forces)"))
            else:
                out.append(Finding(False, "replay", f"{name} [a:{v.id[:SHORT_ID]}]",
                                   [f"the check asks for a configuration the store holds no model call for "
                                    f"(key {exc.key[:SHORT_ID]}): the stored numbers are not backed by stored "
                                    "calls"]))
            continue
        replayed += 1
        diffs = _differences(_stored_measure(judge, v), _replayed_measure(got))
        if diffs and v.code_version != here:
            out.append(_other_version(name, v.code_version, here))
            continue
        out.append(Finding(not diffs, "replay", f"{name}: re-measured from {got.cache_hits} stored call(s)"
                           + ("" if diffs else "; violations, observables, worst v/tau and status match"),
                           diffs[:3] + ([f"and {len(diffs) - 3} more"] if len(diffs) > 3 else [])))
    if not out:
        out.append(Finding(True, "replay", "no measured verdict to replay"))
    return out
