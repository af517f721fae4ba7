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
X_HINTS = ("r", "z", "dz", "d", "x", "s", "distance", "height", "displacement", "path", "coordinate")
EREL = re.compile(r"(?i)^e_?rel$")
KEY_OBSERVABLE = re.compile(r"(?i)(^e_?rel$|barrier)")
MAX_PANELS = 16


def _fig(w, h):
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
    verdicts = data["verdicts"]
    if not verdicts:
        return None
    import numpy as np

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
        labels[(i, j)] = status
    cmap, norm = _cmap()
    cmap = cmap.with_extremes(bad="#e0e0e0")
    fig = _fig(2.0 + 1.6 * len(models), 0.8 + 0.42 * len(contracts))
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(len(models)), [m + (" (target)" if m == data["run"]["target"] else "") for m in models],
                  rotation=20, ha="right", fontsize=8)
    ax.set_yticks(range(len(contracts)), contracts, fontsize=8)
    for (i, j), status in labels.items():
        ax.text(j, i, status.upper() if status in ("fail", "error") else status, ha="center", va="center",
                fontsize=7, color=_ink(cmap(norm(grid[i, j])) if np.isfinite(grid[i, j]) else (0.9, 0.9, 0.9)))
    cb = fig.colorbar(im, ax=ax, fraction=0.05)
    cb.set_label("log10 max v/tau (0: tolerance)", fontsize=8)
    ax.set_title("worst normalized violation per contract and model", fontsize=9)
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


def curve_sets(data: dict) -> list[dict]:
    """Per contract: the probes with scans and, per probe, every model's curves."""
    out = []
    target = data["run"]["target"]
    for c in data["contracts"]:
        probes: dict[str, dict] = {}
        axes_names = None
        failing = {}
        for v in data["verdicts"]:
            if v["contract"] != c["name"]:
                continue
            for p in v["probes"]:
                ax = scan_axes(p.get("series", {}))
                if ax is None:
                    continue
                axes_names = axes_names or ax
                xname, ynames = ax
                y = ynames[0]
                entry = probes.setdefault(p["probe"], {"probe": p["probe"], "curves": []})
                entry["curves"].append({
                    "model": v["model"], "role": v["role"], "x": p["series"][xname]["values"],
                    "y": p["series"][y]["values"], "xname": xname, "yname": y,
                    "artifacts": [p["series"][xname]["artifact"], p["series"][y]["artifact"]],
                    "normalized": _num(p.get("normalized"))})
                if v["model"] == target and (_num(p.get("normalized")) or 0) > 1:
                    failing[p["probe"]] = True
                curve = (p.get("reference") or {}).get("curve") or {}
                if v["model"] == target and curve.get("x") and curve.get("y"):  # --mlip-reference points
                    entry["reference"] = {"x": curve["x"]["values"], "y": curve["y"]["values"],
                                          "label": p["reference"]["method"] or p["reference"]["engine"]}
        if probes:
            out.append({"contract": c["name"], "check": c["check"], "xname": axes_names[0], "yname": axes_names[1][0],
                        "probes": list(probes.values()), "failing": failing})
    return out


