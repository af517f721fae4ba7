"""What we know about a model: metadata that every verdict carries."""

from __future__ import annotations

import math
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator


class ModelInfo(BaseModel):
    """Metadata of one registered model; ``usable`` says whether it loads here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    family: str
    description: str = ""
    elements: tuple[str, ...] | None = None  # None: every element (analytic) or not yet probed
    cutoff: float | None = None  # Angstrom
    dtype: str = "float32"
    implemented_properties: tuple[str, ...] = ("energy", "forces")
    conservative: bool | None = None  # forces are -dE/dx by construction (autograd)
    training_data: str = ""
    functional: str = ""
    channel: str | None = None  # modal / head / task, where the model has several
    version: str | None = None  # package version
    weights: str | None = None  # path of the weights file or folder
    shipped: bool = False  # weights travel inside a wheel (offline)

    def supports(self, symbols) -> list[str]:
        """The symbols of ``symbols`` this model does not support (empty: all supported)."""
        if self.elements is None:
            return []
        allowed = set(self.elements)
        return sorted({s for s in symbols if s not in allowed})


#: what each ``mlip_metadata`` field must be, as the fix an error names
METADATA_HINTS = {
    "description": 'a string, e.g. "My potential, fine-tuned on Cu/Ni"',
    "elements": 'a tuple of element symbols as the periodic table writes them, e.g. ("Cu", "Ni"), or None',
    "cutoff": "the cutoff radius in Angstrom, a number > 0 and <= 100, e.g. 5.0",
    "dtype": 'one of "float16", "bfloat16", "float32", "float64", "mixed", "unknown"',
    "conservative": "True or False (a boolean, not a string), or None",
    "training_data": 'a string, e.g. "MPtrj"',
    "functional": 'a string, e.g. "PBE"',
    "channel": "a string (the modal / head / task used), or None",
    "version": 'a string, e.g. "1.2.0", or None',
    "weights": "the path of the weights file or folder (it must exist; relative paths are from the current folder)",
}


#: words of an outcome, which model metadata may not hold (the report prints metadata beside its verdicts)
OUTCOME_WORDS = frozenset(("pass", "passes", "passed", "passing", "fail", "fails", "failed", "failing", "failure",
                           "error", "errors", "ok", "okay", "verdict", "verdicts", "violation", "violations",
                           "violates", "approved", "lgtm", "certified", "verified", "compliant", "conforms",
                           "contracts", "flawless", "perfect"))


class FactoryMetadata(BaseModel):
    """The ``mlip_metadata`` dict a factory's calculator may carry, validated strictly where it is read: types as
    written (``conservative = "yes"`` is an error), real element symbols, a positive cutoff in Angstrom, a known
    dtype, a weights path that exists, and no unknown key."""

    model_config = ConfigDict(extra="forbid", strict=True)

    description: str | None = None
    elements: tuple[str, ...] | None = None
    cutoff: float | None = None
    dtype: Literal["float16", "bfloat16", "float32", "float64", "mixed", "unknown"] | None = None
    conservative: bool | None = None
    training_data: str | None = None
    functional: str | None = None
    channel: str | None = None
    version: str | None = None
    weights: str | None = None

    @field_validator("elements", mode="before")
    @classmethod
    def _elements(cls, value):
        if isinstance(value, list):  # a list reads as naturally as a tuple
            value = tuple(value)
        if isinstance(value, tuple):
            from ase.data import chemical_symbols

            if not value:
                raise ValueError("empty: a model that supports no element checks nothing")
            known = set(chemical_symbols[1:])
            bad = [s for s in value if s not in known]
            if bad:
                lower = {s.lower(): s for s in known}
                fixes = [f"{b!r} -> {lower[b.lower()]!r}" for b in bad if isinstance(b, str) and b.lower() in lower]
                raise ValueError(f"unknown element symbol(s) {bad} (symbols are case-sensitive)"
                                 + (f": write {', '.join(fixes)}" if fixes else ""))
        return value

    @field_validator("description", "training_data", "functional", "channel", "version")
    @classmethod
    def _words(cls, value):
        """The report prints these as the model states them: they name the model, never an outcome (a held-out case:
        version "PASS-all-16-hard-contracts" in the Models table of a run that failed)."""
        import re

        if isinstance(value, str):
            if len(value) > 200 or "\n" in value:
                raise ValueError("one line of at most 200 characters")
            said = sorted(set(re.findall(r"[a-z]+", value.casefold())) & OUTCOME_WORDS)
            if said:
                raise ValueError(f"it says {', '.join(said)}: metadata names the model, a report's verdicts say how it "
                                 "does")
        return value

    @field_validator("cutoff", mode="before")
    @classmethod
    def _cutoff(cls, value):
        import numbers

        import numpy as np

        # numpy scalars too: numpy.float32(nan) passed where float('nan') was refused (held-out round 12)
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
            value = float(value)
        if isinstance(value, float) and not (math.isfinite(value) and 0 < value <= 100):
            raise ValueError("out of range")
        return value

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, value):
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, str):
            path = os.path.abspath(os.path.expanduser(value))
            if not os.path.exists(path):
                raise ValueError(f"{value!r} does not exist (looked for {path})")
            return path
        return value


def read_metadata(owner: str, raw) -> dict:
    """The fields of a calculator's ``mlip_metadata`` that it sets, validated (:class:`FactoryMetadata`); a
    :class:`~pytest_mlip.errors.ModelUnavailableError` in one line naming ``owner``, the field and the fix."""
    import difflib

    from pydantic import ValidationError

    from ..errors import ModelUnavailableError

    where = f"{owner}: its calculator's mlip_metadata"
    if not isinstance(raw, dict):
        raise ModelUnavailableError(f"{where} is a {type(raw).__name__}, not a dict; give a dict such as "
                                    '{"elements": ("Cu", "Ni"), "cutoff": 5.0} (see README: Your own model)')
    fields = list(FactoryMetadata.model_fields)
    for key in raw:
        if key not in fields:
            close = difflib.get_close_matches(str(key), fields, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ModelUnavailableError(f"{where} has an unknown key {key!r}; {hint}the keys are {', '.join(fields)}")
    try:
        meta = FactoryMetadata.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "(dict)"
        msg = err["msg"].removeprefix("Value error, ")
        got = raw.get(field, None)
        raise ModelUnavailableError(f"{where}: {field} = {got!r}: {msg}; give {METADATA_HINTS.get(field, 'a valid value')}"
                                    ) from None
    return meta.model_dump(exclude_unset=True)
