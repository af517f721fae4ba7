"""The symmetry laws' detective playbook: neighbouring structures, another transformation, new draws, a crystal."""

from __future__ import annotations

import numpy as np

from ...agent.playbook import MECHANISM_UNITS, SCOPE_UNITS, Playbook, _same_unit
from ...agent.validator import MAX_SAMPLES
from .report import SymmetryReport


class SymmetryPlaybook(Playbook):
    escalation_report = SymmetryReport
    check = "symmetry"
    default_evidence = True
    bounds = {"samples": (1, MAX_SAMPLES)}
    importance = {"rotation": 0.8, "translation": 0.8, "permutation": 0.7,
                  "inversion": 0.6,  # enantiomers, chirality-sensitive properties
                  "periodic_image": 0.7}
    mechanisms = {
        "rotation": "a readout or local frame that is not rotation-equivariant",
        "translation": ("local frames built from neighbour geometry that degenerate on high-symmetry "
                        "configurations (frame degeneracy)"),
        "permutation": "an order-dependent graph construction or readout",
        "inversion": ("parity-odd (pseudotensor) features: the network is equivariant under proper rotations "
                      "only, not under improper ones, so mirror images differ"),
        "periodic_image": "a non-extensive readout or a neighbour list that depends on the cell size",
    }
    reference_outcomes = ("the reference gives the same energy per atom (within tau {energy}) and mapped forces (within "
                          "tau {forces}) for each structure and its image",
                          "the reference itself differs by more than those tolerances between a structure and its image "
                          "(its own numerical noise, e.g. an egg-box effect, exceeds tau)")

    def predictions(self, desk, h, table, settings, failing, passing, claim, clean, base, narrowed):
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
            obeyed = self.obeyed_transforms(desk, exclude=settings.transform)
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
        # mechanism attribution: are the target's forces on the same structures the gradient of its energy, and is
        # their Jacobian symmetric? A symmetry law broken by forces that are not a gradient is a force defect
        mech = [u for u in structs[:MECHANISM_UNITS] if u.get("kind") != "file"]
        if mech:
            preds.append(self._pred(
                f"{base}-energy-force", "mechanism", "any", "any",
                "attribution (energy-force consistency on the same structures): forces that are not minus the "
                "gradient of the energy break the symmetry in the forces alone, a force defect, not the energy's",
                {"name": f"{base}-energy-force", "check": "energy_force", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: energy-force consistency on the failing structures",
                 "structures": mech, "tolerance": {"forces": 0.05}}))
            preds.append(self._pred(
                f"{base}-jacobian", "mechanism", "any", "any",
                "attribution (the force Jacobian on the same structures): an asymmetric Jacobian means no energy has "
                "these forces as its gradient",
                {"name": f"{base}-jacobian", "check": "jacobian_symmetry", "hard": True, "basis": "exact",
                 "description": f"mechanism of {h.id}: force-Jacobian symmetry on the failing structures",
                 "structures": mech, "tolerance": {"asymmetry": 2.5e-3}}))
        # impact: a periodic crystal of a failing element (condensed phase)
        if settings.transform != "periodic_image":
            bulks = self._crystals(desk, structs, existing)
            if bulks:
                preds.append(self._pred(
                    f"{base}-crystal", "impact", "any", "any",
                    "the application setting: a rattled periodic crystal of the same element (condensed-phase MD or "
                    "relaxation); does the symmetry breaking carry over?",
                    {"name": f"{base}-crystal", "check": "symmetry", "hard": True, "basis": "exact",
                     "description": f"impact of {h.id}: a periodic crystal", "structures": bulks[:2], **common}))
        return preds

    def attribute(self, h, prereg, reports) -> str:
        """Name the defect from the attribution probes on the same structures: the forces' (not a gradient), or the
        energy's (the forces are its gradient, so they inherit its broken symmetry)."""
        def target(check):
            r = next((r for r in reports.values() if r.check == check and r.kind == "mechanism"), None)
            return None if r is None else r.target

        ef, jac = target("energy_force"), target("jacobian_symmetry")
        runs = [o for o in (ef, jac) if o is not None and o.status != "skip"]
        if not runs:
            return ""

        def cite(o):
            art = o.artifacts.get("verdict")
            return (f"`{o.model}` {'violates' if o.status in ('fail', 'error') else 'obeys'} it"
                    + (f" [a:{art}]" if art else ""))

        bad = [o for o in runs if o.status in ("fail", "error")]
        names = {id(ef): "energy-force consistency", id(jac): "force-Jacobian symmetry"}
        said = "; ".join(f"{names[id(o)]}: {cite(o)}" for o in runs)
        if bad:
            return ("a force defect: on the structures that break the symmetry, the target's forces are not minus the "
                    "gradient of its energy, so the symmetry breaking is named in the forces, not the energy "
                    f"({said})")
        if len(runs) == 2:
            return ("an energy defect: on the same structures the target's forces are the gradient of its energy and "
                    f"their Jacobian is symmetric, so the forces inherit the energy's broken symmetry ({said})")
        return f"no force defect found by the attribution probe that ran ({said})"

    def obeyed_transforms(self, desk, exclude: str | None = None) -> list[str]:
        """Transforms whose contracts the target passed in the evidence (best known first)."""
        order = ["rotation", "translation", "permutation", "inversion", "periodic_image"]
        out = []
        for e in desk.evidence:
            if e.model != desk.target_name or e.check != self.check or e.status != "pass":
                continue
            t = getattr(desk.suite.get(e.contract), "transform", None)
            if t and t != exclude and t != "periodic_image" and t not in out:
                out.append(t)
        return sorted(out, key=order.index)

    def reference_configs(self, check, settings, probe, series, points):
        from .check import transformed

        rng = np.random.default_rng(settings.seed)
        new, _ = transformed(probe.atoms, settings.transform, rng, settings.supercell)
        return [("reference structure", probe.atoms, None, []), (f"{settings.transform} image", new, None, [])]
