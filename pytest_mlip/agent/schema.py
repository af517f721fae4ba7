"""The detective's typed objects: what every planner produces and the memory stores.

Planners (offline rules or an LLM acting through tools) only ever produce
these objects; fixed code runs them. A hypothesis names a law, a scope and a
suspected mechanism; its pre-registration commits, before any probe runs, to
the outcome per model on protocols not yet evaluated; probes report label-free
signals; a verdict is ``escalate`` or ``reject`` (never "confirm": only a
human verifier confirms) or ``exhausted`` when the evidence could not be had.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Expect = Literal["fail", "pass", "any"]
ProbeKind = Literal["scope", "control", "mechanism", "impact"]
Status = Literal["open", "escalated", "rejected", "exhausted"]

#: the words a planner may use for a verdict; there is deliberately no "confirm"
VERDICTS = ("escalate", "reject")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Scope(_Model):
    """Where the hypothesis claims the defect lives."""

    elements: list[str] = Field(default_factory=list)
    sites: list[str] = Field(default_factory=list, description="geometric setting: dimer, top site, fragment gap, ...")
    structures: list[str] = Field(default_factory=list, description="probe labels the claim covers")
    conditions: list[str] = Field(default_factory=list, description="e.g. 'r < r_eq', 'unrattled', 'inversion'")


class EvidenceRef(_Model):
    """A pointer to a number the hypothesis started from (an evidence record and its artifact)."""

    contract: str
    model: str
    probe: str | None = None
    quantity: str = "max_normalized"
    value: float | str | None = None
    artifact: str | None = None


class Hypothesis(_Model):
    id: str = Field(pattern=r"^H[0-9]{1,4}$")
    key: str = Field(description="what the hypothesis is about (check/contract/scope class): no repeats across runs")
    statement: str = Field(max_length=2000)
    check: str
    contract: str = Field(description="the contract whose evidence it started from")
    basis: Literal["exact", "disagreement"] = "exact"
    scope: Scope = Field(default_factory=Scope)
    mechanism: str = Field("", max_length=2000)
    importance: float = Field(ge=0.0, le=1.0, description="how much the region matters in applications")
    severity: float = Field(ge=0.0, description="log10(1 + v/tau) of the evidence: continuous")
    breadth: float = Field(0.0, ge=0.0, le=1.0, description="fraction of the contract's probes that fail")
    origin: list[EvidenceRef] = Field(default_factory=list)
    parent: str | None = Field(None, description="the hypothesis this one narrows or follows from")
    status: Status = "open"
    reasons: list[str] = Field(default_factory=list)
    planner: str = "offline"

    @property
    def score(self) -> float:
        """Rank: importance x severity x breadth (breadth counts half, so a single hit still ranks)."""
        return self.importance * self.severity * (0.5 + 0.5 * self.breadth)


class Prediction(_Model):
    """One pre-registered outcome: this protocol, on these models, will pass or fail."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$", max_length=80, description="the protocol's contract name")
    kind: ProbeKind
    target: Expect
    committee: Expect = "any"
    #: pre-registered disagreement: the target's (1 + v/tau) at least this many decades above the committee
    #: median's (for laws the committee violates too, where only the size of the violation tells them apart)
    excess_decades: float | None = Field(None, ge=0.0, le=12.0)
    #: pre-registered committee band: the target's v/tau above one and above the committee's largest by more than
    #: the committee's own spread (largest minus smallest); for laws whose violation is a bounded fraction (the dimer
    #: tail), where a decade above the committee cannot happen however spurious the target
    above_band: bool = False
    #: informational predictions (expect 'any' on the target) are measured but cannot reject
    rationale: str = Field("", max_length=1000)
    #: the protocol itself: one contract table (data only, validated before anything runs)
    protocol: dict[str, Any]
    #: models beyond target and committee that run it (e.g. a float64 channel of the target)
    extra_models: list[str] = Field(default_factory=list)


class Preregistration(_Model):
    hypothesis: str
    predictions: list[Prediction]
    decision_rule: str = ("escalate when every prediction with a definite expectation holds, the target's "
                          "violation on a scope protocol is decisive (v/tau above one, exact basis) and not every "
                          "model fails it; reject when any definite prediction fails or every model fails a "
                          "scope protocol (the protocol is suspect)")
    created: float = Field(default_factory=time.time)

    @field_validator("predictions")
    @classmethod
    def _unique(cls, v):
        names = [p.name for p in v]
        if len(names) != len(set(names)):
            raise ValueError("prediction (protocol) names must be unique")
        if not v:
            raise ValueError("a pre-registration needs at least one prediction")
        return v


class ModelOutcome(_Model):
    """One model's verdict on one protocol, reduced to the signals the detective uses."""

    model: str
    role: Literal["target", "committee", "extra"]
    status: Literal["pass", "fail", "skip", "error"]
    max_normalized: float | str | None = None
    worst_probe: str | None = None
    reason: str = ""
    evaluations: int = 0
    #: per probe: status, normalized v/tau, raw violations, numeric observables
    probes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: artifact ids: verdict, max_normalized, probes.<probe>.normalized / violations.<key> / series.<name>
    artifacts: dict[str, Any] = Field(default_factory=dict)


class ProbeReport(_Model):
    """What one probe (one protocol run on target + committee) found."""

    hypothesis: str
    name: str
    kind: ProbeKind
    check: str
    outcomes: list[ModelOutcome]
    #: label-free signals (continuous): target severity, committee disagreement, exact violation
    signals: dict[str, float | str | None] = Field(default_factory=dict)
    signal_artifacts: dict[str, str] = Field(default_factory=dict)
    protocol_suspect: bool = False
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    evaluations: int = 0

    def outcome(self, model: str) -> ModelOutcome | None:
        return next((o for o in self.outcomes if o.model == model), None)

    @property
    def target(self) -> ModelOutcome:
        return next(o for o in self.outcomes if o.role == "target")

    @property
    def committee(self) -> list[ModelOutcome]:
        return [o for o in self.outcomes if o.role == "committee"]


class PredictionCheck(_Model):
    name: str
    kind: ProbeKind
    expected: str
    observed: str
    held: bool | None = Field(description="None: informational or not testable")
    note: str = ""


class AgentVerdict(_Model):
    hypothesis: str
    verdict: Literal["escalate", "reject", "exhausted"]
    type: Literal["exact-constraint violation", "cross-model disagreement", "none"] = "none"
    reasons: list[str] = Field(default_factory=list)
    checks: list[PredictionCheck] = Field(default_factory=list)
    domain_boundary: str = ""
    confounds: list[str] = Field(default_factory=list, max_length=5)
    planner_note: str = ""


class TokenUsage(_Model):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, usage) -> None:
        self.calls += 1
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            setattr(self, key, getattr(self, key) + int(getattr(usage, key, 0) or 0))
