"""Spurious desorption barrier: pulling a chemisorbed molecule off a metal surface climbs no barrier."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..base import Check, ContractSettings, Measurement, Probe


class DesorptionCase(BaseModel):
    """One adsorbate on one metal surface, relaxed from ``site`` before the scan."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    adsorbate: str
    metal: str
    facet: Literal["fcc111", "fcc100", "bcc110", "hcp0001"] | None = None
    site: str = "ontop"

    @model_validator(mode="after")
    def _known(self):
        from ...structures.adsorbates import ADSORBATES, METALS, SITES

        if self.adsorbate not in ADSORBATES:
            raise ValueError(f"unknown adsorbate {self.adsorbate!r}; known: {', '.join(ADSORBATES)}")
        if self.metal not in METALS:
            raise ValueError(f"no slab data for metal {self.metal!r}; known: {', '.join(METALS)}")
        facet = self.facet or METALS[self.metal][0]
        if self.site not in SITES[facet]:
            raise ValueError(f"site {self.site!r} not defined on {facet}; use one of {', '.join(SITES[facet])}")
        return self

    @property
    def surface(self) -> str:
        from ...structures.adsorbates import METALS

        return self.facet or METALS[self.metal][0]

    def label(self) -> str:
        return f"{self.adsorbate}/{self.metal}({self.surface[3:]})-{self.site}"


class DesorptionBarrierSettings(ContractSettings):
    check: Literal["desorption_barrier"] = "desorption_barrier"
    hard: bool = False
    basis: Literal["exact", "disagreement"] = "exact"
    cases: list[DesorptionCase] = Field(default_factory=list)
    size: tuple[int, int, int] = (2, 2, 3)
    vacuum: float = Field(12.0, ge=6.0, description="A each side; raised so the scanned molecule stays a cutoff "
                                                    "+ 2 A from the periodic image of the slab")
    dz_max: float = Field(8.0, ge=4.0, le=15.0, description="rigid translation along the normal (A)")
    dz_step: float = Field(0.25, ge=0.01, le=1.0, description="height step of the scan (A), 0.01 to 1")
    fmax: float = Field(0.10, gt=0.0, description="relaxation criterion of the adsorbed state (eV/A)")
    steps: int = Field(200, ge=1, le=5000)
    gamma: float = Field(1.2, ge=1.0, le=2.0, description="connectivity factor d <= gamma (R_i + R_j)")
    neb: bool = Field(False, description="confirm a failing rigid scan with a climbing-image NEB")
    neb_images: int = Field(17, ge=3, le=41, description="images including both endpoints (17: 0.5 A apart over 8 A, "
                                                         "fine enough to resolve a 1 A wide bump)")
    neb_fmax: float = Field(0.05, gt=0.0)
    neb_steps: int = Field(200, ge=1, le=5000)

    default_tolerance = {"barrier": 0.05, "unbound": 0.5, "not_converged": 0.5}


def interior_peak(e: np.ndarray) -> int | None:
    """Index of the highest interior local maximum of a 1-D curve (None if it is monotonic)."""
    peaks = [i for i in range(1, len(e) - 1) if e[i] > e[i - 1] and e[i] >= e[i + 1]]
    return max(peaks, key=lambda i: e[i]) if peaks else None


def lifted(atoms, n_slab: int, dz: float):
    out = atoms.copy()
    out.positions[n_slab:, 2] += dz
    return out


