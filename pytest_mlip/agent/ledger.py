"""Every number the detective states is an artifact in the provenance store.

Probe verdicts are recorded with :func:`pytest_mlip.provenance.recorder.verdict_artifacts`
(the same artifacts a pytest run stores: evaluations, violations, v/tau,
observables, verdict). Numbers the detective derives (severity, committee
disagreement, barrier heights, cost estimates) are ``observable`` artifacts
that cite the artifacts they were computed from. At the end of a run one
``run`` artifact cites everything the reports cite, so ``pytest-mlip judge``
can re-verify each report against the snapshot written next to it.

For an LLM planner every artifact also gets a short *handle* (``e:12``): the
conversation cites handles, the detective resolves them to artifact ids, and
a number whose citation does not resolve, or whose value does not match the
cited artifact, is refused.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..provenance.artifact import Artifact, ModelIdentity, code_version, finite_or_str
from ..provenance.store import Store
from ..reporting.claims import SIG

#: artifact kinds a printed number may cite (as the judge requires)
NUMBER_KINDS = ("tolerance", "violation", "normalized", "max_normalized", "observable")

DERIVE_ROUTINE = "pytest_mlip.agent.signals"
#: a number in planner text, and the citation that must follow it
NUMBER_RE = re.compile(r"(?<![\w.\-:/])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
CITATION_RE = re.compile(r"\[(?:a|e):[^\]\s]+\]")
CITED_NUMBER_RE = re.compile(
    r"(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf)\s*(?:[A-Za-z/^0-9*]+\s*)?"
    r"\[(?P<ns>a|e):(?P<ref>[^\]\s]+)\]")


class AgentLedger:
    """Artifacts of one detective run in one store (``provenance.sqlite`` in the output folder)."""

    def __init__(self, path, run_id: str, target: str, committee: list[str], argv: list[str] | None = None):
        self.path = Path(path)
        self.store = Store(self.path)
        self.run_id = run_id
        self.code_version = code_version()
        self.target = target
        self.committee = list(committee)
        self.values: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.labels: dict[str, str | None] = {}  # artifact id -> its key or name (what a number is)
        self.handles: dict[str, str] = {}  # handle -> artifact id
        self.handle_of: dict[str, str] = {}
        self.models: dict[str, dict] = {}
        self.cited: list[str] = []
        self.run_artifact: str | None = None
        self.store.begin_run(run_id, self.code_version, target, list(committee), list(argv or []))
        from ..provenance.recorder import Ledger

        #: the run's live model calls, with their configurations (what the judge re-runs), as a pytest run keeps them
        self.live = Ledger(self.code_version, run_id)
        self._recording: list = []

    def record_calls(self, specs: list[str]) -> None:
        """Keep every model call of these models from now on, with its configuration; stops at :meth:`close`."""
        from ..evaluation import evaluator_for

        for spec in specs:
            ev = evaluator_for(spec)
            # the run's models, named even when it makes no call (a run that reads its evidence from the memory)
            self.note_model(ev, spec, "target" if spec == self.target else "committee")
            if ev.recorder is None:
                ev.recorder = self.live.on_evaluation
                self._recording.append(ev)

    # --- recording -----------------------------------------------------------------------------------------------
    def _keep(self, arts: list[Artifact]):
        self.store.put_many(arts, run=self.run_id)
        for a in arts:
            self._note(a)

    def _note(self, a):
        self.values[a.id] = a.value
        self.kinds[a.id] = a.kind
        self.labels[a.id] = a.params.get("key") or a.params.get("name")

    def note_model(self, evaluator, spec: str, role: str):
        ident = ModelIdentity.of(evaluator.model)
        m = self.models.setdefault(evaluator.name, {"version": ident.version, "weights_hash": ident.weights_hash,
                                                    "role": role, "spec": spec})
        if role == "target":
            m["role"] = "target"

    def verdict(self, verdict, evaluator, spec: str, context: dict | None = None) -> dict:
        """Store the artifacts of one verdict; returns the id map of ``verdict_artifacts``."""
        from ..provenance.recorder import verdict_artifacts

        arts, ids = verdict_artifacts(verdict, evaluator, self.code_version, run=self.run_id, context=context)
        self._keep(self.live.take())  # first: a call rebuilt from the cache has the same id and no configuration
        self._keep(arts)
        self.note_model(evaluator, spec, verdict.role if verdict.role == "target" else "committee")
        return ids

    def derive(self, name: str, value: float, parents: list[str], reason: str, params: dict | None = None,
               model=None, context: dict | None = None) -> str:
        """A number computed from other artifacts (``observable``, citing them)."""
        parents = [p for p in parents if p]
        if not parents:
            raise ValueError(f"derived number {name!r} must cite the artifacts it was computed from")
        if isinstance(value, float):
            value = finite_or_str(value)
        art = Artifact(kind="observable", value=value, routine=f"{DERIVE_ROUTINE}.{name}",
                       params={"name": name, **(params or {})}, parents=tuple(parents),
                       model=ModelIdentity.of(model) if model is not None else None,
                       code_version=self.code_version, reason=reason, context=dict(context or {}), run=self.run_id)
        self._keep([art])
        return art.id

    def adopt(self, store_path, ids: list[str]) -> int:
        """Copy artifacts (and their ancestry) from another store, e.g. a report's snapshot."""
        other = Store(store_path, readonly=True)
        try:
            arts = other.get_many(other.closure(ids))
        finally:
            other.close()
        self.store.put_many(arts.values())
        for a in arts.values():
            self._note(a)
        return len(arts)

    # --- reading -------------------------------------------------------------------------------------------------
    def value(self, aid: str):
        if aid in self.values:
            return self.values[aid]
        a = self.store.get(aid)
        if a is None:
            return None
        self._note(a)
        return a.value

    def resolve(self, ref: str) -> str | None:
        """Artifact id of a handle (``e:3`` or ``3``) or of an id prefix of at least six hex digits."""
        ref = ref.strip()
        if ref.startswith("e:"):
            ref = ref[2:]
        if ref.isdigit():
            return self.handles.get(ref)
        if ref.startswith("a:"):
            ref = ref[2:]
        if re.fullmatch(r"[0-9a-f]{6,64}", ref):
            hits = self.store.resolve(ref)
            return hits[0] if len(hits) == 1 else None
        return None

    def handle(self, aid: str | None) -> str:
        """The short handle of an artifact for a planner conversation (``e:N``)."""
        if not aid:
            return "-"
        if aid not in self.handle_of:
            n = str(len(self.handles) + 1)
            self.handles[n] = aid
            self.handle_of[aid] = n
        return f"e:{self.handle_of[aid]}"

    def cite(self, aid: str | None) -> str:
        """Mark an artifact as cited by a report (the run artifact will cite it)."""
        if aid and aid not in self.cited:
            self.cited.append(aid)
        return aid or ""

    # --- checking planner text -------------------------------------------------------------------------------------
    def check_text(self, text: str, field: str, known: list[str] | tuple = ()) -> list[str]:
        """Problems with the numbers in free text: each must cite an artifact whose value it states.

        ``known`` are identifiers that may contain digits (model, contract and
        probe names, element formulas); they are not numbers.
        """
        from ..reporting.claims import number_mismatch

        errors = []
        masked = text
        for s in sorted({k for k in known if k}, key=len, reverse=True):
            masked = masked.replace(s, " " * len(s))
        cited_spans = []
        last = 0
        for m in CITED_NUMBER_RE.finditer(masked):
            cited_spans.append((m.start("num"), m.end("num")))
            aid = self.resolve(m.group("ref"))
            if aid is None:
                errors.append(f"{field}: {m.group('num')} cites [{m.group('ns')}:{m.group('ref')}], which is not an "
                              "artifact of this run; cite a handle from the evidence you were given")
                continue
            value = self.value(aid)
            problem = number_mismatch(m.group("num"), value, SIG) if _numeric(value) else (
                f"the cited artifact holds {value!r}, not a number")
            if not problem and self.kinds.get(aid) not in NUMBER_KINDS:
                problem = f"it cites a {self.kinds.get(aid)}, not a stored number"
            if not problem:
                problem = self._label_problem(masked[last:m.start()], aid)
            last = m.end()
            if problem:
                errors.append(f"{field}: {m.group('num')} [{m.group('ns')}:{m.group('ref')}]: {problem}")
        bare = CITATION_RE.sub(lambda m: " " * len(m.group(0)), masked)
        for m in NUMBER_RE.finditer(bare):
            if any(a <= m.start() < b for a, b in cited_spans):
                continue
            errors.append(f"{field}: the number {m.group(0)} cites no artifact; write it as VALUE [e:N] with the "
                          "handle of the artifact it comes from, or leave it out")
        return errors

    def _label_problem(self, before: str, aid: str) -> str | None:
        """The judge reads a number as the quantity named nearest before it; that must be what it cites."""
        labels = {"max v/tau": "max_normalized", "v/tau": "normalized", "tau": "tolerance"}
        names = {x for x in self.labels.values() if isinstance(x, str)}
        best, pos = None, -1
        for lab in list(labels) + sorted(names):
            for m in re.finditer(rf"(?<![\w/]){re.escape(lab)}(?![\w/])", before):
                if m.end() > pos or (m.end() == pos and best is not None and len(lab) > len(best)):
                    best, pos = lab, m.end()
        if best is None:
            return None
        kind, label = self.kinds.get(aid), self.labels.get(aid)
        want = labels.get(best)
        if want is not None:
            return None if kind == want else f"it is written after '{best}' but cites a {kind} ({label})"
        if kind in ("violation", "observable") and label == best:
            return None
        return f"it is written after '{best}' but cites a {kind} ({label}); name the quantity it is just before it"

    # --- closing -------------------------------------------------------------------------------------------------
    def finish(self, required: list[str], texts: dict | None = None,
               required_by_hypothesis: dict[str, list[str]] | None = None) -> str:
        """The run artifact citing everything the reports cite; closes the run in the store.

        It names the earlier runs whose artifacts the reports reach, with the code version each recorded
        them with (the judge holds such an artifact to its own run, not to this one): the evidence the
        reports cite, and what this run reused from an earlier run in the same store (a model call or a
        number with the same content id keeps the row, and the run, that first stored it). It also names
        the claims each escalation report must make (those of its hypothesis)."""
        from ..provenance.platform import fingerprint

        parents = [a for a in dict.fromkeys(self.cited) if a]
        evidence_runs = {}
        for run, version in self.store.runs_of(self.store.closure(parents)):
            if run and run != self.run_id:
                evidence_runs.setdefault(run, version)
        art = Artifact(kind="run", value={"target": self.target, "committee": list(self.committee),
                                          "verdicts": sum(1 for a in parents if self.kinds.get(a) == "verdict"),
                                          "required": sorted(set(required)), "texts": texts or {},
                                          "evidence_runs": evidence_runs, "platform": fingerprint(),
                                          "required_by_hypothesis": {h: sorted(set(r)) for h, r in
                                                                     (required_by_hypothesis or {}).items()}},
                       routine="pytest_mlip.agent.detective", params={"run_id": self.run_id}, parents=tuple(parents),
                       model=None, code_version=self.code_version,
                       reason="the detective run: every number its escalation reports print", context={},
                       run=self.run_id)
        self.store.put_many([art], run=self.run_id)
        self.store.finish_run(self.run_id, self.models, art.id)
        self.run_artifact = art.id
        return art.id

    def snapshot(self, path) -> int:
        """A single-file copy of everything the run artifact reaches (for a report folder)."""
        roots = [self.run_artifact] if self.run_artifact else list(self.cited)
        return self.store.export(path, self.store.closure(roots), [self.run_id], payloads=True)

    def close(self):
        for ev in self._recording:
            if getattr(ev.recorder, "__self__", None) is self.live:
                ev.recorder = None
        self._recording = []
        self.store.close()


def _numeric(v) -> bool:
    if isinstance(v, str):
        return v in ("inf", "-inf", "nan")
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (math.isfinite(v) or math.isinf(v))
