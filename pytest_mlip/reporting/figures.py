"""Figures of a report, drawn from report.json alone (matplotlib, Agg canvas, PNG bytes).

- the contract x model matrix coloured by the worst normalized violation;
- curves: every probe whose observables hold a scan (a monotonic x series and
  y series of the same length: the repulsive-wall dimer curves, desorption
  scans, ...), the target as a line over the committee's min-max band;
- heatmaps of E_rel-like observables (adsorption) per model.
Nothing here decides anything: figures only show numbers the JSON cites.
"""

from __future__ import annotations

import io
import math
import re

#: colour scale of v/tau: log10 from 1e-6 (green) through 1 (yellow) to 1e4 (red)
LOG_MIN, LOG_MAX = -6.0, 4.0
X_HINTS = ("r", "z", "dz", "d", "x", "s", "t", "distance", "height", "displacement", "path", "coordinate", "time")
#: x series that are times (a trajectory, not a scan)
TIME_AXES = ("t", "time")
EREL = re.compile(r"(?i)^e_?rel$")
KEY_OBSERVABLE = re.compile(r"(?i)(^e_?rel$|barrier)")
MAX_PANELS = 16

#: series name (without its curve_/scan_/path_ prefix) -> (quantity in words, unit); a law's record may name its
#: own (``axes``), which come first
QUANTITIES = {
    "r": ("interatomic distance", "Å"),
    "z": ("height", "Å"),
    "dz": ("height change", "Å"),
    "d": ("distance", "Å"),
    "x": ("coordinate", "Å"),
    "s": ("path coordinate", "Å"),
    "E": ("energy", "eV"),
    "F": ("force", "eV/Å"),
}
#: the fixed colours: the target is always black, committee members take these in the run's order
TARGET_COLOR = "black"
COMMITTEE_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
                    "tab:cyan")
WORST_COLOR = "crimson"
REFERENCE_COLOR = "teal"  # reference-calculation points (--mlip-reference)


def quantity(check: str, name: str) -> tuple[str, str]:
    """(quantity in words, unit) of a series; the bare name and no unit when unknown."""
    from ..laws import law_for

    bare = _bare(name)
    law = law_for(check)
    own = law.axes.get(bare) if law is not None else None
    return own or QUANTITIES.get(bare) or (bare.replace("_", " "), "")


def axis_label(check: str, name: str, prefix: str = "") -> str:
    q, unit = quantity(check, name)
    return f"{prefix}{q}" + (f" ({unit})" if unit else "")


def model_colors(data: dict) -> dict[str, str]:
    """One colour per model for every figure of a report: the target black, the committee in run order."""
    target = data["run"]["target"]
    out, k = {}, 0
    for m in data["models"]:
        if m["name"] == target:
            out[m["name"]] = TARGET_COLOR
        else:
            out[m["name"]] = COMMITTEE_COLORS[k % len(COMMITTEE_COLORS)]
            k += 1
    return out


def curve_title(cs: dict) -> str:
    """A curve figure's title in words: the law's title, what is plotted, the contract's name."""
    y = quantity(cs["check"], cs["yname"])[0]
    x = quantity(cs["check"], cs["xname"])[0]
    if cs.get("title"):
        return f"{cs['title']}: {y} against {x} ({cs['contract']})"
    return f"{cs['contract']}: {y} against {x}"


def import_matplotlib():
    """matplotlib, imported with the MPLBACKEND environment variable set aside: pytest-mlip draws on an Agg canvas
    and needs no backend, and a value matplotlib does not know ended the run in a traceback as it wrote the report
    (held-out round 14)."""
    import os
    import sys

    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"]
    saved = os.environ.pop("MPLBACKEND", None)
    try:
        import matplotlib
    finally:
        if saved is not None:
            os.environ["MPLBACKEND"] = saved
    return matplotlib


def _fig(w, h):
    import_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100)


def to_png(fig) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _num(x):
    if isinstance(x, dict):
        x = x.get("value")
    if isinstance(x, str) and x in ("inf", "-inf", "nan"):
        return float(x)
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def level(n) -> float | None:
    """Position of v/tau on the colour scale (log10, clipped); None when there is no value."""
    n = _num(n)
    if n is None:
        return None
    if math.isinf(n) or n > 10 ** LOG_MAX:
        return LOG_MAX
    if n <= 10 ** LOG_MIN:
        return LOG_MIN
    return math.log10(n)


