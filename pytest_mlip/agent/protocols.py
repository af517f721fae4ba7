"""Protocols as data: contract tables, their TOML form, and the units a scope grid varies.

A protocol is one ``[[contract]]`` table of the built-in contract-file format
(``contracts/mlip_*.toml``): a fixed check routine plus data. The detective
never writes code; it writes tables, serialises them with :func:`to_toml`
(a small writer for the value types a table holds), and reads them back with
:func:`~pytest_mlip.contracts.files.parse_contracts`, so what runs is exactly
what a maintainer reads in the file.

*Units* are what a scope grid varies (dimer pairs, surface approaches,
fragment pairs, structures): each law's playbook names its unit fields and
the probe id its check gives each unit, so evidence (per-probe results) maps
back onto units.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: fields of a contract table written first, in this order
_HEAD = ("name", "check", "hard", "basis", "description")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")


# --- TOML ------------------------------------------------------------------------------------------------------------


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def toml_value(v: Any) -> str:
    """TOML form of a table value: strings, booleans, numbers, arrays and inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"non-finite number {v} cannot be written to a protocol")
        return repr(float(v))  # a numpy float64 is a float whose repr is not TOML
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=True)  # a TOML basic string (same escapes as JSON)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0] != "kind")  # a structure spec reads best kind-first
        return "{ " + ", ".join(f"{_key(str(k))} = {toml_value(x)}" for k, x in items) + " }" if v else "{}"
    raise TypeError(f"a protocol holds only data; {type(v).__name__} is not allowed")


def to_toml(tables: list[dict], header: list[str] | None = None) -> str:
    """A contract file with ``tables`` as ``[[contract]]`` entries, ``header`` lines as comments."""
    lines = [f"# {h}".rstrip() for h in (header or [])]
    for t in tables:
        if lines:
            lines.append("")
        lines.append("[[contract]]")
        for k in _HEAD:
            if k in t:
                lines.append(f"{k} = {toml_value(t[k])}")
        for k, v in t.items():
            if k not in _HEAD:
                lines.append(f"{_key(k)} = {toml_value(v)}")
    return "\n".join(lines) + "\n"


def table_of(settings) -> dict:
    """The minimal contract table of validated settings (defaults left out, tolerance always written)."""
    full = settings.model_dump(mode="json")
    out: dict[str, Any] = {}
    fields = type(settings).model_fields
    for name, value in full.items():
        f = fields[name]
        if name in ("name", "check", "tolerance"):
            out[name] = value
            continue
        default = f.get_default(call_default_factory=True)
        try:
            default_json = json.loads(json.dumps(default, default=_jsonable))
        except TypeError:
            default_json = object()
        if value != default_json:
            out[name] = _drop_defaults(value)
    return out


def _jsonable(obj):
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    raise TypeError(type(obj).__name__)


def _drop_defaults(value):
    """Structure specs written with only their non-default fields (short, readable tables)."""
    if isinstance(value, list):
        return [_drop_defaults(v) for v in value]
    if isinstance(value, dict) and "kind" in value:
        from .. import structures as S

        cls = {c.model_fields["kind"].default: c for c in (S.Atom, S.Molecule, S.Dimer, S.Cluster, S.Bulk, S.Slab,
                                                             S.File)}.get(value["kind"])
        if cls is not None:
            out = {}
            for k, v in value.items():
                f = cls.model_fields.get(k)
                if k == "kind" or f is None or f.is_required():
                    out[k] = v
                    continue
                d = f.get_default(call_default_factory=True)
                if isinstance(d, tuple):
                    d = list(d)
                if v != d:
                    out[k] = v
            return out
    return value


def normalized(settings) -> str:
    """Content that decides what a protocol tests: no name, description or hard flag; unit lists sorted."""
    d = settings.model_dump(mode="json", exclude={"name", "description", "hard"})
    for k, v in list(d.items()):
        if isinstance(v, list):
            d[k] = sorted(v, key=lambda x: json.dumps(x, sort_keys=True))
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


# --- units -----------------------------------------------------------------------------------------------------------

def spec_label(spec: dict) -> str:
    """The probe label a structure spec (as a JSON dict) gets from its check."""
    from pydantic import TypeAdapter

    from ..structures import StructureSpec

    return TypeAdapter(StructureSpec).validate_python(spec).label()


