"""One guard against ``os._exit(0)`` from model code outside a model call, shared by the pytest run and the
console script's commands.

Model code can end the process from where no verdict can catch it: a module that exits as it is imported, a thread
the model starts that calls ``os._exit(0)`` a moment later. Status 0 with nothing run read as a passed gate or an
approved report (held-out cases). Inside a model call, :func:`pytest_mlip.evaluation.evaluator.no_process_exit`
turns the call into an error verdict instead; this guard covers the rest of the process's life.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable, Optional


def guard_os_exit(result: Callable[[], Optional[int]], what: str,
                  before: Optional[Callable[[], None]] = None) -> Callable[[], None]:
    """Replace ``os._exit`` so that status 0 never ends the process before it has a result.

    ``result()`` is the run's or command's exit status once it is known (everything printed), else None. Until then
    ``os._exit(n)`` prints one line on stderr saying ``what`` did not finish, after ``before()`` (which may release
    pytest's capture or leave a note for an xdist controller), and exits n, or 1 for 0; once it is known,
    ``os._exit(0)`` exits with that status and a non-zero status passes through. Returns the undo: it puts the real ``os._exit`` back, unless a thread other than the main one is
    still alive (it may call ``os._exit(0)`` as the process ends: that must not turn a failed run into 0)."""
    real = os._exit
    one = threading.Lock()  # threads that call it at once: the first one's line and status; the others wait
    pid = os.getpid()

    def guarded(status=0):
        if os.getpid() != pid:  # a child process model code forked: its exit ends only it (held-out round 11)
            real(status)
        one.acquire()
        final = result()
        if final is not None:
            real(int(final) if status == 0 else status)
        code = status if isinstance(status, int) and status != 0 else 1
        if before is not None:
            try:
                before()
            except Exception:  # noqa: BLE001 - the line and the status still say it
                pass
        try:  # a non-zero status too: the code alone said nothing of why the output stopped (a held-out case)
            print(f"pytest-mlip: os._exit({status!r}) was called before {what} finished (by model code: an import or "
                  f"a thread of the model?): nothing after it ran; exit {code}", file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - stderr may be gone; the exit status still says it
            pass
        real(code)

    os._exit = guarded

    def restore():
        if os._exit is not guarded:
            return
        alive = [t for t in threading.enumerate()
                 if t is not threading.main_thread() and not t.daemon and t.is_alive()]
        if not alive:
            os._exit = real

    return restore
