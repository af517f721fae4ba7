"""Reference card of NVE conservation: what a reference can and cannot add (not run here).

Conservation is a consistency of the model's own dynamics: reference energies along the model's trajectory are not
conserved unless the model's forces are the reference's, so single points cannot settle it; a reference NVE run
of the same length (ab initio MD, hundreds of SCF steps) is hours here. The card writes the run's starting
structure and the frame where it ended or stopped (an unstable run: the frame where two atoms met) as inputs: a
reference at that frame shows whether its configuration is physical at all.
"""

from __future__ import annotations

from ...reference.cards import Card, ProbeCase, RefConfig, Undecidable


class NVEConservationCard(Card):
    check = "nve_conservation"
    quantity = "drift"
    floor_tolerance = "drift"
    engines = "none: not run here"
    not_run_here = ("reference single points along the model's trajectory are not conserved unless the model's forces "
                    "are the reference's, so they cannot settle conservation, and a reference NVE run of the same "
                    "length is hours here")
    table = (("reference (external): an ab initio NVE run from the same start and velocities; the start and the "
              "frame where the model's run ended or stopped are written as inputs", ""),)

    def domain_error(self, settings, case: ProbeCase) -> str | None:
        return None if case.built is not None else "the probe is not in the contract's settings"

    def configurations(self, settings, case: ProbeCase) -> list[RefConfig]:
        start = case.built.atoms.copy()
        start.calc = None
        out = [RefConfig("start", "the run's starting structure", start)]
        if case.worst_atoms is not None:
            frame = case.worst_atoms.copy()
            frame.calc = None
            out.append(RefConfig("frame", "the frame where the model's run ended or stopped", frame))
        return out

    def observables(self, settings, case: ProbeCase, energies: dict[str, float]) -> dict[str, float]:
        raise Undecidable(self.not_run_here)
