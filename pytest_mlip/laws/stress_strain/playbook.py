"""Stress-strain consistency's detective playbook: neighbouring crystals, and half the strain step."""

from __future__ import annotations

from ...agent.playbook import MECHANISM_UNITS, SCOPE_UNITS, Playbook
from .report import StressReport


class StressStrainPlaybook(Playbook):
    escalation_report = StressReport
    check = "stress_strain"
    default_evidence = True
    bounds = {"strain_step": (1e-4, 1e-2)}
    importance = {"": 0.7}  # cell relaxations, NPT
    mechanisms = {"": "the stress is not the strain derivative of the energy (a direct stress head or missing cell terms)"}
    conditions = ("strain_step",)
    reference_outcomes = ("the reference stress equals the strain derivative of the reference energy within tau {stress}",
                          "the reference stress and energy derivative differ by more than tau {stress}")

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
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

    def reference_configs(self, check, settings, probe, series, points):
        return [("strained cell (stress reference)", probe.atoms, None, [])]
