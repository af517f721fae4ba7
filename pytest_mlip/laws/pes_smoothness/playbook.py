"""PES smoothness's detective playbook: neighbouring pairs and surfaces, a finer grid, the adatom's path."""

from __future__ import annotations

from ...agent.chemistry import element_class, facet_for
from ...agent.playbook import CONTROL_UNITS, SCOPE_UNITS, Playbook


class PesSmoothnessPlaybook(Playbook):
    check = "pes_smoothness"
    unit_fields = ("pairs", "surfaces")
    bounds = {"step": (0.005, 0.05), "path_step": (0.02, 0.2)}
    importance = {"": 0.8}  # MD integrates through every cusp and cutoff step; force flips trap relaxations
    mechanisms = {"": ("a discontinuous or non-smooth cutoff (an envelope that is not C1 at r_c, a hard neighbour-list "
                       "edge) or a learned oscillation of the pair energy between training distances")}
    conditions = ("step", "path_step")
    decision = (
        ("scope fails, control passes", "the roughness belongs to the element class that failed"),
        ("the finer grid still fails", "not an undersampled curve: the cusp or step is the model's"),
        ("the surface path fails too", "the defect reaches the adsorbate's path over a surface (MD, diffusion)"),
    )

    def probe_id(self, field, unit, table=None) -> str:
        if field == "pairs":
            return super().probe_id(field, unit, table)
        facet = unit.get("facet", "fcc111")
        return f"{unit['adatom']}/{unit['element']}({facet[3:]})-path@{float(unit.get('height', 2.0)):g}A"

    def _table(self, base, suffix, h, what, settings, **units):
        return {"name": f"{base}-{suffix}", "check": self.check, "hard": True, "basis": "exact",
                "description": f"{what} of {h.id}", "step": settings.step, "path_step": settings.path_step,
                "beyond_cutoff": settings.beyond_cutoff, "tolerance": dict(settings.tolerance), **units}

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
        pairs = [u for f, u in failing if f == "pairs"]
        surfs = [u for f, u in failing if f == "surfaces"]
        existing = list(table.get("pairs", []))
        preds = []
        if not narrowed and pairs:
            scope = self._filter_units(desk, self.check, "pairs", self._grow_pairs(pairs), existing, claim, SCOPE_UNITS)
            if scope:
                preds.append(self._pred(
                    f"{base}-scope", "scope", "fail", "pass",
                    "neighbouring element pairs of the failing class, never evaluated: the target's curve jumps, "
                    "spikes or flips on at least one; at least half the committee's is smooth",
                    self._table(base, "scope", h, "scope: neighbouring pairs", settings, pairs=scope)))
            ctrl = self._filter_units(desk, self.check, "pairs", self._grow_pairs([u for f, u in passing if f == "pairs"]),
                                      existing + scope, clean, CONTROL_UNITS)
            if ctrl:
                preds.append(self._pred(
                    f"{base}-control", "control", "pass", "any",
                    "neighbours of the pairs whose curves were smooth: the target's are smooth too",
                    self._table(base, "control", h, "control: neighbours of the smooth pairs", settings, pairs=ctrl)))
        preds.append(self._pred(
            f"{base}-finer", "mechanism" if not narrowed else "scope", "fail", "any",
            "one factor varied (both grids halved): a real cusp or step survives a finer grid, an undersampled curve "
            "does not",
            self._table(base, "finer", h, "mechanism: the failing curves on a finer grid", settings,
                        pairs=pairs[:2], surfaces=surfs[:1], step=max(0.005, round(settings.step / 2, 4)),
                        path_step=max(0.02, round(settings.path_step / 2, 4))), extra=self._float64(desk)))
        paths = []
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                fac = facet_for(x)
                if fac in ("fcc111", "hcp0001", "bcc110") and element_class(x) != "non-metal" and \
                        desk.supported([x, y]):
                    s = {"element": x, "facet": fac, "adatom": y}
                    if s not in table.get("surfaces", []) and s not in paths:
                        paths.append(s)
                    break
        if paths:
            preds.append(self._pred(
                f"{base}-path", "impact", "any", "any",
                "the application setting: the same pair met by an adatom moving across the close-packed surface of "
                "its partner (diffusion, MD): does the roughness carry over?",
                self._table(base, "path", h, "impact: an adatom's path across a surface", settings,
                            surfaces=paths[:2])))
        return preds
