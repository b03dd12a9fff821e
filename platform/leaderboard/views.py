"""The readers' pages: the benchmark index, a leaderboard, its exports, compare and dated snapshots.

Every page reads what :mod:`leaderboard.ranking` and :mod:`leaderboard.score_aggregation` stored; none
computes a score or a test per request. A leaderboard's filters, sort and pins live in the query
string, so the CSV and JSON exports, the compare link and a reload give exactly the view on screen.
Quick previews (one grid point, one seed) are never ranked: the page lists them in a table of
their own below the board, and the exports mark each row's ``preview``.

A benchmark whose plugin was uninstalled (``manage.py sync_plugins`` marks it inactive) keeps its
page, exports, snapshots and comparisons with its results as they were last computed, under a
notice that says so; the index lists it apart, under "No longer installed", and the page offers
no way to run it (no engine command, no API link: the API serves installed benchmarks only).
"""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import urlencode

from django.db.models import Count, Q
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from biolm.significance import BASE_SEED, CONFIDENCE, RESAMPLES
from biolm.spreadsheet_csv import csv_text
from jobs import artefacts, costs
from leaderboard import board_cache, charts, compare_data, results_dump, snapshots
from leaderboard.models import Snapshot
from leaderboard.tables import MAX_PINS, View, leaderboard_for, primary_label
from leaderboard.templatetags.scores import score
from registry.models import Architecture, Benchmark, LanguageModel


def index(request: HttpRequest) -> HttpResponse:
    visible = LanguageModel.objects.visible_to(request.user)
    benchmarks = Benchmark.objects.annotate(
        # distinct: the join with entries would otherwise count each model once per dataset
        n_models=Count("scores__language_model", filter=Q(scores__language_model__in=visible), distinct=True),
        # datasets, not entries: Bioformer's 15 datasets give 20 scored columns (BioASQ under four metrics),
        # and its name says "15 datasets"
        n_datasets=Count("entries__dataset", distinct=True),
    )
    listed = list(benchmarks)
    context = {
        "benchmarks": [b for b in listed if b.active],
        "uninstalled": [b for b in listed if not b.active],  # listed apart: their plugins are gone
    }
    return render(request, "leaderboard/index.html", context)


def how_ranks(request: HttpRequest) -> HttpResponse:
    """The "How ranks and scores work" page: where each term of a leaderboard (tie, paired bootstrap, aggregation
    version, platform convention, not tested) links to, with the test's settings as the code has them."""
    conventions = [b for b in Benchmark.objects.order_by("name") if "platform convention" in primary_label(b)]
    context = {
        "resamples": RESAMPLES,
        "confidence": round(CONFIDENCE * 100),
        "base_seed": BASE_SEED,
        "conventions": conventions,
    }
    return render(request, "leaderboard/how_ranks.html", context)


def _benchmark(slug: str) -> Benchmark:
    """The benchmark, installed or not: one whose plugin was uninstalled keeps its page and its results."""
    return get_object_or_404(Benchmark, slug=slug)


ROWS_SHOWN = 100  # a phone should not render a thousand rows; "Show all" lifts it


