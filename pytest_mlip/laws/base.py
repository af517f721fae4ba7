"""The typed contract engine: settings are data, checks are fixed code.

A *contract* is a :class:`ContractSettings` (read from a TOML file: which check,
its parameters, probe structures, tolerances, hard/soft) interpreted by one
:class:`Check` subclass. A check measures raw violations ``v`` per probe; the
engine normalises them by the tolerances ``tau``, picks the worst probe, and
returns a :class:`Verdict` (pass / fail / skip with a stated reason / error).

To add a contract: write one ``Check`` subclass with a nested ``Settings``
model and a ``measure`` method, list it in ``pytest_mlip.contracts.CHECKS``
(done by subclassing), give it a planted-defect mutant in ``tests/mutants.py``
and a default contract file in ``contracts/``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import ModelEvaluationError, NotInStore
from ..structures import StructureSpec

CHECKS: dict[str, type["Check"]] = {}
#: verdict statuses that count as a failure
FAILING = ("fail", "error")


def gates(role: str, hard: bool, status: str) -> bool:
    """The one definition of gating: a verdict fails the run only when it is a hard contract on the target that
    failed or errored (committee verdicts and soft contracts are reported, never gating)."""
    return role == "target" and bool(hard) and status in FAILING
#: how a skip for a package that is not installed starts (the summary lists these apart)
MISSING_DEPENDENCY = "missing dependency"



def conservative_forces(info) -> str:
    """What a model declares that makes energy-force consistency and Jacobian symmetry hold by construction, in
    its own words: the metadata says ``conservative`` (forces are -dE/dx), not how (an analytic model differentiates
    its formula, a network uses autograd); only the analytic family is known to be analytic."""
    how = "analytic -dE/dx" if info.family == "analytic" else "-dE/dx by construction, analytic or autograd"
    return f"{info.name} declares its forces conservative ({how})"

def refused_here(evaluator, atoms, missing: list[str]) -> bool:
    """Is a structure with elements the model does not support (``missing``) to be skipped? Declared elements
    decide alone. Elements that the element probe found unsupported (a factory that declares none) are asked of the
    structure itself once: the skip stands only when the model refuses it in words naming one of them; a model that
    evaluates it is checked on it like any other (held-out round 15: a model that raised 'element H not supported'
    on the probe's H2 only had H2O skipped, its net force of 1 eV/A unchecked, exit 0)."""
    if not getattr(evaluator.model, "elements_probed", False):
        return True
    from ase.data import atomic_numbers

    from ..models.probe import says_unsupported

    try:
        evaluator.evaluate(atoms)
    except NotInStore:  # a replay: the run cites the calls its checks measured, never the refusal behind a skip
        return True
    except ModelEvaluationError as err:
        cause = err.__cause__
        if cause is not None and any(says_unsupported(cause, atomic_numbers[s]) for s in missing):
            err.reported = True  # the skip is its report
            return True
    return False  # evaluated (or failed otherwise): the check runs, and meets the same outputs from the cache


class ContractSettings(BaseModel):
    """Fields every contract file entry has; each check extends it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$", max_length=80)
    check: str
    hard: bool = True
    basis: Literal["exact", "disagreement"] = "exact"
    description: str = ""
    tolerance: dict[str, float] = Field(default_factory=dict)
    structures: list[StructureSpec] = Field(default_factory=list)
    slow: bool = Field(False, description="mark the items slow (pytest -m 'not slow' leaves them out)")

    #: default tolerances of the check type (filled per subclass)
    default_tolerance: ClassVar[dict[str, float]] = {}
    #: the bases the check can stand on: an exact law's check compares no committee, so a "disagreement" label on it
    #: claimed what the check never did (held-out round 12: passed with no committee to disagree with)
    bases: ClassVar[tuple[str, ...]] = ("exact",)

    @model_validator(mode="after")
    def _basis(self):
        if self.basis not in self.bases:
            raise ValueError(f"basis = {self.basis!r}: the {self.check} law is exact (its check compares no "
                             "committee); write basis = \"exact\" or leave it out")
        return self

    @model_validator(mode="after")
    def _tolerances(self):
        allowed = set(self.default_tolerance)
        unknown = set(self.tolerance) - allowed
        if unknown:
            raise ValueError(f"unknown tolerance key(s) {sorted(unknown)}; this check takes {sorted(allowed)}")
        for key, value in self.tolerance.items():
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"tolerance {key!r} must be a positive number, got {value}")
        merged = dict(self.default_tolerance)
        merged.update(self.tolerance)
        object.__setattr__(self, "tolerance", merged)
        return self


@dataclass
class Probe:
    """One audit input: an id, the structure, and check-specific parameters."""

    id: str
    atoms: Any
    params: dict = field(default_factory=dict)


@dataclass
class Measurement:
    """What a check returns for one probe: raw violations and what it saw."""

    violations: dict[str, float]
    observables: dict[str, Any] = field(default_factory=dict)
    worst_atoms: Any = None  # the configuration to save (defaults to the probe's)


class ProbeResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    probe: str
    status: Literal["ok", "skip", "error"] = "ok"
    violations: dict[str, float] = Field(default_factory=dict)
    normalized: float | None = None
    observables: dict[str, Any] = Field(default_factory=dict)
    message: str = ""
    atoms: Any = Field(default=None, exclude=True)
    #: configuration keys the probe asked the evaluator for (provenance: the evaluations it cites)
    config_keys: list[str] = Field(default_factory=list, exclude=True)


class Verdict(BaseModel):
    """The outcome of one contract on one model, with its verification setting."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    contract: str
    check: str
    model: str
    role: Literal["target", "committee"] = "target"
    hard: bool = True
    basis: str = "exact"
    status: Literal["pass", "fail", "skip", "error"]
    reason: str = ""
    tolerance: dict[str, float] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict)
    noise: dict[str, float] = Field(default_factory=dict)
    max_normalized: float | None = None
    worst_probe: str | None = None
    probes: list[ProbeResult] = Field(default_factory=list)
    setting: str = ""
    evaluations: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    worst_file: str | None = None

    @property
    def gating(self) -> bool:
        """Does this verdict fail the run? Only hard contracts on the target do."""
        return gates(self.role, self.hard, self.status)

    def worst(self) -> ProbeResult | None:
        for p in self.probes:
            if p.probe == self.worst_probe:
                return p
        return None



