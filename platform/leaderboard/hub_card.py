"""A model's results in the Hugging Face Hub's own forms, for its model card.

MTEB and the Open LLM Leaderboard meet researchers on the Hub: their results go into the model card,
where the Hub shows them. biolm gives each model's reproduced results in the two forms the Hub reads,
built with ``huggingface_hub``'s own classes so that its card parser reads back exactly these values:

- the ``model-index`` block of a card's YAML header (:class:`huggingface_hub.EvalResult`), one metric per
  result and benchmark it counts in: the task, the dataset (its Hub id where it has one), the metric
  and value, and as the source the result on its biolm page. Each value's ``args`` name the model's
  biolm address, the benchmark, its plugin's version and aggregation version, and the protocol that
  produced it (its name, statistic and runs);
- for datasets with a Hub id (:attr:`biolm.specs.DatasetSpec.hub_dataset`), the Hub's evaluation-results
  files, ``.eval_results/<name>.yaml`` (:class:`huggingface_hub.EvalResultEntry`).

Only biolm's own full-protocol results go in: a paper's number is its paper's to publish, and a quick
preview is not the benchmark's protocol. The page shows only what its reader may see, and so does
this: :attr:`Result.objects` holds published results only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from huggingface_hub import EvalResult, EvalResultEntry, ModelCardData, eval_result_entries_to_yaml

from biolm.contract import ContractError, parse_job_spec
from leaderboard.models import Result
from leaderboard.results_dump import entries_by_score, hub_id
from registry.models import BenchmarkEntry, LanguageModel, Plugin

# The Hub's task of each example schema (biolm.schemas): what its pipeline tag calls the same work.
HUB_TASKS = {
    "token-tagging": "token-classification",
    "classification": "text-classification",
    "regression": "text-classification",  # a sequence regression head, the Hub's text classification
    "relation": "text-classification",  # the entity pair is marked in the text, then classified
    "extractive-qa": "question-answering",
}


@dataclass(frozen=True)
class CardValue:
    """One result as it counts in one benchmark: a metric of the card's ``model-index``."""

    result: Result
    entry: BenchmarkEntry
    plugin_version: str


def card_values(model: LanguageModel) -> list[CardValue]:
    """The model's published full-protocol results on biolm, once per benchmark entry they count in."""
    results = list(
        Result.objects.filter(language_model=model, scope="", preview=False, job__isnull=False)
        .select_related("dataset", "dataset__task_type", "metric", "job")
        .order_by("dataset__slug", "metric__slug", "variant")
    )
    if not results:
        return []
    entries = entries_by_score(result.dataset_id for result in results)
    installed = dict(Plugin.objects.values_list("name", "version"))
    values = []
    for result in results:
        pinned = _pinned_versions(result)
        for entry in entries.get((result.dataset_id, result.metric_id, result.variant), []):
            plugin = entry.benchmark.plugin
            values.append(CardValue(result, entry, pinned.get(plugin) or installed.get(plugin, "")))
    return values


def _pinned_versions(result: Result) -> dict[str, str]:
    """The version of each plugin the result's job pinned: the code that produced it."""
    try:
        return {pin.name: pin.version for pin in parse_job_spec(result.job.spec).code}
    except ContractError:
        return {}


def eval_results(model: LanguageModel, page_url: str, values: list[CardValue] | None = None) -> list[EvalResult]:
    """The ``model-index`` metrics of ``model``, each linking its result on ``page_url`` (the model's page);
    ``values``: its :func:`card_values`, when the caller has them already."""
    values = card_values(model) if values is None else values
    return [_eval_result(model, value, page_url) for value in values]


def _eval_result(model: LanguageModel, value: CardValue, page_url: str) -> EvalResult:
    result, entry = value.result, value.entry
    dataset, protocol = result.dataset, (result.provenance or {}).get("protocol") or {}
    schema = (dataset.adapter or {}).get("schema", "")
    return EvalResult(
        task_type=HUB_TASKS.get(schema, "text-classification"),
        task_name=dataset.task_type.name,
        dataset_type=dataset.hub_dataset or dataset.slug,
        dataset_name=dataset.name,
        dataset_config=dataset.hub_task or None,
        dataset_split="test",
        metric_type=result.metric.slug,
        metric_name=result.metric.name + (f" ({result.variant})" if result.variant else ""),
        metric_value=round(float(result.value), 4),
        metric_args={
            "biolm_model": model.address,
            "benchmark": entry.benchmark.slug,
            "benchmark_plugin": entry.benchmark.plugin,
            "benchmark_plugin_version": value.plugin_version,
            "aggregation_version": entry.benchmark.aggregation_version,
            "protocol": str(protocol.get("name") or ""),
            "statistic": str(protocol.get("statistic") or "mean"),
            "runs": int(result.n_seeds or 0),
            "std": round(float(result.std or 0.0), 4),
        },
        source_name=f"biolm: {entry.benchmark.name}",
        source_url=f"{page_url}#result-{result.pk}",
    )


def model_index_yaml(model: LanguageModel, page_url: str, values: list[CardValue] | None = None) -> str:
    """The card header's YAML (without its ``---`` lines) holding ``model-index``; "" when there is no result.

    The index is named for the model's Hub id when it has one (the repository the card belongs to), else
    its biolm address.
    """
    results = eval_results(model, page_url, values)
    if not results:
        return ""
    data = ModelCardData(model_name=card_name(model), eval_results=results)
    return data.to_yaml()


def card_header(model: LanguageModel, page_url: str, values: list[CardValue] | None = None) -> str:
    """:func:`model_index_yaml` between the ``---`` lines that open a model card: what a submitter pastes."""
    body = model_index_yaml(model, page_url, values)
    return f"---\n{body}\n---\n" if body else ""


def hub_eval_files(model: LanguageModel, page_url: str, values: list[CardValue] | None = None) -> dict[str, str]:
    """The Hub's evaluation-results files, ``{".eval_results/<name>.yaml": text}``, one per Hub dataset id that
    the model's results are on; {} when none of its datasets has one."""
    values = card_values(model) if values is None else values
    by_dataset: dict[str, list[EvalResultEntry]] = {}
    seen: set[tuple[int, str]] = set()
    for value in values:
        result = value.result
        dataset = result.dataset
        if not dataset.hub_dataset or (result.pk, dataset.hub_dataset) in seen:
            continue  # a result counted in two benchmarks is still one value on the Hub's dataset
        seen.add((result.pk, dataset.hub_dataset))
        by_dataset.setdefault(dataset.hub_dataset, []).append(
            EvalResultEntry(
                dataset_id=dataset.hub_dataset,
                task_id=dataset.hub_task or dataset.slug,
                value=round(float(result.value), 4),
                date=result.updated_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                source_url=f"{page_url}#result-{result.pk}",
                source_name="biolm",
                notes=f"{result.metric.name} on the test split; {value.entry.benchmark.name} protocol",
            )
        )
    return {
        f".eval_results/{_file_name(hub_id)}.yaml": yaml.safe_dump(
            eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True
        )
        for hub_id, entries in sorted(by_dataset.items())
    }


def card_name(model: LanguageModel) -> str:
    """The name the card's model-index gives the model: its Hub id where it has one, else its biolm address."""
    return model.hub_id or hub_id(model.checkpoint) or model.address


def _file_name(hub_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", hub_id.replace("/", "--")).strip("-").lower()
