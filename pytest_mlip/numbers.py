"""Numbers given as text: option values, ini values, environment variables.

One parser for every numeric setting a user types, so each mistake gets the same one-line message naming the
setting, what it must be and an example (``--mlip-adversary-budget='abc' is not a whole number >= 1 of model
evaluations; give e.g. --mlip-adversary-budget=200``). pytest options are declared with :func:`add_number_option`
(text on the command line, converted by :func:`convert_options` at configure time, so argparse's four-line usage
error never shows); the console script's options use :func:`argtype`.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from .errors import MlipError


@dataclass(frozen=True)
class Number:
    """What a numeric setting must be: a whole number or a real one, its least value (``strict``: above it)."""

    what: str  # e.g. "a number of model evaluations"
    example: str
    integer: bool = True
    minimum: float = 0
    strict: bool = False  # the value must be above minimum, not at it
    maximum: float = math.inf  # the largest value the setting can take (a timer's limit, say)

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a finite number"
        bound = f"> {self.minimum:g}" if self.strict else f">= {self.minimum:g}"
        if self.maximum < math.inf:
            bound += f" and <= {self.maximum:g}"
        return f"{self.what} ({kind} {bound})"

    def parse(self, raw, name: str, ini: str | None = None):
        """The value of ``raw`` (text or a number), or :class:`MlipError` in one line naming ``name`` (or the ini
        option ``ini`` it came from) and the fix."""
        value = None
        if isinstance(raw, bool):
            value = None
        elif isinstance(raw, (int, float)):
            value = raw
        elif isinstance(raw, str):
            text = raw.strip()
            try:
                value = int(text) if self.integer else float(text)
            except ValueError:
                value = None
        ok = value is not None and math.isfinite(value) and (value > self.minimum if self.strict
                                                              else value >= self.minimum) and value <= self.maximum
        if ok and self.integer and value != int(value):
            ok = False
        if not ok:
            if ini:
                raise MlipError(f"ini option {ini} = {raw!r} is not {self.describe()}; write e.g. {ini} = "
                                f"{self.example} (or give {name}=...)")
            raise MlipError(f"{name}={raw!r} is not {self.describe()}; give e.g. {name}={self.example}")
        return int(value) if self.integer else float(value)


#: pytest option name -> what it must be (filled by add_number_option)
NUMBER_OPTIONS: dict[str, Number] = {}


def add_number_option(group, name: str, number: Number, **kwargs):
    """Declare a numeric ``--mlip-*`` option: taken as text, converted and checked by :func:`convert_options`."""
    NUMBER_OPTIONS[name] = number
    group.addoption(name, action="store", type=str, **kwargs)


def convert_options(config, from_ini=frozenset()):
    """Replace each numeric option's text (command line, or ini for the dests in ``from_ini``) by its value; a bad
    value is a usage error."""
    for opt in config._parser.getgroup("mlip").options:
        name = opt.names()[0]
        number = NUMBER_OPTIONS.get(name)
        raw = getattr(config.option, opt.dest, None)
        if number is None or raw is None:
            continue
        setattr(config.option, opt.dest, number.parse(raw, name, opt.dest if opt.dest in from_ini else None))


def argtype(number: Number, name: str):
    """An argparse ``type=`` for the console script: the same message, as argparse's error."""

    def parse(text):
        try:
            return number.parse(text, name)
        except MlipError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = number.describe()
    return parse


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser with its error in one line (``prog: error: message``, exit 2), no usage block."""

    def error(self, message):
        head, _, rest = message.partition(": ")
        if head.startswith("argument ") and rest.startswith(head.split()[-1].split("/")[-1] + "="):
            message = rest  # our own message names the option already
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
