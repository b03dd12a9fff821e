"""The leaderboard benchmark's board: 5,000 models x 30 datasets x 5 seeds, written in bulk, checked against the scorer.

Runs inside the benchmark's Django child process (``bench.leaderboard``), on a database of its own.
A synthetic benchmark of ``datasets`` datasets aggregated like BLURB (the mean of ``groups`` group
means) gets ``models`` reproduced models, each with per dataset a fine-tuning job, ``seeds`` runs and
one ``Result`` (mean, std and median over the seeds). A result's bootstrap vector (``RESAMPLES``
float64) is its value plus a resample effect every model shares on that dataset plus the model's own
noise, as a paired bootstrap gives.

What is stored, and why: the jobs, runs and results of every model (written with PostgreSQL's
``COPY``, a SQLite file taking ``bulk_create``), and each model's ``Score`` and ``ScoreResamples``,
which is what the pages, the API and the ranking read. A result's own vector (``ResultResamples``,
8 KB each: 1.2 GB for 150,000 results) is read only when its model is rescored, so it is stored for
the models the benchmark rescores (the newcomer, whose new result the re-ranking phase records, and
``checked_models`` others) and, with ``result_vectors="all"``, for every model. The scores are
computed here from the same numbers with the scorer's own functions (``biolm.aggregation.aggregate``
and the linear weights of ``biolm.significance.aggregation_weights``); :func:`check_scores` then
rescored the checked models with ``leaderboard.score_aggregation.recompute_scores`` and requires every stored
figure and vector to come out identical, so the fast fill cannot drift from what the platform computes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

PLUGIN = "bench-leaderboard"
SLUG = "bench-board"
METRIC = "bench-f1"
HYPERPARAMETERS = {"learning_rate": 5e-05, "batch_size": 32, "epochs": 3}
INFERENCE_PER_S = 900.0


@dataclass
class Board:
    """What the fill wrote and what the later phases need: rows, the numbers behind them, the score vectors."""

    benchmark: object
    metric: object
    datasets: list
    models: list
    private: set[int]
    newcomer: int
    values: np.ndarray  # (models, datasets): each result's mean over seeds; NaN where no result
    stds: np.ndarray
    vectors: np.ndarray  # (models, resamples): each model's benchmark score on each resample
    test_sizes: list[int]
    seeds: int
    vector_models: list[int]  # the models whose results' vectors are stored

    @property
    def last_dataset(self):
        return self.datasets[-1]


def insert_rows(model, fields: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Insert ``rows`` (each its primary key, then the values of ``fields`` by attribute name); returns how many.

    PostgreSQL takes them by ``COPY`` (tens of thousands of rows a second where ``bulk_create`` takes
    thousands); the fields not given get what a new instance would save (defaults, ``auto_now``).
    Elsewhere ``bulk_create``. Either way the table's id sequence is moved past the last key.
    """
    from django.core.management.color import no_style
    from django.db import connection

    by_name = {f.attname: f for f in model._meta.concrete_fields}
    if connection.vendor != "postgresql":
        instances = [model(pk=pk, **dict(zip(fields, values, strict=True))) for pk, *values in rows]
        model.objects.bulk_create(instances, batch_size=2000)
        return len(instances)
    template = model()
    pk = model._meta.pk.attname
    rest = [f for f in model._meta.concrete_fields if f.attname not in fields and f.attname != pk]
    fixed = tuple(f.get_db_prep_save(f.pre_save(template, add=True), connection) for f in rest)
    json_at = [n for n, name in enumerate(fields) if by_name[name].get_internal_type() == "JSONField"]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in [model._meta.pk, *map(by_name.get, fields), *rest])
    count = 0
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {model._meta.db_table} ({columns}) FROM STDIN") as copy,
    ):
        for pk, *values in rows:
            for at in json_at:
                values[at] = by_name[fields[at]].get_db_prep_save(values[at], connection)
            copy.write_row((pk, *values, *fixed))
            count += 1
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), [model]):
            cursor.execute(statement)
    return count


