"""The adsorption sign's detective playbook: the +U block of the training data's reference energies, unseen metal x
adsorbate cells inside and outside it, a tighter relaxation, every site relaxed, a lower coverage.

A cell is classed by the Materials Project's selective Hubbard U (``pytest_mlip.structures.adsorbates.u_block``: one of
the U metals with an O- or F-bearing adsorbate), the axis along which the training data of MPtrj-trained models mix two
potential energy surfaces: a sign error on cells of one side is widened to unseen cells of that side (scope), and the
other side is the control, split in two so the class is tested by both of its halves: the failing adsorbates on metals
without U, and the U metals with adsorbates that carry neither O nor F.
"""

from __future__ import annotations

from ...agent.chemistry import same_class_neighbours
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook

#: the classes a cell belongs to (what a scope claim about adsorption cells is about)
INSIDE, OUTSIDE = "u-block", "outside-u-block"
#: adsorbates a +U-block scope widens to (O- or F-bearing) and a control on U metals uses (neither)
U_ADSORBATES = ("O", "F", "CO", "NO", "OH")
PLAIN_ADSORBATES = ("S", "N", "H")


def _metals():
    from ...structures.adsorbates import METALS

    return METALS


def _side(cell) -> str:
    from ...structures.adsorbates import u_block

    return INSIDE if u_block(cell["metal"], cell["adsorbate"]) else OUTSIDE


