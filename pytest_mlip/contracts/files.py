"""Contract files: TOML data validated against the check types' schemas.

A file holds one or more ``[[contract]]`` tables; each selects a check type
with ``check = "..."`` and gives its parameters. A file that does not match
gets a :class:`ContractFileError` naming the file, line and field.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Annotated, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..errors import ContractFileError
from .base import CHECKS, ContractSettings

MAX_FILE_BYTES = 1_000_000
MAX_CONTRACTS = 200


def settings_adapter() -> TypeAdapter:
    types = tuple(c.Settings for c in CHECKS.values())
    return TypeAdapter(Annotated[Union[types], Field(discriminator="check")])


def _line_of(text: str, index: int, loc: tuple) -> int:
    """Best line number for the field ``loc`` of the ``index``-th [[contract]] table."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if re.match(r"^\s*\[\[\s*contract\s*\]\]", line)]
    if index >= len(headers):
        return 1
    start = headers[index]
    end = headers[index + 1] if index + 1 < len(headers) else len(lines)
    keys = [k for k in loc if isinstance(k, str)]
    for key in keys:
        for i in range(start, end):
            if re.match(rf"^\s*{re.escape(key)}\s*=", lines[i]) or re.search(rf"[{{,]\s*{re.escape(key)}\s*=", lines[i]):
                return i + 1
    return start + 1


#: atoms one probe structure may have unless the file raises the limit with a top-level ``max_atoms = N``
MAX_ATOMS = 1000
#: the highest limit a file may set (a contract that builds more is a typo, not a probe)
MAX_ATOMS_CEILING = 20000
TOP_LEVEL = {"contract", "max_atoms"}


