"""NVE energy conservation's detective playbook: neighbouring structures, half the time step, a crystal."""

from __future__ import annotations

from ...agent.playbook import StructuresPlaybook
from ...agent.protocols import spec_label


class NVEConservationPlaybook(StructuresPlaybook):
    check = "nve_conservation"
    bounds = {"timestep": (0.1, 1.0), "steps": (50, 400)}
    importance = {"": 0.9}  # every NVE or NVT production run: heating, cooling, atoms swallowed
    mechanisms = {"": ("the forces are not the gradient of one smooth energy (a direct-force head, a term missing "
                       "from energy or forces, a hard cutoff), or a hole in the energy that atoms fall into")}
    conditions = ("timestep", "steps")
    decision = (
        ("scope fails, control passes", "the non-conservation belongs to the structure class that failed"),
        ("half the time step still fails", "not the integrator's error: the model's forces do work no energy pays"),
    )

    def probe_id(self, field: str, unit, table: dict | None = None) -> str:
        """The check runs every structure at every temperature (``label@T K``); a unit maps to its run at the
        table's first temperature (a hypothesis' protocols keep the temperature it was found at first)."""
        temps = (table or {}).get("temperatures") or [300.0]
        return f"{spec_label(unit)}@{float(temps[0]):g}K"

    def vary(self, settings):
        return ({"timestep": max(0.1, settings.timestep / 2), "steps": min(400, 2 * settings.steps)},
                "half the time step for the same simulated time: the integrator's error shrinks about 4x, a force "
                "that is not a gradient does the same work per picosecond")