def _nearest(metal: str, pool) -> list[str]:
    """``pool`` ordered by periodic-table proximity to ``metal`` (neighbours first, then by atomic number)."""
    from ase.data import atomic_numbers

    near = [m for m in same_class_neighbours(metal) if m in pool]
    rest = sorted((m for m in pool if m not in near), key=lambda m: abs(atomic_numbers[m] - atomic_numbers[metal]))
    return near + rest


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
    reference_outcomes = ("the reference binds the adsorbate on the worst cell: E_rel below zero by more than tau "
                          "{E_rel}",
                          "the reference does not bind it either (E_rel above -tau {E_rel}): a weakly bound or unbound "
                          "pair, the contract's expectation is at fault")

    def units(self, table):
        return [("grid", {"metal": m, "adsorbate": a}) for m in table.get("metals", []) or []
                for a in table.get("adsorbates", []) or []]

    def probe_id(self, field, unit, table=None) -> str:
        return f"{unit['adsorbate']}/{unit['metal']}({_metals()[unit['metal']][0][3:]})"

    def signature(self, field_, unit) -> tuple:
        """A cell's class: inside or outside the +U block (the training data's two reference surfaces)."""
        return (_side(unit),)

    def reference_configs(self, check, settings, probe, series, points):
        """E_rel needs three energies: the slab with the adsorbate (relaxed from this start), the clean slab and the
        free adsorbate."""
        from ...structures.adsorbates import build_slab, isolated

        slab = build_slab(probe.params["metal"], size=settings.size, vacuum=settings.vacuum,
                          free_layers=settings.free_layers)
        return [("slab + adsorbate (relaxation start)", probe.atoms, None, []), ("clean slab", slab, None, []),
                ("isolated adsorbate", isolated(probe.params["adsorbate"]), None, [])]

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

    def _grid(self, desk, seen_metals, metal_pool, adsorbates, side, metals_max, ads_max, seed_metals):
        """(metals, adsorbates) of an unseen grid whose every cell lies on ``side``: metals never evaluated, nearest
        the failing ones first, usable by every model; adsorbates kept while each of their cells is on ``side``."""
        ads = [a for a in dict.fromkeys(adsorbates)][:ads_max]
        order = self._round_robin([_nearest(m, metal_pool) for m in seed_metals]) or list(metal_pool)
        metals = []
        for m in dict.fromkeys(order):
            if m in seen_metals or m in metals:
                continue
            cells = [{"metal": m, "adsorbate": a} for a in ads]
            if any(_side(c) != side for c in cells):
                continue
            if not desk.supported({m} | {x for a in ads for x in _ads_elements(a)}):
                continue
            metals.append(m)
            if len(metals) >= metals_max:
                break
        return metals, ads

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        from ...structures.adsorbates import U_METALS

        cells = [u for f, u in failing if self.signature(f, u) in claim] or [u for _, u in failing]
        seen = set(table.get("metals", []) or [])
        f_ads = list(dict.fromkeys(c["adsorbate"] for c in cells))
        f_metals = list(dict.fromkeys(c["metal"] for c in cells))
        side = INSIDE if (INSIDE,) in claim else OUTSIDE
        preds = []
        if not narrowed:
            if side == INSIDE:
                # scope: unseen U metals x the failing O/F-bearing adsorbates and one more of them
                more = [a for a in U_ADSORBATES if a not in f_ads]
                s_metals, s_ads = self._grid(desk, seen, U_METALS, f_ads + more[:1], INSIDE, 3, 2, f_metals)
                if not s_metals:  # no unseen U metal every model knows: the failing U metals, unseen O/F adsorbates
                    s_ads = [a for a in more if a not in (table.get("adsorbates") or [])
                             and desk.supported(set(f_metals) | set(_ads_elements(a)))][:2]
                    s_metals = [m for m in f_metals if m in U_METALS] if s_ads else []
                scope_text = ("unseen cells of the +U block (U metals never evaluated x O/F-bearing adsorbates): "
                              "the relaxed adsorbate sits above the free one, or unbinds, on at least one; at least "
                              "half the committee binds them")
            else:
                pool = [m for m in _metals() if m not in U_METALS]
                s_metals, s_ads = self._grid(desk, seen, pool, f_ads, OUTSIDE, 3, 2, f_metals)
                scope_text = ("the failing adsorbates on unseen metals outside the +U block: the relaxed adsorbate "
                              "sits above the free one on at least one; at least half the committee binds them")
            if s_metals and s_ads:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass", scope_text,
                    self._table(base, "scope", h, f"scope ({side}): unseen cells", [], settings, metals=s_metals,
                                adsorbates=s_ads)))
            taken = seen | set(s_metals)
            if side == INSIDE:
                # control 1: the failing adsorbates on metals without U (the other half of the class boundary)
                pool = [m for m in _metals() if m not in U_METALS]
                c_metals, c_ads = self._grid(desk, taken, pool, f_ads, OUTSIDE, 2, 2, f_metals)
                if c_metals:
                    preds.append(self._pred(
                        f"{base}-control", "control", "pass", "any",
                        "the failing adsorbates on unseen metals outside the U set: the target binds them (the sign "
                        "error follows the +U block, not the adsorbate)",
                        self._table(base, "control", h, "control: the failing adsorbates on metals without U", [],
                                    settings, metals=c_metals, adsorbates=c_ads)))
                # control 2: the U metals with adsorbates carrying neither O nor F
                u_metals = [m for m in (s_metals or f_metals) if m in U_METALS][:2]
                evaluated = set(table.get("adsorbates") or []) if set(u_metals) & seen else set()
                plain = [a for a in PLAIN_ADSORBATES if a not in evaluated
                         and desk.supported(set(u_metals) | set(_ads_elements(a)))][:2]
                if u_metals and plain:
                    preds.append(self._pred(
                        f"{base}-control-plain", "control", "pass", "any",
                        "the U metals with adsorbates carrying neither O nor F: the target binds them (the sign error "
                        "follows the +U block, not the metal)",
                        self._table(base, "control-plain", h, "control: U metals with adsorbates without O or F", [],
                                    settings, metals=u_metals, adsorbates=plain)))
            else:
                ctrl = self._filter_units(desk, self.check, "grid", self._neighbour_cells([u for _, u in passing]),
                                          [u for _, u in self.units(table)], clean, CONTROL_UNITS)
                ctrl = [c for c in ctrl if c["metal"] not in taken]
                if ctrl:
                    metals = sorted({c["metal"] for c in ctrl})
                    ads = sorted({c["adsorbate"] for c in ctrl})
                    if all(_side({"metal": m, "adsorbate": a}) == INSIDE for m in metals for a in ads):
                        preds.append(self._pred(
                            f"{base}-control", "control", "pass", "any",
                            "unseen cells of the class that bound: the target binds them too",
                            self._table(base, "control", h, "control: cells of the class that bound", [], settings,
                                        metals=metals, adsorbates=ads)))
        worst = cells[:2]
        if narrowed:
            # the failing cells only, in a new environment: a thicker slab with two relaxed layers, every site
            layers = max(4, int(settings.size[2]) + 1)
            preds.append(self._pred(
                f"{base}-thicker", "scope", "fail", "pass",
                "the failing cells in a new environment (one more layer, two of them relaxed, every site): the relaxed "
                "adsorbate still sits above the free one or unbinds; at least half the committee binds it; sibling "
                "checkpoints of the target run it too",
                self._table(base, "thicker", h, "scope (narrowed): the failing cells on a thicker slab", worst,
                            settings, size=[int(settings.size[0]), int(settings.size[1]), layers],
                            free_layers=min(3, max(2, settings.free_layers)), sites=["ontop", "bridge", "hollow"],
                            relax_sites=3), extra=self._float64(desk)))
            return preds
        preds.append(self._pred(
            f"{base}-tight", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (the relaxation: fmax halved, twice the steps): a sign error that survives is the "
            "relaxed minimum's, not an unconverged relaxation's; sibling checkpoints of the target run it too (a "
            "defect they share points to the training data they share)",
            self._table(base, "tight", h, "mechanism: the failing cells, relaxed tighter", worst, settings,
                        fmax=max(0.02, round(settings.fmax / 2, 4)), steps=min(500, 2 * settings.steps)),
            extra=self._float64(desk)))
        if (settings.relax_sites or len(settings.sites)) < len(settings.sites) or len(settings.sites) < 3:
            preds.append(self._pred(
                f"{base}-sites", "mechanism", "any", "any",
                "one factor varied (the site: every site of the facet relaxed): does the sign error depend on where "
                "the adsorbate starts?",
                self._table(base, "sites", h, "mechanism: the failing cells, every site relaxed", worst, settings,
                            sites=["ontop", "bridge", "hollow"], relax_sites=3)))
        preds.append(self._pred(
            f"{base}-coverage", "impact", "any", "any",
            "the application setting: a relaxation at lower coverage (a surface cell of nine sites, a second free "
            "layer), the dilute limit screening studies use; does the relaxation still end above the free adsorbate?",
            self._table(base, "coverage", h, "impact: the failing cells at lower coverage", cells[:1], settings,
                        size=[3, 3, 3], free_layers=min(3, settings.free_layers + 1))))
        return preds


def _ads_elements(adsorbate: str) -> tuple[str, ...]:
    from ...structures.adsorbates import ADSORBATES

    return ADSORBATES.get(adsorbate, (adsorbate,))