class DesorptionBarrier(Check):
    name = "desorption_barrier"
    title = "No spurious desorption barrier"
    statement = ("Pulling a chemisorbed molecule (CO, NO) straight off a metal surface, the energy rises "
                 "from the adsorbed minimum to the gas-phase asymptote without passing above that asymptote: "
                 "molecular desorption from these surfaces is not activated.")
    rationale = ("Adsorption benchmarks score only the relaxed minimum, so a model can match the adsorption "
                 "energy and still put a barrier (and a secondary well) on the desorption path; kinetics, "
                 "sticking coefficients and MD of surface reactions then go wrong. The seed found +0.22 eV on "
                 "CO/Cu(111) for MACE-MPA-0 where DFT gives +0.02 eV.")
    procedure = ("Relax the adsorbate on a frozen bulk-terminated slab (BFGS, fmax 0.10 eV/A, 200 steps; "
                 "connectivity d <= gamma (R_i+R_j) must show it intact and bound, else 'unbound'). Translate it "
                 "rigidly along the normal from 0 to dz_max (8 A) in 0.25 A steps; asymptote = E(dz_max); the "
                 "rise is the highest interior local maximum above the asymptote; a local minimum beyond it is "
                 "reported as a secondary well (depth below the asymptote). With neb = true a failing case is "
                 "re-run as a climbing-image NEB (ase.mep.NEB, FIRE) between the model's own relaxed adsorbed "
                 "state and its relaxed desorbed state (molecule held at dz_max): the NEB barrier above the "
                 "desorbed state then is the violation (it confirms or dismisses the rigid-scan rise, which is "
                 "reported alongside). Label-free: only the model's own energies.")
    threshold = ("barrier <= tau (0.05 eV: 2x the +0.02 eV DFT residual of the seed's CO/Cu(111) path, > 100x "
                 "float32 noise); unbound and not_converged are 0/1 flags (tau 0.5). Soft, exact: judged against the "
                 "physical expectation, not the committee; soft because no theorem forbids a barrier, the "
                 "expectation is established for these named systems, so a violation is escalated (with the "
                 "NEB and the committee curves) rather than failing the run.")
    units = {"barrier": "eV", "unbound": "flag", "not_converged": "flag"}
    Settings = DesorptionBarrierSettings

    def probes(self, settings):
        from ...structures.adsorbates import build_slab, place

        for case in settings.cases:
            slab = build_slab(case.metal, size=settings.size, facet=case.surface, vacuum=settings.vacuum,
                              free_layers=0)
            yield Probe(id=case.label(), atoms=place(slab, case.adsorbate, case.site), params={"case": case})

    def measure(self, settings, evaluator, probe):
        from ...structures.adsorbates import build_slab, classify, place, relax

        case: DesorptionCase = probe.params["case"]
        cutoff = evaluator.model.info.cutoff or 6.0
        vacuum = max(settings.vacuum, 0.5 * (settings.dz_max + 4.0 + cutoff + 2.0))
        slab = build_slab(case.metal, size=settings.size, facet=case.surface, vacuum=vacuum, free_layers=0)
        n = len(slab)
        start = place(slab, case.adsorbate, case.site)
        rel = relax(start, evaluator, fmax=settings.fmax, steps=settings.steps)
        outcome = classify(rel.atoms, n, case.site, settings.gamma)
        ztop = slab.positions[:, 2].max()
        obs = {"case": case.label(), "adsorbate": case.adsorbate, "metal": case.metal, "facet": case.surface,
               "site_planned": case.site, "outcome": outcome.as_dict(), "relax_converged": rel.converged,
               "relax_steps": rel.steps, "height": float(rel.atoms.positions[n:, 2].min() - ztop)}
        flags = {"unbound": 0.0, "not_converged": 0.0 if rel.converged else 1.0}
        if not rel.converged:
            obs["label"] = f"not converged (adsorbed state: fmax {rel.fmax:.3g} eV/A after {rel.steps} steps)"
        if outcome.status in ("dissociated", "desorbed"):
            obs["label"] = f"no bound intact adsorbed state ({outcome.status} on relaxation)"
            return Measurement(violations={"barrier": 0.0, **flags, "unbound": 1.0}, observables=obs,
                               worst_atoms=rel.atoms)

        dz = np.round(np.arange(0.0, settings.dz_max + 1e-9, settings.dz_step), 6)
        configs = [lifted(rel.atoms, n, d) for d in dz]
        e = np.array([evaluator.energy(c) for c in configs])
        e_rel = e - e[-1]
        peak = interior_peak(e_rel)
        rise = max(0.0, float(e_rel[peak])) if peak is not None else 0.0
        obs.update({"scan_dz": [float(x) for x in dz], "scan_E": [float(x) for x in e_rel],
                    "E_asymptote": float(e[-1]), "well_depth": float(-e_rel[0]), "rise": rise,
                    "dz_at_max": float(dz[peak]) if rise > 0 else None})
        well = None
        if peak is not None and peak + 1 < len(e_rel) - 1:
            j = peak + 1 + int(np.argmin(e_rel[peak + 1:-1]))
            if e_rel[j] < 0 and e_rel[j] <= e_rel[j - 1] and e_rel[j] <= e_rel[j + 1]:
                well = {"dz": float(dz[j]), "depth": float(-e_rel[j])}
        obs["secondary_well"] = well
        worst = configs[peak] if peak is not None else rel.atoms

        barrier, basis = rise, "rigid scan"
        if settings.neb and rise > settings.tolerance["barrier"]:
            neb = self.neb(settings, evaluator, rel.atoms, n, case)
            obs["neb"] = neb
            if neb["converged"]:
                barrier, basis = neb["barrier"], "CI-NEB"
                worst = neb.pop("_worst")
            else:
                neb.pop("_worst", None)
                obs["label"] = "NEB not converged: the rigid-scan rise stands"
        obs["violation_basis"] = basis
        return Measurement(violations={"barrier": barrier, **flags}, observables=obs, worst_atoms=worst)

    @staticmethod
    def neb(settings, evaluator, adsorbed, n: int, case) -> dict:
        """Climbing-image NEB from the relaxed adsorbed state to the relaxed desorbed state."""
        from ase.constraints import FixAtoms, FixCartesian
        from ase.mep import NEB
        from ase.optimize import FIRE

        from ...structures.adsorbates import EvaluatorCalculator, relax

        fixed = FixAtoms(indices=list(range(n)))
        far = lifted(adsorbed, n, settings.dz_max)
        binder = n + int(np.argmin(far.positions[n:, 2]))
        far.set_constraint([fixed, FixCartesian(binder, mask=(False, False, True))])
        final = relax(far, evaluator, fmax=settings.neb_fmax, steps=settings.steps)
        images = [adsorbed.copy()] + [adsorbed.copy() for _ in range(settings.neb_images - 2)] + [final.atoms.copy()]
        for im in images:
            im.set_constraint(FixAtoms(indices=list(range(n))))
            im.calc = EvaluatorCalculator(evaluator)
        band = NEB(images, climb=True, method="improvedtangent")
        band.interpolate()
        opt = FIRE(band, logfile=None)
        converged = bool(opt.run(fmax=settings.neb_fmax, steps=settings.neb_steps))
        energies = np.array([im.get_potential_energy() for im in images])
        e_rel = energies - energies[-1]
        top = 1 + int(np.argmax(e_rel[1:-1]))
        barrier = float(e_rel[top]) if e_rel[top] > max(e_rel[0], 0.0) else 0.0
        heights = [float(im.positions[n:, 2].min() - adsorbed.positions[n:, 2].min()) for im in images]
        wells = [i for i in range(2, len(e_rel) - 1)
                 if e_rel[i] < min(0.0, e_rel[i - 1]) and e_rel[i] <= e_rel[i + 1] and e_rel[:i].max() > e_rel[i]]
        deepest = min(wells, key=lambda i: e_rel[i]) if wells else None
        out = {"converged": converged, "steps": int(opt.nsteps), "barrier": max(0.0, barrier),
               "images_dz": heights, "images_E": [float(x) for x in e_rel],
               "secondary_well": None if deepest is None else {"dz": heights[deepest],
                                                                "depth": float(-e_rel[deepest])},
               "final_relax_converged": final.converged}
        worst = images[top].copy()
        worst.calc = None
        out["_worst"] = worst
        return out

    def setting_details(self, settings) -> str:
        neb = (f"CI-NEB confirmation ({settings.neb_images} images, fmax {settings.neb_fmax:g}) for failing cases"
               if settings.neb else "rigid scan only (NEB off)")
        return (f"{len(settings.cases)} case(s), frozen {'x'.join(map(str, settings.size))} slabs, rigid scan 0-"
                f"{settings.dz_max:g} A step {settings.dz_step:g} A; {neb}")
