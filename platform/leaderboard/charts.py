"""The leaderboard's charts, built from plain Python data: no database, no ORM, so views gather the numbers
and these functions only draw them (and a page's tests can check the drawing without fixtures).

Each builder returns a :class:`Chart`: a plotly figure as JSON-able data (drawn in the browser by the
plotly.js this site serves, ``templates/leaderboard/_plotly.html``) and the same numbers as a table
(``templates/leaderboard/_chart.html``) for screen readers and readers without JavaScript: a chart is
never the only place a number is published.

Figures are built with plotly's graph objects, which reject a misspelt property here rather than
letting plotly.js ignore it in the browser, and then reduced to plain lists and dicts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import plotly.graph_objects as go

MISSING = "—"
"""How a table alternative shows a number a chart has no value for."""

FONT_SIZE = 14
"""Readable at a hospital workstation's usual zoom; never below 12."""

CONFIG = {"responsive": True, "displaylogo": False, "displayModeBar": "hover"}
"""plotly.js options for every chart (``leaderboard/charts.js`` applies them): resize with the page, no
plotly logo in the mode bar."""

# Marker shapes cycled with the colours, so that series differ by more than colour alone.
_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon", "pentagon", "triangle-down")


@dataclass
class Chart:
    """One chart: the plotly figure and the table that says the same thing without it.

    ``figure`` is ``{"data": [...], "layout": {...}, "config": {...}}``, ready for ``json_script``;
    ``alt_rows`` are the table's cells as text, one list per row, in ``alt_columns`` order.
    """

    id: str
    title: str
    figure: dict[str, Any]
    alt_caption: str
    alt_columns: list[str]
    alt_rows: list[list[str]]

    @property
    def data_id(self) -> str:
        """The id of the ``<script type="application/json">`` element that holds the figure."""
        return f"{self.id}-data"


def slug_id(title: str) -> str:
    """An HTML id from a title (``"BLURB by task"`` -> ``"chart-blurb-by-task"``); pass ``chart_id=`` to a
    builder instead when a page shows two charts of the same title."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return f"chart-{slug or 'figure'}"


def _number(value: float | None) -> float | None:
    """A plain float (numpy scalars included) or None for missing and NaN: plotly.js draws None as a gap,
    and the JSON then holds plain numbers rather than plotly's base64-encoded numpy arrays."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _fmt(value: float | None, digits: int = 2) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _fmt_quantity(value: float | None) -> str:
    """Quantities spanning orders of magnitude (parameters, tokens per second): 110M rather than 1.1e+08."""
    if value is None:
        return MISSING
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:.3g}"


def _layout(title: str, height: int, **layout: Any) -> dict[str, Any]:
    # template "none": plotly.py's default template adds ~7 KB of styling to every figure's JSON.
    return {
        "title": {"text": title},
        "template": "none",
        "height": height,
        "autosize": True,
        "font": {"size": FONT_SIZE},
        "margin": {"l": 70, "r": 30, "t": 60, "b": 70},
        # below the plot, not beside it: on a phone a side legend takes 40% of the width
        "legend": {"orientation": "h", "x": 0, "y": -0.25, "yanchor": "top"},
        **layout,
    }


def _axis(title: str, **axis: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "automargin": True, **axis}


def _figure(data: Sequence[go.BasePlotlyType], layout: dict[str, Any]) -> dict[str, Any]:
    figure = json.loads(go.Figure(data=list(data), layout=layout).to_json())
    figure["config"] = dict(CONFIG)
    return figure


