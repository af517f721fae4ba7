"""Run reports: report.json (the source) rendered to report.md and a self-contained report.html.

Every number in a report is read from the provenance store and printed with
the id of the artifact it came from (``1.63e+04 [a:1f2e3d4c5b6a]``), so
``pytest-mlip judge`` can re-verify it. The folder also gets the figures as
PNG files (for the Markdown), the worst configurations, and
``provenance.sqlite``: a snapshot of every artifact the report cites plus its
ancestry, so the report can be judged where the original store is absent.
Files are written into a staging folder and renamed into place: a failed
write leaves no partial report.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..errors import MlipError
from ..provenance.artifact import SHORT_ID, finite_or_str
from ..reference.report import reference_cited, reference_entry, reference_ids, reference_rows
from .claims import SIG, claim, fmt_value
from .folder import FolderError, install, owned, read_manifest, record_written

FORMAT = "pytest-mlip-report"
VERSION = 1
SNAPSHOT = "provenance.sqlite"


class ReportError(MlipError):
    pass



class DuplicateKeyError(ValueError):
    """A JSON object names one key twice (readers disagree on which value counts)."""


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise DuplicateKeyError(f"the key {k!r} appears twice in one object (readers disagree on which value "
                                    "counts)")
        seen[k] = v
    return seen


def loads_strict(text: str):
    """``json.loads`` that refuses an object naming a key twice: Python keeps the last value, another reader may
    keep the first, so a duplicate key can show a reader one verdict and the judge another. Nesting too deep to
    read is a decode error (:func:`pytest_mlip.errors.loads_json`)."""
    from ..errors import loads_json

    return loads_json(text, object_pairs_hook=_no_duplicates)

def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", name)[:120]


def reproduce_command(spec: str, contract: str) -> str:
    return f"pytest --mlip={spec} --mlip-committee=none --mlip-partial -k '{contract}'"


def report_from_store(store, run_id: str) -> dict:
    """report.json's content, rebuilt from the store alone (the run row, its run artifact and its verdicts).

    This one function writes report.json at the end of a run and is what the
    judge recomputes and compares a given report.json with.
    """
    from ..provenance.recorder import root_hash, verdict_parents

    run = store.run(run_id)
    if run is None or not run.get("artifact"):
        raise ReportError(f"run {run_id!r} has no run record in the store {store.path}; re-run pytest")
    ra = store.get(run["artifact"])
    if ra is None or ra.kind != "run":
        raise ReportError(f"the run artifact of run {run_id} is missing from the store {store.path}")
    value = ra.value or {}
    texts = value.get("texts") or {}
    cited = verdict_parents(ra)
    order = value.get("order") or sorted(cited)
    if sorted(order) != sorted(cited):
        raise ReportError(f"the run artifact of run {run_id} lists verdicts it does not cite")
    verdict_arts = store.get_many(order)
    parent_ids = [pid for va in verdict_arts.values() for pid in va.parents]
    parents = store.get_many(parent_ids)
    entries = []
    for vid in order:
        va = verdict_arts.get(vid)
        if va is None or va.kind != "verdict":
            raise ReportError(f"verdict {vid[:SHORT_ID]} of run {run_id} is missing from the store {store.path}")
        t = texts.get(vid) or {}
        pm = va.params
        ids: dict = {"verdict": vid, "model": va.model.as_dict() if va.model else {}, "tolerance": {}, "probes": {},
                     "spec": t.get("spec") or (va.model.name if va.model else None), "reproduce": t.get("reproduce")}
        for pid in va.parents:
            a = parents.get(pid)
            if a is None:
                continue
            p = a.params
            if a.kind == "tolerance":
                ids["tolerance"][p.get("key")] = pid
            elif a.kind == "max_normalized":
                ids["max_normalized"] = pid
            elif a.kind in ("violation", "normalized", "observable", "series"):
                slot = ids["probes"].setdefault(p.get("probe"), {"violations": {}, "observables": {}, "series": {}})
                if a.kind == "normalized":
                    slot["normalized"] = pid
                elif a.kind == "violation":
                    slot["violations"][p.get("key")] = pid
                else:
                    slot["series" if a.kind == "series" else "observables"][p.get("name")] = pid
        for probe, rids in (t.get("references") or {}).items():  # --mlip-reference: settled probes
            ids["probes"].setdefault(probe, {"violations": {}, "observables": {}, "series": {}})["reference"] = rids
        verdict = {"contract": pm.get("contract"), "check": pm.get("check"),
                   "model": va.model.name if va.model else "?", "role": pm.get("role"), "hard": pm.get("hard"),
                   "basis": pm.get("basis"), "reason": pm.get("reason", ""), "setting": pm.get("setting", ""),
                   "worst_probe": pm.get("worst_probe"), "units": pm.get("units") or {},
                   "worst_file": t.get("worst_file"), "worst_sha256": t.get("worst_sha256"),
                   "probes": list(t.get("probes") or []),
                   "evaluations": t.get("calls", 0), "cache_hits": t.get("cache_hits", 0)}
        entries.append((verdict, ids))
    data = build_report(store, run, entries, gate=value.get("gate"))
    data["run"]["root"] = root_hash(store, run_id)
    if value.get("incomplete"):
        data["incomplete"] = value["incomplete"]
    if value.get("adversary"):
        data["adversary"] = value["adversary"]
    return data


def build_report(store, run: dict, entries: list[tuple[dict, dict]], gate=None) -> dict:
    """report.json's content from the verdicts (as JSON) and the artifact ids recorded for them.

    Values are read back from the store, not from the verdicts: the report
    prints what the artifacts hold.
    """
    from ..laws import CHECKS

    wanted: list[str] = []
    for _, ids in entries:
        wanted += _ids_of(ids)
    arts = store.get_many(wanted)
    missing = [i for i in wanted if i not in arts]
    if missing:
        raise ReportError(f"{len(missing)} artifact(s) of this run are missing from the store {store.path} "
                          f"(first {missing[0]}); re-run with a store all workers can write (--mlip-store=PATH)")

    def cl(aid):
        return claim(arts[aid].value, aid) if aid else None

    models: dict[str, dict] = {}
    contracts: dict[str, dict] = {}
    verdicts = []
    target = run["target"]
    for v, ids in entries:
        ident = ids.get("model") or {}
        role = v["role"]
        m = models.setdefault(v["model"], {"name": v["model"], "role": role, "version": ident.get("version"),
                                           "weights_hash": ident.get("weights_hash"), "family": _family(v["model"]),
                                           "spec": ids.get("spec", v["model"])})
        if role == "target":
            m["role"] = "target"
        check = CHECKS.get(v["check"])
        contracts.setdefault(v["contract"], {"name": v["contract"], "check": v["check"], "hard": v["hard"],
                                             "basis": v["basis"], "title": getattr(check, "title", ""),
                                             "statement": getattr(check, "statement", "")})
        probes = []
        for p in v.get("probes", []):
            pid = ids.get("probes", {}).get(p["probe"], {})
            obs, flags = {}, {}
            for name, aid in pid.get("observables", {}).items():
                val = arts[aid].value
                if isinstance(val, (int, float)) and not isinstance(val, bool):
                    obs[name] = cl(aid)
                else:
                    flags[name] = {"value": val, "artifact": aid}
            probes.append({
                "probe": p["probe"], "status": p["status"], "message": p.get("message", ""),
                "normalized": cl(pid.get("normalized")),
                "violations": {k: cl(a) for k, a in pid.get("violations", {}).items()},
                "observables": obs, "flags": flags,
                "series": {k: {"values": arts[a].value, "artifact": a} for k, a in pid.get("series", {}).items()},
            })
            ref = reference_entry(pid, arts)
            if ref:
                probes[-1]["reference"] = ref
        vid = ids["verdict"]
        spec = ids.get("spec", v["model"])
        verdicts.append({
            "contract": v["contract"], "check": v["check"], "model": v["model"], "spec": spec, "role": role,
            "hard": v["hard"], "basis": v["basis"],
            "gating": role == "target" and v["hard"] and arts[vid].value in ("fail", "error"),
            "status": {"text": arts[vid].value, "artifact": vid},
            "max_normalized": cl(ids.get("max_normalized")),
            "reason": v.get("reason", ""), "setting": v.get("setting", ""), "worst_probe": v.get("worst_probe"),
            "worst_source": v.get("worst_file"),
            "worst_file": f"worst/{_safe(v['model'])}/{_safe(v['contract'])}.extxyz" if v.get("worst_file") else None,
            **({"worst_sha256": v["worst_sha256"]} if v.get("worst_sha256") else {}),
            "reproduce": ids.get("reproduce") or reproduce_command(spec, v["contract"]),
            "tolerance": {k: cl(a) for k, a in ids.get("tolerance", {}).items()},
            "units": v.get("units", {}),
            "probes": probes,
            "calls": v.get("evaluations", 0), "cache_hits": v.get("cache_hits", 0),
        })
    order = {name: i for i, name in enumerate([target] + list(run.get("committee") or []))}
    model_list = sorted(models.values(), key=lambda m: (order.get(m["name"], order.get(m["spec"], 99)), m["name"]))
    rank = {m["name"]: i for i, m in enumerate(model_list)}
    cnames = list(contracts)
    verdicts.sort(key=lambda v: (cnames.index(v["contract"]), rank[v["model"]]))
    target_name = next((m["name"] for m in model_list if m["role"] == "target"), target)
    data = {
        "format": FORMAT, "version": VERSION, "precision": SIG,
        "run": {"id": run["id"], "code_version": run["code_version"], "target": target_name,
                "target_spec": target, "committee": list(run.get("committee") or []), "store": run.get("store"),
                "artifact": run.get("artifact"), "snapshot": SNAPSHOT},
        "models": model_list,
        "contracts": list(contracts.values()),
        "verdicts": verdicts,
        "gate": gate_json(gate),
        "notes": [],
    }
    return data


def gate_json(gate):
    """The CI gate's outcome as JSON (recorded in the run artifact, printed in the report)."""
    if gate is None or isinstance(gate, dict):
        return gate
    return {"margin": gate.margin, "passed": gate.passed,
            "changes": [{"kind": c.kind, "model": c.model, "contract": c.contract, "status": c.status,
                         "before_status": c.before_status, "now": finite_or_str(c.now),
                         "before": finite_or_str(c.before), "note": c.note} for c in gate.changes]}


