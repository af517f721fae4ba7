"""One adversary run: contract x model -> an :class:`AdversaryResult`, files, reproduction.

The result is recorded apart from the sampled verdict and never changes it.
The reported number is recomputed through the Evaluator from the extxyz
file as written (so it is exactly what the reproduction script prints), and
every reported configuration is asserted to lie in Z. With ``keep`` (a
folder, generated_tests/ under ``--mlip-adversary-keep``) a violation on the
target is also written as a protocol file: a contract table of the same check
whose sampled setting evaluates the found point, passed through the agent's
validator like anything the detective writes, and kept only when the check
under that setting fails on the model (never a new file over an existing one).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..errors import ModelEvaluationError
from .objectives import MODEL_ERROR_NOTE, DomainError, objective_for
from .problem import tensor
from .search import Search, SearchOptions

Status = Literal["violation", "clean", "failed", "no-objective", "skip", "model-error"]


class AdversaryResult(BaseModel):
    """The adversary's report for one contract on one model (JSON-able, crosses xdist)."""

    contract: str
    check: str
    model: str
    role: Literal["target", "committee"] = "target"
    hard: bool = True
    status: Status
    reason: str = ""
    method: str = "ascent"
    domain: str = ""
    value: float | None = None  # v/tau recomputed from the saved file
    search_value: float | None = None  # v/tau as the search saw it (autograd path may differ by float noise)
    sampled_value: float | None = None  # the sampled check's v/tau (filled in by the plugin)
    violations: dict[str, float] = Field(default_factory=dict)
    tolerance: dict[str, float] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict)
    problem: str | None = None
    parameters: dict[str, float] = Field(default_factory=dict)
    budget: int = 0
    evaluations: int = 0
    setup_evaluations: int = 0
    verify_evaluations: int = 0
    gradients: dict[str, int] = Field(default_factory=dict)
    nan_gradients: int = 0
    starts: int = 0
    first_exceed: int | None = None
    seed: int = 0
    seconds: float = 0.0
    notes: list[str] = Field(default_factory=list)
    file: str | None = None
    repro: str | None = None
    kept: str | None = None  # the protocol file written under --mlip-adversary-keep
    command: str | None = None
    trace: list[tuple[int, float]] = Field(default_factory=list)

    @property
    def gating(self) -> bool:
        """Would --mlip-adversary-gate fail the run on this result?"""
        return self.status == "violation" and self.role == "target" and self.hard


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", name)[:120]


def skip_reason(check, settings, info, recheck_guaranteed: bool) -> str | None:
    """The sampled check's own reasons to skip a contract on a model apply to the adversary too."""
    if check.guaranteed_for_conservative and info.conservative and not recheck_guaranteed:
        from ..laws.base import conservative_forces

        return f"guaranteed by construction: {conservative_forces(info)}"
    if check.needs_stress and "stress" not in info.implemented_properties:
        return f"stress not implemented by {info.name}"
    return check.applicable(settings, info)


