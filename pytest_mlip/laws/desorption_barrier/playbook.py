"""The desorption barrier's detective playbook: the failing adsorbate on neighbouring metals, a finer scan with a
CI-NEB, another site."""

from __future__ import annotations

from ...agent.chemistry import same_class_neighbours
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook
from ...agent.validator import law_hardness


def _known(case: dict) -> bool:
    from ...structures.adsorbates import ADSORBATES, METALS, SITES

    metal = METALS.get(case["metal"])
    if metal is None or case["adsorbate"] not in ADSORBATES:
        return False
    return case.get("site", "ontop") in SITES[case.get("facet") or metal[0]]


class DesorptionBarrierPlaybook(Playbook):
    check = "desorption_barrier"
    unit_fields = ("cases",)
    bounds = {"dz_step": (0.05, 0.5), "dz_max": (6.0, 12.0), "fmax": (0.02, 0.2)}
    importance = {"": 0.7}  # kinetics of desorption, temperature-programmed desorption, coverage in MD
    mechanisms = {"": ("a spurious barrier between the adsorbed state and the desorbed asymptote: the learned "
                       "molecule-surface interaction turns over at mid range (a tail that rises before it decays, "
                       "as in the dimer tail), unseen in training data that hold bound states and far molecules only")}
    conditions = ("dz_step", "dz_max")
    decision = (
        ("scope fails, control passes", "the barrier belongs to the adsorbate class on this class of metals"),
        ("the finer scan with a CI-NEB still fails", "not a grid artefact nor a rigid-path artefact: the minimum-"
                                                     "energy path climbs too"),
        ("the reference stays below the asymptote on the worst height", "confirmed: the barrier is the model's"),
    )
    reference_outcomes = ("the reference energy stays below the desorbed asymptote along the scan (no rise above tau "
                          "{barrier})", "the reference also climbs above the asymptote by more than tau {barrier}: a "
                          "real barrier")

    def probe_id(self, field, unit, table=None) -> str:
        from ...structures.adsorbates import METALS

        facet = unit.get("facet") or METALS[unit["metal"]][0]
        return f"{unit['adsorbate']}/{unit['metal']}({facet[3:]})-{unit.get('site', 'ontop')}"

    def _table(self, base, suffix, h, what, cases, settings, **extra):
        return {"name": f"{base}-{suffix}", "check": self.check, "hard": law_hardness(self.check), "basis": "exact",
                "description": f"{what} of {h.id}", "cases": cases, "size": list(settings.size),
                "dz_max": settings.dz_max, "dz_step": settings.dz_step, "fmax": settings.fmax,
                "neb": settings.neb, "neb_images": settings.neb_images, "tolerance": dict(settings.tolerance),
                **extra}

    @staticmethod
    def _neighbours(cases):
        """Unseen molecule/facet pairs next to each case, taken in turns: the molecule on neighbouring metals of the
        same class, the other diatomic (CO for NO and back) on the same facet, the same molecule on the metal's other
        facet (fcc(100) for fcc(111) and back)."""
        from ...structures.adsorbates import METALS

        lists = []
        for u in cases:
            site = u.get("site", "ontop")
            out = [{"adsorbate": u["adsorbate"], "metal": n, "site": site} for n in same_class_neighbours(u["metal"])]
            other = {"CO": "NO", "NO": "CO"}.get(u["adsorbate"])
            if other:
                out.insert(1, {**u, "adsorbate": other})
            facet = u.get("facet") or METALS.get(u["metal"], ("",))[0]
            flip = {"fcc111": "fcc100", "fcc100": "fcc111"}.get(facet)
            if flip:
                out.insert(2, {**u, "facet": flip, "site": "ontop" if site == "ontop" else "bridge"})
            lists.append([c for c in out if _known(c)])
        return lists

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        cases = [u for _, u in failing]
        existing = list(table.get("cases", []))
        preds = []
        if not narrowed:
            scope = self._filter_units(desk, self.check, "cases", self._round_robin(self._neighbours(cases)),
                                       existing, claim, SCOPE_UNITS // 2)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "the failing adsorbate on neighbouring metals of the same class, never evaluated: the rigid "
                    "scan climbs above the desorbed asymptote on at least one; at least half the committee's does not",
                    self._table(base, "scope", h, "scope: neighbouring metals", scope, settings)))
            ctrl = self._filter_units(desk, self.check, "cases",
                                      self._round_robin(self._neighbours([u for _, u in passing])),
                                      existing + scope, clean, CONTROL_UNITS // 2)
            if ctrl:
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    "neighbours of the cases without a barrier: the target desorbs them without one too",
                    self._table(base, "control", h, "control: neighbours of the cases that passed", ctrl,
                                settings)))
        preds.append(self._pred(
            f"{base}-finer", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the scan step halved, the rise confirmed by a climbing-image NEB on the minimum-"
            "energy path): a barrier that survives is not a grid or rigid-path artefact",
            self._table(base, "finer", h, "mechanism: the failing cases, finer scan and CI-NEB", cases[:2],
                        settings, dz_step=max(0.05, round(settings.dz_step / 2, 4)), neb=True),
            extra=self._float64(desk)))
        other = []
        for u in cases:
            for site in ("hollow", "bridge", "ontop"):
                c = {**u, "site": site}
                if site != u.get("site", "ontop") and _known(c) and c not in existing:
                    other.append(c)
                    break
        if other:
            preds.append(self._pred(
                f"{base}-site", "impact", "any", "any",
                "the application setting: the same adsorbate starting from another site (the one a relaxation or "
                "MD would visit): does the barrier carry over?",
                self._table(base, "site", h, "impact: another adsorption site", other[:2], settings)))
        return preds