def _family(name: str) -> str:
    """The family a model spec names; a ``module:factory`` spec is a factory without importing it (a report is
    rebuilt wherever the judge runs, where the user's module may not be importable)."""
    if ":" in name and "=" not in name and not name.endswith((".model", ".ckpt", ".pt")):
        return "factory"
    try:
        from ..models.registry import resolve

        return resolve(name).info.family
    except Exception:
        return "?"


def _ids_of(ids: dict) -> list[str]:
    out = [ids.get("verdict"), ids.get("max_normalized")]
    out += list(ids.get("tolerance", {}).values())
    for p in ids.get("probes", {}).values():
        out.append(p.get("normalized"))
        for k in ("violations", "observables", "series"):
            out += list(p.get(k, {}).values())
        out += reference_ids(p)
    return [i for i in out if i]


def cited_ids(data: dict) -> list[str]:
    """Every artifact id report.json cites."""
    out = [data["run"].get("artifact")]
    for v in data["verdicts"]:
        out.append(v["status"]["artifact"])
        if v["max_normalized"]:
            out.append(v["max_normalized"]["artifact"])
        out += [c["artifact"] for c in v["tolerance"].values()]
        for p in v["probes"]:
            if p["normalized"]:
                out.append(p["normalized"]["artifact"])
            out += [c["artifact"] for c in p["violations"].values()]
            out += [c["artifact"] for c in p["observables"].values()]
            out += [c["artifact"] for c in p["flags"].values()]
            out += [c["artifact"] for c in p["series"].values()]
            out += reference_cited(p)
    return [i for i in dict.fromkeys(out) if i]