def curves_png(cs: dict, target: str, probes: list[dict] | None = None) -> bytes:
    import numpy as np

    probes = probes if probes is not None else cs["probes"][:MAX_PANELS]
    n = len(probes)
    cols = min(4, n)
    rows = int(math.ceil(n / cols))
    fig = _fig(3.2 * cols, 2.5 * rows)
    for k, pr in enumerate(probes):
        ax = fig.add_subplot(rows, cols, k + 1)
        tgt = next((c for c in pr["curves"] if c["model"] == target), None)
        comm = [c for c in pr["curves"] if c["model"] != target]
        allv = []

        def rel(c):
            x, y = np.asarray(c["x"], float), np.asarray(c["y"], float)
            return x, y - y[np.argmax(x)]

        grid = rel(tgt)[0] if tgt else (rel(comm[0])[0] if comm else None)
        if comm and grid is not None:
            stack = []
            for c in comm:
                x, y = rel(c)
                order = np.argsort(x)
                yi = np.interp(grid, x[order], y[order], left=np.nan, right=np.nan)
                stack.append(yi)
                ax.plot(x, y, lw=0.6, alpha=0.6, label=c["model"])
                allv.extend(y.tolist())
            stack = np.array(stack)
            if np.isfinite(stack).any():
                import warnings

                with warnings.catch_warnings():  # columns no committee curve reaches stay NaN: no band there
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo, hi = np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)
                ax.fill_between(grid, lo, hi, color="0.6", alpha=0.35, lw=0, label="committee band")
        if tgt:
            x, y = rel(tgt)
            bad = (tgt["normalized"] or 0) > 1
            ax.plot(x, y, color="crimson" if bad else "black", lw=1.4, label=f"{target} (target)")
            allv.extend(y.tolist())
        ref = pr.get("reference")
        if ref:
            ax.plot(ref["x"], ref["y"], "s", mfc="none", mec="tab:blue", ms=5, label=f"reference ({ref['label']})")
            allv.extend(ref["y"])
        if allv:
            a = np.asarray(allv)
            lo, hi = max(a.min(), -8.0), min(a.max(), 8.0)
            pad = 0.08 * (hi - lo or 1.0)
            ax.set_ylim(lo - pad, hi + pad)
        ax.axhline(0, color="0.5", lw=0.5, ls=":")
        ax.set_title(pr["probe"] + ("  (fails)" if cs["failing"].get(pr["probe"]) else ""), fontsize=8,
                     color="crimson" if cs["failing"].get(pr["probe"]) else "black")
        ax.tick_params(labelsize=7)
        xl, yl = _bare(cs["xname"]), _bare(cs["yname"])
        if k % cols == 0:
            ax.set_ylabel(f"{yl} - {yl}(max {xl})", fontsize=7)
        if k >= n - cols:
            ax.set_xlabel(xl, fontsize=7)
        if k == 0:
            ax.legend(fontsize=6, loc="best")
    fig.suptitle(f"{cs['contract']}: {cs['yname']} against {cs['xname']}", fontsize=9)
    fig.tight_layout()
    return to_png(fig)


def key_observables(data: dict) -> list[dict]:
    """Per contract and E_rel-like / barrier observable: a probe x model table of cited values."""
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
            for v in data["verdicts"]:
                if v["contract"] != c["name"]:
                    continue
                for p in v["probes"]:
                    cl = p.get("observables", {}).get(name)
                    if cl is not None and _num(cl) is not None:
                        rows.setdefault(p["probe"], {})[v["model"]] = cl
            out.append({"contract": c["name"], "name": name, "rows": rows, "erel": bool(EREL.search(name))})
    return out


def heatmap_png(table: dict, model: str) -> bytes | None:
    """E_rel of one model: adsorbate x surface when probe ids read 'adsorbate/surface...', else one column."""
    import numpy as np

    cells = {p: _num(models[model]) for p, models in table["rows"].items() if model in models}
    if not cells:
        return None
    if all("/" in p for p in cells):
        split = {p: tuple(p.split("/", 1)) for p in cells}
    else:
        split = {p: (p, table["name"]) for p in cells}
    rows = list(dict.fromkeys(r for r, _ in split.values()))
    cols = list(dict.fromkeys(c for _, c in split.values()))
    grid = np.full((len(rows), len(cols)), np.nan)
    for p, (r, c) in split.items():
        grid[rows.index(r), cols.index(c)] = cells[p]
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    finite = grid[np.isfinite(grid)]
    span = float(np.abs(finite).max()) if finite.size else 1.0
    span = span or 1.0
    cmap = colormaps["RdBu_r"].with_extremes(bad="#e0e0e0")
    fig = _fig(1.8 + 0.9 * len(cols), 1.0 + 0.4 * len(rows))
    ax = fig.add_subplot()
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span),
                   aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    from .claims import fmt_value

    norm = TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, fmt_value(grid[i, j]), ha="center", va="center", fontsize=6,
                        color=_ink(cmap(norm(grid[i, j]))))
    fig.colorbar(im, ax=ax, fraction=0.05).set_label(table["name"], fontsize=8)
    ax.set_title(f"{table['contract']}: {table['name']} on {model} (above zero: wrong sign)", fontsize=8)
    return to_png(fig)