def _cmap():
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    return colormaps["RdYlGn_r"], TwoSlopeNorm(vmin=LOG_MIN, vcenter=0.0, vmax=LOG_MAX)


def color_of(n, status: str) -> str:
    """Background colour of a matrix cell (hex), shared by the HTML table and the figure."""
    from matplotlib.colors import to_hex

    if status == "skip":
        return "#e0e0e0"
    if status == "error":
        return "#7f0000"
    lv = level(n)
    if lv is None:
        return "#ffffff"
    cmap, norm = _cmap()
    return to_hex(cmap(norm(lv)))


def matrix_png(data: dict) -> bytes | None:
    """Contract x model, coloured by the worst v/tau; gating failures boxed and in capitals (FAIL), failures
    that are only reported (committee members, soft contracts) as 'fail*', skipped cells grey; a key below."""
    verdicts = data["verdicts"]
    if not verdicts:
        return None
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    contracts = [c["name"] for c in data["contracts"]]
    models = [m["name"] for m in data["models"]]
    grid = np.full((len(contracts), len(models)), np.nan)
    labels = {}
    for v in verdicts:
        i, j = contracts.index(v["contract"]), models.index(v["model"])
        lv = level(v.get("max_normalized"))
        status = v["status"]["text"]
        if status != "skip" and lv is not None:
            grid[i, j] = lv
        gating = v.get("gating", False)
        text = {"fail": "FAIL" if gating else "fail*", "error": "ERROR" if gating else "error*"}.get(status, status)
        labels[(i, j)] = (text, gating)
    cmap, norm = _cmap()
    cmap = cmap.with_extremes(bad="#e0e0e0")
    fig = _fig(2.4 + 1.6 * len(models), 1.5 + 0.42 * len(contracts))
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(len(models)), [m + (" (target)" if m == data["run"]["target"] else "") for m in models],
                  rotation=20, ha="right", fontsize=8)
    ax.set_yticks(range(len(contracts)), contracts, fontsize=8)
    for (i, j), (text, gating) in labels.items():
        ink = _ink(cmap(norm(grid[i, j])) if np.isfinite(grid[i, j]) else (0.9, 0.9, 0.9))
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color=ink,
                fontweight="bold" if gating else "normal")
        if gating:
            ax.add_patch(Rectangle((j - 0.47, i - 0.45), 0.94, 0.9, fill=False, lw=2.0, ec="black"))
    cb = fig.colorbar(im, ax=ax, fraction=0.05)
    ticks = list(range(int(LOG_MIN), int(LOG_MAX) + 1, 2))
    cb.set_ticks(ticks, labels=[f"$10^{{{t}}}$" if t else "1 (tolerance)" for t in ticks])
    cb.ax.tick_params(labelsize=7)
    cb.set_label("worst normalized violation v/tau (log scale)", fontsize=8)
    ax.set_title("Worst normalized violation per contract and model", fontsize=9)
    key = [Patch(fc="white", ec="black", lw=2.0, label="FAIL: hard contract on the target, fails the run"),
           Patch(fc="white", ec="0.6", label="fail*: committee or soft contract, reported only"),
           Patch(fc="#e0e0e0", ec="0.6", label="skip: not applicable (reason in the report)")]
    fig.legend(handles=key, loc="lower center", ncol=1, fontsize=7, frameon=False, bbox_to_anchor=(0.45, -0.02))
    fig.subplots_adjust(bottom=0.12 + 0.6 / max(len(contracts), 1))
    return to_png(fig)


def cell_style(n, status: str) -> str:
    """CSS of a coloured table cell: background from v/tau, text colour that reads on it."""
    from matplotlib.colors import to_rgba

    bg = color_of(n, status)
    return f"background: {bg}; color: {_ink(to_rgba(bg))}"


def _ink(rgba) -> str:
    """Black or white text, whichever reads on a background colour."""
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _monotonic(xs) -> bool:
    import numpy as np

    d = np.diff(np.asarray(xs, dtype=float))
    return bool(len(d) and (np.all(d > 0) or np.all(d < 0)))


