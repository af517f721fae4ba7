"""The validator gate: nothing a planner proposes is written or run before it passes here.

A protocol is data only. The gate checks, in order: the file name (a slug, no
path, no shell metacharacters), the raw content (size, no templating or code),
every string value (a plain character set), the schema (the table must parse
as a contract file with :func:`~pytest_mlip.contracts.files.parse_contracts`),
the admissible domain of each check's parameters, the size of what it would
build, element support by the target and every committee model, tolerances no
tighter than the check's calibrated defaults, and no repeat of an existing
protocol (normalised content compared with ``contracts/``, the built-in suite,
``generated_tests/`` and everything already pre-registered in the memory).
Errors are one line each and name the fix, so a planner can correct itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MlipError
from .protocols import normalized, to_toml, unit_atoms, unit_elements, units_of

#: limits on one protocol file
MAX_FILE_BYTES = 16_384
MAX_CONTRACTS_PER_FILE = 8
MAX_UNITS = 24
MAX_ATOMS_PER_UNIT = 200
MAX_STRING = 300
MAX_SAMPLES = 10
MAX_SLUG = 60

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9_\-]{0,58}[a-z0-9])?$")
#: characters allowed in any string value of a protocol (letters, digits, plain punctuation)
SAFE_TEXT = re.compile(r"^[A-Za-z0-9 _.,:;()+\-/=<>%'~\[\]*^]*$")
#: content that has no business in a data file
FORBIDDEN = [
    (re.compile(r"\{\{|\}\}|\{%|%\}|\{#|#\}|\$\{|<%|%>"), "templating syntax"),
    (re.compile(r"`|\$\(|\|\s*\w|&&|;\s*(rm|sh|bash|curl|wget|python)\b"), "shell syntax"),
    (re.compile(r"__\w+__|\bimport\s+\w|\beval\s*\(|\bexec\s*\(|\bos\.system|\bsubprocess\b|\blambda\b|"
                r"\bopen\s*\(|!!python|<script", re.I), "code"),
]
def open_checks() -> dict[str, dict[str, tuple[float, float]]]:
    """Checks an agent may write protocols for, read from the law records: those whose law has a detective
    playbook, with the admissible range of each numeric parameter the playbook states (``bounds``)."""
    from ..laws import LAWS

    out = {}
    for name, law in LAWS.items():
        cls = law.playbook_class()
        if cls is not None:
            out[name] = dict(cls.bounds)
    return out


def law_hardness(check: str) -> bool:
    """Whether a protocol of ``check`` gates a run: its law's own setting (a protocol may not change it)."""
    from ..laws import CHECKS

    return bool(CHECKS[check].Settings.model_fields["hard"].default)


class ProtocolRejected(MlipError):
    """A protocol failed the validator gate; the message lists every reason."""


@dataclass
class GateResult:
    ok: bool
    errors: list[str] = field(default_factory=list)
    settings: list = field(default_factory=list)
    text: str = ""

    def raise_if_failed(self, what: str = "protocol"):
        if not self.ok:
            raise ProtocolRejected(f"{what} refused by the validator: " + "; ".join(self.errors))