def _decode(path: Path) -> str:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ContractFileError(f"{path}: file larger than {MAX_FILE_BYTES} bytes")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark (Windows editors) is UTF-8 too: read past it
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ContractFileError(f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8")\
            from None


def _models_in(annotation) -> list:
    """The pydantic models an annotation holds (``X | None``, ``list[X]``, ...)."""
    import typing

    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _field_hint(settings_type, loc: tuple) -> str:
    """The unit or meaning of a field (nested ones too: ``adversary.r_min``), from its description, for range
    errors."""
    fields = getattr(settings_type, "model_fields", {})
    name, desc = None, ""
    for part in loc:
        if isinstance(part, str) and part in fields:
            name, desc = part, fields[part].description or ""
            fields = {k: v for m in _models_in(fields[part].annotation) for k, v in m.model_fields.items()}
    return f" ({name}: {desc})" if desc else ""


#: checks calibrated on another check's noise: determinism's energies and forces are those of the symmetry
#: contracts (laws/determinism/check.py states its threshold as >= 3x that noise)
FLOOR_FROM = {"determinism": "symmetry"}


def tolerance_floor(check: str, key: str) -> tuple[float, str] | None:
    """The largest float32 noise measured for (check, tolerance key) over every calibrated model and contract."""
    from ..reporting.verdicts import _calibration

    checks = _builtin_checks()
    check = FLOOR_FROM.get(check, check)
    best = None
    for model, contracts in _calibration().items():
        for contract, noise in contracts.items():
            if checks.get(contract) == check and key in noise:
                if best is None or noise[key] > best[0]:
                    best = (float(noise[key]), f"{model}, {contract}")
    return best


#: how many times looser than the built-in default a tolerance may be: the defaults sit at >= 3x the measured noise;
#: two orders of magnitude above that, a verdict no longer says much about the law it names
CEILING_FACTOR = 100.0


def tolerance_ceiling(check: str, key: str) -> tuple[float, str] | None:
    """The loosest tolerance a contract may set for (check, key): :data:`CEILING_FACTOR` times the loosest built-in
    default of that check, and the built-in contract it comes from (``None`` for keys no built-in contract sets)."""
    best = None
    for name, (chk, tolerance) in _builtin_settings().items():
        if chk == check and key in tolerance:
            if best is None or tolerance[key] > best[0] / CEILING_FACTOR:
                best = (CEILING_FACTOR * float(tolerance[key]), name)
    return best


def _builtin_checks() -> dict[str, str]:
    """contract name -> check of the built-in suite."""
    return {name: check for name, (check, _) in _builtin_settings().items()}


def _builtin_settings() -> dict[str, tuple[str, dict]]:
    """contract name -> (check, default tolerance) of the built-in suite (read without validation; the files are
    ours)."""
    global _BUILTIN
    if _BUILTIN is None:
        from ..plugin import builtin_contracts_dir

        _BUILTIN = {}
        for f in sorted(builtin_contracts_dir().glob("mlip_*.toml")):
            for t in tomllib.loads(f.read_text()).get("contract", []):
                _BUILTIN[t.get("name")] = (t.get("check"), dict(t.get("tolerance", {})))
    return _BUILTIN


_BUILTIN: dict[str, tuple[str, dict]] | None = None


def structure_specs(obj) -> list:
    """Every structure spec inside a settings object (structures, pairs, surfaces...)."""
    from ..structures import _Spec

    out = []
    if isinstance(obj, _Spec):
        out.append(obj)
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            out += structure_specs(getattr(obj, name))
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            out += structure_specs(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            out += structure_specs(x)
    return out


def atom_count(spec) -> int:
    """Atoms a spec builds, computed without building a large structure."""
    from ..structures import Bulk, Cluster, Slab

    if isinstance(spec, Bulk):
        from ase.build import bulk

        kwargs = {k: getattr(spec, k) for k in ("crystalstructure", "a", "c") if getattr(spec, k) is not None}
        unit = len(bulk(spec.name, cubic=spec.cubic, orthorhombic=spec.orthorhombic, **kwargs))
        return unit * spec.repeat[0] * spec.repeat[1] * spec.repeat[2]
    if isinstance(spec, Slab):
        return spec.size[0] * spec.size[1] * spec.size[2] * (2 if spec.facet in ("fcc110", "bcc100") else 1)
    if isinstance(spec, Cluster):
        from ase.symbols import string2symbols

        return len(string2symbols(spec.symbols))
    return len(spec.build())


def _at(path, text: str | None, i: int, loc: tuple) -> str:
    """Where a settings error is: ``file:line: contract[i]`` for a contract file; the caller's label (e.g.
    ``mlip_check('repulsive_wall'): settings``) for settings made in code (no text)."""
    return f"{path}" if text is None else f"{path}:{_line_of(text, i, loc)}: contract[{i}]"


#: how a file raises its atom limit (what a file under generated_tests/ may not do: :func:`parse_contracts`'s
#: ``fixed_limit``)
RAISE_LIMIT = "use a smaller structure or raise the limit with max_atoms = N at the top of the file"


def _check_structures(path: Path, text: str | None, i: int, settings, root: Path | None, limit: int,
                      base: Path | None = None, fix: str = RAISE_LIMIT):
    for spec in structure_specs(settings):
        where = f"{_at(path, text, i, ('structures',))} ({settings.name})"
        if getattr(spec, "kind", "") == "file":
            p = Path(spec.path)
            target = (p if p.is_absolute() else (base or path.parent) / p).resolve()
            if root is not None and not target.is_relative_to(Path(root).resolve()):
                raise ContractFileError(f"{where}: structure file {spec.path!r} is outside the project {root}; "
                                        "copy it into the project and give a path relative to the contract file")
            if target.is_dir():
                raise ContractFileError(f"{where}: structure file {spec.path!r} is a folder ({target}); name a "
                                        "structure file in it (paths are relative to the contract file)")
            if target.exists() and not target.is_file():  # a named pipe, a device: never read (a held-out case)
                raise ContractFileError(f"{where}: structure file {spec.path!r} is not a regular file (a pipe or a "
                                        "device); name a structure file")
            if not target.is_file():
                raise ContractFileError(f"{where}: structure file {spec.path!r} does not exist (looked for "
                                        f"{target}); paths are relative to the contract file")
            object.__setattr__(spec, "path", str(target))
        try:
            n = atom_count(spec)
        except Exception as exc:  # noqa: BLE001 - an unreadable file or an impossible build is the file's fault
            if isinstance(exc, (StopIteration, IndexError)) and getattr(spec, "kind", "") == "file":
                frames = _frames(spec.path, upto=None)
                if frames == 0:  # nothing ASE reads as a structure (a held-out case was told "use index = 0 to -1")
                    raise ContractFileError(f"{where}: structure file {Path(spec.path).name} holds no structure ASE "
                                            "can read; check its content and format") from None
                raise ContractFileError(f"{where}: index = {getattr(spec, 'index', '?')} is past the last frame of "
                                        f"{Path(spec.path).name}, which holds {frames} frame(s); use index = 0 to "
                                        f"{frames - 1}") from None
            raise ContractFileError(f"{where}: cannot build {spec.label()} ({type(exc).__name__}: "
                                    f"{str(exc).splitlines()[0] if str(exc) else ''}); fix the structure spec") \
                from None
        if n > limit:
            raise ContractFileError(f"{where}: {spec.label()} has {n} atoms, more than the limit {limit}; {fix}")
        if getattr(spec, "kind", "") == "cluster":  # placed at random: too many atoms for the sphere fails only
            try:                                    # when built (held-out round 16: an item crashed on Cu1000)
                spec.build()
            except ValueError as exc:
                raise ContractFileError(f"{where}: {exc}; give a larger radius, a smaller min_distance or fewer "
                                        "atoms") from None
        if getattr(spec, "kind", "") == "file" and "index" not in spec.model_fields_set:
            frames = _frames(spec.path)
            if frames > 1:  # a held-out case: frame 0 was checked and the others dropped without a word
                raise ContractFileError(f"{where}: structure file {Path(spec.path).name} holds {frames} frames; "
                                        "name the one to check with index = K (0 is the first), or give one "
                                        "structure per frame")
        if getattr(spec, "kind", "") == "file":
            bad = _file_geometry_problem(spec.build())
            if bad:
                raise ContractFileError(f"{where}: {spec.label()} {bad}; fix the structure file")
        if getattr(spec, "kind", "") == "file" and 1 < n <= 2000:
            close = _overlap(spec.build())
            if close:
                raise ContractFileError(f"{where}: {spec.label()} holds atoms {close[0]} and {close[1]} "
                                        f"{close[2]:.3f} A apart, on top of each other (closer than "
                                        f"{MIN_SEPARATION:g} A); fix the structure file")


def _frames(path, upto: int | None = 2) -> int:
    """Frames of a structure file, counted up to ``upto`` (None: all)."""
    from ase.io import iread

    n = 0
    try:
        for _ in iread(path, index=":"):
            n += 1
            if upto is not None and n >= upto:
                break
    except Exception:  # noqa: BLE001 - a format that cannot list its frames holds one (reading it is checked next)
        return 1
    return n


#: atoms of a structure file closer than this (in A) sit on top of each other: a broken file, not a structure
MIN_SEPARATION = 0.1


def _file_geometry_problem(atoms) -> str | None:
    """What makes a structure file's geometry unusable before any model sees it (a model would be blamed for it):
    a coordinate or cell entry that is not finite, a periodic direction without a cell vector, a lattice translation
    shorter than ``MIN_SEPARATION`` (every atom on top of its own image)."""
    import itertools

    import numpy as np

    if len(atoms) == 0:
        return "holds no atom"
    if (atoms.numbers == 0).any():
        i = int(np.argmax(atoms.numbers == 0))
        return (f"holds atom {i} of atomic number 0 (the dummy symbol X), which no model knows; give every atom a "
                "chemical element")
    pos = atoms.get_positions()
    if not np.isfinite(pos).all():
        i = int(np.argwhere(~np.isfinite(pos))[0][0])
        return f"gives atom {i} a position that is not a finite number ({pos[i].tolist()})"
    cell = np.asarray(atoms.cell[:], dtype=float)
    if not np.isfinite(cell).all():
        return "has a cell entry that is not a finite number"
    periodic = [k for k in range(3) if atoms.pbc[k]]
    for k in periodic:
        if np.linalg.norm(cell[k]) == 0:
            return (f"is periodic along cell vector {k + 1} but that vector is zero (give the lattice, or make the "
                    "structure non-periodic)")
    if periodic:
        if abs(np.linalg.det(cell)) < 1e-12 and len(periodic) == 3:
            return "has a periodic cell of zero volume (its lattice vectors are not independent)"
        shortest = min(np.linalg.norm(np.dot(c, cell[periodic]))
                       for c in itertools.product((-1, 0, 1), repeat=len(periodic)) if any(c))
        if shortest < MIN_SEPARATION:
            return (f"has a lattice translation {shortest:.3g} A long, so every atom sits on its own periodic image "
                    f"(closer than {MIN_SEPARATION:g} A)")
    return None


def _overlap(atoms) -> tuple[int, int, float] | None:
    import numpy as np

    d = atoms.get_all_distances(mic=bool(atoms.pbc.any()))
    np.fill_diagonal(d, np.inf)
    i, j = np.unravel_index(int(np.argmin(d)), d.shape)
    return (int(min(i, j)), int(max(i, j)), float(d[i, j])) if d[i, j] < MIN_SEPARATION else None


def _check_probes(path: Path, text: str, i: int, settings):
    """A contract whose settings give its check no probe at all checks nothing: a usage error naming the field(s),
    for every law (the check's own ``probes`` for these settings is empty)."""
    try:
        first = next(iter(CHECKS[settings.check]().probes(settings)), None)
    except Exception:  # noqa: BLE001 - a probe that cannot be built is reported where it is measured
        return
    if first is not None:
        return
    fix = CHECKS[settings.check]().no_probe_fix(settings)
    if fix is not None:
        where = f"{path}" if text is None else f"{path}:{_line_of(text, i, ('structures',))}: contract[{i}]"
        raise ContractFileError(f"{where} ({settings.name}) checks nothing: {fix}")
    empty = [k for k in type(settings).model_fields
             if isinstance(getattr(settings, k, None), (list, tuple)) and not getattr(settings, k)]
    named = [k for k in empty if k in settings.model_fields_set] or empty
    fields = ", ".join(named) if named else "its settings"
    line = None if text is None else _line_of(text, i, (named[0],)) if named else _line_of(text, i, ("name",))
    where = f"{path}" if text is None else f"{path}:{line}: contract[{i}]"
    raise ContractFileError(f"{where} ({settings.name}) checks nothing: {fields} give(s) "
                            f"its {settings.check} check no probe; list at least one entry in {fields}")


#: field names that hold element symbols wherever they appear (a contract's own fields or a nested table's)
ELEMENT_FIELDS = {"element", "elements", "adatom", "pairs", "metals"}


def _symbol_fields(obj, loc: tuple = ()):
    """(location, value) of every field holding element symbols inside a settings object: fields named in
    ``ELEMENT_FIELDS`` or marked ``element_symbols``, in nested tables and lists too (structure specs check their
    own)."""
    from ..structures import _Spec

    if isinstance(obj, BaseModel) and not isinstance(obj, _Spec):
        for name, info in type(obj).model_fields.items():
            value = getattr(obj, name, None)
            if name in ELEMENT_FIELDS or (info.json_schema_extra or {}).get("element_symbols"):
                yield loc + (name,), value
            else:
                yield from _symbol_fields(value, loc + (name,))
    elif isinstance(obj, (list, tuple)):
        for k, x in enumerate(obj):
            yield from _symbol_fields(x, loc + (k,))


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for x in value for s in _strings(x)]
    return []


def _check_symbols(path: Path, text: str, i: int, settings):
    """Every element symbol a contract names is a real element, spelt case-exactly as the periodic table does
    ('cu' or 'CU' is a usage error naming the field and 'Cu')."""
    from ase.data import chemical_symbols

    known = set(chemical_symbols[1:])
    by_lower = {s.lower(): s for s in known}
    for loc, value in _symbol_fields(settings):
        bad = [s for s in _strings(value) if s not in known]
        if bad:
            field = ".".join(str(x) for x in loc)
            fixes = [f"{b!r} -> {by_lower[b.lower()]!r}" for b in bad if b.lower() in by_lower]
            fix = f"write {', '.join(fixes)}" if fixes else "write symbols as the periodic table does ('Cu', 'O')"
            raise ContractFileError(f"{_at(path, text, i, loc[:1])}.{field}: unknown element "
                                    f"symbol(s) {bad} (symbols are case-sensitive); {fix}")


#: the largest tolerance a contract may set, in its key's unit (eV, eV/A, GPa, A, a fraction): every violation these
#: checks measure on a physical model lies far below it, so a larger one makes a check that cannot fail
TOLERANCE_CEILING = 1e3


def _check_tolerances(path: Path, text: str, i: int, settings):
    for key, tau in settings.tolerance.items():  # the 100x ceiling first: it names the built-in default and the fix
        ceiling = tolerance_ceiling(settings.check, key)
        if ceiling is not None and tau > ceiling[0]:
            raise ContractFileError(f"{_at(path, text, i, ('tolerance',))}.tolerance.{key} = {tau:g} is more than "
                                    f"{CEILING_FACTOR:g}x the built-in default ({ceiling[0] / CEILING_FACTOR:g} in "
                                    f"{ceiling[1]}): a check that loose hardly tells a broken model from a clean one; use tolerance {key} "
                                    f"<= {ceiling[0]:g}")
        if not tau <= TOLERANCE_CEILING:  # (also NaN)
            raise ContractFileError(f"{_at(path, text, i, ('tolerance',))}.tolerance.{key} = {tau:g} is above "
                                    f"{TOLERANCE_CEILING:g}: no violation this check measures reaches it, so the "
                                    f"check could never fail; use a tolerance {key} of a few times its noise floor")
        floor = tolerance_floor(settings.check, key)
        if floor is not None and tau < floor[0]:
            raise ContractFileError(f"{_at(path, text, i, ('tolerance',))}.tolerance.{key} = {tau:g} is below the "
                                    "calibrated "
                                    f"noise floor {floor[0]:g} (measured on {floor[1]}); a verdict below the noise "
                                    f"is noise: use tolerance {key} >= {floor[0]:g}")


def check_settings(settings, label: str, base: Path | None = None, limit: int = MAX_ATOMS):
    """What :func:`parse_contracts` checks beyond the schema, for settings made in code (``mlip_check``): tolerances
    not below the noise floor, element symbols, structures (files relative to ``base``, the atom limit) and at
    least one probe; a :class:`ContractFileError` starting with ``label``."""
    _check_tolerances(label, None, 0, settings)
    _check_symbols(label, None, 0, settings)
    _check_structures(label, None, 0, settings, None, limit, base=base or Path.cwd())
    _check_probes(label, None, 0, settings)


def refuse_fixed_limit(path, data: dict, fixed_limit: int | None) -> None:
    """A file held to a fixed atom limit (a protocol in generated_tests/) may not set max_atoms."""
    if fixed_limit is not None and "max_atoms" in data:
        raise ContractFileError(f"{path}:1: max_atoms does not apply here: protocols are held to {fixed_limit} atoms "
                                "per structure; remove the max_atoms line (or move the file to contracts/)")


def parse_contracts(path: str | Path, text: str | None = None, root: str | Path | None = None,
                    fixed_limit: int | None = None) -> list[ContractSettings]:
    """Validated settings of every contract in a file (``fixed_limit``: an atom limit the file may not raise, the
    agent's zone).

    Validation is complete and strict: types as written (``hard = "yes"`` is an error, not True), element
    symbols, physical ranges with units, structure files that exist (inside ``root`` when given), the
    atom limit, tolerances not below the calibrated noise floor, unique names.
    """
    path = Path(path)
    if text is None:
        text = _decode(path)
    deep = (f"{path}: arrays or tables nested too deeply (past Python's recursion limit); a contract needs a few "
            "levels: flatten the value")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ContractFileError(f"{path}: not valid TOML: {exc}") from exc
    except RecursionError:
        raise ContractFileError(deep) from None
    tables = data.get("contract")
    if not isinstance(tables, list) or not tables:
        raise ContractFileError(f"{path}:1: no [[contract]] table; each contract starts with [[contract]]")
    if len(tables) > MAX_CONTRACTS:
        raise ContractFileError(f"{path}: more than {MAX_CONTRACTS} contracts in one file")
    unknown_top = set(data) - TOP_LEVEL
    if unknown_top:
        raise ContractFileError(f"{path}:1: unknown top-level key(s) {sorted(unknown_top)}; only [[contract]] tables "
                                "and max_atoms")
    refuse_fixed_limit(path, data, fixed_limit)
    limit = data.get("max_atoms", MAX_ATOMS) if fixed_limit is None else fixed_limit
    if type(limit) is not int or not (1 <= limit <= MAX_ATOMS_CEILING):
        raise ContractFileError(f"{path}:1: max_atoms must be an integer between 1 and {MAX_ATOMS_CEILING}, "
                                f"got {limit!r}")
    adapter = settings_adapter()
    out, names = [], set()
    for i, table in enumerate(tables):
        check = table.get("check") if isinstance(table, dict) else None
        if check not in CHECKS:
            line = _line_of(text, i, ("check",))
            known = ", ".join(sorted(CHECKS))
            if check is None:
                raise ContractFileError(f"{path}:{line}: contract[{i}] has no check: write check = \"NAME\" (one "
                                        f"of: {known})")
            raise ContractFileError(f"{path}:{line}: contract[{i}].check: unknown check {check!r} (known: {known})")
        try:
            # JSON mode + strict: a string is never a number or a boolean, 1 is not true; arrays may fill tuples
            settings = adapter.validate_json(json.dumps(table, default=str), strict=True)
        except RecursionError:
            raise ContractFileError(deep) from None
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            if loc and loc[0] == check:
                loc = loc[1:]
            if not loc and "tolerance" in err["msg"]:  # the settings' tolerance validator: point at its line
                loc = ("tolerance",)
            field = ".".join(str(x) for x in loc) or "(table)"
            line = _line_of(text, i, loc)
            msg = err["msg"].removeprefix("Value error, ")
            if loc == ("max_atoms",) and err["type"] == "extra_forbidden":  # a file setting written in a table
                msg = ("max_atoms is a setting of the whole file, not of one contract: write max_atoms = N at the "
                       "top of the file, before the first [[contract]]")
            got = err.get("input")
            shown = f" (got {got!r})" if err["type"] in ("bool_type", "int_type", "float_type", "string_type",
                                                         "int_from_float", "bool_parsing", "less_than_equal",
                                                         "less_than", "greater_than_equal", "greater_than",
                                                         "finite_number") else ""
            hint = _field_hint(CHECKS[check].Settings, loc) if "than" in err["msg"] else ""
            raise ContractFileError(f"{path}:{line}: contract[{i}].{field}: {msg}{shown}{hint}") from None
        if settings.name in names:
            raise ContractFileError(f"{path}:{_line_of(text, i, ('name',))}: duplicate contract name {settings.name!r}")
        names.add(settings.name)
        _check_tolerances(path, text, i, settings)
        _check_symbols(path, text, i, settings)
        _check_structures(path, text, i, settings, root, limit,
                          fix=RAISE_LIMIT if fixed_limit is None else "use a smaller structure (protocols may not "
                                                                         "raise the limit)")
        _check_probes(path, text, i, settings)
        out.append(settings)
    return out
