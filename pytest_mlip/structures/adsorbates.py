"""Slabs, adsorbates, sites, relaxation and connectivity for the surface contracts.

Shared by the adsorption-sign, desorption-barrier and Born-stability checks:

- :func:`build_slab` makes a small slab with :mod:`ase.build` (fcc111, fcc100,
  bcc110, hcp0001) at a tabulated lattice constant, bottom layers fixed;
- :func:`place` puts an adsorbate (an atom, or OH/CO/NO binding atom down) on
  an ontop, bridge or hollow site with :func:`ase.build.add_adsorbate`, at the
  covalent bond length from the nearest surface atom;
- :func:`relax` runs :class:`ase.optimize.BFGS` (optionally with a
  :class:`ase.filters.FrechetCellFilter` and :class:`ase.constraints.FixSymmetry`)
  through :class:`EvaluatorCalculator`, so every model call is cached and
  counted by the :class:`~pytest_mlip.evaluation.Evaluator`;
- :func:`classify` applies the connectivity test d_ij <= gamma (R_i + R_j)
  (covalent radii) to tell a bound, intact adsorbate from a dissociated or
  desorbed one, and names the site it ended on (to flag site slip).

Relaxations are deterministic, so relaxing the same clean slab or isolated
molecule again costs only evaluator cache hits: references are shared across
adsorbates and contracts within a process for free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ase.calculators.calculator import Calculator, PropertyNotImplementedError, all_changes

#: Relaxation defaults of the surface contracts (AdsMind's protocol).
RELAX_FMAX = 0.10  # eV/A
RELAX_STEPS = 200
#: Connectivity factor: atoms i, j are bonded when d_ij <= GAMMA (R_i + R_j).
GAMMA = 1.2
#: Vacuum (A) on each side of a slab; 2x this separates periodic images.
SLAB_VACUUM = 10.0

#: Metals with the surface and lattice constants (A, experimental; Mn is an
#: idealised non-magnetic fcc cell since alpha-Mn has 58 atoms per cell).
METALS: dict[str, tuple[str, float, float | None]] = {
    "Ni": ("fcc111", 3.524, None),
    "Co": ("hcp0001", 2.507, 4.069),
    "Fe": ("bcc110", 2.867, None),
    "Mn": ("fcc111", 3.52, None),
    "Cr": ("bcc110", 2.91, None),
    "V": ("bcc110", 3.03, None),
    "Mo": ("bcc110", 3.147, None),
    "W": ("bcc110", 3.165, None),
    "Cu": ("fcc111", 3.615, None),
    "Pt": ("fcc111", 3.924, None),
    "Pd": ("fcc111", 3.891, None),
    "Ag": ("fcc111", 4.085, None),
    "Au": ("fcc111", 4.078, None),
    "Ru": ("hcp0001", 2.706, 4.282),
    "Rh": ("fcc111", 3.803, None),
    "Ir": ("fcc111", 3.839, None),
    "Al": ("fcc111", 4.05, None),
}

#: Metals that get the Materials Project's selective Hubbard U with O or F.
U_METALS = ("Co", "Cr", "Fe", "Mn", "Mo", "Ni", "V", "W")

#: Adsorbates: symbols with the binding atom first (then straight up the normal).
ADSORBATES: dict[str, tuple[str, ...]] = {
    "O": ("O",), "F": ("F",), "H": ("H",), "N": ("N",), "S": ("S",), "C": ("C",), "Cl": ("Cl",),
    "OH": ("O", "H"), "CO": ("C", "O"), "NO": ("N", "O"),
}

#: Canonical site names -> ASE site names per facet.
SITES: dict[str, dict[str, str]] = {
    "fcc111": {"ontop": "ontop", "bridge": "bridge", "hollow": "fcc", "fcc": "fcc", "hcp": "hcp"},
    "hcp0001": {"ontop": "ontop", "bridge": "bridge", "hollow": "fcc", "fcc": "fcc", "hcp": "hcp"},
    "fcc100": {"ontop": "ontop", "bridge": "bridge", "hollow": "hollow"},
    "bcc110": {"ontop": "ontop", "bridge": "shortbridge", "hollow": "hollow",
               "shortbridge": "shortbridge", "longbridge": "longbridge"},
}


def u_block(metal: str, adsorbate: str) -> bool:
    """Does this pair trigger the Materials Project's selective +U (U metal with O or F)?"""
    return metal in U_METALS and any(s in ("O", "F") for s in ADSORBATES.get(adsorbate, (adsorbate,)))


def radius(symbol: str) -> float:
    from ase.data import atomic_numbers, covalent_radii

    return float(covalent_radii[atomic_numbers[symbol]])


# --- evaluator-backed ASE calculator -------------------------------------------------------------

