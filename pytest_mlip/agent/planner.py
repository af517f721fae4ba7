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
from typing import Any

from .chemistry import (element_class, facet_for, neighbours, reference_structure, same_class_neighbours, signature,
                        similar_molecules)
from .protocols import table_of, unit_elements, unit_probe_id, units_of
from .schema import AgentVerdict, EvidenceRef, Hypothesis, Prediction, Preregistration, ProbeReport, Scope, TokenUsage

#: how much a region matters in applications, per law (a judgement, stated here once)
IMPORTANCE = {
    "repulsive_wall": 0.9,  # MD and relaxations collapse atoms together
    "dissociation": 0.8,  # binding and reaction energies
    "stress_strain": 0.7,  # cell relaxations, NPT
    "symmetry:rotation": 0.8,
    "symmetry:translation": 0.8,
    "symmetry:permutation": 0.7,
    "symmetry:inversion": 0.6,  # enantiomers, chirality-sensitive properties
    "symmetry:periodic_image": 0.7,
}
MECHANISMS = {
    "repulsive_wall": ("no training data at compressed distances: the learned pair energy turns over below the "
                       "shortest sampled bond and falls without bound"),
    "dissociation": ("an interaction leaks beyond the cutoff (a global readout, a charge or composition term, or graph "
                     "edges longer than the stated cutoff)"),
    "stress_strain": "the stress is not the strain derivative of the energy (a direct stress head or missing cell terms)",
    "symmetry:rotation": "a readout or local frame that is not rotation-equivariant",
    "symmetry:translation": ("local frames built from neighbour geometry that degenerate on high-symmetry "
                             "configurations (frame degeneracy)"),
    "symmetry:permutation": "an order-dependent graph construction or readout",
    "symmetry:inversion": ("parity-odd (pseudotensor) features: the network is equivariant under proper rotations "
                           "only, not under improper ones, so mirror images differ"),
    "symmetry:periodic_image": "a non-extensive readout or a neighbour list that depends on the cell size",
}
SCOPE_UNITS = 6
CONTROL_UNITS = 4
MECHANISM_UNITS = 4
WALL_MECHANISM_UNITS = 2  # a refined wall scan is long: two pairs settle a discretisation artefact
SEVERITY_CAP = 10.0
SIBLINGS = 2


def law(check: str, settings) -> str:
    t = getattr(settings, "transform", None)
    return f"{check}:{t}" if t else check


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


def _units_by_probe(table: dict) -> dict[str, tuple[str, Any]]:
    out = {}
    for f, u in units_of(table):
        try:
            out[unit_probe_id(table["check"], f, u)] = (f, u)
        except Exception:
            continue
    return out


def unit_signature(check: str, field_: str, unit) -> tuple:
    """What a scope claim about a unit is about: its element classes (and, for structures, its shape)."""
    if check == "repulsive_wall" and field_ == "pairs":
        return tuple(sorted(element_class(e) for e in unit))  # a pair: both partners' classes
    sig = signature(unit_elements(field_, unit))
    if isinstance(unit, dict) and "kind" in unit and check in ("symmetry", "stress_strain"):
        shape = unit["kind"] + ("~rattled" if unit.get("rattle") else "")
        return (shape,) + sig
    if field_ == "surfaces":
        return ("surface",) + sig
    return sig


