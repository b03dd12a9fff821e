"""A small, fully known BLURB-mini leaderboard for tests of the readers' web (browser tests and others).

The readers' pages only read what the platform stored: scores, bootstrap vectors, ranks, runs,
snapshots. Rather than run the engine, :func:`build_web_fixture` stores those rows directly, from
per-example correctness arrays chosen so that the paired bootstrap (:mod:`biolm.significance`) must
give a known outcome: every model's correct test examples are a prefix of one fixed order per
dataset, so a stronger model is right on a strict superset of a weaker one's examples and wins on
virtually every resample, while the tied pair differ only by swapping two examples, which no test
can tell apart. The ranks a page prints are therefore known in advance (:attr:`WebModel.rank_label`)
without trusting the code under test to compute them.

The board (blurb-mini, the demo benchmark every checkout syncs):

=======  ==========================  ======  ======================  ===============================
rank     model                       params  facets                  notes
=======  ==========================  ======  ======================  ===============================
1        Alder-BERT                  29M     small, PubMed, scratch  pretraining report, loss curve
2        Birch-RoBERTa               340M    large, general
3        Cedar-BERT                  14M     small, PMC
=3       Dogwood-BERT                110M    base, clinical          tied with Cedar-BERT
unranked Elm-Longformer              149M    base, PubMed            no demo-qa result
(none)   the private model of alice  20M     small, PubMed           best of all; only alice sees it
=======  ==========================  ======  ======================  ===============================

It needs the built-in plugins synced (:func:`sync_builtin_plugins`, as tests/conftest.py does once
per session) and a database the caller may write to.
"""

from __future__ import annotations

import datetime
import json
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from registry.models import Dataset

BENCHMARK = "blurb-mini"
SEEDS = (11, 12, 13, 14, 15)
# Per-seed spread around a result's value, in points: a mean of 0, so the seeds average to the value.
SEED_OFFSETS = (-1.2, -0.4, 0.0, 0.5, 1.1)
TIE_SWAPS = 2  # examples the tied partner gets right instead of the other's last ones
SNAPSHOT_DATE = datetime.date(2026, 1, 15)
SNAPSHOT_BY = "tests/web_fixture.py"
PRIVATE_OWNER = "alice"
MISSING_DATASET = "demo-qa"

# The pretraining log as workers.engine.pretrain.loop writes it to loss.json (one entry per step, a
# held-out loss every eval_every steps): what the model page draws as the loss curve.
LOSS_LOG: tuple[dict, ...] = tuple(
    {"step": step, "loss": round(9.0 * 0.985**step + 2.0, 4), "mask_rate": 0.15, "seconds": step * 0.5}
    | ({"heldout_loss": round(9.2 * 0.985**step + 2.2, 4)} if step % 20 == 0 else {})
    for step in range(1, 201)
)


@dataclass(frozen=True)
class WebModel:
    """One model of the fixture and what its leaderboard row must show."""

    slug: str
    name: str
    parameters: int
    skill: float  # share of each dataset's test examples it gets right
    architecture: str
    domain: str
    vocabulary: str
    start: str
    throughput: float  # test examples per second
    rank_label: str  # as the leaderboard prints it: "1", "=3", "unranked"; "" for the private model
    tied_with: str = ""  # slug of the model whose correct examples it copies but for TIE_SWAPS swaps
    missing: tuple[str, ...] = ()
    private: bool = False
    pretrained_here: bool = False

    @property
    def size(self) -> str:
        """The leaderboard's size-filter bucket (registry.models.LanguageModel.SIZE_BUCKETS)."""
        from registry.models import LanguageModel

        return next(
            slug for slug, _, low, high in LanguageModel.SIZE_BUCKETS
            if self.parameters >= low and (high is None or self.parameters < high)
        )  # fmt: skip


PUBLIC_MODELS: tuple[WebModel, ...] = (
    WebModel("alder-bert", "Alder-BERT", 29_000_000, 0.90, "bert", "pubmed", "domain", "scratch", 410.0, "1",
             pretrained_here=True),
    WebModel("birch-roberta", "Birch-RoBERTa", 340_000_000, 0.75, "roberta", "general", "general", "scratch", 95.0,
             "2"),
    WebModel("cedar-bert", "Cedar-BERT", 14_000_000, 0.60, "bert", "pmc", "domain", "scratch", 820.0, "3"),
    WebModel("dogwood-bert", "Dogwood-BERT", 110_000_000, 0.60, "bert", "clinical", "general", "continual", 240.0,
             "=3", tied_with="cedar-bert"),
    WebModel("elm-longformer", "Elm-Longformer", 149_000_000, 0.50, "longformer", "pubmed", "domain", "continual",
             60.0, "unranked", missing=(MISSING_DATASET,)),
)  # fmt: skip
PRIVATE_MODEL = WebModel(
    "alice-quetzalcoatl-secret", "Quetzalcoatl Zanzibar Secret-BERT", 20_000_000, 0.95, "bert", "pubmed", "domain",
    "scratch", 500.0, "", private=True,
)  # fmt: skip
ALL_MODELS = (*PUBLIC_MODELS, PRIVATE_MODEL)


