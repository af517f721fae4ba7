"""One adversary run: contract x model -> an :class:`AdversaryResult`, files, reproduction.

The result is recorded apart from the sampled verdict and never changes it.
The reported number is recomputed through the Evaluator from the extxyz
file as written (so it is exactly what the reproduction script prints), and
every reported configuration is asserted to lie in Z.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..errors import ModelEvaluationError
from .objectives import DomainError, objective_for
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
        return f"guaranteed by construction: {info.name} computes forces as -dE/dx by autograd"
    if check.needs_stress and "stress" not in info.implemented_properties:
        return f"stress not implemented by {info.name}"
    return check.applicable(settings, info)


def run_adversary(settings, evaluator, options: SearchOptions | None = None, *, role: str = "target",
                  output: str | Path | None = None, model_spec: str | None = None,
                  recheck_guaranteed: bool = False, rootdir: str | Path | None = None,
                  keep_trace: bool = False) -> AdversaryResult:
    """Search Z of one contract on one model; save and verify the worst configuration found.

    ``output``: folder for ``adversary/<model>/<contract>.extxyz`` and the
    reproduction script (nothing is written when None). ``model_spec``: the
    name the script loads the model by (default: the evaluator's spec).
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
    except ModelEvaluationError as exc:
        return AdversaryResult(status="failed", reason=f"search failed: model error while building Z: {exc}",
                               **base)
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
        msg = search.errors[0][2] if search.errors else "no point of Z could be evaluated"
        return AdversaryResult(status="failed", reason=f"search failed: {msg}", seconds=time.perf_counter() - t0,
                               **common, **base)
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
    if status == "violation":
        parts = [f"{k}={v:.3g} {check.units.get(k, '')} (tau {settings.tolerance[k]:g})" for k, v in viol.items()]
        reason = f"{problem.label}: " + ", ".join(parts)
    return AdversaryResult(
        status=status, reason=reason, value=value, search_value=found.value, violations=viol,
        problem=problem.label, parameters=problem.parameters(found.x), verify_evaluations=evaluator.stats.calls - calls1,
        seconds=time.perf_counter() - t0, file=str(path) if path else None, repro=str(script) if script else None,
        command=command, **common, **base)


def recompute(problem, x, out, frames, tolerance) -> dict[str, float]:
    """Raw violations from Evaluations of the frames, by the same lines the reproduction script runs."""
    scope = {"np": np, "out": out, "frames": frames, "tau": dict(tolerance)}
    exec(compile(problem.repro(x), f"<repro {problem.label}>", "exec"), scope)  # our fixed code, see objectives
    return {k: float(v) for k, v in scope["viol"].items()}


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
    write(path, images, format="extxyz")
    back = read(path, index=":", format="extxyz")
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

read_order = read({path!r}, index=":", format="extxyz")
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
                          domain=f"{problem.label}; {domain}", file_name=path.name, script=script, rootdir=str(rootdir or Path.cwd()),
                          path=str(path), order=order, roles=", ".join(problem.roles), spec=spec,
                          tau=dict(settings.tolerance), body=problem.repro(x))
    script.write_text(text)
    return script


def format_value(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.3g}"
