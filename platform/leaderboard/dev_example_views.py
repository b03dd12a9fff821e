"""``/models/<owner>/<name>/dev-examples/<result>/``: a result's dev examples, gold beside each run's prediction.

The page reads what is stored: the fine-tuning job's results document (its ``dev_predictions``, keyed by
run) and the dev split the worker received, from the artefact store; nothing is recomputed here
(:mod:`leaderboard.dev_examples` only compares). It is paged, filtered to the errors and searchable by
query string (``run``, ``errors=1``, ``q``, ``page``), so every state is a link. A private model's examples
are a 404 for everyone but its owner and staff, as its page is; a restricted dataset's (a data use
agreement's) for everyone but staff. The test split is never shown: its gold stays withheld.
"""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from biolm.contract import parse_run_key
from jobs import artefacts, exports
from leaderboard import dev_examples
from leaderboard.predictions import stored_results
from registry.models import Dataset

NOT_KEPT = "no dev predictions (recorded before they were kept)"


@require_GET
def dev_example_page(request: HttpRequest, namespace: str, name: str, result_id: int) -> HttpResponse:
    model, result, results = stored_results(request, namespace, name, result_id, "examples")
    dataset = result.dataset
    context = {"model": model, "result": result, "dataset": dataset, "shows_text": dataset.shows_text}
    runs = [key for key, rows in (results.dev_predictions or {}).items() if rows]
    if not runs:
        context["missing"] = NOT_KEPT if results.dev_predictions is None else "this protocol predicted no dev split"
        return render(request, "leaderboard/dev_examples.html", context)
    run = request.GET.get("run") if request.GET.get("run") in runs else runs[0]
    rows = _dev_rows(dataset, results.spec.overrides.max_eval_examples)
    predicted = results.dev_predictions[run]
    if len(rows) != len(predicted):
        raise Http404("the stored dev predictions no longer match the dataset's dev split on this site")
    schema = (dataset.adapter or {}).get("schema", "")
    every = dev_examples.examples(schema, rows, predicted, dataset.shows_text)
    errors_only, query = request.GET.get("errors") == "1", request.GET.get("q", "").strip()[:200]
    listed = dev_examples.chosen(every, errors_only, query)
    page = Paginator(listed, dev_examples.PAGE_SIZE).get_page(request.GET.get("page"))
    context.update(
        runs=[(key, _run_label(key)) for key in runs], run=run, run_label=_run_label(run), page=page, query=query,
        errors_only=errors_only, total=len(every), wrong=sum(e.right is False for e in every), schema=schema,
        listed=len(listed),
    )  # fmt: skip
    return render(request, "leaderboard/dev_examples.html", context)


def _run_label(key: str) -> str:
    fold, seed = parse_run_key(key)
    return f"fold {fold}, seed {seed}" if fold is not None else f"seed {seed}"


def _dev_rows(dataset: Dataset, limit: int | None) -> list[dict]:
    """The dev split as the worker received it (gold included: dev's gold is not withheld), cut as the run cut it."""
    try:
        prefix, _ = exports.dataset_artefacts(dataset)
    except exports.ExportError:
        raise Http404("the dataset is not imported on this site") from None
    store, name = artefacts.storage(), f"{prefix}/dev.jsonl"
    if not store.exists(name):
        raise Http404("the dataset's dev split is not in the artefact store")
    with store.open(name, "rb") as handle:
        rows = [json.loads(line) for line in handle.read().decode("utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows
