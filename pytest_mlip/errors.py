"""Errors that reach the user as one line naming the fix."""


class MlipError(Exception):
    """A user-facing error: its message is one line that says what to do."""


def one_line(text: str) -> str:
    """A message as one line (any line breaks a library put in it folded into spaces)."""
    return " ".join(str(text).split())


class UnknownModelError(MlipError):
    pass


class ModelUnavailableError(MlipError):
    """The model is known but cannot be loaded here (weights or package missing)."""


class NotInStore(BaseException):
    """A replay's check asked for a configuration the store holds no model call for (BaseException: no check
    catches it, except the element skip, whose refused calls a run does not cite)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class ContractFileError(MlipError):
    """A contract or protocol file does not match the schema."""


class ModelEvaluationError(Exception):
    """A model raised or returned a non-finite value on one configuration.

    Not a user error: the contract engine turns it into a failed probe that
    carries the offending configuration, and the run goes on.
    """

    #: set by whoever turns the failure into a verdict (the contract engine, a law that names it): an unreported
    #: failure inside a pytest item makes the run incomplete
    reported: bool = False

    def __init__(self, model: str, atoms, message: str):
        self.model = model
        self.atoms = atoms
        super().__init__(f"{model}: {message} on {atoms.get_chemical_formula()}")


class ModelOutputError(ModelEvaluationError):
    """The model returned something that is not a valid output (wrong type, shape or a non-finite value).

    ``prop`` names the property (energy, forces, stress); the message says what was found.
    """

    def __init__(self, model: str, atoms, prop: str, message: str):
        self.prop = prop
        super().__init__(model, atoms, f"invalid {prop}: {message}")


class ModelTimeoutError(ModelEvaluationError):
    """One model call ran past ``--mlip-timeout``."""



def loads_json(text, **kwargs):
    """``json.loads`` for text a user can edit (a report, a baseline, a memory, a store's values): JSON nested too
    deeply for Python's reader raised RecursionError, a traceback from judge and render (held-out round 13); it is
    a :class:`json.JSONDecodeError` here, which every reader already turns into its one-line message."""
    import json

    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read (no file pytest-mlip writes nests like that)",
                                   text if isinstance(text, str) else "", 0) from None


def raised_where(exc: BaseException) -> str:
    """What an exception was and where it was raised, in one line: the innermost frame outside pytest and pluggy (a
    conftest's hook, a plugin, a model's code), for a hook that failed the run."""
    import traceback
    from pathlib import Path

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not any(part in f.filename.replace("\\", "/") for part in ("/_pytest/", "/pluggy/"))]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}()" if frames else ""
    message = one_line(str(exc))[:300]
    return f"{type(exc).__name__}{': ' + message if message else ''}{where}"
