"""The Detective loop: one hypothesis at a time, pre-registered, probed, judged, recorded.

1. evidence: from a report, a store, the memory of earlier runs, or gathered
   by running the built-in contracts on the target and committee;
2. the planner proposes the highest-ranked hypothesis not yet settled,
   conditioned on the whole memory;
3. it pre-registers predictions (protocols as data); the validator gates each
   before anything runs; the pre-registration is appended to the memory;
4. probes run each protocol on the target and every committee model;
5. the verdict is rendered against the pre-registration (escalate, reject or
   exhausted) and appended with its reasons;
6. an escalation gets a report (seven sections, every number citing an
   artifact) and the protocols worth keeping are written as contract files.

The run stops after ``max_escalations`` escalations (the seed's loop ends at
the first), after ``max_hypotheses`` hypotheses, when the planner has nothing
left, or when the evaluation budget is spent.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MlipError
from .evidence import EvidenceItem
from .memory import EvidenceMemory
from .planner import NoProtocol
from .schema import AgentVerdict, Hypothesis, Preregistration, ProbeReport
from .validator import ProtocolRejected, Validator, safe_path


@dataclass
class Desk:
    """What planners see and may ask for: models, evidence, memory, the validator, the ledger."""

    target: str
    committee: list[str]
    evidence: list[EvidenceItem]
    memory: EvidenceMemory
    validator: Validator
    ledger: object
    suite: dict
    log: object = print
    target_name: str = ""
    run_id: str | None = None

    def __post_init__(self):
        if not self.target_name:
            from ..models.registry import resolve

            self.target_name = resolve(self.target).info.name

    def supported(self, elements) -> bool:
        from ..models.registry import resolve

        from ..evaluation import evaluator_for

        for spec in [self.target] + self.committee:
            try:
                info = resolve(spec).info
                if info.elements is None:  # a factory declares its elements on the calculator it returns
                    info = evaluator_for(spec).model.info
                if info.supports(list(elements)):
                    return False
            except MlipError:
                return False
        return True


@dataclass
class Escalation:
    hypothesis: Hypothesis
    prereg: Preregistration
    reports: dict[str, ProbeReport]
    verdict: AgentVerdict
    files: list[Path] = field(default_factory=list)
    report_dir: Path | None = None


@dataclass
class RunSummary:
    run_id: str
    target: str
    committee: list[str]
    planner: str
    hypotheses: list[dict] = field(default_factory=list)
    escalations: list[Escalation] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0
    evidence_source: str = ""
    tokens: dict = field(default_factory=dict)
    #: the run's root hash (printed as 'mlip root: ...'; pytest-mlip judge --root compares it)
    root: str | None = None
    stopped: str = ""
    #: every evidence verdict on the target is an error (garbage out): no hypothesis is made, the command exits 1
    broken: str = ""


def broken_target(evidence) -> str:
    """One line when every evidence verdict on the target is an error (the model's outputs are not usable: NaN,
    wrong shapes, exceptions), else "": such evidence says nothing about any law."""
    mine = [e for e in evidence if e.role == "target"]
    errors = [e for e in mine if e.status == "error"]
    if not mine or len(errors) < len(mine):
        return ""
    first = errors[0]
    return (f"MODEL BROKEN: all {len(errors)} evidence verdict(s) on the target are errors, not law violations "
            f"({first.contract}: {first.reason or 'error'}); fix the model's outputs, then run detect again")


def unsteady_target(target: str) -> str:
    """One line when the sampled determinism check saw the target's outputs change between identical calls while
    the evidence was gathered, else "": every verdict compares outputs of different calls, so no hypothesis about a
    law stands on them (held-out round 13: a model with 0.05 eV of random noise per call ended with exit 0, 'no
    hypothesis left to pursue')."""
    from ..evaluation import evaluator_for
    from ..reporting.plugin import determinism_names

    found = evaluator_for(target).nondeterminism
    if not found:
        return ""
    return (f"MODEL BROKEN: the outputs of {target} differ between identical calls ({determinism_names(found)[0]}); "
            "fix the model (dropout left on, a random seed per call, state kept between calls), then run detect "
            "again")


class Detective:
    def __init__(self, target: str, committee: list[str], planner, out_dir, memory_path=None, tests_dir=None,
                 budget: int = 20000, max_hypotheses: int = 3, max_escalations: int = 1, report=None, store=None,
                 contracts: list[str] | None = None, suite_files=None, log=None, argv=None):
        self.target = target
        self.committee = [c for c in committee if c != target]
        self.planner = planner
        self.out = Path(out_dir)
        self.memory_path = Path(memory_path) if memory_path else self.out / "memory.jsonl"
        self.tests_dir = Path(tests_dir) if tests_dir else None
        self.budget = budget
        self.max_hypotheses = max_hypotheses
        self.max_escalations = max_escalations
        self.report_source = report
        self.store_source = store
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.argv = list(argv or [])
        #: built-in contracts to gather evidence from (None: all)
        self.contracts = list(contracts) if contracts else None
        #: contract files the evidence comes from (None: the built-in suite)
        self.suite_files = list(suite_files) if suite_files else None

    # --- evaluation accounting ---------------------------------------------------------------------------------
    def _calls(self) -> int:
        from ..evaluation import all_evaluators

        return sum(ev.stats.calls for ev in all_evaluators().values())

    def run(self) -> RunSummary:
        from ..models.registry import resolve
        from ..provenance.plugin import new_run_id
        from .ledger import AgentLedger

        t0 = time.perf_counter()
        calls0 = self._calls()
        for spec in [self.target] + self.committee:
            entry = resolve(spec)
            why = entry.unavailable(entry.weights)
            if why:
                raise MlipError(f"model {entry.name!r} is not usable here: {why}")
        from ..contracts.suite import load_suite
        from .outputs import check_tests_dir, claim_output_folder

        suite = load_suite(self.suite_files, log=self.log)  # a file of the user's refused before anything is written

        memory = EvidenceMemory(self.memory_path)
        foreign = memory.foreign()
        if foreign:
            raise MlipError(f"--memory {self.memory_path} {foreign}; it is left as it is: pass a new file or the "
                            "memory.jsonl of an earlier detect run")
        check_tests_dir(self.tests_dir)
        claim_output_folder(self.out)
        run_id = new_run_id()
        for problem in memory.broken:
            self.log(f"warning: memory {self.memory_path}: {problem}")
        ledger = AgentLedger(self.out / "provenance.sqlite", run_id, self.target, self.committee, self.argv)
        summary = RunSummary(run_id, self.target, self.committee, self.planner.name)
        try:
            ledger.record_calls([self.target] + self.committee)
            memory.append("run", {"event": "start", "target": self.target, "committee": self.committee,
                                  "planner": self.planner.name, "budget": self.budget,
                                  "code_version": ledger.code_version}, run=run_id)
            from ..contracts.suite import builtin_contracts_dir
            evidence, summary.evidence_source = self._evidence(memory, ledger, suite, run_id)
            existing = [self.tests_dir] if self.tests_dir else []
            existing += [Path("contracts")] if Path("contracts").resolve() != Path(builtin_contracts_dir()).resolve() \
                else []
            validator = Validator(self.target, self.committee, existing_dirs=existing,
                                  memory_protocols=memory.protocols_run())
            desk = Desk(self.target, self.committee, evidence, memory, validator, ledger, suite, log=self.log,
                        run_id=run_id)
            summary.broken = broken_target(evidence) or unsteady_target(self.target)
            if summary.broken:
                summary.stopped = summary.broken
                self.log(f"detective: {summary.broken}")
            else:
                self._loop(desk, memory, ledger, run_id, summary, calls0)
            summary.evaluations = self._calls() - calls0
            summary.seconds = time.perf_counter() - t0
            summary.tokens = self.planner.usage.model_dump()
            from .outputs import write_run_outputs

            write_run_outputs(self, desk, summary, memory)
        finally:
            ledger.close()
        return summary

    def _evidence(self, memory, ledger, suite, run_id) -> tuple[list[EvidenceItem], str]:
        from . import evidence as ev

        if self.report_source:
            from ..models.registry import resolve

            items = ev.from_report(self.report_source, ledger, target=resolve(self.target).info.name,
                                   named=bool(self.contracts))
            source = f"report {self.report_source}"
        elif self.store_source:
            from ..models.registry import resolve

            items = ev.from_store(self.store_source, resolve(self.target).info.name, ledger)
            source = f"store {self.store_source}"
        else:
            prior = [EvidenceItem(**d) for d in memory.evidence()]
            names = {self._name(m) for m in [self.target] + self.committee}
            prior = [e for e in prior if e.model in names]
            if prior and {e.model for e in prior} >= names:
                self.log(f"evidence: {len(prior)} verdicts from the memory {self.memory_path}")
                return self._roles(prior), f"memory {self.memory_path}"
            which = (f"the contracts of {', '.join(map(str, self.suite_files))}" if self.suite_files
                     else "the built-in contracts")
            self.log(f"evidence: none given; running {which} on the target and committee")
            from .validator import open_checks

            # the built-in suite: by default the contracts of the laws whose playbooks widen from a first run; a suite
            # the user names: every contract of it a planner can write protocols for (a zero-net-force file ran
            # nothing, and a NaN model got 'no hypothesis' and exit 0: held-out round 11)
            from .playbook import playbook_for

            opened = set(open_checks()) if self.suite_files else \
                {c for c in open_checks() if playbook_for(c).default_evidence}
            names = [n for n in suite if (n in self.contracts if self.contracts else suite[n].check in opened)]
            if self.contracts:
                unknown = sorted(set(self.contracts) - set(suite))
                if unknown:
                    raise MlipError(f"unknown built-in contract(s) {', '.join(unknown)}; known: {', '.join(suite)}")
            if not names:
                files = ", ".join(map(str, self.suite_files or [])) or "the built-in suite"
                raise MlipError(f"none of the contracts of {files} is of a law the detective widens "
                                f"({', '.join(sorted(opened))}): it would check nothing; name other contracts with "
                                "--suite or --contracts")
            items = ev.gather(self.target, self.committee, ledger, contracts=names, log=self.log, suite=suite)
            source = "gathered (built-in contracts through pytest_mlip.testing.run_contract)"
        if self.contracts and (self.report_source or self.store_source):
            items = [i for i in items if i.contract in self.contracts]  # widen only the contracts named
            if not items:
                raise MlipError(f"no verdict of {', '.join(self.contracts)} in the {source}")
        items = self._roles(items)
        for item in items:
            memory.append("evidence", item.model_dump(), run=run_id)
        return items, source

    def _roles(self, items: list[EvidenceItem]) -> list[EvidenceItem]:
        """Roles are relative to this run's target (evidence may come from a run on another target)."""
        target = self._name(self.target)
        return [i.model_copy(update={"role": "target" if i.model == target else "committee"}) for i in items]

    @staticmethod
    def _name(spec: str) -> str:
        from ..models.registry import resolve

        return resolve(spec).info.name

    # --- the loop ------------------------------------------------------------------------------------------------
    def _loop(self, desk, memory, ledger, run_id, summary, calls0):
        from . import judgement
        from .probes import probe

        for _ in range(self.max_hypotheses):
            if self._calls() - calls0 >= self.budget:
                summary.stopped = "evaluation budget spent"
                break
            h = self.planner.propose(desk)
            if h is None:
                summary.stopped = "no hypothesis left to pursue"
                break
            h = h.model_copy(update={"id": memory.next_hypothesis_id(), "planner": self.planner.name})
            memory.append("hypothesis", h.model_dump(), run=run_id)
            self.log(f"{h.id} [{h.key}] score {h.score:.3g}: {h.statement[:160]}")
            try:
                prereg = self.planner.preregister(desk, h)
            except NoProtocol as exc:
                reasons = [f"exhausted before any probe: {exc}"]
                verdict = AgentVerdict(hypothesis=h.id, verdict="exhausted", reasons=reasons)
                memory.append("verdict", verdict.model_dump(), run=run_id)
                memory.append("status", {"hypothesis": h.id, "status": "exhausted", "reasons": reasons}, run=run_id)
                self.log(f"  {reasons[0]}")
                summary.hypotheses.append({"hypothesis": h.model_copy(update={"status": "exhausted"}),
                                           "prereg": None, "reports": {}, "verdict": verdict})
                continue
            prereg = prereg.model_copy(update={"hypothesis": h.id})
            gated = []
            for p in prereg.predictions:
                gate = desk.validator.protocol(p.protocol, where=p.name, check_repeat=False)
                if not gate.ok:
                    raise ProtocolRejected(f"{h.id}: protocol {p.name} refused: " + "; ".join(gate.errors))
                gated.append(gate.settings[0])
            memory.append("preregistration", prereg.model_dump(), run=run_id)
            desk.validator.memory_protocols.extend(p.protocol for p in prereg.predictions)
            reports: dict[str, ProbeReport] = {}
            spent = False
            by_name = {p.name: (p, s) for p, s in zip(prereg.predictions, gated)}
            for name in self.planner.probe_order(desk, h, prereg):
                if name not in by_name:
                    continue
                if self._calls() - calls0 >= self.budget:
                    spent = True
                    break
                p, settings = by_name[name]
                self.log(f"  probe {p.kind} {p.name}: expect target {p.target}, committee {p.committee}")
                r = probe(h.id, p, settings, self.target, self.committee, ledger)
                reports[p.name] = r
                memory.append("probe", r.model_dump(), run=run_id)
                self.log("    " + ", ".join(f"{o.model} {o.status}" + (
                    f" (v/tau {float(o.max_normalized):.3g})" if o.max_normalized is not None else "")
                    for o in r.outcomes) + (f"; {r.notes[0]}" if r.notes else ""))
            rule = judgement.render(h, prereg, reports, budget_spent=spent)
            verdict = self.planner.review(desk, h, prereg, reports, rule)
            problem = judgement.allowed(verdict.verdict, rule) if verdict.verdict != "exhausted" else None
            if problem:
                self.log(f"  planner verdict refused: {problem}")
                verdict = rule.model_copy(update={"planner_note": f"planner's verdict refused: {problem}"})
            from .playbook import playbook_for

            book = playbook_for(h.check)
            attribution = book.attribute(h, prereg, reports) if book is not None and reports else ""
            if attribution:
                verdict = verdict.model_copy(update={"reasons": verdict.reasons + [
                    f"mechanism attribution: {attribution}"]})
                self.log(f"  mechanism attribution: {attribution[:200]}")
            status = {"escalate": "escalated", "reject": "rejected", "exhausted": "exhausted"}[verdict.verdict]
            memory.append("verdict", verdict.model_dump(), run=run_id)
            memory.append("status", {"hypothesis": h.id, "status": status, "reasons": verdict.reasons}, run=run_id)
            h = h.model_copy(update={"status": status, "reasons": verdict.reasons})
            self.log(f"  verdict {verdict.verdict}: {'; '.join(verdict.reasons)[:300]}")
            summary.hypotheses.append({"hypothesis": h, "prereg": prereg, "reports": reports, "verdict": verdict,
                                       "budget_spent": spent})
            if verdict.verdict == "escalate":
                esc = Escalation(h, prereg, reports, verdict)
                esc.files = self._write_protocols(desk, memory, run_id, esc)
                summary.escalations.append(esc)
                summary.files += [str(f) for f in esc.files]
                if len(summary.escalations) >= self.max_escalations:
                    summary.stopped = "escalation limit reached (the search ends at escalation)"
                    break
            if spent:
                summary.stopped = "evaluation budget spent"
                break
        else:
            summary.stopped = summary.stopped or "hypothesis limit reached"

    def _write_protocols(self, desk, memory, run_id, esc: Escalation) -> list[Path]:
        plans = self.planner.write_plans(desk, esc.hypothesis, esc.prereg, esc.reports, esc.verdict)
        written = []
        if not plans:
            why = ("no protocol kept: no pre-registered protocol that the target fails is passed by at least half "
                   "the committee, so none would tell a fixed model from the others")
            self.log(f"  {why}")
            memory.append("protocol_file", {"hypothesis": esc.hypothesis.id, "refused": [why]}, run=run_id)
        tables = {p.name: p.protocol for p in esc.prereg.predictions}
        for plan in plans:
            chosen = [tables[n] for n in plan.predictions if n in tables]
            if not chosen:
                continue
            header = [f"Protocol written by pytest-mlip detect ({self.planner.name} planner), run {run_id}.",
                      f"Hypothesis {esc.hypothesis.id} ({esc.hypothesis.key}) on {desk.target_name}: "
                      f"{esc.verdict.verdict}, {esc.verdict.type}.",
                      "Pre-registered protocols kept because the target violates them and at least half the committee "
                      "obeys them;",
                      "a model that fixes the defect passes this file. Data only: a fixed check routine interprets "
                      "each table."] + plan.header
            gate = desk.validator.file(chosen, plan.slug, header=header, where=plan.slug, check_repeat=False)
            if not gate.ok:
                self.log(f"  protocol file {plan.slug} refused by the validator: {'; '.join(gate.errors)}")
                memory.append("protocol_file", {"hypothesis": esc.hypothesis.id, "slug": plan.slug,
                                                "refused": gate.errors}, run=run_id)
                continue
            targets = [self.out / "generated_tests"] + ([self.tests_dir] if self.tests_dir else [])
            for folder in targets:
                folder.mkdir(parents=True, exist_ok=True)
                path = safe_path(folder, plan.slug)
                if path.exists() and path.read_text() != gate.text:
                    self.log(f"  {path} exists with other content; not overwritten")
                    continue
                path.write_text(gate.text)
                written.append(path)
                memory.append("protocol_file", {"hypothesis": esc.hypothesis.id, "path": str(path),
                                                "contracts": [s.name for s in gate.settings],
                                                "reason": plan.reason}, run=run_id)
                self.log(f"  wrote {path}")
        return written