# --- rendering -----------------------------------------------------------------------------------------------------


def cite(c, short: int = SHORT_ID) -> str:
    """Markdown form of a claim: ``text [a:shortid]``."""
    if c is None:
        return "-"
    return f"{c['text']} [a:{c['artifact'][:short]}]"


def in_key_order(data: dict) -> dict:
    """``data`` with every mapping's keys sorted: what the renderer draws from, so the rendering does not depend on
    the key order of report.json (lists keep their order)."""
    return json.loads(json.dumps(data, sort_keys=True))


def figures_for(data: dict) -> list[dict]:
    """All figures: name, title, section, caption, PNG bytes, cited series ids.

    Drawn under matplotlib's default settings whatever the process changed before (another library's style, a
    test), so the judge, redrawing in another process, gets the same bytes."""
    from .figures import import_matplotlib

    matplotlib = import_matplotlib()

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        return _figures_for(data)


def _figures_for(data: dict) -> list[dict]:
    from . import figures as F

    data = in_key_order(data)

    out = []
    png = F.matrix_png(data)
    if png:
        out.append({"name": "matrix.png", "title": "Verdict matrix", "section": "matrix", "png": png,
                    "caption": "Worst normalized violation v/tau per contract and model (log scale; yellow is the "
                               "tolerance, red fails, grey skipped; boxed FAIL fails the run, fail* is reported "
                               "only).", "cites": []})
    target = data["run"]["target"]
    colors = F.model_colors(data)
    for k, cs in enumerate(F.curve_sets(data)):
        chunks = [cs["probes"][i:i + F.MAX_PANELS] for i in range(0, len(cs["probes"]), F.MAX_PANELS)]
        for j, probes in enumerate(chunks):
            cites = [a for pr in probes for c in pr["curves"] for a in c["artifacts"]]
            out.append({"name": f"curves-{_safe(cs['contract'])}-{j}.png", "contract": cs["contract"],
                        "title": F.curve_title(cs), "section": "curves",
                        "png": F.curves_png(cs, target, probes, colors), "cites": cites, "probes": probes,
                        "caption": ("Target model as a black line (probe titles in red where it fails, the worst "
                                    "point circled, the tolerance dashed), committee members as coloured lines over "
                                    "their min-max band; each curve relative to its value at the largest "
                                    f"{F.quantity(cs['check'], cs['xname'])[0]}; a symmetric-log axis where the energies "
                                    "span decades, so a collapse is shown rather than clipped.")})
    for t in F.key_observables(data):
        if not t["erel"]:
            continue
        for m in data["models"]:
            png = F.heatmap_png(t, m["name"])
            if png:
                out.append({"name": f"heatmap-{_safe(t['contract'])}-{_safe(t['name'])}-{_safe(m['name'])}.png",
                            "title": f"{t['contract']}: {t['name']} on {m['name']}", "section": "heatmaps",
                            "contract": t["contract"], "png": png, "cites": [],
                            "caption": f"{t['name']} per probe (blue below zero, red above; failing cells "
                                       "outlined with a cross, grey cells skipped or without a value)."})
    return out


