"""The adsorption sign's detective playbook: the failing adsorbates on neighbouring metals, a tighter relaxation,
every site relaxed, a lower coverage."""

from __future__ import annotations

from ...agent.chemistry import same_class_neighbours
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook


def _metals():
    from ...structures.adsorbates import METALS

    return METALS


class AdsorptionSignPlaybook(Playbook):
    check = "adsorption_sign"
    #: a unit is one (metal, adsorbate) cell of the contract's grid
    unit_fields = ("metals", "adsorbates")
    bounds = {"fmax": (0.02, 0.2), "steps": (50, 500), "free_layers": (0, 3)}
    importance = {"": 0.8}  # catalysis screening ranks surfaces by these signs
    mechanisms = {"": ("the binding of an electronegative adsorbate to a metal is learned from data whose reference "
                       "energies mix functionals (a +U correction on the metal's oxides, none on its surfaces), or "
                       "the adsorbed state lies outside the training distribution, so the relaxed energy sits above "
                       "the free adsorbate")}
    conditions = ("fmax", "steps", "free_layers")
    decision = (
        ("scope fails, control passes", "the sign error belongs to the class of (metal, adsorbate) cells that failed"),
        ("the tighter relaxation still fails", "not an unconverged relaxation: the relaxed minimum lies above the "
                                               "free adsorbate"),
        ("the reference gives E_rel < 0 on the worst cell", "confirmed: the model unbinds a bound adsorbate"),
    )

    def units(self, table):
        return [("grid", {"metal": m, "adsorbate": a}) for m in table.get("metals", []) or []
                for a in table.get("adsorbates", []) or []]

    def probe_id(self, field, unit, table=None) -> str:
        return f"{unit['adsorbate']}/{unit['metal']}({_metals()[unit['metal']][0][3:]})"

    def _table(self, base, suffix, h, what, cells, settings, **extra):
        metals = sorted({c["metal"] for c in cells})
        adsorbates = sorted({c["adsorbate"] for c in cells})
        return {"name": f"{base}-{suffix}", "check": self.check, "hard": True, "basis": "exact",
                "description": f"{what} of {h.id}", "metals": metals, "adsorbates": adsorbates,
                "sites": list(settings.sites), "size": list(settings.size), "free_layers": settings.free_layers,
                "fmax": settings.fmax, "steps": settings.steps, "tolerance": dict(settings.tolerance),
                **({"relax_sites": settings.relax_sites} if settings.relax_sites else {}), **extra}

    def _neighbour_cells(self, cells):
        metals = _metals()
        lists = [[{"metal": n, "adsorbate": c["adsorbate"]} for n in same_class_neighbours(c["metal"]) if n in metals]
                 for c in cells]
        return self._round_robin(lists)

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        cells = [u for _, u in failing]
        existing = [u for _, u in self.units(table)]
        preds = []
        if not narrowed:
            scope = self._filter_units(desk, self.check, "grid", self._neighbour_cells(cells), existing, claim,
                                       SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "the failing adsorbates on neighbouring metals of the same class, never evaluated: the relaxed "
                    "adsorbate sits above the free one on at least one; at least half the committee binds it",
                    self._table(base, "scope", h, "scope: the failing adsorbates on neighbouring metals", scope,
                                settings)))
            ctrl = self._filter_units(desk, self.check, "grid", self._neighbour_cells([u for _, u in passing]),
                                      existing + scope, clean, CONTROL_UNITS)
            if ctrl:
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    "neighbours of the cells that bound, outside the failing class: the target binds them too",
                    self._table(base, "control", h, "control: neighbours of the cells that bound", ctrl, settings)))
        preds.append(self._pred(
            f"{base}-tight", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the relaxation: fmax halved, every site relaxed, twice the steps): a sign error "
            "that survives is the relaxed minimum's, not an unconverged relaxation's",
            self._table(base, "tight", h, "mechanism: the failing cells, relaxed tighter", cells[:2], settings,
                        fmax=max(0.02, round(settings.fmax / 2, 4)), steps=min(500, 2 * settings.steps),
                        relax_sites=len(settings.sites)), extra=self._float64(desk)))
        preds.append(self._pred(
            f"{base}-coverage", "impact", "any", "any",
            "the application setting: a lower coverage (a 3x3 surface cell) and a relaxed second layer; does the "
            "sign error carry over to the dilute limit screening studies use?",
            self._table(base, "coverage", h, "impact: the failing cells at lower coverage", cells[:1], settings,
                        size=[3, 3, 3], free_layers=min(3, settings.free_layers + 1))))
        return preds