def _same_unit(a, b) -> bool:
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], str):
        return sorted(a) == sorted(b) if isinstance(b, (list, tuple)) else False
    return a == b


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
            if settings is None or e.check not in ("repulsive_wall", "dissociation", "symmetry", "stress_strain"):
                continue
            committee = [c for c in desk.evidence if c.contract == e.contract and c.role == "committee"]
            c_vals = [c.v for c in committee if c.max_normalized is not None]
            if e.status in ("fail", "error") and e.basis == "exact":
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
        lw = law(e.check, settings)
        active = len(failing) + len(passing)
        severity = min(math.log10(1.0 + e.v), SEVERITY_CAP) if math.isfinite(e.v) else SEVERITY_CAP
        breadth = len(failing) / max(active, 1)
        c_fail = sum(1 for c in committee if c.status in ("fail", "error")) / max(len(committee), 1)
        importance = IMPORTANCE.get(lw, 0.5) * (1.0 - 0.5 * c_fail)
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
        conditions = [lw] + ([f"{k} = {getattr(settings, k)}" for k in ("r_inner", "gap", "strain_step")
                              if hasattr(settings, k)])
        return Hypothesis(
            id="H0", key=f"{e.contract}:{'+'.join(classes)}", statement=statement, check=e.check, contract=e.contract,
            basis="exact", scope=Scope(elements=elements, sites=sorted({f for f, _ in failing}), structures=fprobes,
                                       conditions=conditions + [f"class {c}" for c in classes]),
            mechanism=MECHANISMS.get(lw, "unknown"), importance=round(importance, 3), severity=round(severity, 4),
            breadth=round(breadth, 4), origin=origin)

    def _suspicion(self, desk, e, settings, c_vals) -> Hypothesis | None:
        """The target obeys the law but stands far above the committee: disagreement allocates suspicion."""
        table = table_of(settings)
        by_probe = _units_by_probe(table)
        worst = e.worst_probe if e.worst_probe in by_probe else None
        if worst is None:
            return None
        f, u = by_probe[worst]
        lw = law(e.check, settings)
        sig = unit_signature(e.check, f, u)
        return Hypothesis(
            id="H0", key=f"{e.contract}:suspicion:{'/'.join(sig)}", check=e.check, contract=e.contract,
            basis="disagreement",
            statement=(f"{desk.target_name} stays within the tolerance of {e.contract} but far above every committee "
                       f"model on {worst}; neighbouring configurations of class [{'/'.join(sig)}] are predicted to "
                       "push it over"),
            scope=Scope(elements=unit_elements(f, u), sites=[f], structures=[worst], conditions=[lw]),
            mechanism=MECHANISMS.get(lw, "unknown"), importance=round(IMPORTANCE.get(lw, 0.5) * 0.5, 3),
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
        lw = law(e.check, settings)
        return Hypothesis(
            id="H0", key=key, check=e.check, contract=e.contract, basis="exact", parent=parent["id"],
            statement=(f"narrowed after {parent['id']} was rejected: {desk.target_name}'s violation of {e.contract} "
                       f"is specific to the configurations that failed ({', '.join(fprobes[:6])}) and persists when "
                       "they are placed in a new environment; their class neighbours obey the law"),
            scope=Scope(elements=sorted({x for f, u in failing for x in unit_elements(f, u)}),
                        sites=sorted({f for f, _ in failing}), structures=fprobes, conditions=[lw, "narrowed"]),
            mechanism=MECHANISMS.get(lw, "unknown") + " (confined to the failing configurations)",
            importance=round(parent["importance"] * 0.8, 3), severity=parent["severity"],
            breadth=parent.get("breadth", 0.0), origin=[EvidenceRef(**o) for o in parent.get("origin", [])])

    # --- pre-registration ----------------------------------------------------------------------------------------
    def preregister(self, desk, h: Hypothesis) -> Preregistration:
        e = next(x for x in desk.evidence if x.contract == h.contract and x.model == desk.target_name)
        settings = desk.suite[h.contract]
        table, failing, passing, claim, clean = self._classes(e, settings)
        base = slugify(f"{h.id}-{h.contract}")
        build = {"repulsive_wall": self._wall, "symmetry": self._symmetry, "dissociation": self._dissociation,
                 "stress_strain": self._stress}[h.check]
        narrowed = h.key.startswith("narrow:")
        preds = build(desk, h, table, settings, failing, passing, claim, clean, base, narrowed)
        preds = [p for p in preds if p is not None]
        if any(c.status in ("fail", "error") for c in desk.evidence
               if c.contract == h.contract and c.model != desk.target_name):
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

    # shared helpers
    def _filter_units(self, desk, check, field_, units, existing, sigs, limit) -> list:
        out = []
        for u in units:
            if any(_same_unit(u, x) for x in existing) or any(_same_unit(u, x) for x in out):
                continue
            try:
                elems = unit_elements(field_, u)
            except Exception:
                continue
            if not desk.supported(elems):
                continue
            if sigs is not None and unit_signature(check, field_, u) not in sigs:
                continue
            out.append(u)
            if len(out) >= limit:
                break
        return out

    @staticmethod
    def _round_robin(lists: list[list]) -> list:
        out, i = [], 0
        while any(i < len(x) for x in lists):
            for x in lists:
                if i < len(x):
                    out.append(x[i])
            i += 1
        return out

    def _pred(self, name, kind, target, committee, rationale, table, extra=None) -> Prediction:
        return Prediction(name=name, kind=kind, target=target, committee=committee, rationale=rationale,
                          protocol=table, extra_models=extra or [])

    def _neighbour_control(self, desk, h, base, check, field, candidates, taken, claim, common, rationale):
        """The control every widened hypothesis pre-registers: neighbours of the units that obeyed the law,
        never evaluated, expected to pass on the target (None when no such unit is left)."""
        units = self._filter_units(desk, check, field, candidates, taken, claim, CONTROL_UNITS)
        if not units:
            return None
        return self._pred(f"{base}-control", "control", "pass", "any", rationale,
                          {"name": f"{base}-control", "check": check, "hard": True, "basis": "exact",
                           "description": f"control of {h.id}: neighbours of the classes that obeyed the law",
                           field: units, **common})

    def _float64(self, desk) -> list[str]:
        """Other channels of the target that vary one factor: its float64 build (dtype alone), when registered
        and usable, and up to ``SIBLINGS`` usable siblings of its family (same training lineage, another
        checkpoint or size): a defect they share points to the family's data or architecture, not one fit."""
        from ..models.registry import model_names, registry

        out = []
        name = f"{desk.target}@float64"
        entry = registry().get(name)
        if entry is not None and entry.unavailable(entry.weights) is None:
            out.append(name)
        try:
            family = registry()[desk.target].info.family
        except KeyError:
            return out
        if family in ("analytic", "factory"):
            return out
        sibs = []
        for n in model_names():
            e = registry()[n]
            if (e.info.family == family and n not in (desk.target, desk.target_name, *desk.committee)
                    and "@" not in n and e.info.shipped and e.unavailable(e.weights) is None):
                sibs.append(n)
        return out + sibs[:SIBLINGS]

    def _parent_units(self, desk, h: Hypothesis, passed: bool) -> list[tuple[str, Any]]:
        """Units of the parent's scope protocols on which the target passed (or failed), read from the memory."""
        if not h.parent:
            return []
        tables = {}
        for r in desk.memory.records("preregistration"):
            if r["data"]["hypothesis"] == h.parent:
                for p in r["data"]["predictions"]:
                    if p["kind"] == "scope":
                        tables[p["name"]] = p["protocol"]
        out = []
        for rep in desk.memory.probes(h.parent):
            table = tables.get(rep["name"])
            if table is None:
                continue
            by_probe = _units_by_probe(table)
            target = next(o for o in rep["outcomes"] if o["role"] == "target")
            for probe, d in target["probes"].items():
                n = d.get("normalized")
                if n is None or probe not in by_probe:
                    continue
                ok = float(n) <= 1.0 and d.get("status") == "ok"
                if ok == passed:
                    out.append(by_probe[probe])
        return out

    # --- per law ---------------------------------------------------------------------------------------------------
    def _wall(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        pairs = [u for f, u in failing if f == "pairs"]
        surfs = [u for f, u in failing if f == "surfaces"]
        existing = list(table.get("pairs", []))
        common = {"r_inner": settings.r_inner, "step": settings.step, "tolerance": dict(settings.tolerance)}

        def grow(ps):
            lists = []
            for a, b in ps:
                opts = []
                if a == b:
                    opts += [[n, n] for n in same_class_neighbours(a)]
                opts += [[n, b] for n in same_class_neighbours(a)] + [[a, n] for n in same_class_neighbours(b)]
                lists.append(opts)
            return self._round_robin(lists)

        preds = []
        if not narrowed:
            scope = self._filter_units(desk, "repulsive_wall", "pairs", grow(pairs), existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "the class that failed, on neighbouring element pairs never evaluated: the target's energy falls "
                    "going inward on at least one; at least half the committee keeps a wall",
                    {"name": f"{base}-scope", "check": "repulsive_wall", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: neighbouring pairs of the failing class", "pairs": scope,
                     **common}))
            ctrl_src = [u for f, u in passing if f == "pairs"]
            control = self._neighbour_control(
                desk, h, base, "repulsive_wall", "pairs", grow(ctrl_src), existing + scope, clean, common,
                "neighbours of the pairs that kept a wall, outside the failing class: the target keeps it too")
            if control:
                preds.append(control)
        if narrowed:
            return self._wall_narrowed(desk, h, settings, pairs, base)
        if pairs:
            step = max(0.01, round(settings.step / 2, 4))
            preds.append(self._pred(
                f"{base}-refined", "mechanism", "fail", "any",
                "one factor varied (grid step halved) on the failing pairs: a real turnover survives refinement, a "
                "discretisation artefact does not",
                {"name": f"{base}-refined", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: the failing pairs on a finer grid",
                 "pairs": pairs[:WALL_MECHANISM_UNITS], "r_inner": settings.r_inner, "step": step,
                 "tolerance": dict(settings.tolerance)}, extra=self._float64(desk)))
        metals = []
        for a, b in pairs:
            for x in (a, b):
                fac = facet_for(x)
                if fac and element_class(x) in ("transition-metal", "s-metal", "p-metal"):
                    metals.append({"element": x, "facet": fac, "adatom": b if x == a else a})
        metals = [m for m in metals if desk.supported([m["element"], m["adatom"]])]
        uniq = []
        for m in metals:
            if m not in uniq and m not in table.get("surfaces", []):
                uniq.append(m)
        if uniq:
            preds.append(self._pred(
                f"{base}-surface", "impact" if not narrowed else "scope", "any" if not narrowed else "fail", "any",
                "the application setting: the same pair formed by an atom pushed onto the close-packed surface of its "
                "partner (adsorption, sputtering, deposition): does the collapse carry over?",
                {"name": f"{base}-surface", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"impact of {h.id}: an atom pushed onto a close-packed surface",
                 "surfaces": uniq[:2], "r_inner": settings.r_inner, "step": 0.1,
                 "tolerance": dict(settings.tolerance)}))
        if surfs and not pairs:
            sc = []
            for s in surfs:
                for n in same_class_neighbours(s["element"]):
                    fac = facet_for(n)
                    if fac:
                        sc.append({"element": n, "facet": fac, "adatom": s["adatom"]})
            sc = self._filter_units(desk, "repulsive_wall", "surfaces", sc, table.get("surfaces", []), None,
                                    SCOPE_UNITS // 2)
            if sc:
                preds.append(self._pred(
                    f"{base}-scope-surfaces", "scope", "fail", "pass",
                    "the same adatom onto neighbouring metal surfaces never evaluated",
                    {"name": f"{base}-scope-surfaces", "check": "repulsive_wall", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: neighbouring surfaces", "surfaces": sc,
                     "r_inner": settings.r_inner, "step": settings.step, "tolerance": dict(settings.tolerance)}))
            preds.append(self._pred(
                f"{base}-refined", "mechanism", "fail", "any",
                "one factor varied (grid step halved) on the failing surface approaches: a real turnover survives "
                "refinement, a discretisation artefact does not",
                {"name": f"{base}-refined", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: the failing surface approaches on a finer grid",
                 "surfaces": surfs[:WALL_MECHANISM_UNITS], "r_inner": settings.r_inner,
                 "step": max(0.01, round(settings.step / 2, 4)), "tolerance": dict(settings.tolerance)},
                extra=self._float64(desk)))
        return preds

    def _wall_narrowed(self, desk, h, settings, pairs, base):
        """The failing pairs in a new environment (a larger slab) and on a finer grid; controls: the parent's
        scope pairs that kept the wall, in the same new environment."""
        size = [3, 3, 3]

        def surfaces(ps):
            out = []
            for a, b in ps:
                for x, y in ((a, b), (b, a)):
                    fac = facet_for(x)
                    if fac and element_class(x) != "non-metal" and desk.supported([x, y]):
                        s = {"element": x, "facet": fac, "adatom": y, "size": size}
                        if s not in out:
                            out.append(s)
                        break
            return out

        common = {"r_inner": settings.r_inner, "tolerance": dict(settings.tolerance)}
        preds = []
        scope = surfaces(pairs)[:2]
        if scope:
            preds.append(self._pred(
                f"{base}-scope", "scope", "fail", "pass",
                "the failing pairs formed in a new environment (an atom pushed onto a larger close-packed slab of its "
                "partner): the collapse persists",
                {"name": f"{base}-scope", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"scope of {h.id}: the failing pairs on a larger slab", "surfaces": scope,
                 "step": 0.1, **common}))
        passed = [u for f, u in self._parent_units(desk, h, passed=True) if f == "pairs"]
        control = [s for s in surfaces(passed) if s not in scope][:2]
        if control:
            preds.append(self._pred(
                f"{base}-control", "control", "pass", "any",
                "the parent's scope pairs that kept the wall, in the same new environment: they keep it",
                {"name": f"{base}-control", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"control of {h.id}: neighbours that obeyed, on a larger slab", "surfaces": control,
                 "step": 0.1, **common}))
        if pairs:
            preds.append(self._pred(
                f"{base}-finer", "mechanism", "fail", "any",
                "one factor varied (grid step quartered) on the failing pairs",
                {"name": f"{base}-finer", "check": "repulsive_wall", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: the failing pairs on a finer grid",
                 "pairs": pairs[:MECHANISM_UNITS], "step": max(0.01, round(settings.step / 4, 4)), **common},
                extra=self._float64(desk)))
        return preds

    def _grow_structure(self, u: dict) -> list[dict]:
        kind = u.get("kind")
        out = []
        if kind == "molecule":
            out += [{**u, "name": m} for m in similar_molecules(u["name"])]
        elif kind == "cluster":
            from ase.formula import Formula

            counts = Formula(u["symbols"]).count()
            for el in counts:
                for n in same_class_neighbours(el):
                    if n in counts:
                        continue
                    new = {(n if k == el else k): v for k, v in counts.items()}
                    out.append({**u, "symbols": "".join(f"{k}{v if v > 1 else ''}" for k, v in new.items())})
            out.append({**u, "seed": int(u.get("seed", 0)) + 1})
        elif kind == "bulk":
            from ase.formula import Formula

            counts = Formula(u["name"]).count()
            if len(counts) == 1:
                el = next(iter(counts))
                sym, _ = reference_structure(el)
                for n in neighbours(el):
                    s2, a2 = reference_structure(n)
                    if s2 == sym and a2:
                        new = {k: v for k, v in u.items() if k not in ("a", "c")}
                        out.append({**new, "name": n})
            else:
                from ase.data import atomic_numbers, covalent_radii

                r0 = sum(covalent_radii[atomic_numbers[k]] for k in counts)
                for el in counts:
                    for n in same_class_neighbours(el):
                        if n in counts:
                            continue
                        name = "".join(n if k == el else k for k in counts)
                        r1 = r0 - covalent_radii[atomic_numbers[el]] + covalent_radii[atomic_numbers[n]]
                        new = dict(u, name=name)
                        if u.get("a"):
                            new["a"] = round(float(u["a"]) * r1 / r0, 3)
                        out.append(new)
        elif kind == "slab":
            for n in same_class_neighbours(u["element"]):
                fac = facet_for(n)
                if fac:
                    out.append({**u, "element": n, "facet": fac})
        elif kind == "atom":
            out += [{**u, "element": n} for n in same_class_neighbours(u["element"])]
        return out

    def _symmetry(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        structs = [u for _, u in failing]
        existing = list(table.get("structures", []))
        common = {"transform": settings.transform, "samples": settings.samples, "seed": settings.seed,
                  "tolerance": dict(settings.tolerance)}
        if settings.transform == "periodic_image":
            common["supercell"] = list(settings.supercell)
        preds = []
        scope = []
        if not narrowed:
            grown = self._round_robin([self._grow_structure(u) for u in structs])
            scope = self._filter_units(desk, "symmetry", "structures", grown, existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    f"the failing class under {settings.transform}, on structures never evaluated: the target breaks "
                    "the symmetry on at least one; at least half the committee keeps it",
                    {"name": f"{base}-scope", "check": "symmetry", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: {settings.transform} on neighbouring structures",
                     "structures": scope, **common}))
            obeyed = desk.obeyed_transforms(exclude=settings.transform)
            if obeyed and scope:
                t2 = obeyed[0]
                ctrl = {"name": f"{base}-control", "check": "symmetry", "hard": True, "basis": "exact",
                        "description": f"control of {h.id}: the same new structures under {t2}, which the target obeyed",
                        "structures": scope, **{**common, "transform": t2}}
                ctrl.pop("supercell", None)
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    f"one factor varied (the transformation): under {t2}, which the target obeyed in the evidence, the "
                    "same new structures keep the symmetry, so the defect is specific to "
                    f"{settings.transform}", ctrl))
            else:
                grown = self._round_robin([self._grow_structure(u) for _, u in passing])
                control = self._neighbour_control(
                    desk, h, base, "symmetry", "structures", grown, existing + scope, clean, common,
                    "neighbours of the structures that kept the symmetry: the target keeps it too")
                if control:
                    preds.append(control)
        # robustness: new random transformations and, for rattled structures, a new rattle
        robust = [({**u, "seed": int(u.get("seed", 0)) + 1} if u.get("rattle") else u) for u in structs]
        preds.append(self._pred(
            f"{base}-reseeded", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the random seed of the transformation and of the rattle): a real symmetry breaking "
            "is not a property of one random draw",
            {"name": f"{base}-reseeded", "check": "symmetry", "hard": True, "basis": "exact",
             "description": f"mechanism of {h.id}: the failing structures, new random draws",
             "structures": robust[:MECHANISM_UNITS], **{**common, "seed": settings.seed + 1}},
            extra=self._float64(desk)))
        # one factor: distortion amplitude
        varied = []
        for u in structs[:MECHANISM_UNITS]:
            if u.get("kind") in ("molecule", "cluster", "bulk"):
                varied.append({**u, "rattle": 0.15} if not u.get("rattle") else {k: v for k, v in u.items()
                                                                               if k not in ("rattle", "seed")})
        varied = [v for v in varied if not any(_same_unit(v, x) for x in existing)]
        if varied:
            preds.append(self._pred(
                f"{base}-distortion", "mechanism", "any", "any",
                "one factor varied (distortion): rattled structures unrattled and unrattled ones rattled; whether the "
                "violation needs a distorted or a symmetric configuration points to its mechanism",
                {"name": f"{base}-distortion", "check": "symmetry", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: the failing structures with the distortion switched",
                 "structures": varied, **common}))
        # impact: a periodic crystal of a failing element (condensed phase)
        if settings.transform != "periodic_image":
            elems = []
            for u in structs:
                elems += [x for x in unit_elements("structures", u) if element_class(x) != "non-metal"] or \
                    [x for x in unit_elements("structures", u) if x in ("C", "Si")]
            bulks = []
            for el in dict.fromkeys(elems):
                sym, a = reference_structure(el)
                if sym in ("fcc", "bcc", "diamond") and desk.supported([el]):
                    spec = {"kind": "bulk", "name": el, "cubic": True, "rattle": 0.05}
                    if not any(_same_unit(spec, x) for x in existing):
                        bulks.append(spec)
            if bulks:
                preds.append(self._pred(
                    f"{base}-crystal", "impact", "any", "any",
                    "the application setting: a rattled periodic crystal of the same element (condensed-phase MD or "
                    "relaxation); does the symmetry breaking carry over?",
                    {"name": f"{base}-crystal", "check": "symmetry", "hard": True, "basis": "exact",
                     "description": f"impact of {h.id}: a periodic crystal", "structures": bulks[:2], **common}))
        return preds

    def _dissociation(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        pairs = [u for _, u in failing]
        existing = list(table.get("pairs", []))
        common = {"gap": settings.gap, "tolerance": dict(settings.tolerance)}
        preds = []
        if not narrowed:
            grown = []
            for a, b in pairs:
                grown.append([[x, b] for x in self._grow_structure(a)] + [[a, y] for y in self._grow_structure(b)])
            scope = self._filter_units(desk, "dissociation", "pairs", self._round_robin(grown), existing, claim,
                                       SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "fragment pairs of the failing class never evaluated: energies of far-apart fragments fail to add "
                    "on at least one; at least half the committee adds them",
                    {"name": f"{base}-scope", "check": "dissociation", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: neighbouring fragment pairs", "pairs": scope, **common}))
            grown = [[[x, b] for x in self._grow_structure(a)] for a, b in (u for _, u in passing)]
            control = self._neighbour_control(
                desk, h, base, "dissociation", "pairs", self._round_robin(grown), existing, clean, common,
                "neighbours of the fragment pairs that added up: they add up on the target too")
            if control:
                preds.append(control)
        preds.append(self._pred(
            f"{base}-farther", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the gap, further beyond the cutoff): a leak that does not decay with distance is a "
            "global term, not a long tail",
            {"name": f"{base}-farther", "check": "dissociation", "hard": True, "basis": "exact",
             "description": f"mechanism of {h.id}: the failing pairs, farther apart",
             "pairs": pairs[:MECHANISM_UNITS], "gap": min(40.0, settings.gap + 8.0),
             "tolerance": dict(settings.tolerance)}, extra=self._float64(desk)))
        return preds

    def _stress(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        structs = [u for _, u in failing]
        existing = list(table.get("structures", []))
        preds = []
        if not narrowed:
            grown = self._round_robin([self._grow_structure(u) for u in structs])
            scope = self._filter_units(desk, "stress_strain", "structures", grown, existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass", "neighbouring crystals of the failing class",
                    {"name": f"{base}-scope", "check": "stress_strain", "hard": True, "basis": "exact",
                     "description": f"scope of {h.id}: neighbouring crystals", "structures": scope,
                     "strain_step": settings.strain_step, "tolerance": dict(settings.tolerance)}))
        preds.append(self._pred(
            f"{base}-halfstep", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the finite-difference strain step halved): a real inconsistency survives",
            {"name": f"{base}-halfstep", "check": "stress_strain", "hard": True, "basis": "exact",
             "description": f"mechanism of {h.id}: the failing crystals, half the strain step",
             "structures": structs[:MECHANISM_UNITS], "strain_step": settings.strain_step / 2,
             "tolerance": dict(settings.tolerance)}, extra=self._float64(desk)))
        return preds

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
