"""NVE energy conservation: this law's home (its record is ``LAW``; see pytest_mlip.laws.law)."""

from ..law import Law
from .check import NVEConservation

_WHY_NOT = {
    'adversary': ("no objective: one evaluation of this law is a whole trajectory (hundreds of model calls), so an "
                  "ascent over its domain (structures, velocities, temperatures) would cost about 100x the sampled "
                  "suite; the check already reruns a failing run at half the step to tell the integrator from the "
                  "model"),
}

LAW = Law(
    check=NVEConservation,
    playbook="playbook:NVEConservationPlaybook",
    card="card:NVEConservationCard",
    figure="E_total(t) - E_total(0) per atom along each run, with the excursion band",
    axes={'t': ('time', 'fs'), 'dE': ('total energy change per atom', 'eV/atom')},
    calibration="calibration:noise",
    mutant="tests.mutants.dynamics:stirring",
    opt_out=_WHY_NOT,
)
