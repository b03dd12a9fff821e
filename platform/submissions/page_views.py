"""A submission's page, its live status as JSON, and its owner's two actions: cancel, publish or unpublish.

Who may see what is :mod:`submissions.services`' rule: the owner and staff see and manage a
submission; anyone else sees it only once its model is public, read-only, and is told that a
private one does not exist (404, never 403). Logs are the owner's and staff's alone.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from jobs import hub_tokens
from registry.models import LanguageModel
from submissions import services
from submissions.models import Submission
from submissions.templatetags import submission_format

POLL_INTERVAL_S = 2


def is_web_address(url: str) -> bool:
    """Only an http(s) address becomes a link; anything else (``javascript:``...) is shown as text."""
    return url.lower().startswith(("http://", "https://"))


@require_GET
@never_cache
def detail(request: HttpRequest, pk: int) -> HttpResponse:
    submission = services.submission_for(request.user, pk, manage=False)
    manage = services.may_manage(request.user, submission)
    model = submission.language_model
    states = services.job_states(submission)
    overrides, protocol = services.evaluation_of(submission)
    context = {
        **_progress_context(submission, states),
        "overrides": json.dumps(overrides, sort_keys=True) if overrides else "",
        "protocol": protocol,
        "submission": submission,
        "model": model,
        "benchmark": submission.benchmarks.first(),
        "datasets": services.datasets_of(submission),
        "jobs": states,
        "ranks": services.pretraining_ranks(model),
        "manage": manage,
        "hub_token_held": manage and hub_tokens.held_for(submission),
        "public": model.visibility == LanguageModel.Visibility.PUBLIC,
        "homepage_link": is_web_address(model.homepage),
        "poll_interval_s": POLL_INTERVAL_S,
        "poll_interval_ms": POLL_INTERVAL_S * 1000,
    }
    return render(request, "submissions/detail.html", context)


@require_GET
@never_cache  # Cache-Control: no-store among others: every poll must reach the server
def status(request: HttpRequest, pk: int) -> JsonResponse:
    """What the page's script polls: the submission's status and every job's state."""
    submission = services.submission_for(request.user, pk, manage=False)
    manage = services.may_manage(request.user, submission)
    states = services.job_states(submission)
    jobs = [state.as_json() for state in states]
    if not manage:
        for job in jobs:
            job["log_tail"] = ""
    shown = _progress_context(submission, states)
    for job, state in zip(jobs, states, strict=True):
        job["eta_text"], job["steps_text"] = submission_format.eta(state), submission_format.steps(state)
    return JsonResponse(
        {
            "status": submission.status,
            "status_text": submission.status_text,
            "finished": submission.is_finished,
            "jobs": jobs,
            "visibility": submission.language_model.visibility,
            "overall": {**shown["overall"].as_json(), "text": submission_format.overall(shown["overall"])},
            # The finished page's scores, drawn by the same template as the page (escaped there).
            "results_html": render_to_string("submissions/_results.html", shown) if submission.is_finished else "",
        }
    )


def _progress_context(submission: Submission, states: list[services.JobState]) -> dict:
    """The whole submission's time left and, once it finished, its scores with the rank they have."""
    datasets, benchmarks = services.results_of(submission) if submission.is_finished else ([], [])
    return {
        "overall": services.overall_eta(submission, states),
        "dataset_scores": datasets,
        "benchmark_scores": benchmarks,
        "model": submission.language_model,
        "submission": submission,
    }


@require_POST
def cancel(request: HttpRequest, pk: int) -> HttpResponse:
    submission = services.submission_for(request.user, pk, manage=True)
    cancelled = services.cancel_submission(submission)
    if cancelled:
        messages.success(request, f"Cancelled: {cancelled} job{'s' if cancelled != 1 else ''} will not run.")
    else:
        messages.info(request, "Nothing was left to cancel: every job had finished.")
    return redirect("submissions:detail", pk=submission.pk)


@require_POST
def forget_hub_token(request: HttpRequest, pk: int) -> HttpResponse:
    """The submitter takes back their Hub token before the fetch ends; a fetch still to run then runs without it."""
    submission = services.submission_for(request.user, pk, manage=True)
    if hub_tokens.revoke(submission):
        messages.success(request, "Your Hub token is deleted. A fetch that has not finished runs without it.")
    else:
        messages.info(request, "No Hub token was kept for this submission any more.")
    return redirect("submissions:detail", pk=submission.pk)


@require_POST
def publish(request: HttpRequest, pk: int) -> HttpResponse:
    """``published=1`` makes the model public (on the leaderboard), ``published=0`` private again."""
    submission = services.submission_for(request.user, pk, manage=True)
    wanted = request.POST.get("published")
    if wanted not in ("1", "0"):
        return HttpResponseBadRequest("published must be 1 or 0")
    model = services.set_published(submission, wanted == "1")
    messages.success(request, _published_words(submission, model))
    return redirect("submissions:detail", pk=submission.pk)


def _published_words(submission: Submission, model: LanguageModel) -> str:
    if model.visibility == LanguageModel.Visibility.PRIVATE:
        return "Unpublished: the model is private again, shown only to you and the site's staff."
    if submission.preview:
        return (
            "Published: the model's page is public; its quick-preview results are marked as a preview and "
            "not ranked beside full-protocol results."
        )
    return "Published: the model and its results are public and ranked on the leaderboard."
