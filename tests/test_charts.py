"""The leaderboard's charts: plotly.js served by the site itself (never a CDN), the chart builders and
their table alternatives, and the Pareto front they draw."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template.loader import render_to_string
from django.templatetags.static import static

from biolm_site.static_finders import PLOTLY_STATIC_PATH, PlotlyFinder, plotly_package_data
from leaderboard.charts import MISSING, Chart, loss_curves, pareto_front, radar, score_vs, seed_distribution

PLOTLY_JS = plotly_package_data() / "plotly.min.js"


# --- serving plotly.js ------------------------------------------------------------------------


def test_the_finder_finds_and_lists_plotly_js_and_nothing_else_of_the_package():
    finder = PlotlyFinder()
    assert finder.find(PLOTLY_STATIC_PATH) == str(PLOTLY_JS)
    assert finder.find(PLOTLY_STATIC_PATH, find_all=True) == [str(PLOTLY_JS)]
    assert finder.find("vendor/widgetbundle.js") == []
    assert finder.find("plotly.min.js", find_all=True) == []
    listed = [(storage.prefix, path, storage.path(path)) for path, storage in finder.list(None)]
    assert listed == [("vendor", "plotly.min.js", str(PLOTLY_JS))]
    assert list(finder.list(["*.js"])) == []
    assert finder.check() == []


def test_the_finder_accepts_the_deprecated_all_keyword_of_django_5_2():
    from django.utils.deprecation import RemovedInDjango61Warning

    with pytest.warns(RemovedInDjango61Warning):
        assert PlotlyFinder().find(PLOTLY_STATIC_PATH, all=True) == [str(PLOTLY_JS)]


def test_the_configured_finders_find_plotly_js_and_pages_name_its_hashed_copy():
    assert finders.find(PLOTLY_STATIC_PATH) == str(PLOTLY_JS)
    assert re.fullmatch(r"/static/vendor/plotly\.min\.[0-9a-f]{12}\.js", static(PLOTLY_STATIC_PATH))


def test_the_site_serves_plotly_js_gzipped_under_its_hashed_name_with_an_immutable_cache(client):
    # STATIC_ROOT holds the session's collectstatic (tests/static_files.py), as a deployment's does.
    response = client.get(static(PLOTLY_STATIC_PATH), HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["Content-Encoding"] == "gzip"
    body = gzip.decompress(b"".join(response.streaming_content))
    assert body == PLOTLY_JS.read_bytes()
    assert "immutable" in response["Cache-Control"]
    assert int(re.search(r"max-age=(\d+)", response["Cache-Control"])[1]) >= 365 * 24 * 3600
    charts_js = client.get(static("leaderboard/charts.js"))
    assert charts_js.status_code == 200
    assert b"Plotly.newPlot" in b"".join(charts_js.streaming_content)


def test_collectstatic_hashes_and_compresses_plotly_js(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", interactive=False, verbosity=0)
    hashed = json.loads((settings.STATIC_ROOT / "staticfiles.json").read_text())["paths"][PLOTLY_STATIC_PATH]
    assert re.fullmatch(r"vendor/plotly\.min\.[0-9a-f]{12}\.js", hashed)
    assert (settings.STATIC_ROOT / hashed).read_bytes() == PLOTLY_JS.read_bytes()
    assert gzip.decompress((settings.STATIC_ROOT / f"{hashed}.gz").read_bytes()) == PLOTLY_JS.read_bytes()
    assert (settings.STATIC_ROOT / "leaderboard" / "charts.js").is_file()
    assert not (settings.STATIC_ROOT / "vendor" / "widgetbundle.js").exists()


def test_the_plotly_include_loads_only_charts_js_which_fetches_plotly_after_the_page_is_drawn():
    html = render_to_string("leaderboard/_plotly.html")
    scripts = re.findall(r"<script[^>]*>", html)
    charts, plotly = static("leaderboard/charts.js"), static(PLOTLY_STATIC_PATH)
    assert scripts == [f'<script defer src="{charts}" data-plotly="{plotly}">']
    assert "http" not in html
    charts_js = Path(finders.find("leaderboard/charts.js")).read_text()
    assert 'getAttribute("data-plotly")' in charts_js and "requestAnimationFrame" in charts_js


@pytest.mark.django_db
def test_a_page_without_charts_loads_neither_plotly_nor_charts_js(client):
    html = client.get("/").content.decode()
    assert "plotly" not in html and "charts." not in html


# --- the Pareto front -------------------------------------------------------------------------


def _names(points) -> list[str]:
    return [p["name"] for p in points]


POINTS = [
    {"name": "small-good", "x": 100, "y": 80},
    {"name": "small-bad", "x": 100, "y": 70},
    {"name": "mid-better", "x": 300, "y": 85},
    {"name": "mid-worse", "x": 200, "y": 79},
    {"name": "big-best", "x": 1000, "y": 90},
    {"name": "big-dominated", "x": 1200, "y": 88},
]


def test_pareto_front_when_smaller_x_is_better():
    assert _names(pareto_front(POINTS, maximise_x=False)) == ["small-good", "mid-better", "big-best"]


def test_pareto_front_when_larger_x_is_better():
    # Throughput: 1200/s at 88 is beaten by nothing faster; 1000/s at 90 is the best score.
    assert _names(pareto_front(POINTS, maximise_x=True)) == ["big-best", "big-dominated"]
    fast = [
        {"name": "fast", "x": 50, "y": 60},
        {"name": "slow", "x": 10, "y": 70},
        {"name": "slow-bad", "x": 9, "y": 65},
    ]
    assert _names(pareto_front(fast, maximise_x=True)) == ["slow", "fast"]


def test_pareto_front_keeps_equal_points_and_drops_those_equal_on_one_axis_only():
    tied = [
        {"name": "a", "x": 100, "y": 80},
        {"name": "a-twin", "x": 100, "y": 80},
        {"name": "same-x-worse", "x": 100, "y": 79},
        {"name": "same-y-bigger", "x": 150, "y": 80},
    ]
    assert sorted(_names(pareto_front(tied, maximise_x=False))) == ["a", "a-twin"]
    assert _names(pareto_front(tied, maximise_x=True)) == ["same-y-bigger"]


def test_pareto_front_of_one_point_none_and_missing_values():
    assert _names(pareto_front([{"name": "only", "x": 5, "y": 1}], maximise_x=False)) == ["only"]
    assert pareto_front([], maximise_x=True) == []
    missing = [{"name": "no-x", "x": None, "y": 99}, {"name": "ok", "x": 10, "y": 50}]
    assert _names(pareto_front(missing, maximise_x=False)) == ["ok"]


# --- the builders -----------------------------------------------------------------------------


def _check_common(chart: Chart, height_at_least: int = 300) -> dict:
    """What every chart promises: plain JSON, a fixed height, readable fonts, no template bloat, the
    responsive logo-less config."""
    figure = json.loads(json.dumps(chart.figure))  # JSON-serialisable, and unchanged by the round trip
    assert figure == chart.figure
    layout = figure["layout"]
    assert layout["height"] >= height_at_least
    assert layout["font"]["size"] >= 12
    assert layout["title"]["text"] == chart.title
    assert len(json.dumps(layout.get("template", {}))) < 500  # plotly.py's default template is ~7 KB
    assert figure["config"] == {"responsive": True, "displaylogo": False, "displayModeBar": "hover"}
    assert "bdata" not in json.dumps(figure)  # plain numbers, not plotly's base64 numpy arrays
    assert all(len(row) == len(chart.alt_columns) for row in chart.alt_rows)
    return figure


def test_radar_draws_a_closed_polygon_per_model_with_gaps_for_missing_scores():
    axes = ["NER", "PICO", "QA"]
    chart = radar("BLURB by task", axes, {"Alice BERT": [80.0, None, 70.5], "Bob BERT": [90, 60, 50]})
    figure = _check_common(chart)
    assert chart.id == "chart-blurb-by-task"
    alice, bob = figure["data"]
    assert alice["type"] == "scatterpolar" and alice["name"] == "Alice BERT"
    assert alice["theta"] == [*axes, "NER"]
    assert alice["r"] == [80.0, None, 70.5, 80.0]
    assert bob["r"] == [90, 60, 50, 90]
    radial = figure["layout"]["polar"]["radialaxis"]
    assert radial["range"] == [0, 100] and "0-100" in chart.title + chart.alt_caption
    assert chart.alt_columns == ["model", *axes]
    assert chart.alt_rows == [["Alice BERT", "80.00", MISSING, "70.50"], ["Bob BERT", "90.00", "60.00", "50.00"]]


def test_radar_refuses_a_series_of_the_wrong_length():
    with pytest.raises(ValueError, match="2 values for 3 axes"):
        radar("t", ["a", "b", "c"], {"m": [1, 2]})


def test_score_vs_draws_points_on_a_log_axis_and_the_front_and_marks_it_in_the_table():
    points = [
        {"name": "BioBERT", "x": 110e6, "y": 80.3, "url": "/models/biobert/"},
        {"name": "PubMedBERT", "x": 110e6, "y": 81.1},
        {"name": "BioMegatron", "x": 345e6, "y": 80.9},
        {"name": "GatorTron", "x": 8.9e9, "y": 82.0},
        {"name": "Unknown size", "x": None, "y": 90.0},
    ]
    chart = score_vs("parameters (count)", points, "BLURB score (0-100)", title="BLURB score against size")
    figure = _check_common(chart)
    models, front = figure["data"]
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert figure["layout"]["xaxis"]["title"]["text"] == "parameters (count)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "BLURB score (0-100)"
    assert models["text"] == ["BioBERT", "PubMedBERT", "BioMegatron", "GatorTron"]  # no x: not drawn
    assert models["customdata"][0] == "/models/biobert/"
    assert "%{text}" in models["hovertemplate"]
    assert front["mode"] == "lines" and front["text"] == ["PubMedBERT", "GatorTron"]
    assert chart.alt_columns == ["model", "parameters (count)", "BLURB score (0-100)", "on the Pareto front"]
    assert [row[0] for row in chart.alt_rows] == [p["name"] for p in points]
    assert [row[3] for row in chart.alt_rows] == ["", "yes", "", "yes", ""]
    assert chart.alt_rows[0][1:3] == ["110,000,000", "80.30"]
    assert chart.alt_rows[4][1] == MISSING


def test_score_vs_throughput_puts_the_faster_models_on_the_front():
    points = [
        {"name": "fast", "x": 900, "y": 70},
        {"name": "slow", "x": 100, "y": 75},
        {"name": "meh", "x": 90, "y": 60},
    ]
    chart = score_vs("throughput (sequences/s)", points, "score (0-100)", maximise_x=True)
    _check_common(chart)
    assert [row[3] for row in chart.alt_rows] == ["yes", "yes", ""]
    assert chart.figure["data"][1]["text"] == ["slow", "fast"]


def test_seed_distribution_shows_every_seed_per_dataset():
    chart = seed_distribution(
        "HoC over seeds", {"HoC": [80.0, 81.5, 79.0], "BIOSSES": [90.1], "empty": []}, "F1 (0-100)"
    )
    figure = _check_common(chart)
    assert [trace["name"] for trace in figure["data"]] == ["HoC", "BIOSSES"]
    hoc = figure["data"][0]
    assert hoc["type"] == "box" and hoc["boxpoints"] == "all" and hoc["jitter"] > 0
    assert hoc["y"] == [80.0, 81.5, 79.0]
    assert figure["layout"]["yaxis"]["title"]["text"] == "F1 (0-100)"
    assert figure["layout"]["xaxis"]["title"]["text"] == "dataset"
    assert chart.alt_columns == ["dataset", "seeds", "mean", "min", "max", "scores"]
    assert chart.alt_rows[0] == ["HoC", "3", "80.17", "79.00", "81.50", "80.00, 81.50, 79.00"]
    assert chart.alt_rows[2] == ["empty", "0", MISSING, MISSING, MISSING, MISSING]


def test_loss_curves_draw_train_and_held_out_lines_with_labelled_axes():
    curves = {"train": [(0, 10.5), (100, 6.25), (200, 4.0)], "held-out": [(100, 6.5), (200, 4.75)]}
    chart = loss_curves("Pretraining loss", curves)
    figure = _check_common(chart)
    train, held_out = figure["data"]
    assert train["x"] == [0, 100, 200] and train["y"] == [10.5, 6.25, 4.0]
    assert held_out["name"] == "held-out" and held_out["y"] == [6.5, 4.75]
    assert figure["layout"]["xaxis"]["title"]["text"] == "step"
    assert figure["layout"]["yaxis"]["title"]["text"] == "loss (cross-entropy, nats)"
    assert chart.alt_columns == ["step", "train", "held-out"]
    assert chart.alt_rows == [["0", "10.5000", MISSING], ["100", "6.2500", "6.5000"], ["200", "4.0000", "4.7500"]]


def test_numpy_values_become_plain_json_numbers():
    np = pytest.importorskip("numpy")
    chart = seed_distribution("t", {"d": np.array([1.5, 2.5])}, "F1 (0-100)")
    assert chart.figure["data"][0]["y"] == [1.5, 2.5]


# --- the include --------------------------------------------------------------------------------


def test_chart_include_renders_the_figure_json_and_an_accessible_table():
    chart = radar("BLURB <by> task", ["NER", "QA"], {"Alice & Bob": [80.0, None]})
    html = render_to_string("leaderboard/_chart.html", {"chart": chart})
    assert f'<div class="chart" id="{chart.id}" data-figure="{chart.id}-data" role="group"' in html
    assert 'aria-label="BLURB &lt;by&gt; task"' in html
    start = html.index(f'<script id="{chart.id}-data" type="application/json">')
    payload = html[html.index(">", start) + 1 : html.index("</script>", start)]
    assert json.loads(payload) == chart.figure
    assert "<details>" in html and "<caption>" in html
    assert html.count('scope="col"') == 3
    assert '<th scope="row">Alice &amp; Bob</th>' in html
    assert f"<td>{MISSING}</td>" in html
    assert "<script>" not in html  # no inline script: a CSP may forbid them