def run_adversary(settings, evaluator, options: SearchOptions | None = None, *, role: str = "target",
                  output: str | Path | None = None, model_spec: str | None = None,
                  recheck_guaranteed: bool = False, rootdir: str | Path | None = None,
                  keep_trace: bool = False, keep: str | Path | None = None) -> AdversaryResult:
    """Search Z of one contract on one model; save and verify the worst configuration found.

    ``output``: folder for ``adversary/<model>/<contract>.extxyz`` and the
    reproduction script (nothing is written when None). ``model_spec``: the
    name the script loads the model by (default: the evaluator's spec).
    ``keep``: folder where a violation on the target is kept as a protocol file.
    """
    from ..laws import CHECKS

    options = options or SearchOptions()
    t0 = time.perf_counter()
    check = CHECKS[settings.check]()
    info = evaluator.model.info
    base = dict(contract=settings.name, check=settings.check, model=evaluator.name, role=role, hard=settings.hard,
                method=options.method, budget=options.budget, seed=options.seed,
                tolerance=dict(settings.tolerance), units=dict(check.units))
    objective = objective_for(settings.check)
    if objective is None:
        from ..laws import law_for

        law = law_for(settings.check)
        why = law.reason("adversary") if law is not None else ""
        return AdversaryResult(status="no-objective", reason=f"no search objective for check {settings.check!r}"
                               + (f": {why}" if why else ""), **base)
    why = skip_reason(check, settings, info, recheck_guaranteed)
    if why:
        return AdversaryResult(status="skip", reason=why, **base)
    calls0 = evaluator.stats.calls
    try:
        base["domain"] = objective.describe(settings, evaluator)
        problems, notes = objective.problems(settings, evaluator)
    except DomainError as exc:
        return AdversaryResult(status="failed", reason=f"search failed: {exc}", **base)
    except ModelEvaluationError as exc:  # a model error is never a pass, nor a search that merely failed
        return AdversaryResult(status="model-error", reason=f"model failed while building Z: {exc}", **base)
    # probes the objective left out because the model failed on them (its own scan, a refined reference point)
    model_notes = [n for n in notes if MODEL_ERROR_NOTE in n]
    if not problems and model_notes:
        return AdversaryResult(status="model-error", notes=notes, seconds=time.perf_counter() - t0,
                               reason=f"model failed while building Z: {model_notes[0]}",
                               setup_evaluations=evaluator.stats.calls - calls0, **base)
    if not problems and notes and all("not supported by" in n for n in notes):
        return AdversaryResult(status="skip", reason="; ".join(sorted(set(n.split(": ", 1)[1] for n in notes))),
                               notes=notes, **base)
    if not problems:
        return AdversaryResult(status="failed", notes=notes, seconds=time.perf_counter() - t0,
                               reason="search failed: nothing left to search in Z (" + "; ".join(notes or ["empty"]) + ")",
                               setup_evaluations=evaluator.stats.calls - calls0, **base)
    search = Search(problems, evaluator, options)
    from .. import progress

    with progress.task(f"adversary {settings.name} on {evaluator.name}", calls=lambda: search.spent,
                       budget=options.budget):
        search.run()
    common = dict(evaluations=search.spent,
                  setup_evaluations=search.setup_calls - calls0,
                  gradients=dict(search.gradients), nan_gradients=search.nan_gradients, starts=search.starts,
                  first_exceed=search.first_exceed, notes=list(notes),
                  trace=[(int(a), float(b)) for a, b in search.trace] if keep_trace else [])
    if search.nan_gradients:
        common["notes"].append(f"non-finite model gradient at {search.nan_gradients} point(s): "
                               "finite differences used there")
    if search.best is None:
        if search.errors:  # every point the search tried failed in the model: the model's error, not the search's
            return AdversaryResult(status="model-error", seconds=time.perf_counter() - t0, **common, **base,
                                   reason=f"model failed at {len(search.errors)} admissible point(s) and no point "
                                          f"of Z could be evaluated: {search.errors[0][2]}")
        return AdversaryResult(status="failed", reason="search failed: no point of Z could be evaluated",
                               seconds=time.perf_counter() - t0, **common, **base)
    found = search.best
    problem = problems[found.problem]
    inadmissible = problem.admissible(found.x)
    assert inadmissible is None, f"adversary left Z on {problem.label}: {inadmissible}"
    calls1 = evaluator.stats.calls
    status, reason, value, viol, path, script, command = "clean", "", None, {}, None, None, None
    frames = [c.to_atoms() for c in problem.configs(tensor(found.x))]
    spec = model_spec or getattr(evaluator.model, "spec", evaluator.name)
    try:
        if output is not None:
            path, frames = save_frames(Path(output), settings, evaluator.name, problem, found, frames)
        out = [evaluator.evaluate(a) for a in frames]
        viol = recompute(problem, found.x, out, frames, settings.tolerance)
        value = max(viol[k] / settings.tolerance[k] for k in viol)
        status = "violation" if value > options.threshold else "clean"
        if path is not None:
            script = write_repro(path, problem, found.x, spec, settings, value, rootdir, base["domain"])
            command = f"python {script}"
    except ModelEvaluationError as exc:
        status, reason = "model-error", f"model failed on the worst configuration: {exc}"
    if status != "violation" and search.errors:
        status = "model-error"
        reason = f"model failed at {len(search.errors)} admissible point(s): {search.errors[0][2]}"
    elif status != "violation" and model_notes:  # the rest of Z was clean; the probes the model failed on were not
        status = "model-error"
        reason = f"model failed while building Z: {model_notes[0]}"
    kept = None
    if status == "violation":
        parts = [f"{k}={v:.3g} {check.units.get(k, '')} (tau {settings.tolerance[k]:g})" for k, v in viol.items()]
        reason = f"{problem.label}: " + ", ".join(parts)
        if keep is not None and role == "target":
            kept, note = keep_protocol(settings, problem, found.x, value, evaluator, spec, Path(keep))
            common["notes"].append(note)
    return AdversaryResult(
        status=status, reason=reason, value=value, search_value=found.value, violations=viol,
        problem=problem.label, parameters=problem.parameters(found.x), verify_evaluations=evaluator.stats.calls - calls1,
        seconds=time.perf_counter() - t0, file=str(path) if path else None, repro=str(script) if script else None,
        command=command, kept=str(kept) if kept else None, **common, **base)


