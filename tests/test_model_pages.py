"""A model's page, its predictions download, and a dataset's page with its leaderboard."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from contract_documents import finetune_spec, results_document
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import artefacts
from jobs.models import Job, Run
from jobs.results import results_name
from leaderboard.models import Result
from leaderboard.score_aggregation import recompute_scores
from registry.imports import import_dataset
from registry.models import Architecture, Benchmark, Dataset, LanguageModel, PretrainingRecipe

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[1] / "plugins" / "datasets" / "demo"


@pytest.fixture(autouse=True)
def store(artefact_store):
    """Every test gets its own artefact store (results files, loss logs, dataset exports)."""
    return artefact_store


def reproduced(model, dataset, seeds, *, predictions=None, store_results=True, selection_value=71.5,
               dev_predictions=None):  # fmt: skip
    """A result recorded the way leaderboard.recording records one: a succeeded fine-tuning job, its test runs,
    its results file in the artefact store, and the result with the mean, std and median of the seeds."""
    import statistics

    metric = dataset.metric
    benchmark = "blurb-mini" if dataset.benchmarks.filter(slug="blurb-mini").exists() else None
    started = timezone.now() - dt.timedelta(minutes=5)
    chosen = {"learning_rate": 3e-05, "batch_size": 16, "epochs": 3}
    job = Job.objects.create(
        language_model=model, dataset=dataset, benchmark=Benchmark.objects.get(slug="blurb-mini"),
        kind=Job.Kind.FINETUNE, status=Job.Status.SUCCEEDED, attempts=1, started_at=started,
        finished_at=started + dt.timedelta(minutes=3, seconds=7),
        spec=finetune_spec(dataset.slug, benchmark, overrides={"seeds": len(seeds)}).to_json(),
    )  # fmt: skip
    provenance = {
        "versions": {"biolm": "0.9.0", "torch": "2.5.1", "transformers": "4.46.0"},
        "plugins": {"acme": "acme-plugin 1.2"},
        "git_commit": "0123abcd",
        "device": "cuda:0",
        "device_name": "NVIDIA H100",
        "seeds": list(range(42, 42 + len(seeds))),
        "job": job.pk,
        "protocol": {"name": "blurb", "statistic": "mean", "cross_validation": False},
    }
    for i, value in enumerate(seeds):
        Run.objects.create(
            job=job, language_model=model, dataset=dataset, hyperparameters=chosen, seed=42 + i,
            split=Run.Split.TEST, metrics={metric.slug: value}, provenance=provenance,
        )  # fmt: skip
    if store_results:
        selection = [
            {"hyperparameters": {**chosen, "learning_rate": 1e-05}, "dev": {metric.slug: selection_value - 2}},
            {"hyperparameters": chosen, "dev": {metric.slug: selection_value}},
        ]
        results = results_document(job.contract, [None] * len(seeds), predictions=predictions or {}, chosen=chosen,
                                   selection=selection, dev_predictions=dev_predictions)  # fmt: skip
        artefacts.store_bytes(json.dumps(results).encode(), results_name(job.pk))
    return Result.objects.create(
        language_model=model, dataset=dataset, metric=metric, value=statistics.fmean(seeds),
        std=statistics.stdev(seeds) if len(seeds) > 1 else 0.0, median=statistics.median(seeds), n_seeds=len(seeds),
        source=f"job #{job.pk} (mean of {len(seeds)} test runs)", job=job, provenance=provenance,
    )  # fmt: skip


PRETRAINING_REPORT = {
    "recipe": {"slug": "tiny", "objectives": ["mlm"], "settings": {"steps": 40, "mask_rate": 0.15}},
    "corpus": {
        "path": "/srv/secret-corpora/alice/pubmed-sample.txt",
        "fingerprint": "f00dfeedcafe1234",
        "documents": 1200,
        "train_tokens": 345678,
        "heldout_tokens": 4321,
    },
    "vocabulary": {"new": {"vocabulary_size": 8192}},
    "contamination": {
        "n": 13,
        "datasets": {
            "demo-ner": {"test_examples": 60, "too_short_to_judge": 4, "contaminated": 7, "share": 0.125},
            "demo-qa": {"test_examples": 40, "too_short_to_judge": 0, "contaminated": 0, "share": 0.0},
        },
        "skipped": {"ncbi-disease": "files not found at /srv/data/ncbi"},
    },
    "training": {"steps": 40, "final_loss": 5.4321, "heldout_loss": 5.9876},
    "unigram_baseline_loss": 7.1234,
}


@pytest.fixture
def pretrained(alice) -> LanguageModel:
    """A model pretrained on biolm: its pretraining job succeeded and left loss.json with its files."""
    model = LanguageModel.objects.create(
        slug="alice-tiny", name="Alice Tiny BERT", owner=alice,
        architecture=Architecture.objects.get(slug="bert"), recipe=PretrainingRecipe.objects.get(slug="tiny"),
        parameter_count=4_386_304, vocabulary="bert vocabulary of 8,192 entries",
        pretraining_corpus="pubmed-sample.txt (fingerprint f00dfeedcafe1234)", max_sequence_length=128,
        checkpoint="artefacts:submissions/7/pretrained", pretraining=PRETRAINING_REPORT,
        vocabulary_kind=LanguageModel.VocabularyKind.DOMAIN, initialisation=LanguageModel.Initialisation.SCRATCH,
    )  # fmt: skip
    Job.objects.create(
        language_model=model, kind=Job.Kind.PRETRAIN, status=Job.Status.SUCCEEDED, attempts=2,
        spec={"kind": "pretrain", "recipe": "tiny", "output": "submissions/7/pretrained"},
        error="",
    )  # fmt: skip
    return model


def store_loss_log(prefix: str = "submissions/7/pretrained") -> None:
    log = [{"step": s, "loss": 9.0 - s / 10, "seconds": s} for s in range(1, 41)]
    for entry in log:
        if entry["step"] % 10 == 0:
            entry["heldout_loss"] = 9.5 - entry["step"] / 10
    artefacts.store_bytes(json.dumps(log).encode(), f"{prefix}/loss.json")


# --- the model card -----------------------------------------------------------------------------------


def test_the_model_card_shows_architecture_size_vocabulary_corpus_recipe_length_origin_and_facets(client, pretrained):
    page = client.get("/models/alice/alice-tiny/").content.decode()
    assert "<h1>Alice Tiny BERT</h1>" in page
    assert "BERT" in page and "Devlin et al. 2019" in page  # the architecture, with its paper
    assert "4,386,304" in page and "4.4M" in page and "under 50M" in page
    assert page.count("8,192 entries") == 1  # the vocabulary's size, said once though both report and config say it
    assert "pubmed-sample.txt" in page and "f00dfeedcafe1234" in page and "345,678 training tokens" in page
    assert "/srv/secret-corpora" not in page and "/srv/data" not in page  # the corpus's file name, never a server path
    assert "<code>mask_rate</code>: 0.15" in page  # the settings the run used, from its report
    assert "128 tokens" in page
    assert "evaluated on biolm" in page
    for facet in ("domain: PubMed", "domain vocabulary", "from scratch"):  # the domain derived from the corpus
        assert facet in page, facet


def test_a_reported_model_says_which_paper_and_table_and_links_its_benchmark_scores(client):
    model = LanguageModel.objects.get(name="PubMedBERT (PubMed + PMC)")  # reported by Gu et al. 2021 alone
    page = client.get(model.get_absolute_url()).content.decode()
    assert f"reported in {model.source_paper}" in page
    assert 'href="/leaderboard/blurb/"' in page
    score = model.scores.get(benchmark__slug="blurb")
    assert f"{score.score:.2f}" in page
    assert "BLURB score" in page
    assert 'id="radar-blurb"' in page  # its six group scores on BLURB
    assert page.count('<span class="badge reported">reported</span>') == model.results.count()


def test_a_tied_rank_is_shown_with_an_equals_sign(client, alice):
    model = LanguageModel.objects.create(slug="alice-tied", name="Alice Tied", owner=alice)
    reproduced(model, Dataset.objects.get(slug="demo-ner"), [80.0, 82.0])
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"), [model])
    model.scores.update(rank=3, rank_tied=True)
    assert "<td>=3</td>" in client.get("/models/alice/alice-tied/").content.decode()


def test_the_contamination_report_is_a_table_most_contaminated_first(client, pretrained):
    page = client.get("/models/alice/alice-tiny/").content.decode()
    table = page[page.index('id="contamination"') :]
    table = table[: table.index("</table>")]
    assert "<caption>" in table and 'scope="col"' in table
    ner, qa = (Dataset.objects.get(slug=slug).name for slug in ("demo-ner", "demo-qa"))
    assert table.index(ner) < table.index(qa)  # 12.5% before 0%
    assert "12.50%" in table and "0.00%" in table
    assert "<td>56</td>" in table  # 60 test examples, 4 too short to judge
    assert "files not found" in page and "/srv/data" not in page


# --- results, seeds and how to reproduce them ---------------------------------------------------------


def test_each_result_shows_its_chosen_point_the_dev_score_behind_it_every_seed_and_how_to_rerun_it(client, alice):
    model = LanguageModel.objects.create(slug="alice-seeds", name="Alice Seeds", owner=alice)
    dataset = Dataset.objects.get(slug="demo-ner")
    result = reproduced(model, dataset, [80.25, 82.5, 79.75], selection_value=83.4)
    page = client.get("/models/alice/alice-seeds/").content.decode()
    assert f"80.83 ± {result.std:.2f}" in page  # mean ± std of the three seeds
    assert "80.25, 82.50, 79.75" in page
    assert "<code>learning_rate=3e-05</code>" in page and "<code>batch_size=16</code>" in page
    assert f"the best {dataset.metric.name} on dev, 83.40, of 2 points" in page
    assert "torch 2.5.1" in page and "acme (acme-plugin 1.2)" in page and "0123abcd" in page
    assert "cuda:0 NVIDIA H100" in page and "42, 43, 44" in page
    command = "python -m workers.engine finetune --model path/to/alice-seeds --dataset demo-ner --benchmark blurb-mini"
    assert command + " --seeds 3 --out runs/alice-seeds/demo-ner" in page
    assert f"/models/alice/alice-seeds/predictions/{result.pk}.jsonl" not in page  # no predictions stored: no link
    assert 'id="seed-distribution"' in page


def test_the_job_history_shows_kind_state_attempts_and_duration_and_only_the_first_line_of_an_error(client, pretrained):
    Job.objects.create(
        language_model=pretrained, dataset=Dataset.objects.get(slug="demo-qa"), kind=Job.Kind.FINETUNE,
        status=Job.Status.FAILED, attempts=3, error="CUDA out of memory\nTraceback: /srv/worker/secret.py line 3",
        log="a log line the page must not show", token="t0k3n-never-shown",
    )  # fmt: skip
    page = client.get("/models/alice/alice-tiny/").content.decode()
    jobs = page[page.index('id="jobs"') :]
    assert "pretrain" in jobs and "finetune" in jobs and Dataset.objects.get(slug="demo-qa").name in jobs
    assert "failed: CUDA out of memory" in jobs
    assert "/srv/worker" not in page and "a log line" not in page and "t0k3n" not in page


def test_the_loss_curve_is_drawn_from_the_pretraining_jobs_loss_log(client, pretrained):
    assert 'id="pretraining-loss"' not in client.get("/models/alice/alice-tiny/").content.decode()  # no log stored yet
    store_loss_log()
    page = client.get("/models/alice/alice-tiny/").content.decode()
    assert 'id="pretraining-loss"' in page and 'id="pretraining-loss-data"' in page
    figure = json.loads(page.split('id="pretraining-loss-data" type="application/json">')[1].split("</script>")[0])
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["train", "held-out"]
    assert len(figure["data"][0]["x"]) == 40 and figure["data"][1]["x"] == [10, 20, 30, 40]
    assert "vendor/plotly.min." in page  # the scripts come with the charts (a hashed name)


def test_a_long_loss_log_is_cut_to_a_readable_number_of_points(client, pretrained):
    from leaderboard.model_card import MAX_CURVE_POINTS

    log = [{"step": s, "loss": 5.0, "heldout_loss": 6.0} for s in range(1, 5001)]
    artefacts.store_bytes(json.dumps(log).encode(), "submissions/7/pretrained/loss.json")
    page = client.get("/models/alice/alice-tiny/").content.decode()
    figure = json.loads(page.split('id="pretraining-loss-data" type="application/json">')[1].split("</script>")[0])
    for trace in figure["data"]:
        assert len(trace["x"]) <= MAX_CURVE_POINTS + 1 and trace["x"][-1] == 5000


# --- privacy ------------------------------------------------------------------------------------------


def test_a_private_model_is_the_same_404_as_a_missing_one_except_for_its_owner_and_staff(client, alice, bob, staff):
    model = LanguageModel.objects.create(
        slug="alice-secret", name="Alice Secret", owner=alice, visibility=LanguageModel.Visibility.PRIVATE
    )
    result = reproduced(model, Dataset.objects.get(slug="demo-ner"), [70.0, 71.0], predictions={"42": [["O"]]})
    missing = client.get("/models/alice/no-such-model/")
    private = client.get("/models/alice/alice-secret/")
    assert private.status_code == missing.status_code == 404
    assert private.content == missing.content and b"Alice Secret" not in private.content
    assert client.get(f"/models/alice/alice-secret/predictions/{result.pk}.jsonl").status_code == 404
    client.force_login(bob)
    assert client.get("/models/alice/alice-secret/").status_code == 404
    assert client.get(f"/models/alice/alice-secret/predictions/{result.pk}.jsonl").status_code == 404
    for user in (alice, staff):
        client.force_login(user)
        response = client.get("/models/alice/alice-secret/")
        assert response.status_code == 200 and "private" in response.content.decode()


# --- the predictions download ---------------------------------------------------------------------------


def gold_of(dataset: str) -> list[dict]:
    return [json.loads(line) for line in (DEMO / dataset / "test.jsonl").read_text().splitlines() if line.strip()]


def test_the_predictions_download_is_every_seeds_predictions_by_example_id_with_no_gold(client, alice):
    import_dataset("demo-qa")
    gold = gold_of("demo-qa")
    # Predictions that differ from the gold everywhere, so any gold in the file would show.
    wrong = {"yes": "no", "no": "maybe", "maybe": "yes"}
    predicted = {
        "42": [[wrong[row["labels"][0]]] for row in gold],
        "43": [[wrong[wrong[row["labels"][0]]]] for row in gold],
    }
    model = LanguageModel.objects.create(slug="alice-qa", name="Alice QA", owner=alice)
    result = reproduced(model, Dataset.objects.get(slug="demo-qa"), [60.0, 61.0], predictions=predicted)
    page = client.get("/models/alice/alice-qa/").content.decode()
    url = f"/models/alice/alice-qa/predictions/{result.pk}.jsonl"
    assert f'href="{url}"' in page

    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="alice-qa-demo-qa-test-predictions.jsonl"'
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    expected = [
        {"id": row["id"], "seed": int(seed), "prediction": predicted[seed][i]}
        for seed in ("42", "43")
        for i, row in enumerate(gold)
    ]
    assert lines == expected
    assert all(set(line) == {"id", "seed", "prediction"} for line in lines)  # no gold, label or text field
    by_id = {row["id"]: row["labels"] for row in gold}
    assert all(line["prediction"] != by_id[line["id"]] for line in lines)  # predictions, not the gold
    LanguageModel.objects.create(slug="bob-other", name="Bob Other")
    assert client.get(f"/models/papers/bob-other/predictions/{result.pk}.jsonl").status_code == 404  # not its result


def test_a_result_without_a_job_or_without_predictions_has_nothing_to_download(client, alice):
    model = LanguageModel.objects.create(slug="alice-none", name="Alice None", owner=alice)
    dataset = Dataset.objects.get(slug="demo-ner")
    typed = Result.objects.create(language_model=model, dataset=dataset, metric=dataset.metric, value=50.0, scope="")
    assert client.get(f"/models/alice/alice-none/predictions/{typed.pk}.jsonl").status_code == 404
    typed.delete()
    without = reproduced(model, dataset, [50.0, 51.0])  # a results file with no predictions
    assert client.get(f"/models/alice/alice-none/predictions/{without.pk}.jsonl").status_code == 404


# --- the query count ---------------------------------------------------------------------------------


def test_the_model_page_costs_the_same_queries_with_one_result_as_with_ten(
    client, alice, django_assert_max_num_queries
):
    model = LanguageModel.objects.create(slug="alice-many", name="Alice Many", owner=alice)
    datasets = list(Dataset.objects.filter(active=True).order_by("slug")[:10])
    reproduced(model, datasets[0], [70.0, 72.0, 71.0])
    recompute_scores(Benchmark.objects.get(slug="blurb-mini"), [model])
    client.get("/models/alice/alice-many/")  # warm the cache of results files: they are not queries anyway
    with CaptureQueriesContext(connection) as one:
        assert client.get("/models/alice/alice-many/").status_code == 200
    for dataset in datasets[1:]:
        reproduced(model, dataset, [60.0, 65.0, 62.0])
    for benchmark in Benchmark.objects.all():
        recompute_scores(benchmark, [model])
    assert model.results.count() == 10
    with django_assert_max_num_queries(len(one.captured_queries)):
        page = client.get("/models/alice/alice-many/").content.decode()
    assert page.count('<section class="result"') == 10


# --- the dataset page --------------------------------------------------------------------------------


def test_the_dataset_page_lists_visible_models_best_first_with_mean_and_std_and_marks_reported_rows(client, alice, bob):
    biosses = Dataset.objects.get(slug="biosses")
    ours = LanguageModel.objects.create(slug="alice-bio", name="Alice Bio", owner=alice)
    Result.objects.create(language_model=ours, dataset=biosses, metric=biosses.metric, value=99.5, std=1.25,
                          n_seeds=5)  # fmt: skip
    secret = LanguageModel.objects.create(
        slug="alice-hidden", name="Alice Hidden", owner=alice, visibility=LanguageModel.Visibility.PRIVATE
    )
    Result.objects.create(language_model=secret, dataset=biosses, metric=biosses.metric, value=99.9, std=0.1,
                          n_seeds=5)  # fmt: skip
    page = client.get("/datasets/biosses/").content.decode()
    assert "99.50 ± 1.25" in page
    assert 'href="/models/alice/alice-bio/"' in page
    assert "Alice Hidden" not in page and "99.90" not in page
    assert "Pearson" in page and "higher is better" in page
    published = Result.objects.filter(dataset=biosses, scope="blurb").select_related("language_model").first()
    assert published.language_model.name in page and '<span class="badge reported">reported</span>' in page
    board = page[page.index('id="leaderboard"') :]
    assert board.index("Alice Bio") < board.index(published.language_model.name)  # 99.5 beats every paper's
    client.force_login(bob)
    assert "Alice Hidden" not in client.get("/datasets/biosses/").content.decode()
    client.force_login(alice)
    assert "Alice Hidden" in client.get("/datasets/biosses/").content.decode()


def test_the_dataset_page_compares_the_imported_split_sizes_with_the_papers(client):
    from registry.models import DatasetImport

    dataset = Dataset.objects.get(slug="demo-qa")
    DatasetImport.objects.create(
        dataset=dataset, fingerprint="0123456789abcdef", source_path="/srv/x", stored_path="/srv/y",
        split_sizes={"train": 200, "dev": 40, "test": 39}, paper_unit_sizes={"train": 200, "dev": 40, "test": 39},
    )  # fmt: skip
    page = client.get("/datasets/demo-qa/").content.decode()
    splits = page[page.index('id="splits"') : page.index('id="leaderboard"')]
    assert "<strong>differs</strong>" in splits and splits.count(">same<") == 2
    assert "/srv/" not in page


def test_the_dataset_pages_keep_their_urls_and_names():
    from django.urls import reverse

    assert reverse("registry:dataset-detail", args=["biosses"]) == "/datasets/biosses/"
    assert reverse("registry:dataset-list") == "/datasets/"
    assert reverse("leaderboard:model", args=["alice", "x"]) == "/models/alice/x/"


def test_a_published_model_whose_slug_has_a_dot_has_a_page(client):
    model = LanguageModel.objects.get(slug="dmis-lab--biobert-v1.1")  # biolm.name_patterns.SLUG_RE allows '.'
    assert model.get_absolute_url() == "/models/dmis-lab/biobert-v1.1/"
    assert client.get(model.get_absolute_url()).status_code == 200
    dataset = model.results.select_related("dataset").first().dataset
    assert model.get_absolute_url() in client.get(f"/datasets/{dataset.slug}/").content.decode()
