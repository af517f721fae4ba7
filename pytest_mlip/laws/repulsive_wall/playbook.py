"""The repulsive wall's detective playbook: neighbouring element pairs, a finer grid, the surface it lands on."""

from __future__ import annotations

import numpy as np

from ...agent.chemistry import element_class, facet_for, same_class_neighbours
from ...agent.playbook import MECHANISM_UNITS, SCOPE_UNITS, Playbook
from .report import WallReport

WALL_MECHANISM_UNITS = 2  # a refined wall scan is long: two pairs settle a discretisation artefact


class RepulsiveWallPlaybook(Playbook):
    escalation_report = WallReport
    check = "repulsive_wall"
    default_evidence = True
    unit_fields = ("pairs", "surfaces")
    bounds = {"r_inner": (0.1, 1.0), "step": (0.01, 0.2)}
    importance = {"": 0.9}  # MD and relaxations collapse atoms together
    mechanisms = {"": ("no training data at compressed distances: the learned pair energy turns over below the "
                       "shortest sampled bond and falls without bound")}
    conditions = ("r_inner",)
    reference_outcomes = ("the reference energy rises monotonically going inward over the scan points (largest inward "
                          "drop at most tau {drop})",
                          "the reference energy also falls going inward by more than tau {drop}")

    def probe_id(self, field, unit, table=None) -> str:
        if field == "pairs":
            return super().probe_id(field, unit, table)
        facet = unit.get("facet", "fcc111")
        return f"{unit['adatom']}/{unit['element']}({facet[3:]})-top"

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        pairs = [u for f, u in failing if f == "pairs"]
        surfs = [u for f, u in failing if f == "surfaces"]
        existing = list(table.get("pairs", []))
        common = {"r_inner": settings.r_inner, "step": settings.step, "tolerance": dict(settings.tolerance)}
        grow = self._grow_pairs

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
            return self._narrowed(desk, h, settings, pairs, base)
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

    def _narrowed(self, desk, h, settings, pairs, base):
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

    def reference_configs(self, check, settings, probe, series, points):
        if not series:
            return []
        r = np.asarray(series["r"])
        lo, hi = float(r.min()), float(series.get("r_eq", r.max()))
        grid = sorted(set(np.round(np.linspace(lo, hi, points), 3)))
        return [("scan point", check._place(probe, float(d)), float(d), list(series.get("ids", []))) for d in grid]