def benchmark(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard; rendered once per view and audience until its results change (board_cache)."""
    bench = _benchmark(slug)
    query = request.GET.urlencode()
    # sync_plugins deactivates with a bulk update, which leaves the cache's version as it was
    kind = "page" if bench.active else "page-uninstalled"
    html = board_cache.cached(kind, bench, request, query, lambda: _render_board(request, bench))
    return HttpResponse(html)


def _render_board(request: HttpRequest, bench: Benchmark) -> str:
    view = View.from_params(request.GET)
    visible = LanguageModel.objects.visible_to(request.user)
    board = leaderboard_for(bench, visible, view)
    architectures = Architecture.objects.filter(languagemodel__scores__benchmark=bench, languagemodel__in=visible)
    show_all = request.GET.get("rows") == "all"
    shown = None if show_all else ROWS_SHOWN
    full, preview_rows = board.full_rows, board.preview_rows
    # Only the rows on screen are built, serialised and laid out: at 5,000 models the rest was most of a render.
    on_screen = full[:shown] + preview_rows[:shown]
    data = board.as_json(on_screen)
    table = _table(board, on_screen, data, preview=False)
    previews = _table(board, on_screen, data, preview=True)
    context = {
        "benchmark": bench,
        "uninstalled": not bench.active,
        "board": board,
        "data": data,
        "table": table,
        "previews": previews,
        "preview_columns": board.preview_columns,
        "preview_groups": board.preview_groups,
        "preview_grouped": any(name for name, _ in board.preview_groups),
        # what a phone folds into each row's disclosure: the group scores when the benchmark shows them
        "fold_label": "Groups" if any(c.kind == "group" for c in board.visible_columns) else "Details",
        "all_rows": len(full) + len(preview_rows),
        "hidden_rows": 0 if show_all else max(0, len(full) - ROWS_SHOWN) + max(0, len(preview_rows) - ROWS_SHOWN),
        "all_rows_query": view.query() + ("&" if view.params() else "") + "rows=all",
        "view": view,
        "filters": _filter_choices(architectures.distinct().order_by("name")),
        "snapshots": list(Snapshot.objects.filter(benchmark=bench).values_list("date", flat=True)[:20]),
        "pareto": _pareto_charts(board, on_screen),
        "max_pins": MAX_PINS,
        "turnaround": costs.time_to_leaderboard(bench.pk, preview=False),
        "preview_turnaround": costs.time_to_leaderboard(bench.pk, preview=True),
    }
    return render(request, "leaderboard/benchmark.html", context).content.decode()


def _table(board, rows: list, data: dict, preview: bool) -> list[dict]:
    """The full-protocol rows' cells (or the previews': per-dataset columns always, none bold) as the page
    prints them: "mean ± std", bold where best, "—" where missing. A preview's single seed has no spread.
    ``data`` is ``rows`` serialised (``Leaderboard.as_json(rows)``)."""
    precision = board.benchmark.precision
    best = {} if preview else {key: round(value, precision) for key, value in board.best.items()}
    columns = board.preview_columns if preview else board.visible_columns
    table = []
    for row, shown in zip(rows, data["rows"], strict=True):
        if row.preview != preview:
            continue
        # "primary": the benchmark score, which a phone keeps in sight while the other summaries and the groups
        # fold into the row's disclosure (site.css)
        cells = [_cell_of(shown["score"], None, best.get("score"), precision, "summary primary", "")]
        for column in columns:
            value = shown["values"].get(column.key)
            std = shown["std"].get(column.key) if column.kind == "entry" else None
            n = shown["seeds"].get(column.key) if column.kind == "entry" else None
            title = f"{column.label}: mean ± std over {n} seeds" if n else ""
            if preview and n == 1:
                std, title = None, f"{column.label}: one seed"
            if value is None and column.key in row.missing:
                title = f"{column.label}: no result"
            cells.append(_cell_of(value, std, best.get(column.key), precision, column.kind, title, column.label))
        table.append({"row": row, "data": shown, "cells": cells, "pins": _pins_after_toggle(board.view, row)})
    return table


def _cell_of(value, std, best, precision: int, kind: str, title: str, label: str = "") -> dict:
    if value is None:
        return {"text": score(None), "best": False, "kind": kind, "title": title or "no result", "label": label}
    text = score(value, precision) + (f" ± {score(std, precision)}" if std is not None else "")
    return {"text": text, "best": best is not None and value >= best, "kind": kind, "title": title, "label": label}


def _pins_after_toggle(view: View, row) -> str:
    """The view's query string with this row's model pinned or unpinned."""
    slug = row.model.slug
    pins = tuple(p for p in view.pins if p != slug) if slug in view.pins else (*view.pins, slug)[-MAX_PINS:]
    return view.query(pins=pins)


def _filter_choices(architectures) -> list[dict]:
    """The filter form's fields: (name, label, [(value, label)])."""
    return [
        {"name": "origin", "label": "Origin", "options": LanguageModel.Origin.choices},
        {"name": "architecture", "label": "Architecture", "options": [(a.slug, a.name) for a in architectures]},
        {"name": "size", "label": "Size", "options": [(slug, label) for slug, label, *_ in LanguageModel.SIZE_BUCKETS]},
        {"name": "domain", "label": "Pretraining domain", "options": LanguageModel.Domain.choices},
        {"name": "vocabulary", "label": "Vocabulary", "options": LanguageModel.VocabularyKind.choices},
        {"name": "start", "label": "Pretraining start", "options": LanguageModel.Initialisation.choices},
    ]


