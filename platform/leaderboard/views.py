"""Server-rendered leaderboard pages: a plain table per benchmark, readable without JavaScript."""

from __future__ import annotations

from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard.tables import leaderboard_for
from registry.models import Benchmark, LanguageModel


def index(request: HttpRequest) -> HttpResponse:
    public = Q(scores__language_model__visibility=LanguageModel.Visibility.PUBLIC)
    benchmarks = Benchmark.objects.filter(active=True).annotate(
        # distinct: the join with entries would otherwise count each model once per dataset
        n_models=Count("scores__language_model", filter=public, distinct=True),
        n_entries=Count("entries", distinct=True),
    )
    return render(request, "leaderboard/index.html", {"benchmarks": benchmarks})


def benchmark(request: HttpRequest, slug: str) -> HttpResponse:
    bench = get_object_or_404(Benchmark, slug=slug, active=True)
    board = leaderboard_for(bench, LanguageModel.objects.visible_to(request.user))
    return render(request, "leaderboard/benchmark.html", {"benchmark": bench, "board": board})