@dataclass
class WebFixture:
    """What :func:`build_web_fixture` stored, for tests to navigate and check against."""

    benchmark: object  # registry.models.Benchmark
    models: dict[str, object]  # slug -> registry.models.LanguageModel
    owner: object  # the private model's owner (a User)
    snapshot: object  # leaderboard.models.Snapshot
    correctness: dict[tuple[str, str], np.ndarray] = field(repr=False)  # (model slug, dataset slug) -> 0/1

    @property
    def public(self) -> tuple[WebModel, ...]:
        return PUBLIC_MODELS

    @property
    def private(self) -> WebModel:
        return PRIVATE_MODEL

    @property
    def ranked(self) -> tuple[WebModel, ...]:
        return tuple(m for m in PUBLIC_MODELS if m.rank_label != "unranked")


def sync_builtin_plugins() -> None:
    """Load the built-in plugins into the database, as tests/conftest.py's session fixture does.

    Needed again after a transactional test (a browser test's live server) flushed every table.
    """
    from biolm.plugins import collect_contributions, get_plugin_manager
    from registry.sync import sync_contributions

    report = sync_contributions(collect_contributions(get_plugin_manager(load_entrypoints=False)))
    assert not report.problems, report.problems


def paper_test_size(dataset: Dataset) -> int:
    """The test split's size as the dataset's paper reports it (``Dataset.splits``): the examples a model is
    scored on, so the length of its correctness array."""
    return next(split["size"] for split in dataset.splits if split["name"] == "test")


def correctness_of(model: WebModel, dataset: str, n: int) -> np.ndarray:
    """The model's 0/1 correctness on the dataset's ``n`` test examples (see the module's docstring).

    One fixed order of the examples per dataset; a model is right on the first ``skill * n`` of
    them, so a more skilled model's correct set contains a less skilled one's. A tied partner is
    right on the same number of examples, with its last TIE_SWAPS replaced by the next ones.
    """
    order = np.random.default_rng(list(dataset.encode())).permutation(n)
    right = round(model.skill * n)
    chosen = order[:right]
    if model.tied_with:
        chosen = np.concatenate([order[: right - TIE_SWAPS], order[right : right + TIE_SWAPS]])
    correct = np.zeros(n, dtype=np.float64)
    correct[chosen] = 1.0
    return correct


def resampled_accuracy(correct: np.ndarray, dataset: str) -> np.ndarray:
    """100 x the mean correctness on each of the dataset's shared bootstrap resamples (what the engine stores)."""
    from biolm.significance import resample_indices

    return 100.0 * correct[resample_indices(dataset, len(correct))].mean(axis=1)


def pretraining_report() -> dict:
    """A pretraining.json as workers.engine.pretrain.run writes it, trimmed to what pages read."""
    return {
        "recipe": {"slug": "tiny", "objectives": ["mlm"], "settings": {"steps": len(LOSS_LOG), "eval_every": 20}},
        "starting_checkpoint": None,
        "corpus": {"path": "corpus.txt", "documents": 1200, "train_tokens": 345_678, "fingerprint": "web0fixture"},
        "vocabulary": {"new": {"vocabulary_size": 8192}},
        "contamination": {
            "n": 13,
            "datasets": {
                "demo-ner": {"test_examples": 60, "too_short_to_judge": 2, "contaminated": 3, "share": 0.05},
                MISSING_DATASET: {"test_examples": 40, "too_short_to_judge": 0, "contaminated": 0, "share": 0.0},
            },
        },
        "training": {
            "steps": len(LOSS_LOG),
            "final_loss": LOSS_LOG[-1]["loss"],
            "heldout_loss": next(e["heldout_loss"] for e in reversed(LOSS_LOG) if "heldout_loss" in e),
        },
        "unigram_baseline_loss": 7.1,
    }


def build_web_fixture() -> WebFixture:
    """Store the board described in the module's docstring; returns what a test needs to check it.

    The pretrained model's loss.json is written into the artefact store, where a pretraining job
    leaves it beside the checkpoint (leaderboard.model_card.loss_log_name): give the caller an
    artefact store of its own (tests/conftest.py's ``artefact_store``) so nothing lands in var/.
    :func:`remove_web_fixture` takes it all away again.
    """
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from leaderboard.score_aggregation import recompute_scores
    from leaderboard.snapshots import take_snapshot
    from registry.models import Benchmark

    benchmark = Benchmark.objects.get(slug=BENCHMARK)
    entries = list(benchmark.entries.select_related("dataset", "metric"))
    correctness: dict[tuple[str, str], np.ndarray] = {}
    # One transaction: every saved Result rescores its model at commit (leaderboard.signals), which
    # outside a transaction would rank the benchmark again after each of the 35 results.
    with transaction.atomic():
        owner = get_user_model().objects.create_user(PRIVATE_OWNER, f"{PRIVATE_OWNER}@example.org")
        stored = {spec.slug: _store_model(spec, owner, benchmark, entries, correctness) for spec in ALL_MODELS}
    recompute_scores(benchmark)  # scores, their vectors and the ranks, as a recorded job leaves them
    snapshot = take_snapshot(benchmark, SNAPSHOT_DATE, by=SNAPSHOT_BY)
    return WebFixture(benchmark, stored, owner, snapshot, correctness)