def unit_probe_id(check: str, field: str, unit, table: dict | None = None) -> str:
    """Probe id the check gives a unit of ``table`` (its law's playbook mirrors the check's ``probes``)."""
    from .playbook import playbook_for

    book = playbook_for(check)
    return book.probe_id(field, unit, table) if book is not None else spec_label(unit)


def units_of(table: dict) -> list[tuple[str, Any]]:
    """(field, unit) of every unit in a contract table (a playbook may define units across fields, e.g. a
    metal x adsorbate grid)."""
    from .playbook import playbook_for

    book = playbook_for(table["check"])
    if book is not None:
        return book.units(table)
    return [(field, u) for field in ("structures",) for u in table.get(field, []) or []]


def unit_elements(field: str, unit) -> list[str]:
    """Chemical elements a unit contains."""
    from ase.formula import Formula

    if isinstance(unit, str):
        return [unit]  # one element (a homonuclear dimer)
    if isinstance(unit, (list, tuple)) and unit and isinstance(unit[0], str):
        return sorted(set(unit))
    if isinstance(unit, (list, tuple)):
        out: set[str] = set()
        for u in unit:
            out.update(unit_elements(field, u))
        return sorted(out)
    if isinstance(unit, dict):
        kind = unit.get("kind")
        if kind is None and "adatom" in unit:
            return sorted({unit["element"], unit["adatom"]})
        if kind is None and "adsorbate" in unit:  # an adsorbate on a metal surface
            from ..structures.adsorbates import ADSORBATES

            return sorted({unit["metal"], *ADSORBATES.get(unit["adsorbate"], ())})
        if kind is None and "structure" in unit:  # an element in a prototype lattice
            return [unit["element"]]
        if kind == "atom" or kind == "slab":
            return [unit["element"]]
        if kind == "dimer":
            return sorted(set(unit["elements"]))
        if kind == "cluster":
            return sorted(Formula(unit["symbols"]).count())
        if kind == "molecule":
            from ase.build import molecule

            return sorted(set(molecule(unit["name"]).get_chemical_symbols()))
        if kind == "bulk":
            return sorted(Formula(unit["name"]).count())
    return []


def unit_atoms(field: str, unit) -> int:
    """Atoms in the largest configuration one unit builds (for size limits), without building it."""
    from ase.formula import Formula

    if isinstance(unit, str):
        return 2
    if isinstance(unit, (list, tuple)) and unit and isinstance(unit[0], str):
        return 2
    if isinstance(unit, (list, tuple)):
        return sum(unit_atoms(field, u) for u in unit)
    kind = unit.get("kind")
    if kind is None and "adatom" in unit:
        size = unit.get("size", (2, 2, 3))
        return int(math.prod(size)) * 2 + 1
    if kind is None and "adsorbate" in unit:
        size = unit.get("size", (2, 2, 3))
        return int(math.prod(size)) * 2 + 2  # two atoms per layer site on the largest facet, a diatomic at most
    if kind is None and "structure" in unit:
        return 2
    if kind == "atom":
        return 1
    if kind == "dimer":
        return 2
    if kind == "cluster":
        return sum(Formula(unit["symbols"]).count().values())
    if kind == "molecule":
        from ase.build import molecule

        return len(molecule(unit["name"]))
    if kind == "bulk":
        repeat = int(math.prod(unit.get("repeat", (1, 1, 1))))
        try:  # the cell ASE builds (cheap: a few atoms), so a message names the atoms the unit really has
            from ase.build import bulk

            kwargs = {k: unit[k] for k in ("crystalstructure", "a", "c", "cubic", "orthorhombic") if k in unit}
            return len(bulk(unit["name"], **kwargs)) * repeat
        except Exception:  # noqa: BLE001 - a spec ASE cannot build is refused by the schema; bound it here
            base = sum(Formula(unit["name"]).count().values())
            return base * (8 if unit.get("cubic") or unit.get("orthorhombic") else 2) * repeat  # an upper bound
    if kind == "slab":
        return int(math.prod(unit.get("size", (2, 2, 3)))) * 2
    return 0