def _env():
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("pytest_mlip.reporting", "templates"),
                             autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["cite"] = cite
    env.filters["short"] = lambda aid: aid[:SHORT_ID] if aid else ""
    env.filters["fmt"] = fmt_value
    env.filters["inline"] = _inline_html
    return env


def _inline_html(text: str):
    """A note's sentence in HTML: escaped, with `code` spans."""
    import markupsafe

    parts = str(markupsafe.escape(text)).split("`")
    return markupsafe.Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def _context(data: dict, figs: list[dict]) -> dict:
    from . import figures as F

    from .claims import artifact_index, note_sentence, parse_notes

    verdicts = data["verdicts"]
    failures = [{**v, "worst": next((p for p in v["probes"] if p["probe"] == v["worst_probe"]), None)}
                for v in verdicts if v["status"]["text"] in ("fail", "error")]
    failures.sort(key=lambda v: (not v["gating"], v["role"] != "target"))
    index = artifact_index(data)
    notes = [note_sentence(n, index) for n in parse_notes(data.get("notes"))]
    cell = {(v["contract"], v["model"]): v for v in verdicts}
    per_probe = []
    for c in data["contracts"]:
        rows: dict[str, dict] = {}
        for v in verdicts:
            if v["contract"] != c["name"]:
                continue
            for p in v["probes"]:
                rows.setdefault(p["probe"], {})[v["model"]] = p
        if rows:
            per_probe.append({"contract": c["name"], "rows": rows})
    return {
        "d": data, "run": data["run"], "models": data["models"], "contracts": data["contracts"],
        "cell": cell, "failures": failures, "per_probe": per_probe,
        "skipped": [v for v in verdicts if v["status"]["text"] == "skip"],
        "figs": figs, "key_tables": F.key_observables(data),
        "color_of": F.color_of, "cell_style": F.cell_style, "gate": data.get("gate"),
        "references": reference_rows(verdicts),
        "notes": notes, "incomplete": data.get("incomplete"),
    }


