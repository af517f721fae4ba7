"""Progress of long work inside an item (probes, relaxations, NEB images, the adversary's budget).

Code that runs long declares what it is doing::

    with progress.task("repulsive-wall-dimers on sevennet-0", total=14, unit="probe",
                       calls=lambda: evaluator.stats.calls) as t:
        for probe in probes:
            t.advance(probe.id)

Nothing is printed unless a reporter is installed. The pytest plugin installs
one on an interactive terminal, in the controller only (never in an xdist
worker), and not under ``-q``: a background thread refreshes, twice a second,
a status after the item's line in pytest's own style (``[probe 5/14 Cu-Cu |
230 model calls | 12 s]``), so relaxations and NEB steps inside one probe still
move the model-call count; the status is erased before pytest prints the
item's outcome. Progress costs the work nothing: ``advance`` sets two fields.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable

import pytest

REFRESH_SECONDS = 0.5
#: a status appears only for work that has run this long (short items print nothing extra)
SHOW_AFTER_SECONDS = 1.0


class Task:
    def __init__(self, label: str, total: int | None, unit: str, calls: Callable[[], int] | None,
                 budget: int | None = None):
        self.label, self.total, self.unit, self.calls, self.budget = label, total, unit, calls, budget
        self.done = 0
        self.current = ""
        self.calls0 = calls() if calls and not budget else 0  # a budget counts from zero
        self.t0 = time.perf_counter()

    def advance(self, current: str = "", n: int = 1):
        self.done += n
        self.current = current

    def set(self, done: int, current: str = ""):
        self.done = done
        self.current = current

    def text(self) -> str:
        parts = []
        if self.total:
            parts.append(f"{self.unit} {min(self.done + 1, self.total)}/{self.total}"
                         + (f" {self.current}" if self.current else ""))
        elif self.done:
            parts.append(f"{self.done} {self.unit}")
        if self.calls is not None:
            parts.append(f"{self.calls() - self.calls0}" + (f"/{self.budget}" if self.budget else "") + " model calls")
        parts.append(f"{time.perf_counter() - self.t0:.0f} s")
        return f"[{self.label}: " + " | ".join(parts) + "]"


_stack: list[Task] = []
_lock = threading.Lock()


@contextmanager
def task(label: str, total: int | None = None, unit: str = "probe", calls: Callable[[], int] | None = None,
         budget: int | None = None):
    """Declare a piece of long work (``total`` steps of ``unit``, or a ``budget`` of model calls);
    nested tasks show the innermost one."""
    t = Task(label, total, unit, calls, budget)
    with _lock:
        _stack.append(t)
    try:
        yield t
    finally:
        with _lock:
            if t in _stack:
                _stack.remove(t)


def current() -> Task | None:
    with _lock:
        return _stack[-1] if _stack else None


class TerminalStatus:
    """Draws the innermost task after the current line of pytest's terminal and erases it again."""

    def __init__(self, terminalreporter):
        self.tr = terminalreporter
        self.shown = 0
        self.stop = threading.Event()
        self.active = threading.Event()
        self.draw_lock = threading.Lock()
        self.started = 0.0
        self.thread = threading.Thread(target=self._loop, name="pytest-mlip-progress", daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.wait(REFRESH_SECONDS):
            if not self.active.is_set() or time.perf_counter() - self.started < SHOW_AFTER_SECONDS:
                continue
            t = current()
            if t is not None:
                self.draw(t.text())

    def draw(self, text: str):
        tw = self.tr._tw
        with self.draw_lock:
            if not self.active.is_set():
                return
            room = tw.fullwidth - (tw.width_of_current_line - self.shown) - 2
            text = " " + text
            text = text[: max(0, room)]
            self._erase()
            if text:
                tw.write(text, cyan=True, flush=True)
                self.shown = len(text)

    def _erase(self):
        if self.shown:
            self.tr._tw.write("\b" * self.shown + " " * self.shown + "\b" * self.shown, flush=True)
            self.shown = 0

    # item boundaries: pytest writes the outcome right after runtest returns
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        self.started = time.perf_counter()
        self.active.set()
        try:
            return (yield)
        finally:
            with self.draw_lock:
                self.active.clear()
                self._erase()

    def close(self):
        self.stop.set()
        with self.draw_lock:
            self.active.clear()
            self._erase()


STATUS_NAME = "mlip-progress"


def wanted(config, tr) -> bool:
    """Show progress? An mlip run, on an interactive terminal, not under -q, not in an xdist worker."""
    if tr is None or hasattr(config, "workerinput") or config.get_verbosity() < 0:
        return False
    if not getattr(tr, "isatty", False):
        return False
    return bool(config.getoption("mlip", None) or config.getini("mlip"))


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    tr = config.pluginmanager.getplugin("terminalreporter")
    if wanted(config, tr):
        config.pluginmanager.register(TerminalStatus(tr), STATUS_NAME)


def pytest_unconfigure(config):
    status = config.pluginmanager.get_plugin(STATUS_NAME)
    if status is not None:
        status.close()
        config.pluginmanager.unregister(status)