def radar(title: str, axes: list[str], series: Mapping[str, Sequence[float | None]], *, chart_id: str = "") -> Chart:
    """One closed polygon per model over ``axes`` (e.g. BLURB's task groups), scores on a 0-100 scale.

    A model without a score on an axis (None) leaves a gap in its polygon, rather than a 0 that would
    read as a score, and "—" in the table.
    """
    for name, values in series.items():
        if len(values) != len(axes):
            raise ValueError(f"radar {title!r}: {name!r} has {len(values)} values for {len(axes)} axes")
    theta = [*axes, axes[0]] if axes else []
    traces = []
    for i, (name, values) in enumerate(series.items()):
        r = [_number(v) for v in values]
        traces.append(
            go.Scatterpolar(
                r=[*r, r[0]] if r else [],  # back to the first axis: a closed polygon
                theta=theta,
                name=name,
                mode="lines+markers",
                connectgaps=False,
                marker={"symbol": _SYMBOLS[i % len(_SYMBOLS)], "size": 8},
                hovertemplate="%{theta}: %{r:.2f}<extra>%{fullData.name}</extra>",
            )
        )
    layout = _layout(
        _short_lines(title, RADAR_TITLE_LINE),  # a title wider than a phone is cut at both ends
        480,
        polar={
            # no radial title: it would sit on the tick labels; the chart's title and table say "0-100"
            "radialaxis": {"range": [0, 100], "angle": 90, "tickangle": 90, "ticksuffix": ""},
            # axis names in short lines, and room for them on both sides: plotly sizes the circle to the
            # plot area and draws these outside it, so on a 375 px phone long names were cut off
            "angularaxis": {
                "direction": "clockwise",
                "rotation": 90,
                "tickvals": list(axes),
                "ticktext": [_short_lines(a) for a in axes],
                "tickfont": {"size": RADAR_TICK_FONT_SIZE},
            },
        },
        margin={"l": RADAR_SIDE_MARGIN, "r": RADAR_SIDE_MARGIN, "t": 110, "b": 70},  # a two-line title
        showlegend=True,
    )
    rows = [[name, *(_fmt(_number(v)) for v in values)] for name, values in series.items()]
    return Chart(
        id=chart_id or slug_id(title),
        title=title,
        figure=_figure(traces, layout),
        alt_caption=f"{title}: score (0-100) of each model on each axis; {MISSING} where a model has no score.",
        alt_columns=["model", *axes],
        alt_rows=rows,
    )


RADAR_SIDE_MARGIN = 85
"""Pixels left and right of a radar for its axis names (lines of at most :data:`RADAR_LINE` characters)."""

RADAR_LINE = 11
RADAR_TITLE_LINE = 30
RADAR_TICK_FONT_SIZE = 12  # the smallest :data:`FONT_SIZE` allows: "Classification" fits beside a phone's radar


def _short_lines(label: str, width: int = RADAR_LINE) -> str:
    """``label`` broken at spaces into lines of about ``width`` characters, joined by plotly's ``<br>``
    (``"Named entity recognition"`` -> ``"Named<br>entity<br>recognition"``); a longer word stays whole."""
    lines: list[str] = []
    for word in label.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return "<br>".join(lines) or label


def _has_xy(point: Mapping[str, Any]) -> bool:
    return _number(point.get("x")) is not None and _number(point.get("y")) is not None


def pareto_front(points: Iterable[Mapping[str, Any]], maximise_x: bool) -> list[Mapping[str, Any]]:
    """The points no other point beats on both axes, sorted by x ascending (the order a line joins them).

    ``y`` (a score) is always better higher; ``x`` is better lower unless ``maximise_x`` (parameters: a
    smaller model is better; throughput: faster is better). A point is dominated when another is at
    least as good on both axes and better on one, so equal points are all on the front. Points missing
    ``x`` or ``y`` are on no front.
    """
    sign = -1.0 if maximise_x else 1.0  # reduce both directions to "smaller x is better"
    candidates = sorted((p for p in points if _has_xy(p)), key=lambda p: (sign * float(p["x"]), -float(p["y"])))
    front: list[Mapping[str, Any]] = []
    best_y = -math.inf  # the best score among points strictly better on x
    for _, same_x in groupby(candidates, key=lambda p: sign * float(p["x"])):
        group = list(same_x)
        top = float(group[0]["y"])  # sorted: the group's best score comes first
        if top > best_y:
            front.extend(p for p in group if float(p["y"]) == top)
            best_y = top
    return sorted(front, key=lambda p: float(p["x"]))


