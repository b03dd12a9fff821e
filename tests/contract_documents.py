"""Real job specs and results documents (biolm.contract) for tests that build jobs by hand.

Tests of pages, recording and workers create jobs without going through submit; their specs and
results must still be the typed, versioned documents the platform parses, so they are built here
with the contract's own classes, never written as loose dicts that could drift from it.
"""

from __future__ import annotations

from collections.abc import Mapping

from biolm.contract import (
    RESULTS_VERSION,
    Artefact,
    FinetuneJob,
    ModelInput,
    Overrides,
    PretrainJob,
    ResultsDocument,
    RunRecord,
    ScoreJob,
)
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.protocols import PREVIEW

BUILTIN = collect_contributions(get_plugin_manager(load_entrypoints=False))
DIGEST = "0" * 64


def checkpoint_model(prefix: str = "submissions/1/model") -> ModelInput:
    return ModelInput(checkpoint=(Artefact("blobs/sha256/00/" + DIGEST, 2, DIGEST, "config.json"),), prefix=prefix)


def finetune_spec(
    dataset: str,
    benchmark: str | None = "blurb-mini",
    *,
    overrides: Mapping | None = None,
    preview: bool = False,
    protocol: str | None = None,
    model: ModelInput | None = None,
) -> FinetuneJob:
    """The spec submit would build for ``dataset`` on ``benchmark`` (code pinned as installed here)."""
    from biolm.job_contracts import finetune_job

    chosen = Overrides.from_json({**(PREVIEW if preview else {}), **(overrides or {})})
    return finetune_job(
        BUILTIN, dataset=dataset, model=model or checkpoint_model(), benchmark=benchmark, protocol=protocol,
        overrides=chosen, preview=preview,
    )  # fmt: skip


def score_spec(finetune: FinetuneJob, finetune_job_id: int, metric: str | None = None, variant: str = "") -> ScoreJob:
    from biolm.job_contracts import score_job

    return score_job(BUILTIN, finetune, finetune_job_id, metric or finetune.metric, variant)


def pretrain_spec(recipe: str = "tiny", *, steps: int | None = 50, gpus: int = 1, settings: Mapping | None = None,
                  nodes: int = 1) -> PretrainJob:  # fmt: skip
    corpus = Artefact("blobs/sha256/00/" + DIGEST, 10, DIGEST, "corpus.txt")
    return PretrainJob(recipe=recipe, corpus=corpus, output="submissions/1/pretrained", steps=steps,
                       settings=dict(settings or {}), gpus=gpus, nodes=nodes)  # fmt: skip


def results_document(spec: FinetuneJob, values: Mapping[str | int, float | None] | list[float], *,
                     predictions: Mapping[str, list] | None = None, statistic: str = "mean",
                     chosen: Mapping | None = None, selection: list | None = None, withheld: bool = True,
                     notes: list[str] | None = None, cross_validation: Mapping | None = None,
                     dev_predictions: Mapping[str, list] | None = None) -> dict:  # fmt: skip
    """A results document of ``spec`` whose runs scored ``values`` on test (a list: seeds 42, 43, ...; a mapping:
    run key -> value, ``"fold2-seed42"`` for a fold's run); ``None`` leaves a run's test metrics to the platform."""
    from biolm.contract import parse_run_key

    keyed = values if isinstance(values, Mapping) else {str(42 + i): v for i, v in enumerate(values)}
    hyperparameters = dict(chosen or {"learning_rate": 5e-5, "batch_size": 32, "epochs": 3})
    runs = []
    for key, value in keyed.items():
        fold, seed = parse_run_key(str(key))
        metrics = {} if value is None else {"test": {spec.metric: value}}
        runs.append(RunRecord(seed=seed, fold=fold, hyperparameters=hyperparameters, metrics=metrics))
    document = ResultsDocument(
        spec=spec, dataset=spec.dataset, metric=spec.metric, task_type="", model=spec.model.name,
        benchmark=spec.benchmark,
        protocol={"name": spec.protocol, "statistic": statistic, "cross_validation": spec.cross_validation},
        runs=runs,
        predictions=dict(predictions or {}),
        chosen_hyperparameters=hyperparameters, selection=list(selection or []),
        data={"test_gold_withheld": withheld, "notes": list(notes or [])},
        cross_validation=dict(cross_validation) if cross_validation is not None else None,
        dev_predictions=dict(dev_predictions) if dev_predictions is not None else None,
    )  # fmt: skip
    data = document.to_json()
    assert data["version"] == RESULTS_VERSION
    return data
