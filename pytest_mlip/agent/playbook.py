"""The detective's playbook base: how a law's evidence widens into hypotheses and pre-registered protocols.

A law opts in to the detective with ``playbook.py`` in its folder
(``pytest_mlip/laws/<law>/``): a :class:`Playbook` subclass that says

- which list fields of its contract table hold the units a scope grid varies (``unit_fields``) and the probe id
  its check gives each unit (``probe_id``), so per-probe evidence maps back onto units;
- what a scope claim about a unit is about (``signature``: element classes, and shape for structures);
- how much the law matters in applications and the mechanism a violation points to (``importance``,
  ``mechanisms``; keyed by the law's variant, e.g. the symmetry's transformation);
- the numeric parameters an agent may set in its protocols, with their admissible ranges (``bounds``: the
  validator opens the law to agents from these, and refuses the rest);
- its pre-registered predictions (``predictions``): scope (neighbouring units of the failing class, predicted to
  fail), control (neighbours of the units that obeyed, predicted to pass), mechanism (one factor varied) and
  impact (the application-like setting), each a protocol table (data) the detective validates before it runs;
- its decision-table text (``decision``): what each outcome of the pre-registered predictions means for the law;
- its escalation-report text (``escalation_report``, optional): a :class:`~.lawreport.LawReport` subclass (in
  ``laws/<law>/report.py``) with the law's impact lines, domain boundary, figure and phrases; a law that names none
  gets the generic :class:`~.lawreport.LawReport` (raw violations of the worst probes, a bar figure).

The planner names no law: it asks :func:`playbook_for` and calls these.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .chemistry import element_class, facet_for, neighbours, reference_structure, same_class_neighbours, signature, \
    similar_molecules
from .protocols import spec_label, unit_elements, unit_probe_id, units_of
from .validator import law_hardness
from .schema import Hypothesis, Prediction

SCOPE_UNITS = 6
CONTROL_UNITS = 4
MECHANISM_UNITS = 4
SIBLINGS = 2


def _units_by_probe(table: dict) -> dict[str, tuple[str, Any]]:
    out = {}
    for f, u in units_of(table):
        try:
            out[unit_probe_id(table["check"], f, u, table)] = (f, u)
        except Exception:
            continue
    return out


def _element_pair(unit) -> bool:
    """A dimer pair written as two element symbols (``["Cu", "O"]``)."""
    return isinstance(unit, (list, tuple)) and len(unit) == 2 and all(isinstance(x, str) for x in unit)


def _same_unit(a, b) -> bool:
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], str):
        return sorted(a) == sorted(b) if isinstance(b, (list, tuple)) else False
    return a == b


class Playbook:
    """One law's playbook (see the module docstring). Subclasses set the class attributes and ``predictions``."""

    check: ClassVar[str] = ""
    unit_fields: ClassVar[tuple[str, ...]] = ("structures",)
    bounds: ClassVar[dict[str, tuple[float, float]]] = {}
    #: variant ('' for the law itself) -> importance in applications (a judgement, stated once)
    importance: ClassVar[dict[str, float]] = {}
    #: variant -> the mechanism a violation points to
    mechanisms: ClassVar[dict[str, str]] = {}
    #: settings named in a hypothesis' conditions (the verification setting it was found in)
    conditions: ClassVar[tuple[str, ...]] = ()
    #: what each outcome means: (outcome, meaning) rows of the escalation report's decision table
    decision: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: the DFT decision table's two reference outcomes: (the reference obeys the law: the target's violation is a
    #: model failure, the reference violates it too: the protocol is at fault); {key} is the tolerance of that key
    reference_outcomes: ClassVar[tuple[str, str]] = (
        "the reference obeys the law on these configurations, within the protocol's tolerances",
        "the reference itself violates the law on these configurations by more than the tolerances")
    #: run this law's built-in contracts when the detective gathers its own evidence (the four laws the detective
    #: started with; the others keep a default run as cheap as it was: they are widened from evidence given, a
    #: report or a store, or when named with --contracts)
    default_evidence: ClassVar[bool] = False
    #: the law's escalation-report text (None: the generic :class:`~.lawreport.LawReport`)
    escalation_report: ClassVar[type | None] = None
    #: how a disagreement-basis scope prediction tells the target from the committee: "decades" (the target's
    #: 1 + v/tau a decade above the committee median) or "band" (above one and above the committee's largest by more
    #: than the committee's spread: for a bounded violation, such as a fraction of a well depth)
    disagreement: ClassVar[str] = "decades"

    # --- what a law states ---------------------------------------------------------------------------------------
    @staticmethod
    def variant(settings) -> str:
        return getattr(settings, "transform", None) or ""

    def law_key(self, settings) -> str:
        """The law's name with its variant (``symmetry:rotation``), as hypotheses and memory record it."""
        v = self.variant(settings)
        return f"{self.check}:{v}" if v else self.check

    def importance_of(self, settings) -> float:
        return self.importance.get(self.variant(settings), 0.5)

    def mechanism_of(self, settings) -> str:
        return self.mechanisms.get(self.variant(settings), "unknown")

    def units(self, table: dict) -> list[tuple[str, Any]]:
        """(field, unit) of every unit in a contract table of this law; by default the items of its unit fields."""
        return [(f, u) for f in self.unit_fields for u in table.get(f, []) or []]

    def probe_id(self, field: str, unit, table: dict | None = None) -> str:
        """The probe id the check gives a unit (mirrors its ``probes``; ``table``: the contract table it is in)."""
        if _element_pair(unit):
            return f"{unit[0]}-{unit[1]}"
        return spec_label(unit)

    def signature(self, field_: str, unit) -> tuple:
        """What a scope claim about a unit is about: its element classes (and, for structures, its shape; for an
        element pair, both partners' classes)."""
        if _element_pair(unit):
            return tuple(sorted(element_class(e) for e in unit))
        sig = signature(unit_elements(field_, unit))
        if isinstance(unit, dict) and "kind" in unit:
            shape = unit["kind"] + ("~rattled" if unit.get("rattle") else "")
            return (shape,) + sig
        if field_ == "surfaces":
            return ("surface",) + sig
        return sig

    def reference_configs(self, check, settings, probe, series: dict | None, points: int) -> list[tuple]:
        """(role, atoms, distance or None, parent artifact ids) a DFT reference must compute to settle a finding on
        ``probe`` (the escalation report's verification card); by default the probe's own structure."""
        return [("probe structure", probe.atoms, None, [])]

    def predictions(self, desk, h: Hypothesis, table, settings, failing, passing, claim, clean, base,
                    narrowed) -> list[Prediction]:  # pragma: no cover - interface
        raise NotImplementedError

    def attribute(self, h: Hypothesis, prereg, reports: dict) -> str:
        """After the probes: which mechanism the probes point to, in words, citing the verdicts they rest on
        (``[a:ID]``; no bare numbers). '' when the law's probes name none (the default)."""
        return ""

    # --- shared helpers ------------------------------------------------------------------------------------------
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
            if sigs is not None and self.signature(field_, u) not in sigs:
                continue
            out.append(u)
            if len(out) >= limit:
                break
        return out

    def _grow_pairs(self, pairs) -> list:
        """Neighbouring element pairs of each pair, taken in turns: homonuclear neighbours of a homonuclear pair,
        then one partner replaced by a neighbour of its class."""
        lists = []
        for a, b in pairs:
            opts = [[n, n] for n in same_class_neighbours(a)] if a == b else []
            opts += [[n, b] for n in same_class_neighbours(a)] + [[a, n] for n in same_class_neighbours(b)]
            lists.append(opts)
        return self._round_robin(lists)

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
                          {"name": f"{base}-control", "check": check, "hard": law_hardness(check), "basis": "exact",
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


    def _crystals(self, desk, structs: list, existing: list) -> list[dict]:
        """Rattled cubic crystals of the failing structures' metals (or C, Si), not yet evaluated: the condensed-
        phase setting an impact protocol asks about."""
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
        return bulks

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
                            new["a"] = round(float(u["a"] * r1 / r0), 3)
                        out.append(new)
        elif kind == "slab":
            for n in same_class_neighbours(u["element"]):
                fac = facet_for(n)
                if fac:
                    out.append({**u, "element": n, "facet": fac})
        elif kind == "atom":
            out += [{**u, "element": n} for n in same_class_neighbours(u["element"])]
        return out



class StructuresPlaybook(Playbook):
    """A law whose units are structure specs (``structures``): scope on neighbouring structures of the failing
    class, a control on neighbours of those that obeyed, one factor varied (:meth:`vary`), and a rattled crystal
    of a failing element as the application setting. A law states only what it varies and why."""

    #: the application setting's question, for this law
    impact = "a rattled periodic crystal of the same element (condensed-phase MD or relaxation): does it carry over?"

    def vary(self, settings) -> tuple[dict, str]:  # pragma: no cover - interface
        """(the settings the mechanism protocol changes, why that one factor tells mechanisms apart)."""
        raise NotImplementedError

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        structs = [u for _, u in failing]
        existing = list(table.get("structures", []))
        common = {k: v for k, v in table.items()
                  if k not in ("name", "check", "hard", "basis", "description", "structures")}
        head = {"check": self.check, "hard": law_hardness(self.check), "basis": settings.basis}
        preds = []
        scope = []
        if not narrowed:
            grown = self._round_robin([self._grow_structure(u) for u in structs])
            scope = self._filter_units(desk, self.check, "structures", grown, existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "structures of the failing class never evaluated: the target violates the law on at least one; "
                    "at least half the committee obeys it",
                    {"name": f"{base}-scope", **head, "description": f"scope of {h.id}: neighbouring structures",
                     "structures": scope, **common}))
            grown = self._round_robin([self._grow_structure(u) for _, u in passing])
            control = self._neighbour_control(desk, h, base, self.check, "structures", grown, existing + scope,
                                              clean, common, "neighbours of the structures that obeyed the law: "
                                                             "the target obeys it on them too")
            if control:
                control.protocol.update(head)
                preds.append(control)
        changes, why = self.vary(settings)
        preds.append(self._pred(
            f"{base}-varied", "mechanism" if not narrowed else "scope", "fail", "any", f"one factor varied ({why})",
            {"name": f"{base}-varied", **head, "description": f"mechanism of {h.id}: the failing structures, one "
                                                              "factor varied",
             "structures": structs[:MECHANISM_UNITS], **{**common, **changes}}, extra=self._float64(desk)))
        bulks = self._crystals(desk, structs, existing + scope)
        if bulks:
            preds.append(self._pred(
                f"{base}-crystal", "impact", "any", "any", f"the application setting: {self.impact}",
                {"name": f"{base}-crystal", **head, "description": f"impact of {h.id}: a periodic crystal",
                 "structures": bulks[:2], **common}))
        return preds


def playbook_for(check: str) -> Playbook | None:
    """The playbook of the law whose check is ``check``; None when the law opts out of the detective."""
    from ..laws import law_for

    law = law_for(check)
    cls = law.playbook_class() if law is not None else None
    return cls() if cls is not None else None


__all__ = ["Playbook", "playbook_for", "SCOPE_UNITS", "CONTROL_UNITS", "MECHANISM_UNITS"]
