"""Planners: one interface, two implementations (offline rules here, an LLM in ``anthropic_planner``).

A planner proposes the next hypothesis (conditioned on the whole memory),
pre-registers its predictions as protocols (data), reviews the rule-based
verdict, and names the protocols worth keeping as regression tests. It never
runs anything itself: the detective validates and runs what it proposes.

The offline planner's rules:

- *widen*: a contract the target fails becomes a hypothesis about the class of
  configurations that failed (element classes of the failing probes, minus
  those that also passed), tested on neighbours not yet evaluated (adjacent
  elements, similar molecules, crystals of the same structure);
- *vary one factor at a time* for the mechanism: a refined grid, another
  random transformation or rattle seed, a larger fragment gap, a float64
  channel of the target when one is registered and usable;
- *controls*: new configurations of the classes that passed (or, for a
  symmetry law, the same new structures under a transformation the target
  obeyed), expected to pass;
- *impact*: the application-like setting (an atom onto its own close-packed
  surface, a periodic crystal) where the defect may or may not carry over;
- *rank* by importance x severity x breadth; after a rejection whose scope
  prediction failed, *narrow* to the exact failing configurations in a new
  environment;
- when the committee violates the same law, pre-register the disagreement
  instead of a committee pass: the target at least a decade above the
  committee median (only the size of the violation tells them apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .playbook import _units_by_probe, playbook_for
from .protocols import table_of, unit_elements, unit_probe_id
from .schema import AgentVerdict, EvidenceRef, Hypothesis, Preregistration, ProbeReport, Scope, TokenUsage

SEVERITY_CAP = 10.0


def slugify(text: str) -> str:
    import re

    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60].strip("-") or "protocol"


class NoProtocol(Exception):
    """A planner found no admissible protocol for a hypothesis: it is settled as exhausted."""


@dataclass
class WritePlan:
    """Protocol files a planner wants kept: one file per plan, tables from pre-registered predictions."""

    slug: str
    predictions: list[str]
    header: list[str] = field(default_factory=list)
    reason: str = ""


class Planner:
    """The interface every planner implements."""

    name = "base"

    def __init__(self):
        self.usage = TokenUsage()

    def propose(self, desk) -> Hypothesis | None:  # pragma: no cover - interface
        raise NotImplementedError

    def preregister(self, desk, h: Hypothesis) -> Preregistration:  # pragma: no cover - interface
        raise NotImplementedError

    def probe_order(self, desk, h: Hypothesis, prereg: Preregistration) -> list[str]:
        """Which pre-registered protocols to run, in order (default: all, scope first)."""
        order = {"scope": 0, "control": 1, "mechanism": 2, "impact": 3}
        return [p.name for p in sorted(prereg.predictions, key=lambda p: order[p.kind])]

    def review(self, desk, h, prereg, reports: dict[str, ProbeReport], rule: AgentVerdict) -> AgentVerdict:
        return rule

    def write_plans(self, desk, h, prereg, reports, verdict) -> list[WritePlan]:
        return []


# --- the offline planner ---------------------------------------------------------------------------------------------


def unit_signature(check: str, field_: str, unit) -> tuple:
    """What a scope claim about a unit is about, as the law's playbook says."""
    return playbook_for(check).signature(field_, unit)