def _bare(name: str) -> str:
    return re.sub(r"^(curve|scan|path)_", "", name)


def scan_axes(series: dict) -> tuple[str, list[str]] | None:
    """(x name, y names) of a probe's scan, or None when its series do not form one."""
    lists = {k: s["values"] for k, s in series.items() if len(s.get("values") or []) >= 5}
    if len(lists) < 2:
        return None

    def bare(name):
        return _bare(name).lower()

    for want_hint in (True, False):
        for name, xs in lists.items():
            if not _monotonic(xs):
                continue
            if want_hint and not (bare(name) in X_HINTS or bare(name).endswith(("_r", "_z", "_x", "_d"))):
                continue
            ys = [k for k, v in lists.items() if k != name and len(v) == len(xs)]
            if ys:
                return name, ys
    return None


def _worst_x(p: dict, xname: str, violations: dict) -> float | None:
    """Where on the scan a probe's worst violation sits, from what the check observed (None: not said)."""
    values = {**{k: _num(v) for k, v in p.get("observables", {}).items()},
              **{k: _num(f) for k, f in p.get("flags", {}).items()}}
    bare = _bare(xname)
    short = bare[:1]  # the checks name a position by the axis' letter: s_worst on a 'scale' axis
    keys = [f"{bare}_worst", f"{short}_worst", "dz_at_max"]
    worst_key = max(violations, key=lambda k: violations[k] or 0, default=None)
    if worst_key:
        keys += [f"{bare}_{worst_key}", f"{short}_{worst_key}"]
    for k in keys:
        if values.get(k) is not None and math.isfinite(values[k]):
            return values[k]
    return None


def curve_sets(data: dict) -> list[dict]:
    """Per contract: the probes with scans and, per probe, every model's curves (with tolerance, worst point)."""
    out = []
    target = data["run"]["target"]
    titles = {c["name"]: c.get("title", "") for c in data["contracts"]}
    for c in data["contracts"]:
        probes: dict[str, dict] = {}
        axes_names = None
        failing = {}
        tolerance, units = {}, {}
        for v in data["verdicts"]:
            if v["contract"] != c["name"]:
                continue
            if v["model"] == target or not tolerance:
                tolerance = {k: _num(t) for k, t in v.get("tolerance", {}).items()}
                units = dict(v.get("units", {}))
            for p in v["probes"]:
                ax = scan_axes(p.get("series", {}))
                if ax is None:
                    continue
                axes_names = axes_names or ax
                xname, ynames = ax
                y = ynames[0]
                normalized = _num(p.get("normalized"))
                violations = {k: _num(x) for k, x in p.get("violations", {}).items()}
                entry = probes.setdefault(p["probe"], {"probe": p["probe"], "curves": []})
                entry["curves"].append({
                    "model": v["model"], "role": v["role"], "x": p["series"][xname]["values"],
                    "y": p["series"][y]["values"], "xname": xname, "yname": y,
                    "artifacts": [p["series"][xname]["artifact"], p["series"][y]["artifact"]],
                    "normalized": normalized, "violations": violations,
                    "worst_x": _worst_x(p, xname, violations) if (normalized or 0) > 1 else None})
                if v["model"] == target and (normalized or 0) > 1:
                    failing[p["probe"]] = True
                curve = (p.get("reference") or {}).get("curve") or {}
                if v["model"] == target and curve.get("x") and curve.get("y"):  # --mlip-reference points
                    entry["reference"] = {"x": curve["x"]["values"], "y": curve["y"]["values"],
                                          "label": p["reference"]["method"] or p["reference"]["engine"]}
        if probes:
            out.append({"contract": c["name"], "check": c["check"], "title": titles.get(c["name"], ""),
                        "xname": axes_names[0], "yname": axes_names[1][0], "tolerance": tolerance, "units": units,
                        "probes": list(probes.values()), "failing": failing})
    return out


#: beyond this span (in the y unit) a panel switches to a symmetric-log axis, so a collapse stays in view
LINEAR_SPAN = 20.0


