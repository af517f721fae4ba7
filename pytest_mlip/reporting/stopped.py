"""The outputs of a run the watchdog stops (a model call that ignores its interrupt, ``--mlip-timeout``), and the
placeholders every run writes when it starts.

The watchdog ends the process from its own thread while the main thread is stuck inside the model: pytest's
session never finishes, so the provenance run is never finished and no verdict can be read back from the store
(its connection belongs to the stuck thread). What can be written soundly is written here, from the watchdog's
thread: the pull-request summary and the report folder's pages, each saying INCOMPLETE, stopped by the watchdog,
naming the stuck call, and holding no verdict and no number. report.json has ``"complete": false`` and no
verdicts; its run is not finished in the store, so ``pytest-mlip judge`` cannot rebuild it and never approves it.
The report folder's ownership rules hold as for any report (reporting.folder): only our own files are replaced.

A process killed outright (SIGKILL, a segfault in native code, out of memory) writes nothing at all: so every run
replaces the summary and the report folder with the same kind of INCOMPLETE pages when its session starts
(:func:`write_running`), and the finished run overwrites them. An earlier run's passing report is never left to be
read as this run's.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from pathlib import Path

HEADLINE = "INCOMPLETE run, stopped by the watchdog"
#: the pages a run writes when it starts: read after the run, they mean it died without writing its report
RUNNING = "INCOMPLETE run, started and not finished"
#: the pages of a run a usage error stopped before any model call (the previous run's pages must not stand for it)
USAGE = "INCOMPLETE run, stopped by a usage error"
#: the pages of a run interrupted (Ctrl-C) while it was prepared, before any model call
INTERRUPTED = "INCOMPLETE run, interrupted before any model call"
#: how each headline's run ended, in report.json's incomplete block
WHY = {HEADLINE: "stopped by the watchdog", RUNNING: "started and not finished", USAGE: "stopped by a usage error",
       INTERRUPTED: "interrupted (Ctrl-C)"}


def register(config, rep) -> None:
    """Have the watchdog write this run's summary and report before it ends the process (controller only: under
    xdist the controller writes them, naming the dead worker)."""
    from ..evaluation import evaluator

    def write(stuck: str) -> str | None:
        return write_stopped(config, rep, stuck)

    evaluator.on_hard_stop.append(write)
    config.add_cleanup(lambda: evaluator.on_hard_stop.remove(write))


def write_running(config, rep) -> None:
    """At the start of a session: the summary and the report folder say INCOMPLETE until the run overwrites them
    (a held-out case: after a segfault or SIGKILL the previous run's passing report and summary were left)."""
    write_stopped(config, rep, _running_text(), RUNNING)


def write_stopped(config, rep, stuck: str, headline: str = HEADLINE) -> str | None:
    """Write the summary and the report folder as INCOMPLETE; the line says what was written."""
    from ..provenance.plugin import PROV_KEY

    prov = config.stash.get(PROV_KEY, None)
    run = {"id": getattr(prov, "run_id", None), "code_version": getattr(prov, "code_version", None),
           "target": rep.state.target, "store": str(getattr(getattr(prov, "store", None), "path", "")) or None}
    written = []
    if rep.summary_path is not None:
        from .summary import write_summary

        write_summary(rep.summary_path, summary_text(run, stuck, rep.report_dir, headline))
        written.append(f"summary {rep.summary_path}")
    if rep.report_dir is not None:
        write_folder(rep.report_dir, run, stuck, headline)
        written.append(f"report {rep.report_dir} (report.md, report.html, report.json)")
    if not written:
        return None
    return f"wrote the {' and the '.join(written)}, marked {headline}: they hold no verdict of this run"


def write_before_session(config, target: str, stuck: str, headline: str) -> bool:
    """An earlier run's summary and report folder, when this run was asked to write them, replaced with INCOMPLETE
    pages before its session starts: they would otherwise stand for this run. Only outputs that exist and pass the
    checks of any run's outputs (pytest-mlip's own) are replaced; nothing is created (a run that stops there leaves
    no new file). Returns whether anything was written. Outputs a usage error is about are left as they are."""
    import types

    from ..errors import MlipError
    from ..plugin import _check_output_paths, runs_nothing
    from .plugin import ReportingRun, _configure_outputs

    if runs_nothing(config) or getattr(config, "workerinput", None) is not None \
            or not (config.getoption("mlip_report", None) or config.getoption("mlip_summary_md", None)):
        return False
    rep = ReportingRun(config, types.SimpleNamespace(target=target))
    try:
        _check_output_paths(config)
        _configure_outputs(config, rep)
        if rep.summary_path is not None and not rep.summary_path.is_file():
            rep.summary_path = None
        if rep.report_dir is not None and not (rep.report_dir.is_dir() and any(rep.report_dir.iterdir())):
            rep.report_dir = None
        return write_stopped(config, rep, stuck, headline) is not None
    except (MlipError, OSError):
        return False


def write_starting(config, target: str) -> bool:
    """Before the models load: a process killed or crashed while a factory loads (SIGKILL, a segfault) left the
    previous run's passing summary and report standing for it (held-out round 11)."""
    return write_before_session(config, target, _running_text(), RUNNING)


def write_usage_stopped(config, target: str, message: str) -> bool:
    """A usage error stopped the run before its session started: its summary and report folder say so instead of
    standing for this run with the previous run's pass (held-out round 11)."""
    return write_before_session(config, target, f"pytest-mlip refused it before any model call: {message}", USAGE)


def write_interrupted(config, target: str, stage: str) -> bool:
    """Ctrl-C while the run was prepared (pytest loading its plugins, a model loading): the summary and report folder
    say so, whether or not the start-of-run pages were written yet (held-out round 13: a Ctrl-C before them left the
    previous run's passing report)."""
    return write_before_session(config, target, f"the run was interrupted (Ctrl-C) while {stage}", INTERRUPTED)


def _running_text() -> str:
    import time

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return (f"the run started at {started} and did not write its report: if no pytest-mlip process is still "
            "running, it ended abnormally (killed, a crash in native code, out of memory)")


def _wording(headline: str, code: str = " (exit 2)") -> tuple[str, str]:
    """How the run ended and what to do, for the watchdog's pages or the start-of-run placeholders."""
    if headline == HEADLINE:
        return (f"the watchdog ended the run{code} before any verdict was reported",
                "fix the model or raise --mlip-timeout, then run again")
    if headline == USAGE:
        return "nothing was run (exit 4)", "fix what the error names, then run again"
    if headline == INTERRUPTED:
        return "nothing was run (exit 2)", "run again"
    return "no verdict of it was reported", "read the job's log for how it ended, then run again"


def summary_text(run: dict, stuck: str, report_dir: Path | None, headline: str = HEADLINE) -> str:
    from .plugin import SUMMARY_HEAD

    where = f"; report `{report_dir / 'report.html'}` (incomplete too)" if report_dir else ""
    how, fix = _wording(headline, "")
    return (f"{SUMMARY_HEAD} `{run['target']}`: {headline}\n\n"
            f"**INCOMPLETE: {stuck}; {how}.**\n\n"
            f"No verdict of this run is reported: this is not a result. {fix[0].upper() + fix[1:]}.\n\n"
            + (f"Provenance: run `{run['id']}` (never finished), code `{run['code_version']}`{where}.\n" if run["id"]
               else f"Provenance: none (no run was started in the store){where}.\n"))


def report_json(run: dict, stuck: str, headline: str = HEADLINE) -> dict:
    """report.json of a stopped run: the incomplete block first, no verdicts, ``complete`` false."""
    from .report import FORMAT, VERSION

    why = WHY[headline]
    block = {"count": 0, "stopped": f"{why}: {stuck}", "interrupted": why,
             "fails_run": True, "errors": [], "crashed": [], "not_run": [], "dead_workers": []}
    return {"incomplete": block, "complete": False, "format": FORMAT, "version": VERSION,
            "run": {**run, "finished": False}, "models": [], "contracts": [], "verdicts": [], "notes": []}


def report_markdown(run: dict, stuck: str, headline: str = HEADLINE) -> str:
    how, fix = _wording(headline)
    return (f"# pytest-mlip report: `{run['target']}`: {headline}\n\n"
            f"> **{headline}.** {stuck[0].upper() + stuck[1:]}; {how}. This report holds no verdict and no "
            "number: it is not a result of the run.\n\n"
            + (f"- run: `{run['id']}` (never finished in the provenance store `{run['store']}`)\n"
               f"- code version: `{run['code_version']}`\n" if run["id"] else "- run: none was started in the store\n")
            + f"- {fix}\n")


def report_html(run: dict, stuck: str, headline: str = HEADLINE) -> str:
    e = html.escape
    how, _ = _wording(headline)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pytest-mlip report: "
            f"{e(headline)}</title></head>\n<body>\n<h1>pytest-mlip report: <code>{e(run['target'])}</code>: "
            f"{e(headline)}</h1>\n<p><strong>{e(headline)}.</strong> {e(stuck)}; {e(how)}. This report holds no "
            f"verdict and no number: it is not a result of the run.</p>\n<p>run <code>{e(str(run['id']))}</code> "
            "(never finished)</p>\n</body></html>\n")


def write_folder(folder: Path, run: dict, stuck: str, headline: str = HEADLINE) -> None:
    """The three pages, staged and installed like any report: our older files (figures, the snapshot) go, so
    nothing of an earlier complete report is left to be taken for this run's."""
    from .folder import install

    folder = Path(folder)
    parent = folder if folder.is_dir() else folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=parent, prefix=".mlip-report-tmp-"))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(stage, 0o777 & ~mask)  # mkdtemp makes it private; a new report folder (the stage renamed) is not
    try:
        (stage / "report.json").write_text(json.dumps(report_json(run, stuck, headline), indent=1) + "\n")
        (stage / "report.md").write_text(report_markdown(run, stuck, headline))
        (stage / "report.html").write_text(report_html(run, stuck, headline))
        install(stage, folder)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