class OfflinePlanner(Planner):
    """Rules over contract results and committee disagreement; no network, deterministic."""

    name = "offline"

    # --- proposing ---------------------------------------------------------------------------------------------
    def candidates(self, desk) -> list[Hypothesis]:
        out: list[Hypothesis] = []
        settled = desk.memory.settled_keys()
        for e in desk.evidence:
            if e.model != desk.target_name or e.role != "target":
                continue
            settings = desk.suite.get(e.contract)
            if settings is None or playbook_for(e.check) is None:
                continue  # the law opts out of the detective (pytest-mlip laws says why)
            committee = [c for c in desk.evidence if c.contract == e.contract and c.role == "committee"]
            c_vals = [c.v for c in committee if c.max_normalized is not None]
            if e.status == "error" and not e.passing_probes():
                h = None  # the model failed on every probe: garbage out, not a law's violation (nothing to widen)
            elif e.status in ("fail", "error"):  # exact basis: a violation; disagreement basis: the target stands out
                h = self._widen(desk, e, settings, committee)
            elif e.status == "pass" and c_vals and e.v > 0.1 and e.v > 10 * max(c_vals):
                h = self._suspicion(desk, e, settings, c_vals)
            else:
                h = None
            if h is not None and h.key not in settled:
                out.append(h)
        for parent in desk.memory.hypotheses().values():
            if parent.get("status") != "rejected" or parent["key"].startswith("narrow:"):
                continue
            if not any("prediction failed" in r and "scope" in r for r in parent.get("reasons", [])):
                continue
            key = f"narrow:{parent['key']}"
            if key in settled:
                continue
            h = self._narrow(desk, parent, key)
            if h is not None:
                out.append(h)
        return sorted(out, key=lambda h: -h.score)

    def propose(self, desk) -> Hypothesis | None:
        c = self.candidates(desk)
        return c[0] if c else None

    def _classes(self, e, settings):
        table = table_of(settings)
        by_probe = _units_by_probe(table)
        failing = [by_probe[p] for p in e.failing_probes() if p in by_probe]
        passing = [by_probe[p] for p in e.passing_probes() if p in by_probe]
        f_sigs = {unit_signature(e.check, f, u) for f, u in failing}
        p_sigs = {unit_signature(e.check, f, u) for f, u in passing}
        claim = f_sigs - p_sigs or f_sigs
        return table, failing, passing, claim, p_sigs - f_sigs

    def _widen(self, desk, e, settings, committee) -> Hypothesis | None:
        table, failing, passing, claim, clean = self._classes(e, settings)
        if not failing:
            return None
        book = playbook_for(e.check)
        lw = book.law_key(settings)
        active = len(failing) + len(passing)
        severity = min(math.log10(1.0 + e.v), SEVERITY_CAP) if math.isfinite(e.v) else SEVERITY_CAP
        breadth = len(failing) / max(active, 1)
        c_fail = sum(1 for c in committee if c.status in ("fail", "error")) / max(len(committee), 1)
        importance = book.importance_of(settings) * (1.0 - 0.5 * c_fail)
        classes = sorted({"/".join(s) for s in claim})
        elements = sorted({x for f, u in failing for x in unit_elements(f, u)})
        fprobes = [unit_probe_id(e.check, f, u) for f, u in failing]
        pprobes = [unit_probe_id(e.check, f, u) for f, u in passing]
        cls_text = ", ".join(classes)
        statement = (f"{desk.target_name} violates the law of {e.contract} ({lw}) on configurations of class "
                     f"[{cls_text}] (seen on {', '.join(fprobes[:6])}); the same violation is predicted on "
                     f"neighbouring configurations of that class not yet evaluated, and not on configurations of the "
                     f"classes that obeyed it" + (f" ({', '.join(pprobes[:4])})" if pprobes else ""))
        origin = [EvidenceRef(contract=e.contract, model=e.model, quantity="max v/tau", value=e.max_normalized,
                              artifact=e.artifacts.get("max_normalized"))]
        for p in e.failing_probes()[:4]:
            origin.append(EvidenceRef(contract=e.contract, model=e.model, probe=p, quantity="v/tau",
                                      value=e.probes[p].get("normalized"),
                                      artifact=(e.artifacts.get("probes") or {}).get(p)))
        conditions = [lw] + [f"{k} = {getattr(settings, k)}" for k in book.conditions if hasattr(settings, k)]
        return Hypothesis(
            id="H0", key=f"{e.contract}:{'+'.join(classes)}", statement=statement, check=e.check, contract=e.contract,
            basis=e.basis, scope=Scope(elements=elements, sites=sorted({f for f, _ in failing}), structures=fprobes,
                                       conditions=conditions + [f"class {c}" for c in classes]),
            mechanism=book.mechanism_of(settings), importance=round(importance, 3), severity=round(severity, 4),
            breadth=round(breadth, 4), origin=origin)

    def _suspicion(self, desk, e, settings, c_vals) -> Hypothesis | None:
        """The target obeys the law but stands far above the committee: disagreement allocates suspicion."""
        table = table_of(settings)
        by_probe = _units_by_probe(table)
        worst = e.worst_probe if e.worst_probe in by_probe else None
        if worst is None:
            return None
        f, u = by_probe[worst]
        book = playbook_for(e.check)
        lw = book.law_key(settings)
        sig = unit_signature(e.check, f, u)
        return Hypothesis(
            id="H0", key=f"{e.contract}:suspicion:{'/'.join(sig)}", check=e.check, contract=e.contract,
            basis="disagreement",
            statement=(f"{desk.target_name} stays within the tolerance of {e.contract} but far above every committee "
                       f"model on {worst}; neighbouring configurations of class [{'/'.join(sig)}] are predicted to "
                       "push it over"),
            scope=Scope(elements=unit_elements(f, u), sites=[f], structures=[worst], conditions=[lw]),
            mechanism=book.mechanism_of(settings), importance=round(book.importance_of(settings) * 0.5, 3),
            severity=round(math.log10(1.0 + e.v), 4), breadth=0.0,
            origin=[EvidenceRef(contract=e.contract, model=e.model, quantity="max v/tau", value=e.max_normalized,
                                artifact=e.artifacts.get("max_normalized"))])

    def _narrow(self, desk, parent: dict, key: str) -> Hypothesis | None:
        """After a scope prediction failed: claim only the configurations that failed, in a new environment."""
        e = next((x for x in desk.evidence if x.contract == parent["contract"] and x.model == desk.target_name), None)
        settings = desk.suite.get(parent["contract"])
        if e is None or settings is None:
            return None
        table, failing, passing, claim, clean = self._classes(e, settings)
        if not failing:
            return None
        fprobes = [unit_probe_id(e.check, f, u) for f, u in failing]
        book = playbook_for(e.check)
        lw = book.law_key(settings)
        return Hypothesis(
            id="H0", key=key, check=e.check, contract=e.contract, basis=parent.get("basis", "exact"), parent=parent["id"],
            statement=(f"narrowed after {parent['id']} was rejected: {desk.target_name}'s violation of {e.contract} "
                       f"is specific to the configurations that failed ({', '.join(fprobes[:6])}) and persists when "
                       "they are placed in a new environment; their class neighbours obey the law"),
            scope=Scope(elements=sorted({x for f, u in failing for x in unit_elements(f, u)}),
                        sites=sorted({f for f, _ in failing}), structures=fprobes, conditions=[lw, "narrowed"]),
            mechanism=book.mechanism_of(settings) + " (confined to the failing configurations)",
            importance=round(parent["importance"] * 0.8, 3), severity=parent["severity"],
            breadth=parent.get("breadth", 0.0), origin=[EvidenceRef(**o) for o in parent.get("origin", [])])

    # --- pre-registration ----------------------------------------------------------------------------------------
    def preregister(self, desk, h: Hypothesis) -> Preregistration:
        e = next(x for x in desk.evidence if x.contract == h.contract and x.model == desk.target_name)
        settings = desk.suite[h.contract]
        table, failing, passing, claim, clean = self._classes(e, settings)
        base = slugify(f"{h.id}-{h.contract}")
        narrowed = h.key.startswith("narrow:")
        preds = playbook_for(h.check).predictions(desk, h, table, settings, failing, passing, claim, clean, base,
                                                  narrowed)
        preds = [p for p in preds if p is not None]
        if playbook_for(h.check).disagreement == "band" and h.basis == "disagreement":
            # a bounded violation: the target is told apart by the committee band, whether or not members violate it
            preds = [p.model_copy(update={
                "committee": "any", "above_band": True,
                "rationale": p.rationale + "; the target's v/tau is predicted above the committee's largest by more "
                                           "than the committee's own spread (the committee band)"})
                     if p.kind == "scope" and p.target == "fail" else p for p in preds]
        elif self._committee_fails_class(desk, e, settings, claim):
            # the committee violates this law too: only the size of the violation can tell the target apart
            from .judgement import DISAGREEMENT_DECADES

            preds = [p.model_copy(update={
                "committee": "any", "excess_decades": DISAGREEMENT_DECADES,
                "rationale": p.rationale + "; the committee violates this law too, so the target is predicted to "
                                           "stand at least one decade above the committee median"})
                     if p.kind == "scope" and p.target == "fail" else p for p in preds]
        ok = []
        for p in preds:
            gate = desk.validator.protocol(p.protocol, where=p.name)
            if gate.ok:
                ok.append(p)
                desk.validator.remember(gate.settings[0], f"pre-registration of {h.id}:{p.name}")
            else:
                desk.log(f"  offline planner dropped {p.name}: {gate.errors[0]}")
        if not ok:
            raise NoProtocol(f"{h.id}: every protocol the offline rules derive was refused by the validator "
                             "(already evaluated or inadmissible)")
        return Preregistration(hypothesis=h.id, predictions=ok)

    def _committee_fails_class(self, desk, e, settings, claim) -> bool:
        """Does a committee model violate this law on configurations of the claimed class? (A committee failure on
        another class, e.g. a broken slab of a metal the hypothesis is not about, says nothing about this one.)
        Without per-probe evidence mapping onto the claim, any committee failure counts."""
        by_probe = _units_by_probe(table_of(settings))
        for c in desk.evidence:
            if c.contract != e.contract or c.model == desk.target_name or c.status not in ("fail", "error"):
                continue
            units = [by_probe[p] for p in c.failing_probes() if p in by_probe]
            if not units or any(unit_signature(e.check, f, u) in claim for f, u in units):
                return True
        return False

    # --- after the verdict -----------------------------------------------------------------------------------------
    def write_plans(self, desk, h, prereg, reports, verdict) -> list[WritePlan]:
        """Keep the pre-registered protocols the target fails and at least half the committee passes."""
        from .judgement import _committee_observed

        keep = []
        for p in prereg.predictions:
            r = reports.get(p.name)
            if r is None or p.target != "fail":
                continue
            if r.target.status in ("fail", "error") and _committee_observed(r) == "pass":
                keep.append(p.name)
        if not keep:
            return []
        slug = slugify(f"{desk.target_name.split(':')[-1]}-{h.contract}-{h.id}")
        return [WritePlan(slug=slug, predictions=keep,
                          reason="pre-registered protocols the target fails and at least half the committee passes")]