CHART_POINTS = 500  # above this many models, a chart draws the Pareto front and the models on screen


def _pareto_charts(board, on_screen: list) -> list[charts.Chart]:
    """Score against size and against measured speed (Fang et al. 2023's question: what does small cost?).

    A board of thousands of models would put thousands of points (and a table of them) in the page:
    above ``CHART_POINTS``, each chart keeps the front and the models on screen, and its title says so.
    """
    label = board.primary_label
    ranked = [r for r in board.points if r.score is not None]  # a preview's one seed is no point on a frontier
    by_size = [{"name": r.name, "x": r.parameters, "y": r.score} for r in ranked if r.parameters]
    by_speed = [{"name": r.name, "x": r.inference_per_s, "y": r.score} for r in ranked if r.inference_per_s]
    shown = {row.model.name for row in on_screen}
    made = []
    if by_size:
        points, note = _charted(by_size, shown, maximise_x=False)
        made.append(
            charts.score_vs(
                "parameters (count, log scale)", points, f"{label} (0-100)", maximise_x=False,
                chart_id="pareto-size", title=f"{label} vs size{note}",
            )
        )  # fmt: skip
    if by_speed:
        points, note = _charted(by_speed, shown, maximise_x=True)
        made.append(
            charts.score_vs(
                "test examples per second (log scale)", points, f"{label} (0-100)",
                maximise_x=True, chart_id="pareto-speed", title=f"{label} vs speed{note}",
            )
        )  # fmt: skip
    return made


def _charted(points: list[dict], shown: set[str], maximise_x: bool) -> tuple[list[dict], str]:
    """The points a chart draws, and what its title adds when it leaves some out."""
    if len(points) <= CHART_POINTS:
        return points, ""
    front = {id(p) for p in charts.pareto_front(points, maximise_x)}
    kept = [p for p in points if id(p) in front or p["name"] in shown]
    return kept, f" (the Pareto front and the models on screen: {len(kept)} of {len(points)})"


EXPORT_FORMATS = ("csv", "json")


