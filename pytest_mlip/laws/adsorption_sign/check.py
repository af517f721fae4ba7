"""Adsorption-energy sign: a chemisorbing atom or radical binds to a metal surface (E_rel < 0)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..base import Check, ContractSettings, Measurement, Probe


class AdsorptionSignSettings(ContractSettings):
    check: Literal["adsorption_sign"] = "adsorption_sign"
    hard: bool = True
    basis: Literal["exact", "disagreement"] = "exact"
    metals: list[str] = Field(default_factory=list)
    adsorbates: list[str] = Field(default_factory=list)
    sites: list[Literal["ontop", "bridge", "hollow"]] = Field(default_factory=lambda: ["ontop", "bridge", "hollow"])
    relax_sites: int | None = Field(None, ge=1, description="relax only the N sites lowest in a single-point "
                                                            "screen (None: relax every site)")
    size: tuple[int, int, int] = (2, 2, 3)
    free_layers: int = Field(1, ge=0, description="top layers relaxed; the ones below stay at bulk positions")
    vacuum: float = Field(10.0, ge=6.0)
    fmax: float = Field(0.10, gt=0.0, description="BFGS criterion (eV/A)")
    steps: int = Field(200, ge=1, le=5000, description="BFGS step budget per relaxation")
    gamma: float = Field(1.2, ge=1.0, le=2.0, description="connectivity factor d <= gamma (R_i + R_j)")
    weak: list[str] = Field(default_factory=list, description="'ADS/METAL' pairs bound weakly in DFT (|E| ~ 0.1 eV): "
                                                              "E_rel reported, not judged")

    default_tolerance = {"E_rel": 0.05, "unbound": 0.5, "not_converged": 0.5}

    @field_validator("metals")
    @classmethod
    def _metals(cls, v):
        from ...structures.adsorbates import METALS

        bad = [m for m in v if m not in METALS]
        if bad:
            raise ValueError(f"no slab data for {bad}; known metals: {', '.join(METALS)}")
        return v

    @field_validator("adsorbates")
    @classmethod
    def _adsorbates(cls, v):
        from ...structures.adsorbates import ADSORBATES

        bad = [a for a in v if a not in ADSORBATES]
        if bad:
            raise ValueError(f"unknown adsorbate(s) {bad}; known: {', '.join(ADSORBATES)}")
        return v

    @model_validator(mode="after")
    def _weak(self):
        for pair in self.weak:
            ads, _, metal = pair.partition("/")
            if not metal:
                raise ValueError(f"weak pair {pair!r} must read 'ADSORBATE/METAL', e.g. 'CO/Au'")
        return self


class AdsorptionSign(Check):
    name = "adsorption_sign"
    title = "Adsorption energy sign of chemisorbed species"
    statement = ("A chemisorbing adsorbate (an O, F, H, N or S atom, OH, CO, NO) relaxed on a metal surface lies "
                 "below the clean slab plus the isolated adsorbate: E_rel = E(slab+ads) - E(slab) - E(ads) < 0.")
    rationale = ("These species form strong bonds to transition-metal surfaces (free radicals by several eV). "
                 "E_rel > 0 means the model's surface repels them: coverages, catalysis screens and MD go wrong. "
                 "The seed found it confined to the Materials Project +U block (U metal with an O/F adsorbate), "
                 "where mixed PBE / PBE+U training energies put Ni-O environments on another energy reference.")
    procedure = ("Per metal x adsorbate: relax the clean 2x2x3 slab (bottom layers fixed) and the isolated "
                 "adsorbate; place the adsorbate on the ontop, bridge and hollow sites (ase.build.add_adsorbate, "
                 "covalent bond length), screen them by single points, relax every site (or the relax_sites lowest "
                 "of the screen; BFGS, fmax 0.10 eV/A, 200 steps) and keep the lowest. Connectivity "
                 "d <= gamma (R_i+R_j) flags dissociation, desorption and site slip: a dissociated or desorbed "
                 "result is reported and never used as the minimum. Every model "
                 "call goes through the evaluator; clean slabs and references are shared across adsorbates.")
    threshold = ("E_rel <= tau (0.05 eV, the energy a 0.10 eV/A residual force can hide is < 0.01 eV); unbound "
                 "(no intact bound state from any site) and not_converged (a relaxation out of steps) are 0/1 "
                 "flags (tau 0.5). Hard, exact: free atoms and radicals bind to these metals by eV, no committee is "
                 "needed; weakly bound pairs (CO on Ag, Au) can be listed as 'weak' and are then reported only.")
    units = {"E_rel": "eV", "unbound": "flag", "not_converged": "flag"}
    Settings = AdsorptionSignSettings

    def probes(self, settings):
        from ...structures.adsorbates import METALS, build_slab, place

        for metal in settings.metals:
            slab = build_slab(metal, size=settings.size, vacuum=settings.vacuum, free_layers=settings.free_layers)
            for ads in settings.adsorbates:
                label = f"{ads}/{metal}({METALS[metal][0][3:]})"
                yield Probe(id=label, atoms=place(slab, ads, settings.sites[0]),
                            params={"metal": metal, "adsorbate": ads})

    def measure(self, settings, evaluator, probe):
        from ...structures.adsorbates import (build_slab, classify, isolated, place, relax, u_block)

        metal, ads = probe.params["metal"], probe.params["adsorbate"]
        judged = f"{ads}/{metal}" not in settings.weak
        slab = build_slab(metal, size=settings.size, vacuum=settings.vacuum, free_layers=settings.free_layers)
        n = len(slab)
        clean = relax(slab, evaluator, fmax=settings.fmax, steps=settings.steps)
        gas = isolated(ads)
        ref = relax(gas, evaluator, fmax=0.05, steps=settings.steps) if len(gas) > 1 else None
        e_gas = ref.energy if ref is not None else evaluator.energy(gas)
        obs = {"metal": metal, "adsorbate": ads, "facet": slab.info["facet"], "u_block": u_block(metal, ads),
               "judged": judged, "E_slab": clean.energy, "E_isolated": e_gas,
               "slab_converged": clean.converged,
               "isolated_converged": True if ref is None else ref.converged}
        if ref is not None:
            d = float(np.linalg.norm(ref.atoms.positions[0] - ref.atoms.positions[1]))
            obs["isolated_bond"] = d

        screened = []
        for site in settings.sites:
            cand = place(clean.atoms, ads, site)
            screened.append((evaluator.energy(cand), site, cand))
        screened.sort(key=lambda t: t[0])
        chosen = screened[: settings.relax_sites] if settings.relax_sites else screened
        results, converged_all = [], clean.converged and obs["isolated_converged"]
        for e_sp, site, cand in chosen:
            r = relax(cand, evaluator, fmax=settings.fmax, steps=settings.steps)
            out = classify(r.atoms, n, site, settings.gamma)
            converged_all = converged_all and r.converged
            results.append({"site": site, "E_rel_single_point": float(e_sp - clean.energy - e_gas),
                            "E_rel": float(r.energy - clean.energy - e_gas), "status": out.status,
                            "final_site": out.site, "d_min": out.d_min, "d_ratio": out.d_ratio,
                            "converged": r.converged, "steps": r.steps,
                            "fmax": r.fmax,
                            "_atoms": r.atoms})
        obs["screened"] = [{"site": s, "E_rel_single_point": float(e - clean.energy - e_gas)} for e, s, _ in screened]
        obs["sites"] = [{k: v for k, v in r.items() if k != "_atoms"} for r in results]
        obs["not_relaxed"] = [s for _, s, _ in screened[len(chosen):]]

        bound = [r for r in results if r["status"] in ("bound", "slipped")]
        flags = {"not_converged": 0.0 if converged_all else 1.0, "unbound": 0.0}
        if not converged_all:
            stuck = [f"{r['site']} (fmax {r['fmax']:.3g} eV/A)" for r in results if not r["converged"]]
            stuck += [name for name, ok in (("clean slab", clean.converged),
                                             ("isolated adsorbate", obs["isolated_converged"])) if not ok]
            obs["label"] = f"not converged after {settings.steps} steps: " + ", ".join(stuck)
        if not bound:
            lowest = min(results, key=lambda r: r["E_rel"])
            obs.update({"E_rel": None, "best_site": None, "best_status": None,
                        "lowest_unbound": {"E_rel": lowest["E_rel"], "status": lowest["status"],
                                           "site": lowest["site"], "d_min": lowest["d_min"]}})
            obs["label"] = (obs.get("label", "") + "; " if "label" in obs else "") + "no intact bound state: " + \
                ", ".join(f"{r['site']} {r['status']}" for r in results)
            flags["unbound"] = 1.0 if judged else 0.0
            return Measurement(violations={"E_rel": 0.0, **flags}, observables=obs, worst_atoms=lowest["_atoms"])
        best = min(bound, key=lambda r: r["E_rel"])
        unbound_lower = [r for r in results if r["status"] not in ("bound", "slipped") and r["E_rel"] < best["E_rel"]]
        if unbound_lower:  # the model prefers a broken or detached adsorbate: say so, never use it
            low = min(unbound_lower, key=lambda r: r["E_rel"])
            obs["lower_unbound"] = {"E_rel": low["E_rel"], "status": low["status"], "site": low["site"],
                                    "d_min": low["d_min"]}
        obs.update({"E_rel": best["E_rel"], "best_site": best["site"], "best_final_site": best["final_site"],
                    "best_status": best["status"], "slipped": best["status"] == "slipped"})
        v = max(0.0, best["E_rel"]) if judged else 0.0
        return Measurement(violations={"E_rel": v, **flags}, observables=obs, worst_atoms=best["_atoms"])

    def setting_details(self, settings) -> str:
        relaxed = f"lowest {settings.relax_sites} of" if settings.relax_sites else "all"
        return (f"{len(settings.metals)} metal(s) x {len(settings.adsorbates)} adsorbate(s), "
                f"{'x'.join(map(str, settings.size))} slabs, {relaxed} {'/'.join(settings.sites)} sites relaxed "
                f"(BFGS fmax {settings.fmax:g} eV/A, {settings.steps} steps), gamma {settings.gamma:g}"
                + (f"; {len(settings.weak)} weak pair(s) not judged" if settings.weak else ""))
