"""Progress of long items: what it says, where it is drawn, and where it stays silent."""

import time
from types import SimpleNamespace

from pytest_mlip import progress


def test_task_text_counts_probes_calls_and_budget():
    calls = [10]
    with progress.task("walls on emt", total=14, unit="probe", calls=lambda: calls[0]) as t:
        t.set(4, "Cu-Cu")
        calls[0] = 240
        assert progress.current() is t
        assert t.text().startswith("[walls on emt: probe 5/14 Cu-Cu | 230 model calls | ")
        with progress.task("adversary walls on emt", calls=lambda: 37, budget=500) as inner:
            assert progress.current() is inner and "37/500 model calls" in inner.text()
        assert progress.current() is t
    assert progress.current() is None


class _Writer:
    fullwidth = 80

    def __init__(self):
        self.out = "test_x.py ::item "

    @property
    def width_of_current_line(self):
        line = ""
        for ch in self.out.split("\n")[-1]:
            line = line[:-1] if ch == "\b" else line + ch
        return len(line.rstrip(" ")) if "\b" in self.out else len(line)

    def write(self, text, flush=False, **markup):
        self.out += text


def test_status_is_drawn_after_the_line_and_erased_before_the_outcome(monkeypatch):
    monkeypatch.setattr(progress, "REFRESH_SECONDS", 3600)  # draw by hand, not from the thread
    writer = _Writer()
    status = progress.TerminalStatus(SimpleNamespace(_tw=writer))
    try:
        gen = status.pytest_runtest_call(item=None)
        next(gen)
        with progress.task("walls on emt", total=3) as t:
            t.set(1, "H-H")
            status.draw(t.text())
        assert "[walls on emt: probe 2/3 H-H" in writer.out
        shown = status.shown
        try:
            gen.send(None)
        except StopIteration:
            pass
        assert writer.out.endswith("\b" * shown)  # erased: pytest writes PASSED where the status was
        status.draw("[late]")  # after the item: nothing drawn
        assert "[late]" not in writer.out
    finally:
        status.close()


def test_silent_under_q_in_workers_and_off_a_terminal():
    def config(verbosity=0, worker=False, mlip="emt"):
        c = SimpleNamespace(get_verbosity=lambda: verbosity, getoption=lambda name, default=None: mlip,
                            getini=lambda name: None)
        if worker:
            c.workerinput = {}
        return c

    tty = SimpleNamespace(isatty=True)
    assert progress.wanted(config(), tty)
    assert not progress.wanted(config(verbosity=-1), tty)  # -q
    assert not progress.wanted(config(worker=True), tty)  # an xdist worker
    assert not progress.wanted(config(), SimpleNamespace(isatty=False))  # CI log
    assert not progress.wanted(config(mlip=None), tty)  # not an mlip run


def test_progress_costs_nothing_measurable():
    t0 = time.perf_counter()
    with progress.task("x", total=100000) as t:
        for i in range(100000):
            t.set(i, "p")
    assert time.perf_counter() - t0 < 1.0