class EvaluatorCalculator(Calculator):
    """An ASE calculator whose every call goes through ``evaluator.evaluate`` (cached, counted)."""

    implemented_properties = ["energy", "free_energy", "forces", "stress"]

    def __init__(self, evaluator, **kwargs):
        super().__init__(**kwargs)
        self.evaluator = evaluator

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        ev = self.evaluator.evaluate(self.atoms)
        self.results = {"energy": ev.energy, "free_energy": ev.energy, "forces": ev.forces.copy()}
        if ev.stress is not None:
            self.results["stress"] = ev.stress.copy()
        elif "stress" in properties:
            raise PropertyNotImplementedError(f"{self.evaluator.name} gives no stress for this cell")


# --- building ------------------------------------------------------------------------------------

def build_slab(metal: str, size=(2, 2, 3), facet: str | None = None, vacuum: float = SLAB_VACUUM,
               free_layers: int = 1):
    """A slab of ``metal`` (tabulated facet and lattice constant), layers below ``free_layers`` fixed."""
    from ase import build
    from ase.constraints import FixAtoms

    if metal not in METALS:
        raise ValueError(f"no slab data for {metal!r}; known metals: {', '.join(METALS)}")
    default_facet, a, c = METALS[metal]
    facet = facet or default_facet
    kwargs = {"a": a} if facet != "hcp0001" else {"a": a, "c": c}
    if facet[:3] != default_facet[:3]:
        raise ValueError(f"{metal} is tabulated as {default_facet[:3]}; facet {facet} does not fit")
    slab = getattr(build, facet)(metal, size=tuple(size), vacuum=vacuum, **kwargs)
    slab.set_constraint(FixAtoms(mask=slab.get_tags() > free_layers))
    slab.info["facet"] = facet
    return slab


def adsorbate_atoms(name: str):
    """The adsorbate alone, binding atom at the origin and the rest straight up (+z)."""
    from ase import Atoms

    if name not in ADSORBATES:
        raise ValueError(f"unknown adsorbate {name!r}; known: {', '.join(ADSORBATES)}")
    symbols = ADSORBATES[name]
    if len(symbols) == 1:
        return Atoms(symbols)
    from ase.build import molecule

    mol = molecule(name)
    d = float(np.linalg.norm(mol.positions[0] - mol.positions[1]))
    return Atoms(symbols, positions=[[0, 0, 0], [0, 0, d]])


def isolated(name: str, vacuum: float = 10.0):
    """The adsorbate as an isolated gas-phase species in an open box."""
    atoms = adsorbate_atoms(name)
    atoms.center(vacuum=vacuum)
    atoms.pbc = False
    return atoms


def site_name(slab, site: str) -> str:
    facet = slab.info.get("facet")
    table = SITES.get(facet, {})
    if site not in table:
        raise ValueError(f"site {site!r} not defined on {facet}; use one of {', '.join(table)}")
    return table[site]


def _lateral_distances(slab, xy) -> np.ndarray:
    """In-plane distances from point ``xy`` to the top-layer atoms (periodic in-plane)."""
    top = slab.positions[slab.get_tags() == 1]
    cell2 = slab.cell.array[:2, :2]
    out = []
    for i in (-1, 0, 1):
        for j in (-1, 0, 1):
            shift = i * cell2[0] + j * cell2[1]
            out.append(np.linalg.norm(top[:, :2] + shift - xy, axis=1))
    return np.concatenate(out)


def place(slab, adsorbate: str, site: str, lift: float = 0.0):
    """``slab`` + ``adsorbate`` on ``site``; binding atom at the covalent bond length (+ ``lift``)."""
    from ase.build import add_adsorbate

    atoms = slab.copy()
    ads = adsorbate_atoms(adsorbate)
    name = site_name(slab, site)
    add_adsorbate(atoms, ads, height=2.0, position=name, mol_index=0)
    n = len(slab)
    metal = slab.get_chemical_symbols()[0]
    bond = radius(metal) + radius(ads.get_chemical_symbols()[0])
    rho = float(_lateral_distances(slab, atoms.positions[n, :2]).min())
    height = float(np.sqrt(max(bond**2 - rho**2, 0.6**2))) + lift
    ztop = slab.positions[slab.get_tags() == 1, 2].max()
    atoms.positions[n:, 2] += ztop + height - atoms.positions[n, 2]
    atoms.set_constraint(slab.constraints)
    atoms.info["site"] = site
    atoms.info["n_slab"] = n
    return atoms


# --- relaxation ---------------------------------------------------------------------------------

@dataclass
class Relaxed:
    atoms: object
    energy: float
    converged: bool
    steps: int
    fmax: float


