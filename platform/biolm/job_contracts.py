"""Building a job's spec from what a person asked for: the one builder submit and the engine's command line share.

``manage.py submit``, the form and the API (through ``submissions.submitting.submit``) and
``python -m workers.engine finetune --dataset ...`` all describe a fine-tuning job the same way:
a dataset, a benchmark or a protocol, overrides, a model. :func:`finetune_job` turns that into a
:class:`~biolm.contract.FinetuneJob` with everything decided once: the protocol (the benchmark's,
else the one named, else BLURB's), the metric it selects and reports by (the benchmark's for that
dataset, else the dataset's), whether it runs on cross-validation folds (the protocol's plan
says, :func:`biolm.protocols.plan_for`), and the code it runs, pinned (:func:`biolm.contract.pins_for`).
Every mistake is a :class:`~biolm.contract.ContractError` naming the field.
"""

from __future__ import annotations

from biolm.contract import (
    ContractError,
    FinetuneJob,
    ModelInput,
    Overrides,
    ScoreJob,
    TaskOptions,
    pins_for,
)
from biolm.contract.code import KIND_WORDS
from biolm.plugins import Contributions
from biolm.protocols import Plan, plan_for, protocol_named
from biolm.specs import DEFAULT_PROTOCOL, BenchmarkSpec, DatasetSpec


def finetune_job(
    contributions: Contributions,
    *,
    dataset: str,
    model: ModelInput,
    benchmark: str | None = None,
    protocol: str | None = None,
    overrides: Overrides | None = None,
    task_options: TaskOptions | None = None,
    preview: bool = False,
    architecture: str | None = None,
) -> FinetuneJob:
    """The checked spec of fine-tuning ``model`` on ``dataset`` by a benchmark's (or a named) protocol.

    ``architecture`` names the registered architecture whose code builds the model, when one is
    known (it is pinned with the rest).
    """
    spec = _dataset(contributions, dataset)
    task_type = contributions.task_types.get(spec.task_type)
    if task_type is None:
        raise ContractError(f"dataset {dataset!r} names the task type {spec.task_type!r}, which no plugin provides")
    chosen = _benchmark(contributions, benchmark, dataset) if benchmark else None
    slug = protocol or (chosen.protocol if chosen else DEFAULT_PROTOCOL)
    try:
        protocol_spec = protocol_named(contributions.protocols, slug)
    except ValueError as exc:
        raise ContractError(str(exc), "protocol") from None
    metric = next(entry.metric for entry in chosen.entries if entry.dataset == dataset) if chosen else spec.metric
    companions = spec.companion_metrics if spec.companion_metrics is not None else task_type.companion_metrics
    if metric not in (spec.metric, *companions):
        raise ContractError(
            f"benchmark {benchmark!r} scores {dataset!r} by {metric!r}, which its task does not compute"
        )
    overrides = overrides or Overrides()
    plan = plan_for(protocol_spec, spec, task_type, overrides)
    uses = [("datasets", dataset), ("task_types", task_type.slug), ("protocols", protocol_spec.slug)]
    uses += [("metrics", slug) for slug in dict.fromkeys((metric, spec.metric, *companions))]
    if chosen is not None:
        uses.append(("benchmarks", chosen.slug))
    if architecture:
        uses.append(("architectures", architecture))
    return FinetuneJob(
        dataset=dataset,
        protocol=protocol_spec.slug,
        metric=metric,
        model=model,
        benchmark=chosen.slug if chosen else None,
        overrides=overrides,
        task_options=task_options or TaskOptions(),
        preview=preview,
        cross_validation=plan.cross_validation,
        code=pins_for(contributions, uses),
    )


def job_plan(contributions: Contributions, job: FinetuneJob) -> Plan:
    """The plan ``job``'s protocol makes for its dataset, with its overrides (what its slices are cut from)."""
    spec = _dataset(contributions, job.dataset)
    protocol_spec = protocol_named(contributions.protocols, job.protocol)
    return plan_for(protocol_spec, spec, contributions.task_types[spec.task_type], job.overrides)


def score_job(
    contributions: Contributions, finetune: FinetuneJob, finetune_job_id: int, metric: str, variant: str = ""
) -> ScoreJob:
    """The spec that scores ``finetune``'s test predictions by a benchmark entry's ``metric`` and records them.

    It pins the same code as the fine-tuning job (the platform re-reads the data with the
    dataset's reader and scores with the metrics), plus the entry's metric.
    """
    if finetune.benchmark is None:
        raise ContractError("a score job records a benchmark's result: its fine-tuning job names no benchmark")
    uses = [(kind, slug) for pin in finetune.code for kind, slug in _provided(pin.provides)]
    return ScoreJob(
        dataset=finetune.dataset,
        benchmark=finetune.benchmark,
        metric=metric,
        finetune_job=finetune_job_id,
        variant=variant,
        preview=finetune.preview,
        code=pins_for(contributions, [*uses, ("metrics", metric)]),
    )


KINDS_BY_WORD = {word: kind for kind, word in KIND_WORDS.items()}


def _provided(provides: tuple[str, ...]) -> list[tuple[str, str]]:
    """``("dataset ncbi-disease", ...)`` back to ``[("datasets", "ncbi-disease"), ...]``."""
    pairs = []
    for item in provides:
        word, _, slug = item.rpartition(" ")
        if word in KINDS_BY_WORD:
            pairs.append((KINDS_BY_WORD[word], slug))
    return pairs


def _dataset(contributions: Contributions, slug: str) -> DatasetSpec:
    spec = contributions.datasets.get(slug)
    if spec is None:
        raise ContractError(f"unknown dataset {slug!r}; known: {', '.join(sorted(contributions.datasets))}", "dataset")
    return spec


def _benchmark(contributions: Contributions, slug: str, dataset: str) -> BenchmarkSpec:
    spec = contributions.benchmarks.get(slug)
    if spec is None:
        known = ", ".join(sorted(contributions.benchmarks))
        raise ContractError(f"unknown benchmark {slug!r}; known: {known}", "benchmark")
    if not any(entry.dataset == dataset for entry in spec.entries):
        datasets = ", ".join(dict.fromkeys(entry.dataset for entry in spec.entries))
        raise ContractError(f"benchmark {slug!r} does not score {dataset!r}; its datasets: {datasets}", "dataset")
    return spec