def _walk_strings(obj, path="") -> list[tuple[str, str]]:
    out = []
    if isinstance(obj, str):
        out.append((path, obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.append((f"{path}.{k}" if path else str(k), str(k)))
            out.extend(_walk_strings(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.extend(_walk_strings(v, f"{path}[{i}]"))
    return out


def _walk_numbers(obj, path="") -> list[tuple[str, float]]:
    out = []
    if isinstance(obj, bool):
        return out
    if isinstance(obj, (int, float)):
        out.append((path, obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_walk_numbers(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.extend(_walk_numbers(v, f"{path}[{i}]"))
    return out


def check_slug(slug: str) -> list[str]:
    if not isinstance(slug, str) or not SLUG.match(slug):
        return [f"file name slug {slug!r} is not allowed: use 1-{MAX_SLUG} lower-case letters, digits, '-' or '_' "
                "(no path separators, dots or shell characters)"]
    return []


def check_text(text: str) -> list[str]:
    """Raw-content checks of a protocol file (or of a planner's table turned into text)."""
    errors = []
    if len(text.encode()) > MAX_FILE_BYTES:
        errors.append(f"protocol is {len(text.encode())} bytes, more than {MAX_FILE_BYTES}: fewer units per file")
    for pattern, what in FORBIDDEN:
        m = pattern.search(text)
        if m:
            errors.append(f"{what} {m.group(0)!r} is not allowed in a protocol (a protocol is data only)")
    if "\x00" in text or any(ord(c) < 9 for c in text):
        errors.append("control characters are not allowed in a protocol")
    return errors


def check_table(table: Any) -> list[str]:
    """Checks of one contract table (a dict) before it becomes text."""
    if not isinstance(table, dict):
        return [f"a protocol is one contract table (a mapping), got {type(table).__name__}"]
    errors = []
    for path, s in _walk_strings(table):
        hit = next(((what, m.group(0)) for pattern, what in FORBIDDEN for m in [pattern.search(s)] if m), None)
        if hit:
            errors.append(f"{path}: {hit[0]} {hit[1]!r} is not allowed in a protocol (a protocol is data only)")
        elif len(s) > MAX_STRING:
            errors.append(f"{path}: string of {len(s)} characters, more than {MAX_STRING}")
        elif not SAFE_TEXT.match(s):
            bad = sorted({c for c in s if not SAFE_TEXT.match(c)})
            errors.append(f"{path}: character(s) {''.join(bad)!r} not allowed; use letters, digits and plain "
                          "punctuation")
    for path, x in _walk_numbers(table):
        if isinstance(x, float) and not math.isfinite(x):
            errors.append(f"{path}: non-finite number")
        elif abs(x) > 1e6:
            errors.append(f"{path}: {x:g} is outside any admissible range")
    for path, s in _walk_strings(table):
        if path.endswith(".kind") and s == "file":
            errors.append(f"{path}: structures read from files are not allowed in agent protocols (a protocol is "
                          "self-contained data; name the structure with a molecule/bulk/cluster/slab/dimer spec)")
    return errors


class Validator:
    """The gate for one detective run: knows the models, the existing protocols and the memory."""

    def __init__(self, target: str, committee: list[str], existing_dirs: list[Path] | None = None,
                 memory_protocols: list[dict] | None = None, include_builtin: bool = True,
                 check_support: bool = True):
        self.target = target
        #: refuse elements a model of this run lacks (the agent writing for its target and committee); a kept file
        #: collected from generated_tests/ is a regression test for any model: its unsupported elements are skipped
        #: at run time, as in every contract file
        self.check_support = check_support
        self.committee = list(committee)
        self.existing_dirs = [Path(p) for p in (existing_dirs or [])]
        self.memory_protocols = list(memory_protocols or [])
        self.include_builtin = include_builtin
        self._existing: dict[str, str] | None = None

    # --- what exists ---------------------------------------------------------------------------------------------
    def existing(self) -> dict[str, str]:
        """Normalised content -> where it is, for every protocol the new one must not repeat."""
        if self._existing is not None:
            return self._existing
        from ..contracts.files import parse_contracts

        out: dict[str, str] = {}
        dirs = list(self.existing_dirs)
        if self.include_builtin:
            from ..contracts.suite import builtin_contracts_dir

            dirs.append(builtin_contracts_dir())
        for d in dirs:
            if not d.is_dir():
                continue
            for path in sorted(d.glob("mlip_*.toml")):
                try:
                    for s in parse_contracts(path):
                        out.setdefault(normalized(s), f"{path.name}:{s.name}")
                except MlipError:
                    continue
        self._existing = out
        return out

    def remember(self, settings, where: str):
        self.existing()[normalized(settings)] = where

    # --- the gate ----------------------------------------------------------------------------------------------
    def protocol(self, table: Any, where: str = "protocol", check_repeat: bool = True) -> GateResult:
        """Validate one contract table; on success ``settings`` holds the parsed settings."""
        return self.file([table], slug=None, where=where, check_repeat=check_repeat)

    def file(self, tables: list, slug: str | None, header: list[str] | None = None, where: str = "protocol",
             check_repeat: bool = True) -> GateResult:
        """Validate a whole protocol file: its slug, its text and every table in it."""
        errors: list[str] = []
        if slug is not None:
            errors += check_slug(slug)
        if not isinstance(tables, list) or not tables:
            return GateResult(False, ["a protocol file needs at least one contract table"])
        if len(tables) > MAX_CONTRACTS_PER_FILE:
            errors.append(f"{len(tables)} contracts in one file, more than {MAX_CONTRACTS_PER_FILE}")
        for t in tables:
            errors += check_table(t)
        for h in header or []:
            errors += [f"header: {e}" for e in check_text(h)]
            if "\n" in h or "\r" in h:
                errors.append("header lines must not contain line breaks")
        if errors:
            return GateResult(False, errors)
        try:
            text = to_toml(tables, header)
        except (TypeError, ValueError) as exc:
            return GateResult(False, [str(exc)])
        errors += check_text(text)
        if errors:
            return GateResult(False, errors, text=text)
        settings = self._schema(text, where, errors)
        if errors:
            return GateResult(False, errors, text=text)
        for t, s in zip(tables, settings):
            own = type(s).model_fields["basis"].default
            if s.basis != own:
                errors.append(f"{s.name}: basis = {s.basis!r}, but {s.check} is a law of basis {own!r} (a protocol "
                              "may not change how its law is decided); remove the basis line")
            decided = law_hardness(s.check)
            if s.hard != decided:
                errors.append(f"{s.name}: hard = {str(s.hard).lower()}, but {s.check} is a {'hard' if decided else 'soft'} "
                              "law (a protocol may not change whether its law gates a run); remove the hard line")
            errors += self._domain(t, s)
            errors += self._support(t, s) if self.check_support else []
            if check_repeat:
                errors += self._repeat(s)
        seen = set()
        for s in settings:
            n = normalized(s)
            if n in seen:
                errors.append(f"contract {s.name!r} repeats another contract of the same file")
            seen.add(n)
        return GateResult(not errors, errors, settings=settings, text=text)

    def _schema(self, text: str, where: str, errors: list[str]) -> list:
        from ..contracts.files import MAX_ATOMS, parse_contracts

        try:
            return parse_contracts(Path(f"{where}.toml"), text=text, fixed_limit=MAX_ATOMS)
        except MlipError as exc:
            errors.append(f"schema: {exc}")
        except Exception as exc:  # any parser failure is a refusal, never a crash
            errors.append(f"schema: {type(exc).__name__}: {exc}")
        return []

    def _domain(self, table: dict, settings) -> list[str]:
        errors = []
        check = settings.check
        domains = open_checks()
        if check not in domains:
            return [f"check {check!r} is not open to agent protocols (allowed: {', '.join(sorted(domains))})"]
        for key, (lo, hi) in domains[check].items():
            x = getattr(settings, key, None)
            if x is not None and not (lo <= x <= hi):
                errors.append(f"{settings.name}: {key} = {x:g} outside the admissible range [{lo:g}, {hi:g}]")
        defaults = type(settings).default_tolerance
        for key, tau in settings.tolerance.items():
            if key in defaults and tau < defaults[key] * (1 - 1e-9):
                errors.append(f"{settings.name}: tolerance {key} = {tau:g} is tighter than the calibrated default "
                              f"{defaults[key]:g} (tolerances come from measured noise; an agent may not tighten them)")
            elif key in defaults and tau > defaults[key] * (1 + 1e-9):
                errors.append(f"{settings.name}: tolerance {key} = {tau:g} is looser than the calibrated default "
                              f"{defaults[key]:g} (a protocol keeps the tolerance its finding was measured with; to "
                              "loosen it, make it a contract of your own under contracts/)")
        units = units_of(table)
        if not units:
            errors.append(f"{settings.name}: no probe structures (pairs, surfaces or structures)")
        if len(units) > MAX_UNITS:
            errors.append(f"{settings.name}: {len(units)} probe units, more than {MAX_UNITS}")
        for f, u in units:
            try:
                n = unit_atoms(f, u)
            except Exception as exc:
                errors.append(f"{settings.name}: cannot size unit {u!r} ({exc})")
                continue
            if n > MAX_ATOMS_PER_UNIT:
                errors.append(f"{settings.name}: a unit builds {n} atoms, more than {MAX_ATOMS_PER_UNIT}")
        return errors

    def _support(self, table: dict, settings) -> list[str]:
        from ..models.registry import resolve

        elements: set[str] = set()
        for f, u in units_of(table):
            try:
                elements.update(unit_elements(f, u))
            except Exception as exc:
                return [f"{settings.name}: cannot read the elements of {u!r} ({exc})"]
        errors = []
        for spec in [self.target] + self.committee:
            try:
                info = resolve(spec).info
            except MlipError as exc:
                errors.append(str(exc))
                continue
            missing = info.supports(sorted(elements))
            if missing:
                errors.append(f"{settings.name}: element(s) {', '.join(missing)} not supported by {spec}; "
                              "choose elements every model supports")
        return errors

    def _repeat(self, settings) -> list[str]:
        n = normalized(settings)
        where = self.existing().get(n)
        if where:
            return [f"{settings.name}: repeats the existing protocol {where}"]
        from ..contracts.files import parse_contracts

        for i, t in enumerate(self.memory_protocols):
            try:
                prior = parse_contracts(Path("memory.toml"), text=to_toml([t]))[0]
            except Exception:
                continue
            if normalized(prior) == n:
                return [f"{settings.name}: repeats protocol {t.get('name')!r} already pre-registered in the memory"]
        return []


def safe_path(folder: Path, slug: str) -> Path:
    """``folder/mlip_<slug>.toml``, refusing anything that would land outside ``folder``."""
    errors = check_slug(slug)
    if errors:
        raise ProtocolRejected(errors[0])
    folder = Path(folder).resolve()
    path = (folder / f"mlip_{slug}.toml").resolve()
    if path.parent != folder:
        raise ProtocolRejected(f"protocol path {path} is outside {folder}")
    return path