def keep_protocol(settings, problem, x, value: float, evaluator, spec: str, folder: Path) -> tuple[Path | None, str]:
    """Write the finding at ``x`` as a protocol file in ``folder``; returns (path or None, a one-line note).

    The protocol is the contract with the setting the problem gives for ``x`` (:meth:`Problem.kept_setting`),
    gated by the agent's validator (schema, domains, support, no repeat of a protocol in ``folder``, contracts/
    or the built-in suite), and kept only if the contract's own check under it fails on the model.
    """
    from ..agent.protocols import normalized, table_of
    from ..agent.validator import Validator, law_hardness, safe_path
    from ..contracts import CHECKS

    update = problem.kept_setting(settings, x)
    if isinstance(update, str):
        return None, f"not kept as a protocol: {update}"
    params = ", ".join(f"{k} {v:.5g}" for k, v in problem.parameters(x).items())
    kept = settings.model_copy(update={**update, "adversary": None, "hard": law_hardness(settings.check)})
    tag = hashlib.sha256(normalized(kept).encode()).hexdigest()[:8]
    name = f"{settings.name}-adversary-{tag}"
    about = f"Kept by --mlip-adversary-keep: {settings.name} on {spec}, adversary v/tau {value:.4g} at {problem.label} ({params})"
    kept = kept.model_copy(update={"name": name, "description": about})
    slug = re.sub(r"[^a-z0-9_\-]+", "-", f"adversary-{settings.name}-{tag}".lower())[:60].strip("-")
    gate = Validator(spec, [], existing_dirs=[folder, folder.parent / "contracts"]).file(
        [table_of(kept)], slug, header=[about, f"Run: pytest --mlip={spec} {folder.name}"], where=slug)
    if not gate.ok:
        repeat = next((e for e in gate.errors if "repeats" in e), None)
        return None, (f"already kept: {repeat.split('repeats the existing protocol ', 1)[-1]}" if repeat
                      else f"not kept as a protocol: the validator refuses it: {gate.errors[0]}")
    verdict = CHECKS[settings.check]().run(gate.settings[0], evaluator, recheck_guaranteed=True)
    if verdict.status != "fail":
        return None, (f"not kept as a protocol: the {settings.check} check under the kept setting gives "
                      f"{verdict.status} (v/tau {format_value(verdict.max_normalized)}) on {evaluator.name}, so it "
                      "would not reproduce the finding")
    if folder.is_symlink():  # the file would land in another folder (held-out round 13)
        return None, (f"not kept as a protocol: {folder} is a symbolic link; keep protocols in a folder of the "
                      "project itself (remove the link)")
    folder.mkdir(parents=True, exist_ok=True)
    from ..agent.validator import ProtocolRejected

    try:
        path = safe_path(folder, slug)
        for i in range(2, 100):
            try:
                with open(path, "x") as fh:  # never over an existing file
                    fh.write(gate.text)
                return path, f"kept as protocol {path} (v/tau {format_value(verdict.max_normalized)} under its setting)"
            except FileExistsError:
                path = safe_path(folder, f"{slug[:56]}-{i}")
    except ProtocolRejected as exc:  # a link there pointing out of the folder: a line, never a traceback (round 11)
        return None, f"not kept as a protocol: {exc} (a symbolic link in {folder}? remove it)"
    return None, f"not kept as a protocol: {folder} already holds files named mlip_{slug}*.toml"