def render_markdown(data: dict, figs: list[dict]) -> str:
    return _env().get_template("report.md.j2").render(**_context(in_key_order(data), figs))


def render_html(data: dict, figs: list[dict]) -> str:
    ctx = _context(in_key_order(data), figs)
    for f in figs:
        f["b64"] = base64.b64encode(f["png"]).decode()
    return _env().get_template("report.html.j2").render(**ctx)


# --- writing -------------------------------------------------------------------------------------------------------


def writable_dir_error(path, option: str) -> str | None:
    """None if ``path`` is (or can be created as) a folder we can write into; else a one-line error."""
    path = Path(path).absolute()
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"cannot write to {path}: {probe} is not a folder; pass a writable folder with {option}=DIR"
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".mlip-write-test-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return f"cannot write to {path} ({exc.strerror}: {probe}); pass a writable folder with {option}=DIR"
    return None


def write_report(folder, data: dict, store) -> list[Path]:
    """Write the report folder atomically; returns the written top-level files."""
    folder = Path(folder).absolute()
    err = writable_dir_error(folder, "--mlip-report")
    if err:
        raise ReportError(err)
    figs = figures_for(data)
    md = render_markdown(data, figs)
    html = render_html(data, figs)
    exists = folder.is_dir()
    if exists:
        stage = Path(tempfile.mkdtemp(dir=folder, prefix=".mlip-report-tmp-"))
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.tmp-"))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(stage, 0o777 & ~umask)  # mkdtemp makes it private; the report folder is not
    try:
        if "incomplete" in data:  # what did not finish is the first thing report.json says (key order is free)
            data = {"incomplete": data["incomplete"], **{k: v for k, v in data.items() if k != "incomplete"}}
        (stage / "report.json").write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        (stage / "report.md").write_text(md)
        (stage / "report.html").write_text(html)
        (stage / "figures").mkdir()
        for f in figs:
            (stage / "figures" / f["name"]).write_bytes(f["png"])
        for v in data["verdicts"]:
            if v.get("worst_file") and Path(v["worst_source"]).is_file():
                dst = stage / v["worst_file"]
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(v["worst_source"], dst)
        roots = cited_ids(data)
        store.export(stage / SNAPSHOT, store.closure(roots), [data["run"]["id"]], payloads=True)
        install(stage, folder)
    except OSError as exc:
        raise ReportError(f"cannot write the report to {folder} ({exc.strerror or exc}); "
                          "pass a writable folder with --mlip-report=DIR") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)  # what is left of the staging folder (all of it on a failure)
    return [folder / "report.json", folder / "report.md", folder / "report.html"]