def fill(config, timings: dict[str, float]) -> Board:
    """The catalogue, the models, and per dataset their jobs, runs, results and (where kept) result vectors."""
    from biolm.significance import RESAMPLES

    started = time.perf_counter()
    rng = np.random.default_rng(20240)
    catalogue = _fill_catalogue(config, rng)
    models, private, newcomer = _fill_models(config, catalogue["architecture"])
    timings["catalogue_and_models"] = time.perf_counter() - started
    n_models, n_datasets = config.models, config.datasets
    step = max(1, n_models // max(1, config.checked_models))
    checked = [i for i in range(step // 2, n_models, step) if i != newcomer][: config.checked_models]
    kept = list(range(n_models)) if config.result_vectors == "all" else sorted({newcomer, *checked})
    empty = np.full((n_models, n_datasets), np.nan)
    sizes = [int(n) for n in catalogue["test_sizes"]]
    board = Board(catalogue["benchmark"], catalogue["metric"], catalogue["datasets"], models, private, newcomer,
                  empty, empty.copy(), np.zeros((n_models, RESAMPLES)), sizes, config.seeds, kept)  # fmt: skip
    # A model's true level on a dataset: the dataset's difficulty, the model's quality, their interaction.
    quality = rng.normal(0.0, 3.0, n_models)
    difficulty = rng.uniform(55.0, 88.0, n_datasets)
    true = np.clip(difficulty[None, :] + quality[:, None] + rng.normal(0.0, 1.0, (n_models, n_datasets)), 1, 99)
    spread = rng.uniform(0.3, 1.5, n_datasets)
    weights = _weights(board.benchmark)
    phases: dict[str, float] = {}
    for d in range(n_datasets):
        _fill_dataset(config, rng, board, d, (true[:, d], spread[d]), weights, phases)
    timings.update({f"copy_{name}": seconds for name, seconds in phases.items()})
    return board


def _weights(benchmark) -> list[float]:
    """Each dataset's weight in the primary score, in entry order, as the scorer derives them."""
    from biolm.significance import aggregation_weights
    from leaderboard.score_aggregation import spec_for

    weights = aggregation_weights(spec_for(benchmark))
    return [weights[f"d{d:02d}"] for d in range(len(weights))]


def _fill_catalogue(config, rng) -> dict:
    """The task type, metric, architecture, ``config.datasets`` datasets and the benchmark grouping them.

    The benchmark aggregates as BLURB does (the mean of the group means), so scoring and ranking
    do the work they do on the real board. Draws the datasets' test sizes first from ``rng``.
    """
    from registry.models import Architecture, Benchmark, BenchmarkEntry, Dataset, Metric, TaskType

    n_datasets = config.datasets
    task = TaskType.objects.create(slug="bench-tagging", name="Tagging", plugin=PLUGIN)
    metric = Metric.objects.create(slug=METRIC, name="F1", plugin=PLUGIN)
    architecture = Architecture.objects.create(slug="bench-bert", name="BERT", plugin=PLUGIN, model_type="bert")
    test_sizes = rng.integers(300, 5000, n_datasets)
    datasets = Dataset.objects.bulk_create(
        Dataset(slug=f"bench-d{d:02d}", name=f"Dataset {d:02d}", plugin=PLUGIN, task_type=task, metric=metric,
                domain=Dataset.Domain.BIOMEDICAL, splits=[{"name": "test", "size": int(test_sizes[d]), "unit": "x"}])
        for d in range(n_datasets)
    )  # fmt: skip
    groups = [list(range(n_datasets))[g :: config.groups] for g in range(config.groups)]
    aggregation = {
        "version": "1",
        "primary": "bench-score",
        "groups": [{"slug": f"group-{g}", "name": f"Group {g}", "members": [f"d{d:02d}" for d in sorted(members)]}
                   for g, members in enumerate(groups)],
        "summaries": [{"slug": "bench-score", "name": "Bench score", "method": "mean_of_groups",
                       "members": [f"group-{g}" for g in range(config.groups)], "weights": []}],
        "show_group_scores": True,
    }  # fmt: skip
    benchmark = Benchmark.objects.create(
        slug=SLUG, name="Bench board", plugin=PLUGIN, description="A synthetic benchmark of the leaderboard bench.",
        aggregation=aggregation, aggregation_version="1", precision=2,
    )  # fmt: skip
    BenchmarkEntry.objects.bulk_create(
        BenchmarkEntry(benchmark=benchmark, key=f"d{d:02d}", dataset=datasets[d], metric=metric,
                       label=f"D{d:02d}", position=d)
        for d in range(n_datasets)
    )  # fmt: skip
    return {"metric": metric, "architecture": architecture, "datasets": datasets, "test_sizes": test_sizes,
            "benchmark": benchmark}  # fmt: skip


def _fill_models(config, architecture) -> tuple[list, set[int], int]:
    """The models, which of them are private (spread evenly, one owner), and the public newcomer.

    The newcomer is the public model left without its last dataset's result, for the re-ranking
    phase to give it one.
    """
    from django.contrib.auth.models import User

    from registry.models import LanguageModel

    n_models = config.models
    owner = User.objects.create_user("bench-owner")
    stride = max(1, n_models // max(1, config.private_models))
    private = {(i * stride + stride // 2 + 1) % n_models for i in range(config.private_models)}
    newcomer = next(i for i in range(n_models // 2, n_models) if i not in private)
    sizes = [14_000_000, 110_000_000, 340_000_000, 1_300_000_000]
    models = LanguageModel.objects.bulk_create(
        (LanguageModel(slug=f"bench-m{i:04d}", name=f"Bench model {i:04d}", architecture=architecture,
                       parameter_count=sizes[i % len(sizes)], vocabulary="PubMed WordPiece",
                       pretraining_corpus="PubMed abstracts", pretraining_domain=LanguageModel.Domain.PUBMED,
                       vocabulary_kind=LanguageModel.VocabularyKind.DOMAIN,
                       initialisation=LanguageModel.Initialisation.SCRATCH,
                       visibility=LanguageModel.Visibility.PRIVATE if i in private else LanguageModel.Visibility.PUBLIC,
                       owner=owner if i in private else None, origin=LanguageModel.Origin.REPRODUCED).fill_defaults()
         for i in range(n_models)),
        batch_size=2000,
    )  # fmt: skip
    return models, private, newcomer


def _fill_dataset(config, rng, board: Board, d: int, level: tuple, weights: list[float], phases: dict) -> None:
    """Dataset ``d``'s rows for every model (but the newcomer on the last one): jobs, runs, results, vectors.

    Adds the dataset's weighted vectors to ``board.vectors`` in entry order, as ``benchmark_vector``
    sums them. ``level`` is (each model's true level on this dataset, the dataset's seed spread).
    """
    from biolm.significance import RESAMPLES
    from jobs.models import Job, Run, canonical_key
    from leaderboard.models import Result, ResultResamples
    from leaderboard.resamples import encode

    true_level, seed_spread = level
    n_models, n_seeds, dataset = len(board.models), config.seeds, board.datasets[d]
    owners = [i for i in range(n_models) if not (i == board.newcomer and d == len(board.datasets) - 1)]
    per_seed = np.clip(true_level[:, None] + rng.normal(0.0, 1.0, (n_models, n_seeds)) * seed_spread, 0.0, 100.0)
    means, medians = per_seed.mean(axis=1), np.median(per_seed, axis=1)
    stds = per_seed.std(axis=1, ddof=1) if n_seeds > 1 else np.full(n_models, np.nan)
    board.values[owners, d], board.stds[owners, d] = means[owners], stds[owners]
    # A paired bootstrap: what a resample makes easy or hard is shared by every model (its standard
    # error on a test set of this size), plus a smaller part of each model's own.
    error = 100 * np.sqrt(0.2 / board.test_sizes[d])
    vectors = means[:, None] + rng.normal(0.0, 0.9 * error, RESAMPLES)[None, :]
    vectors += rng.normal(0.0, 0.45 * error, (n_models, RESAMPLES))
    board.vectors += weights[d] * vectors
    seeds = [42 + s for s in range(n_seeds)]
    key = d * n_models + 1  # a job's, result's and result vector's key: dataset-major, model by model
    kept = [i for i in board.vector_models if i in set(owners)]
    job_fields = ["language_model_id", "benchmark_id", "dataset_id", "kind", "status", "spec", "attempts", "token"]
    rows = {
        "jobs": (Job, job_fields,
                 ((key + i, board.models[i].pk, board.benchmark.pk, dataset.pk, Job.Kind.FINETUNE,
                   Job.Status.SUCCEEDED, {"kind": "finetune", "dataset": dataset.slug}, 1, f"bench-{key + i}")
                  for i in owners)),
        "runs": (Run, ["job_id", "language_model_id", "dataset_id", "hyperparameters", "hyperparameters_key", "seed",
                       "split", "metrics"],
                 (((key + i - 1) * n_seeds + s + 1, key + i, board.models[i].pk, dataset.pk, HYPERPARAMETERS,
                   canonical_key(HYPERPARAMETERS), seed, Run.Split.TEST, {METRIC: float(per_seed[i, s])})
                  for i in owners for s, seed in enumerate(seeds))),
        "results": (Result, ["language_model_id", "dataset_id", "metric_id", "value", "std", "median", "n_seeds",
                             "job_id", "provenance", "inference_per_s"],
                    ((key + i, board.models[i].pk, dataset.pk, board.metric.pk, float(means[i]), _or_none(stds[i]),
                      float(medians[i]), n_seeds, key + i, {"seeds": seeds}, INFERENCE_PER_S) for i in owners)),
        "result_resamples": (ResultResamples, ["result_id", "dataset_key", "values"],
                             ((key + i, key + i, f"{dataset.slug}/test/{board.test_sizes[d]}", encode(vectors[i]))
                              for i in kept)),
    }  # fmt: skip
    for name, (model, fields, generated) in rows.items():
        tick = time.perf_counter()
        insert_rows(model, fields, generated)
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - tick


def _or_none(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def fill_scores(board: Board, indices: Sequence[int]) -> int:
    """The ``Score`` and ``ScoreResamples`` of the models at ``indices``, as ``recompute_scores`` would store them.

    The score, groups and summaries come from the scorer's ``aggregate``; the vector is the weighted
    sum of the results' vectors (built as the fill wrote them), for the complete models only, as
    ``store_score_resamples`` keeps one only when every weighted entry has a vector.
    """
    from biolm.aggregation import aggregate
    from leaderboard.models import Score, ScoreResamples
    from leaderboard.resamples import encode
    from leaderboard.score_aggregation import spec_for

    spec, benchmark = spec_for(board.benchmark), board.benchmark
    keys = [f"d{d:02d}" for d in range(len(board.datasets))]
    scores, vectors = [], []
    for i in indices:
        present = [d for d in range(len(keys)) if not np.isnan(board.values[i, d])]
        values = {keys[d]: float(board.values[i, d]) for d in present}
        outcome = aggregate(spec, values)
        spread = {keys[d]: {"std": _or_none(board.stds[i, d]), "n": int(board.seeds)} for d in present}
        figures = (outcome.score, outcome.groups, outcome.summaries, values, list(outcome.missing))
        scores.append((i + 1, board.models[i].pk, benchmark.pk, *figures, benchmark.aggregation_version, spread,
                       INFERENCE_PER_S, False))  # fmt: skip
        if len(present) == len(keys):
            vectors.append((i + 1, i + 1, encode(board.vectors[i])))
    fields = ["language_model_id", "benchmark_id", "score", "groups", "summaries", "entries", "missing",
              "aggregation_version", "entry_spread", "inference_per_s", "preview"]  # fmt: skip
    insert_rows(Score, fields, scores)
    insert_rows(ScoreResamples, ["score_id", "values"], vectors)
    return len(scores)


FIGURES = ["score", "groups", "summaries", "entries", "missing", "entry_spread", "inference_per_s", "preview"]


def check_scores(board: Board) -> dict:
    """Rescore the checked models with the platform's own ``recompute_scores``: every figure must stay as filled.

    Raises AssertionError naming the first model whose score or bootstrap vector differs.
    """
    from leaderboard.models import Score, ScoreResamples
    from leaderboard.score_aggregation import recompute_scores

    checked = [i for i in board.vector_models if i != board.newcomer]
    pks = [board.models[i].pk for i in checked]

    def stored() -> dict:
        rows = Score.objects.filter(benchmark=board.benchmark, language_model_id__in=pks)
        vectors = dict(ScoreResamples.objects.filter(score__in=rows).values_list("score__language_model_id", "values"))
        return {row["language_model_id"]: (row, bytes(vectors[row["language_model_id"]]))
                for row in rows.values("language_model_id", *FIGURES)}  # fmt: skip

    before = stored()
    started = time.perf_counter()
    recompute_scores(board.benchmark, [board.models[i] for i in checked])
    seconds = time.perf_counter() - started
    after = stored()
    for pk in pks:
        if before[pk] != after[pk]:
            raise AssertionError(f"model {pk}: the fill's score differs from recompute_scores': {before[pk][0]}")
    return {"models": len(checked), "identical": True, "recompute_scores_s": seconds}
