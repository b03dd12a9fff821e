"""``/submit/``: the submission form, which hands what it is given to :func:`submissions.submitting.submit`.

A refusal is shown beside the field it concerns and leaves nothing behind (``submit`` writes no
row and keeps no file unless it accepts; the uploads are deleted here whatever happens). The form
page's script sends the form itself to show the upload's progress: it asks with
``X-Requested-With: XMLHttpRequest`` and then receives, instead of a redirect, the address to go
to as JSON (so the message set for that page is shown there and not spent on the script's
request); without the script the plain form post works the same.
"""

from __future__ import annotations

from contextlib import ExitStack

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from registry import hub
from submissions import uploads
from submissions.forms import (
    LICENCES,
    Catalogue,
    SubmissionForm,
    archive_suffix,
    base_model_suggestions,
    upload_name,
)
from submissions.models import Submission
from submissions.submitting import SubmissionError, SubmissionRequest, quota, submit


@csrf_exempt  # only until the size check is among the upload handlers: _submission_form checks the token
@login_required
def new_submission(request: HttpRequest) -> HttpResponse:
    """The upload handlers must be set before the body is read, which checking the CSRF token does.

    A post whose declared length is refused (too large, or no room on the disk) is answered with
    the form and the reason, 413, without reading its body: not even its CSRF token, which the
    answer does not need since it changes nothing.
    """
    handler = uploads.CheckpointSizeHandler(request)
    if request.method == "POST":
        unread = uploads.declared_refusal(request.META.get("CONTENT_LENGTH"))
        if unread is not None:
            return _unread(request, unread)
        request.upload_handlers.insert(0, handler)
    return _submission_form(request, handler)


@never_cache
def _unread(request: HttpRequest, sentence: str) -> HttpResponse:
    response = _page(request, SubmissionForm.unread(Catalogue.load(), {"checkpoint": sentence}))
    response.status_code = 413  # Content Too Large
    return response


@csrf_protect
@never_cache
def _submission_form(request: HttpRequest, handler: uploads.CheckpointSizeHandler) -> HttpResponse:
    catalogue = Catalogue.load()
    if request.method != "POST":
        return _page(request, SubmissionForm(catalogue=catalogue, initial=_chosen(request, catalogue)))
    form = SubmissionForm(request.POST, request.FILES, catalogue=catalogue, refused=handler.refused)
    try:
        if form.is_valid():
            try:
                submission = _submit(request.user, form.cleaned_data)
            except SubmissionError as exc:
                form.refuse(exc)
            else:
                return _submitted(request, submission)
    finally:
        uploads.discard(f for name in request.FILES for f in request.FILES.getlist(name))
    return _page(request, form)


def _chosen(request: HttpRequest, catalogue: Catalogue) -> dict:
    """``/submit/?benchmark=blurb-mini`` (a leaderboard's "submit a model" link) preselects that benchmark.

    Only one that can run here: else the default stays chosen, and the benchmark asked for is shown disabled,
    with what it needs."""
    wanted = catalogue.benchmark(request.GET.get("benchmark", ""))
    return {"benchmark": wanted.slug} if wanted is not None and wanted.runnable else {}


def _submit(user, data: dict) -> Submission:
    """The form's values as one :class:`SubmissionRequest`, its upload linked where the intake can read it."""
    common = {
        "owner": user,
        "benchmark": data["benchmark"],
        "datasets": data["datasets"],
        "preview": data["preview"],
        "overrides": data["overrides"],
        "rerun": data["rerun"],
        "name": data["name"],
        "description": data["description"],
        "licence": data["licence"],
        "homepage": data["homepage"],
        "pretraining_domain": data["pretraining_domain"],
        "vocabulary_kind": data["vocabulary_kind"],
        "initialisation": data["initialisation"],
        "base_model": data["base_model"],
        "private": True,  # until its owner publishes it from the submission's page
        "require_licence": True,
    }
    if data["source"] == "hub":
        return submit(SubmissionRequest(hub=data["hub"], hub_token=data["hub_token"], **common))
    with ExitStack() as stack:
        if data["source"] == "checkpoint":
            label = upload_name(data["checkpoint"].name)
            model = stack.enter_context(uploads.on_disk(data["checkpoint"], f"checkpoint{archive_suffix(label)}"))
            return submit(SubmissionRequest(model=model, label=label, **common))
        label = upload_name(data["corpus"].name)
        corpus = stack.enter_context(uploads.on_disk(data["corpus"], "corpus.txt"))
        return submit(
            SubmissionRequest(recipe=data["recipe"], corpus=corpus, label=label, pretrain_steps=data["steps"], **common)
        )


@login_required
@never_cache
def hub_card(request: HttpRequest) -> JsonResponse:
    """``/submit/hub.json?id=org/name@revision``: what the Hub says of a public repository, to pre-fill the form.

    Its commit, files and size, and its card's licence and base model; or the refusal submit would make,
    in the same words. Nothing is fetched but the repository's listing; no token is taken here.
    """
    try:
        found = hub.resolve(hub.HubReference.parse(request.GET.get("id", "")), access=False)
    except (hub.HubRefused, hub.HubUnavailable) as exc:
        return JsonResponse({"error": str(exc)}, status=200)
    return JsonResponse(
        {
            "repository": found.repository,
            "commit": found.commit,
            "files": len(found.files),
            "bytes": found.size,
            "licence": found.licence,
            "base_model": found.base_model,
            "gated": found.gated,
            "name": found.repository.split("/", 1)[1],
        }
    )


def _submitted(request: HttpRequest, submission: Submission) -> HttpResponse:
    """To the submission's page (an earlier one's when these weights were submitted already), with a message."""
    if submission.reused:
        messages.info(
            request,
            "Reused: these weights were already evaluated on this benchmark with the same settings and the same "
            "code, so nothing was queued and this is that submission. Tick “Evaluate again” to run it anew.",
        )
    else:
        jobs = submission.jobs.count()
        messages.success(
            request,
            f"Submitted: {jobs} jobs are queued. The model stays private until you publish it on this page.",
            extra_tags="while-queued",  # the page's script removes it once a job has left the queue
        )
    location = reverse("submissions:detail", args=[submission.pk])
    if request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return JsonResponse({"location": location})
    return redirect(location)


def _page(request: HttpRequest, form: SubmissionForm) -> HttpResponse:
    left = quota(request.user)
    top = form.non_field_errors()
    context = {
        "form": form,
        "catalogue": form.catalogue,
        "quota": left,
        "licences": LICENCES,
        "base_models": base_model_suggestions(),
        "facet_fields": [form["pretraining_domain"], form["vocabulary_kind"], form["initialisation"]],
        "errors": bool(form.errors),
        "top_errors": top,
        "largest_archive": uploads.largest_archive_bytes(),
        "too_large": uploads.too_large_sentence("{name}"),
    }
    return render(request, "submissions/new.html", context)