def relax(atoms, evaluator, fmax: float = RELAX_FMAX, steps: int = RELAX_STEPS, cell: bool = False,
          symmetry: bool = False, maxstep: float = 0.2) -> Relaxed:
    """BFGS relaxation through the evaluator (positions; with ``cell`` also the cell).

    ``symmetry`` keeps the starting space group (:class:`ase.constraints.FixSymmetry`),
    so a crystal is relaxed within its own symmetry and a saddle point stays one.
    """
    from ase.optimize import BFGS

    work = atoms.copy()
    work.calc = EvaluatorCalculator(evaluator)
    if symmetry:
        from ase.constraints import FixSymmetry

        work.set_constraint(list(work.constraints) + [FixSymmetry(work)])
    target = work
    if cell:
        from ase.filters import FrechetCellFilter

        target = FrechetCellFilter(work)
    opt = BFGS(target, logfile=None, maxstep=maxstep)
    converged = bool(opt.run(fmax=fmax, steps=steps))
    residual = float(np.sqrt((target.get_forces() ** 2).sum(axis=1)).max()) if len(work) else 0.0
    energy = work.get_potential_energy()
    out = work.copy()
    out.calc = None
    if symmetry:  # keep only the constraints the caller gave
        out.set_constraint([c for c in out.constraints if type(c).__name__ != "FixSymmetry"])
    return Relaxed(atoms=out, energy=float(energy), converged=converged, steps=int(opt.nsteps), fmax=residual)


# --- connectivity -------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What happened to an adsorbate: intact or not, bound or not, which site."""

    intact: bool
    bound: bool
    site: str  # ontop / bridge / hollow / subsurface / none
    coordination: int
    status: str = field(default="")  # bound / slipped / dissociated / desorbed
    d_min: float = 0.0  # closest adsorbate-metal distance (A)
    d_ratio: float = 0.0  # d_min / (R_i + R_j): bonded when <= gamma

    def as_dict(self) -> dict:
        return {"intact": self.intact, "bound": self.bound, "site": self.site,
                "coordination": self.coordination, "status": self.status,
                "d_min": round(self.d_min, 3), "d_ratio": round(self.d_ratio, 3)}


def bonded(atoms, i: int, j: int, gamma: float = GAMMA) -> bool:
    d = atoms.get_distance(i, j, mic=bool(np.any(atoms.pbc)))
    sym = atoms.get_chemical_symbols()
    return d <= gamma * (radius(sym[i]) + radius(sym[j]))


def _components(n: int, edges) -> int:
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        parent[find(a)] = find(b)
    return len({find(a) for a in range(n)})


def classify(atoms, n_slab: int, planned_site: str | None = None, gamma: float = GAMMA) -> Outcome:
    """Connectivity verdict on ``atoms`` = slab (first ``n_slab`` atoms) + one adsorbate."""
    ads = list(range(n_slab, len(atoms)))
    metal = list(range(n_slab))
    edges = [(a - n_slab, b - n_slab) for k, a in enumerate(ads) for b in ads[k + 1:] if bonded(atoms, a, b, gamma)]
    intact = _components(len(ads), edges) == 1
    tags = atoms.get_tags()[:n_slab]
    top = [m for m in metal if tags[m] == 1]
    contacts = {a: [m for m in metal if bonded(atoms, a, m, gamma)] for a in ads}
    bound = any(contacts.values())
    binder = max(ads, key=lambda a: (len(contacts[a]), -atoms.positions[a, 2]))
    coord = len([m for m in contacts[binder] if m in top])
    ztop = atoms.positions[top, 2].mean() if top else atoms.positions[metal, 2].max()
    if not bound:
        site = "none"
    elif atoms.positions[binder, 2] < ztop - 0.3:
        site = "subsurface"
    else:
        site = {0: "none", 1: "ontop", 2: "bridge"}.get(coord, "hollow")
    pbc = bool(np.any(atoms.pbc))
    sym = atoms.get_chemical_symbols()
    pairs = [(atoms.get_distance(a, m, mic=pbc), a, m) for a in ads for m in metal]
    d_min, a_min, m_min = min(pairs)
    if not intact:
        status = "dissociated"
    elif not bound:
        status = "desorbed"
    elif planned_site is not None and _site_class(planned_site) != site:
        status = "slipped"
    else:
        status = "bound"
    return Outcome(intact=intact, bound=bound, site=site, coordination=coord, status=status, d_min=float(d_min),
                   d_ratio=float(d_min / (radius(sym[a_min]) + radius(sym[m_min]))))


def _site_class(site: str) -> str:
    return {"fcc": "hollow", "hcp": "hollow", "shortbridge": "bridge", "longbridge": "bridge"}.get(site, site)


__all__ = [
    "ADSORBATES", "METALS", "U_METALS", "SITES", "GAMMA", "RELAX_FMAX", "RELAX_STEPS", "SLAB_VACUUM",
    "EvaluatorCalculator", "Relaxed", "Outcome", "build_slab", "adsorbate_atoms", "isolated", "place",
    "relax", "classify", "bonded", "u_block", "radius", "site_name",
]
