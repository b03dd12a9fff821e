"""A result's test predictions as JSON Lines: every seed's (and fold's) prediction per test example, never the gold.

The ids come from the test split as the platform exported it to workers, gold already withheld
(:mod:`jobs.exports`); only the id is taken from it. A private model's predictions are a 404 for
everyone but its owner and staff, as its page is; so are a restricted dataset's (a data use agreement's) for
everyone but staff (:meth:`registry.models.Dataset.examples_visible_to`), whoever owns the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from biolm.contract import ResultsDocument, parse_run_key
from jobs import artefacts, exports
from jobs.results import ResultsError, load_results
from leaderboard.model_page import visible_model
from leaderboard.models import Result
from registry.models import Dataset, LanguageModel


def predictions(request: HttpRequest, namespace: str, name: str, result_id: int) -> HttpResponse:
    """Every seed's test predictions of a result, one JSON line per example and seed, without gold.

    ``{"id": ..., "seed": 42, "prediction": ...}`` (with ``"fold"`` under cross-validation), in the
    test split's order. The ids are read from the copy of the test split the worker received, whose
    gold was already replaced by a placeholder, and only the id is taken from it.
    """
    model, result, results = stored_results(request, namespace, name, result_id, "predictions")
    predicted = {key: rows for key, rows in results.predictions.items() if rows}
    if not predicted:
        raise Http404("the job stored no test predictions")
    checked = _checked_predictions(result.dataset, predicted, results.spec.overrides.max_eval_examples)
    response = StreamingHttpResponse(_prediction_lines(checked), content_type="application/x-ndjson; charset=utf-8")
    filename = f"{model.slug}-{result.dataset.slug}-test-predictions.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def stored_results(request: HttpRequest, namespace: str, name: str, result_id: int,
                   shown: str) -> tuple[LanguageModel, Result, ResultsDocument]:  # fmt: skip
    """The result of a model ``request.user`` may see, and its job's stored results document; a 404 that says why
    otherwise: a private model, a restricted dataset's ``shown`` (its predictions, its examples) for all but staff,
    a result not computed here, a document no longer stored."""
    model = visible_model(request, namespace, name)
    result = get_object_or_404(
        Result.objects.select_related("dataset", "metric", "job").defer("job__log", "job__token"),
        pk=result_id,
        language_model=model,
    )
    if not result.dataset.examples_visible_to(request.user):
        raise Http404(f"this dataset is restricted by a data use agreement: its {shown} are shown to staff only")
    if result.job is None:
        raise Http404(f"this result was not computed here, so there are no {shown} to show")
    try:
        return model, result, load_results(result.job)
    except ResultsError:
        raise Http404("the job's results are not in the artefact store") from None


Checked = list[tuple[int | None, int | str, list[str], list]]


def _checked_predictions(dataset: Dataset, predicted: dict, limit: int | None) -> Checked:
    """(fold, seed, example ids, predictions) per run, every run's count checked against its test split
    before the response starts, so a mismatch is a 404 rather than half a file."""
    ids_of: dict[int | None, list[str]] = {}
    checked = []
    for key, rows in predicted.items():
        fold, seed = parse_run_key(key)  # the results document was checked when it was loaded
        if fold not in ids_of:
            ids_of[fold] = _test_ids(dataset, fold, limit)
        ids = ids_of[fold]
        if not isinstance(rows, list) or len(rows) != len(ids):
            raise Http404("the stored predictions no longer match the dataset's test split on this site")
        checked.append((fold, seed, ids, rows))
    return checked


def _prediction_lines(checked: Checked) -> Iterator[bytes]:
    for fold, seed, ids, rows in checked:
        where = {"fold": fold} if fold is not None else {}
        for example_id, prediction in zip(ids, rows, strict=True):
            line = {"id": example_id, **where, "seed": seed, "prediction": prediction}
            yield (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def _test_ids(dataset: Dataset, fold: int | None, limit: int | None) -> list[str]:
    """The test examples' ids in the order the worker predicted them, from its gold-withheld export."""
    try:  # the export a job read exists already; these calls only write one for a dataset no job has used
        if fold is None:
            prefix, _ = exports.dataset_artefacts(dataset)
            name = f"{prefix}/test.jsonl"
        else:
            prefix, _ = exports.fold_artefacts(dataset)
            name = f"{prefix}/folds/{fold}/test.jsonl"
    except exports.ExportError:
        raise Http404("the dataset is not imported on this site") from None
    store = artefacts.storage()
    if not store.exists(name):
        raise Http404("the dataset's test split is not in the artefact store")
    with store.open(name, "rb") as handle:
        ids = [str(json.loads(line)["id"]) for line in handle.read().decode("utf-8").splitlines() if line.strip()]
    return ids[:limit] if limit else ids