def export(request: HttpRequest, slug: str, format: str) -> HttpResponse:
    """Exactly the rows of the current view (filters, search, sort, pins), as CSV or JSON."""
    if format not in EXPORT_FORMATS:
        raise Http404(f"no export format {format!r}; use csv or json")
    bench = _benchmark(slug)
    board = leaderboard_for(bench, LanguageModel.objects.visible_to(request.user), View.from_params(request.GET))
    data = board.as_json()
    filename = f"{bench.slug}-leaderboard.{format}"
    if format == "json":
        response = HttpResponse(json.dumps(data, indent=2), content_type="application/json")
    else:
        response = HttpResponse(leaderboard_csv(data), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def leaderboard_csv(data: dict) -> str:
    """One row per model: rank (with tied true when it shares the rank above), the model, its facets, the score,
    every column's mean and std, and whether it is a quick preview (never ranked).

    Written by :func:`biolm.spreadsheet_csv.csv_text`: names and other text quoted, those a spreadsheet would run as
    a formula prefixed with ``'``; numbers stay numbers, and a missing one is an empty cell."""
    columns = data["columns"]
    header = ["rank", "tied", "model", "name", "origin", "source", "architecture", "parameters", "score"]
    for column in columns:
        header += [column["key"], f"{column['key']}_std"] if column["kind"] == "entry" else [column["key"]]
    rows: list[list] = [[*header, "missing", "rank_basis", "preview"]]
    for row in data["rows"]:
        line = [row["rank"], bool(row["tied"]), row["model"], row["name"], row["origin"], row["source"]]
        line += [row["architecture"], row["parameters"] or None, row["score"]]
        for column in columns:
            line.append(row["values"].get(column["key"]))
            if column["kind"] == "entry":
                line.append(row["std"].get(column["key"]))
        rows.append([*line, ";".join(row["missing"]), row["rank_basis"], bool(row["preview"])])
    return csv_text(rows)


def compare(request: HttpRequest) -> HttpResponse:
    """Up to four models side by side: group radar, per-dataset differences with the same paired test.

    ``?models=`` holds the compared models' keys. The form's search box adds one by name or address
    (``?add=``) and each pinned model's button removes it (``?remove=``): both answer with a redirect to
    the page's own address, ``?models=`` updated, so a reload or a shared link shows the same comparison
    (compare.js makes the same requests without reloading). A name that finds no model is said beside
    the box, the comparison unchanged.
    """
    slugs = [s for s in request.GET.get("models", "").split(",") if s][:MAX_PINS]
    bench_slug = request.GET.get("benchmark", "")
    benchmarks = list(Benchmark.objects.filter(active=True))
    if bench_slug:  # an uninstalled benchmark's page links here too: its kept scores compare as they were
        bench = Benchmark.objects.filter(slug=bench_slug).first()
    else:
        bench = min(benchmarks, key=lambda b: b.pk, default=None)
    if bench is not None and not bench.active:
        benchmarks.append(bench)
    visible = LanguageModel.objects.visible_to(request.user)
    problem = ""
    if "add" in request.GET or "remove" in request.GET:
        add, remove = request.GET.get("add", ""), request.GET.get("remove", "")
        slugs, problem = compare_data.pinned(slugs, visible, add, remove, MAX_PINS)
        if not problem:
            return redirect(_compare_url(bench, slugs))
    comparison = compare_data.comparison(bench, visible, slugs) if bench is not None and slugs else None
    context = {
        "benchmark": bench,
        "benchmarks": benchmarks,
        "comparison": comparison,
        "slugs": slugs,
        "problem": problem,
        "typed": request.GET.get("add", "") if problem else "",
        "candidates": compare_data.candidates(bench, visible) if bench is not None else [],
        "max_pins": MAX_PINS,
        "canonical": _compare_url(bench, slugs),
    }
    return render(request, "leaderboard/compare.html", context)


def _compare_url(bench: Benchmark | None, slugs: list[str]) -> str:
    """The compare page's own address for ``bench`` and ``slugs``: what the address bar keeps."""
    query = {"benchmark": bench.slug} if bench is not None else {}
    if slugs:
        query["models"] = ",".join(slugs)
    return f"{reverse('leaderboard:compare')}?{urlencode(query, safe=',')}"


def snapshot(request: HttpRequest, slug: str, date: str) -> HttpResponse:
    bench = _benchmark(slug)
    frozen = get_object_or_404(Snapshot, benchmark=bench, date=date)
    dump = results_dump.dump_name(frozen.date)
    context = {
        "benchmark": bench, "snapshot": frozen, "data": frozen.board, "bibtex": snapshots.bibtex(frozen, request),
        "dump_url": "/" + dump if artefacts.storage().exists(dump) else "",
    }  # fmt: skip
    return render(request, "leaderboard/snapshot.html", context)


def results_file(request: HttpRequest, date: str | None = None) -> HttpResponse:
    """A day's dump of every public result (:mod:`leaderboard.results_dump`); without a date, the latest."""
    day = dt.date.fromisoformat(date) if date else results_dump.latest_dump()
    name = results_dump.dump_name(day) if day is not None else ""
    store = artefacts.storage()
    if not name or not store.exists(name):
        raise Http404("no dump of the results for that day (one is written daily, or by manage.py export_results)")
    response = FileResponse(store.open(name, "rb"), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="biolm-{name.rsplit("/", 1)[-1]}"'
    return response


def snapshot_bibtex(request: HttpRequest, slug: str, date: str) -> HttpResponse:
    frozen = get_object_or_404(Snapshot, benchmark__slug=slug, date=date)
    response = HttpResponse(snapshots.bibtex(frozen, request), content_type="application/x-bibtex; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="biolm-{slug}-{date}.bib"'
    return response