def _refuse_links(folder: Path, rels: list[str]) -> None:
    """``render`` never writes through a link (it would write outside the report folder)."""
    for rel in rels:
        if (folder / rel).is_symlink():
            raise FolderError(f"{folder / rel} is a symbolic link; pytest-mlip never writes through links: remove "
                              "the link and render again")


def rerender(folder) -> list[Path]:
    """Re-render report.md and report.html of a report folder from its report.json (notes validated)."""
    from pydantic import ValidationError

    from .claims import parse_notes

    folder = Path(folder)
    src = folder / "report.json"
    try:
        data = loads_strict(src.read_text(encoding="utf-8"))
    except DuplicateKeyError as exc:
        raise ReportError(f"{src}: {exc}; regenerate the report") from None
    except OSError as exc:
        raise ReportError(f"cannot read {src} ({exc.strerror}); pass the folder pytest --mlip-report=DIR wrote") \
            from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"{src} is not valid JSON ({exc}); fix the edit or regenerate the report") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{src} is not a pytest-mlip report; pass the folder pytest --mlip-report=DIR wrote")
    stopped = data.get("incomplete", {}).get("interrupted") if isinstance(data.get("incomplete"), dict) else None
    if data.get("complete") is False and not data.get("verdicts") and isinstance(data.get("run"), dict) \
            and data["run"].get("finished") is False and stopped:
        raise ReportError(f"{src} is the page of a run that reported nothing ({stopped}): there is nothing to "
                          "render; run pytest --mlip-report=DIR again")
    try:
        parse_notes(data.get("notes"))  # validated before the report is re-rendered
    except ValidationError as exc:
        from .claims import note_error

        where, why = note_error(exc)
        raise ReportError(f"{src}: {where}: {why}; see the note kinds in the README (Reports, the judge and the CI "
                          "gate)") from None
    try:  # everything is drawn before a file is written: a report.json the renderer cannot read changes nothing
        figs = figures_for(data)
        pages = (("report.md", render_markdown(data, figs)), ("report.html", render_html(data, figs)))
    except Exception as exc:  # noqa: BLE001 - an edited report.json is the user's input: one line, exit 2
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ReportError(f"{src}: cannot be rendered ({type(exc).__name__}: {first[:200]}); it is not as the run "
                          "wrote it: undo the edit (only notes may be added) or regenerate the report") from None
    _refuse_links(folder, ["figures", "report.md", "report.html"] + [f"figures/{f['name']}" for f in figs])
    manifest = read_manifest(folder)
    if manifest is not None:  # a page or figure edited since the run wrote it is the user's (a held-out case)
        for rel in ["report.md", "report.html"] + [f"figures/{f['name']}" for f in figs]:
            if (folder / rel).exists() and not owned(folder, rel, manifest):
                raise ReportError(f"{folder / rel} is not as pytest-mlip wrote it (edited since?): render would "
                                  "replace it; move it aside or undo the edit, then render again (notes go in "
                                  "report.json)")
    out = []
    (folder / "figures").mkdir(exist_ok=True)
    for old in (folder / "figures").glob("*.png"):  # a figure the notes no longer draw, if we wrote it
        if old.name not in {f["name"] for f in figs} and owned(folder, f"figures/{old.name}", manifest or {}):
            old.unlink()
    for f in figs:
        (folder / "figures" / f["name"]).write_bytes(f["png"])
    for name, text in pages:
        tmp = folder / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, folder / name)
        out.append(folder / name)
    if manifest is not None:  # the pages and figures drawn here are ours (report.json, with the notes, is not)
        record_written(folder, manifest, ["report.md", "report.html"] + [f"figures/{f['name']}" for f in figs])
    return out