def score_vs(
    x_label: str,
    points: Sequence[Mapping[str, Any]],
    y_label: str,
    *,
    maximise_x: bool = False,
    title: str = "",
    chart_id: str = "",
) -> Chart:
    """Each model's score (``y``) against a cost or speed (``x``, log scale: model sizes span orders of
    magnitude), its Pareto front drawn as a line.

    ``points`` are ``{"name", "x", "y", "url"?}``; ``x_label`` says the unit (``"parameters (count)"``).
    A point with a ``url`` opens it when clicked. Points missing ``x`` or ``y`` (or with ``x <= 0``, which
    a log axis cannot place) are not drawn and on no front, but stay in the table, so a reader sees which
    models lack the number.
    """
    title = title or f"{y_label} against {x_label}"
    plotted = [p for p in points if _has_xy(p) and float(p["x"]) > 0]  # a log axis has no place for x <= 0
    front = pareto_front(plotted, maximise_x)
    on_front = {id(p) for p in front}
    better = "higher" if maximise_x else "lower"
    traces = [
        go.Scatter(
            x=[float(p["x"]) for p in plotted],
            y=[float(p["y"]) for p in plotted],
            text=[str(p["name"]) for p in plotted],
            customdata=[p.get("url") or "" for p in plotted],
            mode="markers",
            name="models",
            marker={"size": 10, "symbol": "circle"},
            hovertemplate="%{text}<br>" + x_label + ": %{x:.3~s}<br>" + y_label + ": %{y:.2f}<extra></extra>",
        ),
        go.Scatter(
            x=[float(p["x"]) for p in front],
            y=[float(p["y"]) for p in front],
            text=[str(p["name"]) for p in front],
            mode="lines",
            name="Pareto front",
            line={"dash": "dash"},
            hoverinfo="skip",
        ),
    ]
    layout = _layout(
        title,
        440,
        # 20M, 50M, 100M, 200M: every tick with its unit, at 1, 2 and 5 of each decade ("D2"), so a narrow range
        # (BLURB's sizes all sit near 110M) is not labelled at every digit, 60M70M80M90M run together
        xaxis=_axis(x_label, type="log", tickformat="~s", dtick="D2"),
        yaxis=_axis(y_label),
    )
    rows = [
        [
            str(p["name"]),
            _fmt_quantity(_number(p.get("x"))),
            _fmt(_number(p.get("y"))),
            "yes" if id(p) in on_front else "",
        ]
        for p in points
    ]
    return Chart(
        id=chart_id or slug_id(title),
        title=title,
        figure=_figure(traces, layout),
        alt_caption=(
            f"{title}: each model's {y_label} and {x_label}; models on the Pareto front "
            f"(none both {better} on {x_label.split(' (')[0]} and higher on {y_label.split(' (')[0]}) are marked."
        ),
        alt_columns=["model", x_label, y_label, "on the Pareto front"],
        alt_rows=rows,
    )


def seed_distribution(
    title: str, per_dataset: Mapping[str, Sequence[float]], metric_label: str, *, chart_id: str = ""
) -> Chart:
    """Every seed's score per dataset, as points over a box, so a reader sees the spread behind a mean
    (fine-tuning on small biomedical datasets varies a lot from seed to seed)."""
    traces = []
    rows = []
    for name, values in per_dataset.items():
        scores = [v for v in (_number(x) for x in values) if v is not None]
        rows.append(
            [
                name,
                str(len(scores)),
                _fmt(sum(scores) / len(scores) if scores else None),
                _fmt(min(scores) if scores else None),
                _fmt(max(scores) if scores else None),
                ", ".join(_fmt(v) for v in scores) or MISSING,
            ]
        )
        if scores:
            traces.append(
                go.Box(
                    y=scores,
                    name=name,
                    boxpoints="all",
                    jitter=0.4,
                    pointpos=0,
                    boxmean=True,
                    marker={"size": 7},
                    hovertemplate=name + ": %{y:.2f}<extra></extra>",
                )
            )
    layout = _layout(title, 420, xaxis=_axis("dataset"), yaxis=_axis(metric_label), showlegend=False)
    return Chart(
        id=chart_id or slug_id(title),
        title=title,
        figure=_figure(traces, layout),
        alt_caption=f"{title}: {metric_label} of each seed's run, per dataset.",
        alt_columns=["dataset", "seeds", "mean", "min", "max", "scores"],
        alt_rows=rows,
    )


def loss_curves(title: str, curves: Mapping[str, Sequence[tuple[int, float | None]]], *, chart_id: str = "") -> Chart:
    """Loss against training step, one line per curve (``{"train": [(step, loss), ...], "held-out": ...}``):
    a held-out curve that turns up while the training one goes down shows overfitting."""
    traces = []
    for i, (name, curve) in enumerate(curves.items()):
        traces.append(
            go.Scatter(
                x=[int(step) for step, _ in curve],
                y=[_number(loss) for _, loss in curve],
                name=name,
                mode="lines+markers" if len(curve) <= 50 else "lines",
                line={"dash": ("solid", "dash", "dot", "dashdot")[i % 4]},
                marker={"symbol": _SYMBOLS[i % len(_SYMBOLS)]},
                hovertemplate="step %{x}: %{y:.4f}<extra>%{fullData.name}</extra>",
            )
        )
    layout = _layout(
        title,
        420,
        xaxis=_axis("step"),
        yaxis=_axis("loss (cross-entropy, nats)"),
        hovermode="x unified",
    )
    names = list(curves)
    by_step: dict[int, dict[str, float | None]] = {}
    for name, curve in curves.items():
        for step, loss in curve:
            by_step.setdefault(int(step), {})[name] = _number(loss)
    rows = [[str(step), *(_fmt(losses.get(name), 4) for name in names)] for step, losses in sorted(by_step.items())]
    return Chart(
        id=chart_id or slug_id(title),
        title=title,
        figure=_figure(traces, layout),
        alt_caption=f"{title}: loss (cross-entropy, nats) at each logged step; {MISSING} where a curve has no value.",
        alt_columns=["step", *names],
        alt_rows=rows,
    )