def _tolerance_line(ax, cs: dict, x, y):
    """Draw what the tolerance allows on a panel: the floor a drop may not cross (walls), the barrier
    height (desorption); returns the legend label, or None when the law's tolerance is not a line here."""
    import numpy as np

    tol = cs["tolerance"]
    unit = cs["units"]
    if "drop" in tol and tol["drop"]:
        # going inward (towards small x) from the minimum the energy may not fall more than tau below
        # the highest energy met on the way
        order = np.argsort(x)
        xs, ys = x[order], y[order]
        i_eq = int(np.argmin(ys))
        floor = np.maximum.accumulate(ys[: i_eq + 1][::-1])[::-1] - tol["drop"]
        ax.plot(xs[: i_eq + 1], floor, color=WORST_COLOR, lw=0.8, ls="--")
        return f"allowed floor (drop tolerance {tol['drop']:g} {unit.get('drop', '')})"
    if "barrier" in tol and tol["barrier"]:
        ax.axhline(tol["barrier"], color=WORST_COLOR, lw=0.8, ls="--")
        return f"barrier tolerance ({tol['barrier']:g} {unit.get('barrier', '')})"
    if "excursion" in tol and tol["excursion"]:  # NVE: the total energy may not leave its starting value by more
        for sign in (1.0, -1.0):
            ax.axhline(sign * tol["excursion"], color=WORST_COLOR, lw=0.8, ls="--")
        return f"excursion tolerance (+-{tol['excursion']:g} {unit.get('excursion', '')})"
    return None


