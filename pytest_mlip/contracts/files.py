"""Contract files: TOML data validated against the check types' schemas.

A file holds one or more ``[[contract]]`` tables; each selects a check type
with ``check = "..."`` and gives its parameters. A file that does not match
gets a :class:`ContractFileError` naming the file, line and field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Union

from pydantic import Field, TypeAdapter, ValidationError

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


def parse_contracts(path: str | Path, text: str | None = None) -> list[ContractSettings]:
    """Validated settings of every contract in a file."""
    path = Path(path)
    if text is None:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ContractFileError(f"{path}: file larger than {MAX_FILE_BYTES} bytes")
        text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ContractFileError(f"{path}: not valid TOML: {exc}") from exc
    tables = data.get("contract")
    if not isinstance(tables, list) or not tables:
        raise ContractFileError(f"{path}:1: no [[contract]] table; each contract starts with [[contract]]")
    if len(tables) > MAX_CONTRACTS:
        raise ContractFileError(f"{path}: more than {MAX_CONTRACTS} contracts in one file")
    unknown_top = set(data) - {"contract"}
    if unknown_top:
        raise ContractFileError(f"{path}:1: unknown top-level key(s) {sorted(unknown_top)}; only [[contract]] tables")
    adapter = settings_adapter()
    out, names = [], set()
    for i, table in enumerate(tables):
        check = table.get("check")
        if check not in CHECKS:
            line = _line_of(text, i, ("check",))
            known = ", ".join(sorted(CHECKS))
            raise ContractFileError(f"{path}:{line}: contract[{i}].check: unknown check {check!r} (known: {known})")
        try:
            settings = adapter.validate_python(table)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            if loc and loc[0] == check:
                loc = loc[1:]
            field = ".".join(str(x) for x in loc) or "(table)"
            line = _line_of(text, i, loc)
            raise ContractFileError(f"{path}:{line}: contract[{i}].{field}: {err['msg']}") from None
        if settings.name in names:
            raise ContractFileError(f"{path}:{_line_of(text, i, ('name',))}: duplicate contract name {settings.name!r}")
        names.add(settings.name)
        base = path.parent
        for spec in getattr(settings, "structures", []):
            if getattr(spec, "kind", "") == "file" and not Path(spec.path).is_absolute():
                object.__setattr__(spec, "path", str(base / spec.path))
        out.append(settings)
    return out