def unit_text(units: dict, key: str) -> str:
    """A quantity's unit as printed: '' for dimensionless ratios (declared as "1")."""
    u = units.get(key, "")
    return "" if u == "1" else u

class Check:
    """Base of every check routine. Subclasses set the class attributes and ``measure``."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    statement: ClassVar[str] = ""
    rationale: ClassVar[str] = ""
    procedure: ClassVar[str] = ""
    threshold: ClassVar[str] = ""
    units: ClassVar[dict[str, str]] = {}
    Settings: ClassVar[type[ContractSettings]] = ContractSettings
    needs_periodic: ClassVar[bool] = False
    needs_stress: ClassVar[bool] = False
    #: True when a conservative-by-construction model satisfies the law exactly
    guaranteed_for_conservative: ClassVar[bool] = False
    #: packages the check imports (declared in the 'laws' extra); a missing one skips it, saying so
    requires: ClassVar[tuple[str, ...]] = ()
    #: '' when the judge can replay the measurement on stored model calls; else why not (it needs fresh calls)
    not_replayable: ClassVar[str] = ""

    def missing_dependency(self) -> str | None:
        """The one-line reason when a package this law needs is not installed, else None."""
        import importlib.util

        missing = [p for p in self.requires if importlib.util.find_spec(p) is None]
        if not missing:
            return None
        return (f"{MISSING_DEPENDENCY}: {', '.join(missing)} not installed, needed by the {self.name} check: "
                "pip install 'pytest-mlip[laws]'")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            CHECKS[cls.name] = cls

    # --- what subclasses implement -------------------------------------------------
    def probes(self, settings) -> Iterable[Probe]:
        """The audit inputs; by default one per structure in the settings."""
        for spec in settings.structures:
            yield Probe(id=spec.label(), atoms=spec.build())

    def measure(self, settings, evaluator, probe: Probe) -> Measurement:  # pragma: no cover
        raise NotImplementedError

    def applicable(self, settings, model_info) -> str | None:
        """A skip reason for the whole contract on this model, or None."""
        return None

    def no_probe_fix(self, settings) -> str | None:
        """Why settings whose :meth:`probes` is empty check nothing, and the fix (a usage error's words), when the
        cause is not an empty list (None: the empty list is named)."""
        return None

    # --- the fixed engine ------------------------------------------------------------
    def run(self, settings, evaluator, role: str = "target", recheck_guaranteed: bool = True,
            noise: dict[str, float] | None = None) -> Verdict:
        info = evaluator.model.info
        base = dict(
            contract=settings.name,
            check=self.name,
            model=evaluator.name,
            role=role,
            hard=settings.hard,
            basis=settings.basis,
            tolerance=dict(settings.tolerance),
            units=dict(self.units),
            noise=dict(noise or {}),
            setting=self.describe_setting(settings),
        )
        reason = self.missing_dependency()
        if reason:
            pass
        elif self.guaranteed_for_conservative and info.conservative and not recheck_guaranteed:
            reason = (f"skipped by --mlip-skip-guaranteed: {conservative_forces(info)} (an opt-out: the law is not "
                      "measured on this model)")
        elif self.needs_stress and "stress" not in info.implemented_properties:
            reason = f"stress not implemented by {info.name}"
        else:
            reason = self.applicable(settings, info)
        if reason:
            return Verdict(status="skip", reason=reason, **base)

        calls0, hits0, t0 = evaluator.stats.calls, evaluator.stats.hits, time.perf_counter()
        from .. import progress

        results: list[ProbeResult] = []
        probes = list(self.probes(settings))
        with progress.task(f"{settings.name} on {evaluator.name}", total=len(probes), unit="probe",
                           calls=lambda: evaluator.stats.calls) as bar:
            for probe in probes:
                bar.set(len(results), probe.id)
                results.append(self._run_probe(settings, evaluator, probe))
        verdict = self._aggregate(settings, results, base)
        verdict.evaluations = evaluator.stats.calls - calls0
        verdict.cache_hits = evaluator.stats.hits - hits0
        verdict.seconds = time.perf_counter() - t0
        return verdict

    def _run_probe(self, settings, evaluator, probe: Probe) -> ProbeResult:
        info = evaluator.model.info
        atoms = probe.atoms
        missing = info.supports(atoms.get_chemical_symbols())
        if missing and refused_here(evaluator, atoms, missing):
            return ProbeResult(probe=probe.id, status="skip",
                               message=f"element(s) {', '.join(missing)} not supported by {info.name}")
        if self.needs_periodic and not (np.all(atoms.pbc) and atoms.cell.rank == 3):
            return ProbeResult(probe=probe.id, status="skip", message="cell not fully periodic: stress undefined")
        keys: set[str] = set()
        outer = getattr(evaluator, "touched", None)
        evaluator.touched = keys
        try:
            m = self.measure(settings, evaluator, probe)
        except ModelEvaluationError as err:
            err.reported = True  # an error probe: the verdict carries it
            return ProbeResult(probe=probe.id, status="error", message=str(err), atoms=err.atoms,
                               normalized=math.inf, config_keys=sorted(keys))
        finally:
            evaluator.touched = outer
            if outer is not None:
                outer.update(keys)
        normalized = 0.0
        for key, v in m.violations.items():
            tau = settings.tolerance[key]
            normalized = max(normalized, (v / tau) if math.isfinite(v) else math.inf)
        return ProbeResult(probe=probe.id, violations=m.violations, normalized=normalized,
                           observables=m.observables, config_keys=sorted(keys),
                           atoms=m.worst_atoms if m.worst_atoms is not None else atoms)

    def _aggregate(self, settings, results: list[ProbeResult], base: dict) -> Verdict:
        active = [r for r in results if r.status != "skip"]
        if not active:
            reasons = sorted({r.message for r in results}) or ["no probes in the setting"]
            return Verdict(status="skip", reason="; ".join(reasons), probes=results, **base)
        worst = max(active, key=lambda r: r.normalized if r.normalized is not None else -1)
        errors = [r for r in active if r.status == "error"]
        if errors:
            status, reason = "error", f"model failed on {len(errors)} probe(s): {errors[0].message}"
        elif worst.normalized > 1.0:
            status = "fail"
            parts = [" ".join(filter(None, (f"{k}={v:.3g}", unit_text(self.units, k)))) +
                     f" (tau {settings.tolerance[k]:g})" for k, v in worst.violations.items()]
            reason = f"worst probe {worst.probe}: " + ", ".join(parts)
        else:
            status, reason = "pass", ""
        skipped = [r for r in results if r.status == "skip"]
        if skipped:
            reason = (reason + "; " if reason else "") + f"{len(skipped)} probe(s) skipped ({skipped[0].message})"
        return Verdict(status=status, reason=reason, max_normalized=worst.normalized,
                       worst_probe=worst.probe, probes=results, **base)

    def describe_setting(self, settings) -> str:
        """The verification setting a verdict is bounded by, in one line."""
        tol = ", ".join(f"{k}<={v:g} {unit_text(self.units, k)}".strip() for k, v in settings.tolerance.items())
        n = len(settings.structures)
        extra = self.setting_details(settings)
        return f"{self.name}: {tol}; {'hard' if settings.hard else 'soft'}, {settings.basis}" + (
            f"; {n} structure(s)" if n else "") + (f"; {extra}" if extra else "")

    def setting_details(self, settings) -> str:
        return ""


def run_contract(settings, evaluator, role: str = "target", recheck_guaranteed: bool = True,
                 noise: dict[str, float] | None = None) -> Verdict:
    """The one way to run a contract: its law's check on one model (the plugin, the detective's probes, the
    adversary's seeds, calibration and ``pytest_mlip.testing`` all come here)."""
    check = CHECKS.get(settings.check)
    if check is None:
        raise KeyError(f"no check {settings.check!r} (known: {', '.join(sorted(CHECKS))})")
    return check().run(settings, evaluator, role=role, recheck_guaranteed=recheck_guaranteed, noise=noise)