def curves_png(cs: dict, target: str, probes: list[dict] | None = None, colors: dict | None = None) -> bytes:
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    probes = probes if probes is not None else cs["probes"][:MAX_PANELS]
    colors = dict(colors or {})
    n = len(probes)
    cols = min(4, n)
    rows = int(math.ceil(n / cols))
    fig = _fig(3.4 * cols, 2.7 * rows + 0.9)
    handles: dict[str, object] = {}
    k_committee = 0
    #: a trace in time is drawn relative to its start; a scan relative to its outermost point
    in_time = _bare(cs["xname"]) in TIME_AXES
    for k, pr in enumerate(probes):
        ax = fig.add_subplot(rows, cols, k + 1)
        tgt = next((c for c in pr["curves"] if c["model"] == target), None)
        comm = [c for c in pr["curves"] if c["model"] != target]
        allv = []

        def rel(c):
            x, y = np.asarray(c["x"], float), np.asarray(c["y"], float)
            return x, y - y[np.argmin(x) if in_time else np.argmax(x)]

        grid = rel(tgt)[0] if tgt else (rel(comm[0])[0] if comm else None)
        if comm and grid is not None:
            stack = []
            for c in comm:
                if c["model"] not in colors:
                    colors[c["model"]] = COMMITTEE_COLORS[k_committee % len(COMMITTEE_COLORS)]
                    k_committee += 1
                x, y = rel(c)
                order = np.argsort(x)
                stack.append(np.interp(grid, x[order], y[order], left=np.nan, right=np.nan))
                ax.plot(x, y, lw=0.7, alpha=0.8, color=colors[c["model"]])
                handles.setdefault(c["model"], Line2D([], [], lw=0.9, color=colors[c["model"]],
                                                      label=f"{c['model']} (committee)"))
                allv.extend(y.tolist())
            stack = np.array(stack)
            if np.isfinite(stack).any():
                import warnings

                with warnings.catch_warnings():  # columns no committee curve reaches stay NaN: no band there
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo, hi = np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
                ax.fill_between(grid, lo, hi, color="0.6", alpha=0.3, lw=0)
                handles.setdefault("band", Patch(color="0.6", alpha=0.3, label="committee min-max band"))
        if tgt:
            x, y = rel(tgt)
            ax.plot(x, y, color=colors.get(target, TARGET_COLOR), lw=1.5, zorder=3)
            handles.setdefault(target, Line2D([], [], lw=1.5, color=colors.get(target, TARGET_COLOR),
                                              label=f"{target} (target)"))
            allv.extend(y.tolist())
            label = _tolerance_line(ax, cs, x, y)
            if label:
                handles.setdefault("tol", Line2D([], [], color=WORST_COLOR, lw=0.8, ls="--", label=label))
            elif cs["tolerance"]:  # a law whose tolerance is not a line on this plot (jumps, curvature): say it
                text = ", ".join(f"{k} {v:g} {cs['units'].get(k, '')}".rstrip() for k, v in cs["tolerance"].items()
                                 if cs["units"].get(k) != "flag" and v is not None)
                handles.setdefault("tol", Line2D([], [], ls="", label=f"tolerances: {text}"))
            if tgt.get("worst_x") is not None and len(x):
                i = int(np.argmin(np.abs(x - tgt["worst_x"])))
                ax.plot([x[i]], [y[i]], marker="o", ms=7, mfc="none", mec=WORST_COLOR, mew=1.6, zorder=4)
                worst = max(tgt["violations"].items(), key=lambda kv: kv[1] or 0, default=(None, None))
                ax.annotate(f"worst: {worst[0]} {worst[1]:.3g} {cs['units'].get(worst[0], '')}".rstrip()
                            if worst[0] else "worst", (x[i], y[i]), xytext=(9, 4), textcoords="offset points",
                            fontsize=6.5, color=WORST_COLOR, zorder=5,
                            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
                handles.setdefault("worst", Line2D([], [], ls="", marker="o", mfc="none", mec=WORST_COLOR,
                                                   mew=1.6, label="worst point of a failing target curve"))
        ref = pr.get("reference")
        if ref:
            ax.plot(ref["x"], ref["y"], "s", mfc="none", mec=REFERENCE_COLOR, ms=5, zorder=4)
            handles.setdefault("reference", Line2D([], [], ls="", marker="s", mfc="none", mec=REFERENCE_COLOR,
                                                   label=f"reference ({ref['label']})"))
            allv.extend(ref["y"])
        if allv:
            a = np.asarray(allv)
            a = a[np.isfinite(a)]
            if a.size and (a.max() - a.min()) > LINEAR_SPAN:
                from matplotlib.ticker import SymmetricalLogLocator

                ax.set_yscale("symlog", linthresh=1.0, linscale=1.0)  # the whole collapse, nothing clipped
                decades = math.log10(max(abs(a.max()), abs(a.min()), 10.0))
                ax.yaxis.set_major_locator(SymmetricalLogLocator(linthresh=1.0, base=10 ** max(1, math.ceil(decades / 4))))
        ax.axhline(0, color="0.5", lw=0.5, ls=":")
        fails = cs["failing"].get(pr["probe"])
        ax.set_title(pr["probe"] + ("  (fails on the target)" if fails else ""), fontsize=8,
                     color=WORST_COLOR if fails else "black", fontweight="bold" if fails else "normal")
        ax.tick_params(labelsize=7)
        if k % cols == 0:
            q, unit = quantity(cs["check"], cs["yname"])
            ax.set_ylabel(f"{q} relative to the\n" + ("start" if in_time else "scan's outermost point")
                          + (f" ({unit})" if unit else ""),
                          fontsize=7)
        if k >= n - cols:
            ax.set_xlabel(axis_label(cs["check"], cs["xname"]), fontsize=7)
    fig.suptitle(curve_title(cs), fontsize=10)
    fig.tight_layout(rect=(0, 0.06 if rows > 1 else 0.12, 1, 1))
    fig.legend(handles=list(handles.values()), loc="lower center", ncol=min(4, len(handles)), fontsize=7,
               frameon=False)
    return to_png(fig)


def _cell_status(p: dict) -> str:
    """'fail' (v/tau above 1, or the model errored), 'skip', or 'ok' for one probe of one model."""
    if p.get("status") == "skip":
        return "skip"
    n = _num(p.get("normalized"))
    return "fail" if p.get("status") == "error" or (n is not None and n > 1) else "ok"


def key_observables(data: dict) -> list[dict]:
    """Per contract and E_rel-like / barrier observable: a probe x model table of cited values, and each
    cell's status (``status[probe][model]``: ok, fail, skip), failing cells included when they have no value."""
    out = []
    for c in data["contracts"]:
        names: list[str] = []
        for v in data["verdicts"]:
            if v["contract"] != c["name"]:
                continue
            for p in v["probes"]:
                for name, cl in p.get("observables", {}).items():
                    if KEY_OBSERVABLE.search(name) and _num(cl) is not None and name not in names:
                        names.append(name)
        for name in names:
            rows: dict[str, dict] = {}
            status: dict[str, dict] = {}
            for v in data["verdicts"]:
                if v["contract"] != c["name"]:
                    continue
                for p in v["probes"]:
                    status.setdefault(p["probe"], {})[v["model"]] = _cell_status(p)
                    cl = p.get("observables", {}).get(name)
                    if cl is not None and _num(cl) is not None:
                        rows.setdefault(p["probe"], {})[v["model"]] = cl
            out.append({"contract": c["name"], "name": name, "rows": rows, "status": status,
                        "erel": bool(EREL.search(name))})
    return out


FAIL_EDGE = "black"
SKIP_COLOR = "#e0e0e0"


def heatmap_png(table: dict, model: str) -> bytes | None:
    """E_rel of one model: adsorbate x surface when probe ids read 'adsorbate/surface...', else one column.

    Failing cells (v/tau above 1) are outlined in black and marked with a cross, with or without a value;
    skipped or not computed cells are plain grey; a key says which is which.
    """
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    status = {p: m[model] for p, m in table.get("status", {}).items() if model in m}
    cells = {p: _num(models[model]) for p, models in table["rows"].items() if model in models}
    probes = list(dict.fromkeys([*status, *cells]))
    if not cells:
        return None
    if all("/" in p for p in probes):
        split = {p: tuple(p.split("/", 1)) for p in probes}
    else:
        split = {p: (p, table["name"]) for p in probes}
    rows = list(dict.fromkeys(r for r, _ in split.values()))
    cols = list(dict.fromkeys(c for _, c in split.values()))
    grid = np.full((len(rows), len(cols)), np.nan)
    for p in cells:
        r, c = split[p]
        grid[rows.index(r), cols.index(c)] = cells[p]
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    finite = grid[np.isfinite(grid)]
    span = float(np.abs(finite).max()) if finite.size else 1.0
    span = span or 1.0
    cmap = colormaps["RdBu_r"].with_extremes(bad=SKIP_COLOR)
    fig = _fig(2.4 + 0.9 * len(cols), 1.8 + 0.4 * len(rows))
    ax = fig.add_subplot()
    norm = TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span)
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    from .claims import fmt_value

    n_fail = n_skip = 0
    for p, (r, c) in split.items():
        i, j = rows.index(r), cols.index(c)
        st = status.get(p, "ok")
        value = grid[i, j]
        if st == "fail":
            n_fail += 1
            ax.add_patch(Rectangle((j - 0.46, i - 0.44), 0.92, 0.88, fill=False, lw=2.2, ec=FAIL_EDGE, hatch=None))
            text = ("✗ " + fmt_value(value)) if np.isfinite(value) else "✗ FAIL"
        elif not np.isfinite(value):
            n_skip += 1
            text = "skip" if st == "skip" else "-"
        else:
            text = fmt_value(value)
        bg = cmap(norm(value)) if np.isfinite(value) else (0.88, 0.88, 0.88)
        ax.text(j, i, text, ha="center", va="center", fontsize=6, color=_ink(bg),
                fontweight="bold" if st == "fail" else "normal")
    name = table["name"]
    fig.colorbar(im, ax=ax, fraction=0.05).set_label(f"{name} (eV)" if EREL.search(name) else name, fontsize=8)
    ax.set_title(f"{table['contract']}: adsorption energy relative to the isolated adsorbate on {model}\n"
                 "(above zero: wrong sign, the adsorbate would not bind)" if EREL.search(name)
                 else f"{table['contract']}: {name} on {model}", fontsize=8)
    ax.set_xlabel("surface", fontsize=7)
    ax.set_ylabel("adsorbate", fontsize=7)
    key = [Patch(fc="white", ec=FAIL_EDGE, lw=2.2, label=f"✗ fails (v/tau > 1): {n_fail}"),
           Patch(fc=SKIP_COLOR, ec="0.7", label=f"grey: skipped or no value: {n_skip}")]
    fig.legend(handles=key, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.subplots_adjust(bottom=0.25 + 0.3 / max(len(rows), 1))
    return to_png(fig)
