"""A language model's page: its card, its scores on every benchmark, its results, and its jobs.

The page gathers what the platform holds about one model, from three modules: the card and the
pretraining curve (:mod:`leaderboard.model_card`), the results with how each was obtained and the
charts (:mod:`leaderboard.model_results`), and the predictions download (:mod:`leaderboard.predictions`).

A private model is a 404 for everyone but its owner and staff, the same 404 as a model that
does not exist, so a URL does not reveal that a private model is there. A model's address is
``/models/<owner>/<name>/``; the old ``/models/<slug>/`` redirects there (301) for whoever may see
the model, and is the same 404 for anyone else. Whatever the number of
results, the page costs a fixed handful of queries (runs and jobs are prefetched); what the
database does not hold (how hyperparameters were chosen, the pretraining loss curve) is read
from the job's files in the artefact store, summarised and cached (:mod:`leaderboard.artefact_summaries`).
"""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from biolm.model_identity import PAPERS_NAMESPACE
from jobs.models import Job, Run
from leaderboard import hub_card
from leaderboard.model_card import card, contamination, job_row, loss_chart
from leaderboard.model_results import (
    ScoreRow,
    datasets_with_several_results,
    primary_label,
    radar,
    reported_by_several,
    result_row,
    seed_chart,
    version_links,
)
from leaderboard.models import Result, Score
from registry.models import LanguageModel


def visible_model(request: HttpRequest, namespace: str, name: str) -> LanguageModel:
    """The model at ``namespace/name`` if ``request.user`` may see it; one 404 for missing and private alike."""
    return get_object_or_404(
        LanguageModel.objects.visible_to(request.user).select_related("architecture", "recipe", "version_of"),
        namespace=namespace,
        address_name=name,
    )


def moved_model(request: HttpRequest, slug: str, result_id: int | None = None) -> HttpResponse:
    """A model's old URL (``/models/<slug>/``, its predictions' too): a permanent redirect to its address for
    whoever may see it, and the same 404 as a missing model for anyone else, so it reveals nothing."""
    visible = LanguageModel.objects.visible_to(request.user)
    model = visible.filter(slug=slug).first() or visible.merged_from(slug)
    if model is None:
        raise Http404("No such model.")
    if result_id is None:
        return HttpResponsePermanentRedirect(model.get_absolute_url())
    return HttpResponsePermanentRedirect(reverse("leaderboard:predictions", args=[*model.address_parts, result_id]))


def model_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """The page at ``namespace/name``; a published row's address from before it was merged into its model
    (``papers/blurb--biobert``, which snapshots taken then still link) redirects (301) to that model."""
    if namespace == PAPERS_NAMESPACE:
        merged = LanguageModel.objects.visible_to(request.user).merged_from(name)
        if merged is not None and merged.address_parts != (namespace, name):
            return HttpResponsePermanentRedirect(merged.get_absolute_url())
    model = visible_model(request, namespace, name)
    return render(request, "leaderboard/model.html", model_context(model, request.build_absolute_uri()))


def model_context(model: LanguageModel, page_url: str) -> dict:
    """Everything the model page at ``page_url`` shows; a fixed number of queries whatever the number of results."""
    report = model.pretraining if isinstance(model.pretraining, dict) else {}
    results = list(
        Result.objects.filter(language_model=model)
        .select_related("dataset", "metric", "job")
        .defer("job__log", "job__token")
        .prefetch_related(
            Prefetch(
                "job__runs", queryset=Run.objects.filter(split=Run.Split.TEST).order_by("fold", "seed"), to_attr="tests"
            )
        )
        .order_by("scope", "dataset__name", "metric__name", "variant")
    )
    scores = list(
        Score.objects.filter(language_model=model, benchmark__active=True)
        .select_related("benchmark")
        .order_by("benchmark__name")
    )
    jobs = list(
        Job.objects.filter(language_model=model)
        .select_related("dataset", "benchmark")
        .defer("log", "token")
        .order_by("-created_at", "-pk")
    )
    card_values = hub_card.card_values(model)
    several = datasets_with_several_results(results)
    rows = [result_row(model, result, several) for result in results]
    score_rows = [ScoreRow(s, primary_label(s.benchmark.aggregation), s.benchmark.get_absolute_url()) for s in scores]
    loss = loss_chart(model, jobs) if report or model.checkpoint.startswith("artefacts:") else None
    return {
        "model": model,
        "card": card(model, report),
        "contamination": contamination(report),
        "scores": score_rows,
        "radars": [chart for chart in (radar(model, s) for s in scores) if chart is not None],
        "reproduced": [row for row in rows if not row.reported],
        "reported": [row for row in rows if row.reported],
        # One model, many sources: each paper's row (its name there, its table), shared datasets, versions.
        "sources": list(model.aliases.select_related("benchmark").order_by("benchmark__name")),
        "shared": reported_by_several(results),
        "versions": version_links(model),
        "seed_chart": seed_chart(rows),
        "loss_chart": loss,
        "jobs": [job_row(job) for job in jobs],
        # Its results in the Hub's own forms, for its model card (leaderboard.hub_card).
        "card_header": hub_card.card_header(model, page_url, card_values),
        "hub_eval_files": hub_card.hub_eval_files(model, page_url, card_values),
    }