def recompute(problem, x, out, frames, tolerance) -> dict[str, float]:
    """Raw violations from Evaluations of the frames, by the same lines the reproduction script runs."""
    scope = {"np": np, "out": out, "frames": frames, "tau": dict(tolerance)}
    exec(compile(problem.repro(x), f"<repro {problem.label}>", "exec"), scope)  # our fixed code, see objectives
    return {k: float(v) for k, v in scope["viol"].items()}


def exact_copy(path: Path) -> Path:
    """The float64 copy of a worst-configuration extxyz (ASE trajectory) the reported number is recomputed from."""
    return path.with_suffix(".traj")


def save_frames(output: Path, settings, model: str, problem, found, frames):
    """Write the configurations of the worst point (worst first) as extxyz; return (path, frames read back)."""
    from ase.io import read, write

    folder = output / "adversary" / _safe(model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_safe(settings.name)}.extxyz"
    order = [problem.primary] + [i for i in range(len(frames)) if i != problem.primary]
    images = []
    for i in order:
        a = frames[i].copy()
        a.info.update({"mlip_contract": settings.name, "mlip_model": model, "mlip_role": problem.roles[i],
                       "mlip_problem": problem.label, "mlip_search_violation": float(found.value)})
        images.append(a)
    write(path, images, format="extxyz")  # to look at (positions printed to 1e-8 A)
    # the number is recomputed from the exact float64 copy: at |F| ~ 1e4 eV/A (a clean Lennard-Jones molecule deep
    # in its wall) rounding positions to 1e-8 A alone moves forces by 1e-3 eV/A, a false symmetry violation
    write(exact_copy(path), images, format="traj")
    back = read(exact_copy(path), index=":", format="traj")
    restored = [None] * len(frames)
    for pos, i in enumerate(order):
        a = back[pos]
        a.calc = None
        for key in list(a.info):
            if key.startswith("mlip_"):
                del a.info[key]
        restored[i] = a
    return path, restored


_SCRIPT = '''"""Adversary finding: contract {contract!r} ({check}) on model {model!r}.

Normalised violation v/tau = {value:.6g}, found by a bounded search over Z:
{domain}
Recomputes it from {file_name} with the model loaded by its registry name.
Run: python {script}
"""
import sys

import numpy as np
from ase.io import read

sys.path.insert(0, {rootdir!r})  # models given as module:factory resolve from the run's root

from pytest_mlip.evaluation.evaluator import Evaluator
from pytest_mlip.models.registry import load

read_order = read({path!r}, index=":", format="traj")  # the exact float64 copy of the .extxyz
order = {order!r}  # file frame k holds configuration order[k] ({roles})
frames = [None] * len(order)
for k, i in enumerate(order):
    frames[i] = read_order[k]
ev = Evaluator(load({spec!r}))
out = [ev.evaluate(a) for a in frames]
tau = {tau!r}
{body}
v = max(viol[k] / tau[k] for k in viol)
print("violations:", {{k: float(x) for k, x in viol.items()}})
print(f"normalized violation v/tau = {{v:.6g}} (adversary reported {value:.6g})")
'''


def write_repro(path: Path, problem, x, spec: str, settings, value: float, rootdir=None, domain: str = "") -> Path:
    script = path.with_name(path.stem + "_repro.py")
    order = [problem.primary] + [i for i in range(len(problem.roles)) if i != problem.primary]
    text = _SCRIPT.format(contract=settings.name, check=settings.check, model=spec, value=value,
                          domain=f"{problem.label}; {domain}", file_name=exact_copy(path).name, script=script, rootdir=str(rootdir or Path.cwd()),
                          path=str(exact_copy(path)), order=order, roles=", ".join(problem.roles), spec=spec,
                          tau=dict(settings.tolerance), body=problem.repro(x))
    script.write_text(text)
    return script


def format_value(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.3g}"
