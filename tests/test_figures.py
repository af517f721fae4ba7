"""Figures a scientist reads: quantities and units, words for titles, tolerance, worst point, keys.

Drawn from the example report (docs/example-report/report.json: SevenNet-0 with CHGNet and DIEP).
"""

import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from pytest_mlip.reporting import figures as F  # noqa: E402

DATA = json.loads((Path(__file__).resolve().parent.parent / "docs" / "example-report" / "report.json").read_text())


def test_every_axis_has_a_quantity_and_a_unit():
    for cs in F.curve_sets(DATA):
        for name in (cs["xname"], cs["yname"]):
            q, unit = F.quantity(cs["check"], name)
            assert q and q != F._bare(name), (cs["contract"], name)
            if cs["check"] != "compression_wall" or F._bare(name) != "scale":
                assert unit, (cs["contract"], name)
    assert F.axis_label("repulsive_wall", "curve_r") == "interatomic distance (Å)"
    assert F.axis_label("compression_wall", "curve_E") == "energy per atom (eV/atom)"


def test_titles_in_words_with_the_contract_named():
    walls = next(cs for cs in F.curve_sets(DATA) if cs["contract"] == "repulsive-wall-dimers")
    assert F.curve_title(walls) == ("Repulsive wall at short range: energy against interatomic distance "
                                    "(repulsive-wall-dimers)")


def test_tolerance_and_worst_point_of_failing_target_curves():
    walls = next(cs for cs in F.curve_sets(DATA) if cs["contract"] == "repulsive-wall-dimers")
    assert walls["tolerance"] == {"drop": 0.01} and walls["units"]["drop"] == "eV"
    cucu = next(p for p in walls["probes"] if p["probe"] == "Cu-Cu")
    target = next(c for c in cucu["curves"] if c["role"] == "target")
    assert walls["failing"]["Cu-Cu"] and target["worst_x"] is not None and min(target["x"]) <= target["worst_x"]
    assert target["violations"]["drop"] > 100  # the collapse the symlog axis keeps in view
    hh = next(p for p in walls["probes"] if p["probe"] == "H-H")
    assert next(c for c in hh["curves"] if c["role"] == "target")["worst_x"] is None  # passes: nothing marked


def test_one_colour_per_model_in_every_figure():
    colors = F.model_colors(DATA)
    assert colors["sevennet-0"] == F.TARGET_COLOR
    assert len(set(colors.values())) == len(colors)


def test_failing_heatmap_cells_are_told_from_skipped_ones():
    table = next(t for t in F.key_observables(DATA) if t["contract"] == "adsorption-sign" and t["erel"])
    # OH on Ni(111) fails on SevenNet-0 without a numeric E_rel: the cell is there, as failing
    assert table["status"]["OH/Ni(111)"]["sevennet-0"] == "fail"
    assert "sevennet-0" not in table["rows"].get("OH/Ni(111)", {})
    assert F.heatmap_png(table, "sevennet-0").startswith(b"\x89PNG")


def test_all_figures_render():
    from pytest_mlip.reporting.report import figures_for

    figs = figures_for(DATA)
    kinds = {f["section"] for f in figs}
    assert kinds == {"matrix", "curves", "heatmaps"}
    assert all(f["png"].startswith(b"\x89PNG") for f in figs)
