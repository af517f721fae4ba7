"""Keep one model's torch default dtype from leaking into another's results.

MACE calls ``torch.set_default_dtype`` when it loads; any torch model created or
called afterwards in the same process then silently runs in that dtype. Every
load and every call goes through :func:`torch_default_dtype`, which sets the
dtype the model expects and restores the previous one on exit.
"""

from __future__ import annotations

import contextlib
import sys


def _torch():
    return sys.modules.get("torch")


def current_default_dtype():
    torch = _torch()
    return None if torch is None else torch.get_default_dtype()


@contextlib.contextmanager
def torch_default_dtype(dtype):
    """Run the body with ``dtype`` as torch's default and restore the old one after.

    ``dtype=None`` only restores (used while loading, to undo what a loader set).
    """
    torch = _torch()
    before = None if torch is None else torch.get_default_dtype()
    try:
        if dtype is not None:
            import torch as _t

            _t.set_default_dtype(dtype)
        yield
    finally:
        torch = _torch()
        if torch is not None and before is not None:
            torch.set_default_dtype(before)
        elif torch is not None and before is None:
            torch.set_default_dtype(torch.float32)