def _store_model(spec: WebModel, owner, benchmark, entries, correctness: dict):
    """One model; its pretraining job and loss log, if pretrained here; per dataset its fine-tuning job,
    a test run per seed, the result (mean, std, median over the seeds) and the result's bootstrap vector."""
    from contract_documents import finetune_spec, pretrain_spec

    from jobs import artefacts
    from jobs.models import Job, Run
    from leaderboard.models import Result
    from leaderboard.resamples import store_result_resamples
    from registry.models import Architecture, LanguageModel, PretrainingRecipe

    output = f"web-fixture/{spec.slug}/pretrained"  # the pretraining job's output prefix in the store
    model = LanguageModel.objects.create(
        slug=spec.slug,
        name=spec.name,
        owner=owner if spec.private else None,
        visibility=LanguageModel.Visibility.PRIVATE if spec.private else LanguageModel.Visibility.PUBLIC,
        origin=LanguageModel.Origin.REPRODUCED,
        architecture=Architecture.objects.get(slug=spec.architecture),
        recipe=PretrainingRecipe.objects.get(slug="tiny") if spec.pretrained_here else None,
        parameter_count=spec.parameters,
        checkpoint=f"artefacts:{output}" if spec.pretrained_here else f"hub:web-fixture/{spec.slug}",
        pretraining=pretraining_report() if spec.pretrained_here else None,
        pretraining_domain=spec.domain,
        vocabulary_kind=spec.vocabulary,
        initialisation=spec.start,
    )
    if spec.pretrained_here:
        Job.objects.create(
            language_model=model, kind=Job.Kind.PRETRAIN, status=Job.Status.SUCCEEDED, attempts=1,
            spec=pretrain_spec().to_json() | {"output": output},
        )  # fmt: skip
        artefacts.store_bytes(json.dumps(list(LOSS_LOG)).encode(), f"{output}/loss.json")
    for entry in entries:
        dataset = entry.dataset
        if dataset.slug in spec.missing:
            continue
        correct = correctness_of(spec, dataset.slug, paper_test_size(dataset))
        correctness[(spec.slug, dataset.slug)] = correct
        seeds = [100.0 * float(correct.mean()) + offset for offset in SEED_OFFSETS]
        job = Job.objects.create(
            language_model=model, benchmark=benchmark, dataset=dataset, kind=Job.Kind.FINETUNE,
            status=Job.Status.SUCCEEDED, attempts=1,
            spec=finetune_spec(dataset.slug, benchmark.slug).to_json(),
        )  # fmt: skip
        for seed, value in zip(SEEDS, seeds, strict=True):
            Run.objects.create(
                job=job, language_model=model, dataset=dataset, hyperparameters={"learning_rate": 5e-5},
                seed=seed, split=Run.Split.TEST, metrics={entry.metric.slug: value},
            )  # fmt: skip
        result = Result.objects.create(
            language_model=model, dataset=dataset, metric=entry.metric, value=statistics.fmean(seeds),
            std=statistics.stdev(seeds), median=statistics.median(seeds), n_seeds=len(seeds),
            source=f"job #{job.pk} (mean of {len(seeds)} test runs)", job=job, inference_per_s=spec.throughput,
        )  # fmt: skip
        store_result_resamples(result, dataset.slug, resampled_accuracy(correct, dataset.slug))
    return model


def remove_web_fixture() -> None:
    """Delete what :func:`build_web_fixture` stored (its models with their results, scores, jobs and
    runs; its snapshot; alice and her sessions) and rank the benchmark again without them.

    For callers that build the board outside a test's transaction (the browser tests' live server
    must see it committed), so the tests after them find the database as it was.
    """
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.models import Session
    from django.db import transaction

    from leaderboard.models import Snapshot
    from leaderboard.score_aggregation import recompute_scores
    from registry.models import Benchmark, LanguageModel

    with transaction.atomic():
        Snapshot.objects.filter(benchmark__slug=BENCHMARK, created_by=SNAPSHOT_BY).delete()
        LanguageModel.objects.filter(slug__in=[m.slug for m in ALL_MODELS]).delete()
        owners = get_user_model().objects.filter(username=PRIVATE_OWNER)
        signed_in = {str(pk) for pk in owners.values_list("pk", flat=True)}
        for session in Session.objects.all():
            if session.get_decoded().get("_auth_user_id") in signed_in:
                session.delete()
        owners.delete()
    recompute_scores(Benchmark.objects.get(slug=BENCHMARK))
