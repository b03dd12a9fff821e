"""Per-class scores on the model and dataset pages: what the score job stored, shown to those who may see the model.

The figures are stored when a result is recorded (the slow test walks a real score job on
BLURB-mini's relation set, whose test split has 16 CPR:3, 14 CPR:4 and 7 CPR:9 pairs); the pages
only read them: one table per result, the classes below the threshold counted and never named, a
private model's figures on nobody else's dataset page, and no section where nothing was stored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert
from worker_side import API as INTERNAL_API
from worker_side import deliver_results, fetch, worker_client

from jobs.models import Job
from leaderboard import recording
from leaderboard.models import Result, ResultClasses
from registry.imports import import_dataset
from registry.models import Dataset, LanguageModel
from submissions.submitting import SubmissionRequest, submit
from workers.engine.__main__ import main as engine
from workers.runner.execution import JobRun

pytestmark = pytest.mark.django_db

FIGURES = {
    "classes": [
        {"name": "CPR:3", "support": 16, "precision": 81.25, "recall": 76.4706, "f1": 78.7879},
        {"name": "CPR:4", "support": 14, "precision": 66.6667, "recall": 71.4286, "f1": 68.9655},
    ],
    "below_threshold": 1,
    "min_support": 10,
}


def section(page: str) -> str:
    """The per-class section of a page ('' when it has none)."""
    match = re.search(r'<section class="per-class".*?</section>', page, re.S)
    return match.group(0) if match else ""


def with_classes(model: LanguageModel, dataset_slug: str, value: float, figures: dict = FIGURES) -> Result:
    dataset = Dataset.objects.get(slug=dataset_slug)
    result = Result.objects.create(
        language_model=model, dataset=dataset, metric=dataset.metric, value=value, n_seeds=2, source="job"
    )
    ResultClasses.objects.create(result=result, figures=figures)
    return result


def test_the_model_page_shows_each_stored_class_and_counts_the_hidden_ones(client, alice):
    model = LanguageModel.objects.create(slug="alice-classes", name="Alice Classes", owner=alice)
    with_classes(model, "demo-relation", 74.1)
    shown = section(client.get(model.get_absolute_url()).content.decode())
    assert "Scores per class" in shown and "Demo" in shown
    rows = re.findall(r'<tr><th scope="row" class="text">([^<]+)</th><td>(\d+)</td><td>([\d.]+)</td>', shown)
    assert rows == [("CPR:3", "16", "81.2"), ("CPR:4", "14", "66.7")]
    assert "1 class with fewer than 10 gold examples in the test split is not shown" in shown
    assert "CPR:9" not in shown


def test_pico_elements_are_named_in_words_and_hoc_counts_abstracts(client, alice):
    model = LanguageModel.objects.create(slug="alice-pico", name="Alice PICO", owner=alice)
    elements = {
        "classes": [
            {"name": name, "support": 100, "precision": 50.0, "recall": 50.0, "f1": 50.0}
            for name in ("PAR", "INT", "OUT")
        ],
        "below_threshold": 0,
        "min_support": 10,
    }
    with_classes(model, "demo-pico", 50.0, elements)
    hallmarks = {**FIGURES, "classes": [{**FIGURES["classes"][0], "name": "inducing angiogenesis"}]}
    with_classes(model, "demo-doc-classification", 60.0, hallmarks)
    shown = section(client.get(model.get_absolute_url()).content.decode())
    assert all(name in shown for name in ("Participants (P)", "Interventions (I)", "Outcomes (O)"))
    assert "inducing angiogenesis" in shown and "fewer than 10 gold abstracts" in shown
    assert "Gold words of the class" in shown


def test_the_dataset_page_shows_visible_models_best_first_and_never_a_private_models_classes(client, alice, bob):
    public = LanguageModel.objects.create(slug="alice-open", name="Alice Open", owner=alice)
    second = LanguageModel.objects.create(slug="alice-second", name="Alice Second", owner=alice)
    secret = LanguageModel.objects.create(
        slug="bob-secret", name="Bob Secret", owner=bob, visibility=LanguageModel.Visibility.PRIVATE
    )
    with_classes(second, "demo-relation", 60.0)
    with_classes(public, "demo-relation", 74.1)
    with_classes(secret, "demo-relation", 99.0)
    url = "/datasets/demo-relation/"

    shown = section(client.get(url).content.decode())
    assert shown.index("Alice Open") < shown.index("Alice Second") and "Bob Secret" not in shown
    client.force_login(bob)
    assert "Bob Secret" in section(client.get(url).content.decode())  # its owner sees it


def test_no_section_without_stored_figures(client, alice):
    model = LanguageModel.objects.create(slug="alice-plain", name="Alice Plain", owner=alice)
    dataset = Dataset.objects.get(slug="demo-relation")
    Result.objects.create(language_model=model, dataset=dataset, metric=dataset.metric, value=70.0, source="job")
    assert section(client.get(model.get_absolute_url()).content.decode()) == ""
    assert section(client.get(f"/datasets/{dataset.slug}/").content.decode()) == ""


# -- recorded by a real score job -------------------------------------------------------------------------

OVERRIDES = {"grid": "single", "seeds": 2, "epochs": 1, "max_train_examples": 40, "max_length": 64}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


def finetuned(alice, checkpoint: Path, work: Path) -> Job:
    """demo-relation fine-tuned by the worker's own command in this process, its results delivered; its score job."""
    import_dataset("demo-relation")
    request = SubmissionRequest(
        owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-relation",), overrides=OVERRIDES
    )
    submission = submit(request)
    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    client = worker_client(finetune)
    claimed = client.post(
        f"{INTERNAL_API}jobs/{finetune.pk}/claim", {"delivery": "d1", "worker": "gpu0@test"}, format="json"
    ).json()
    run = JobRun(finetune.pk, finetune.token, api_url="http://testserver/internal/", worker="gpu0@test", work_dir=work)
    spec_file = work / "spec.json"
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(claimed["spec"]))
    inputs = {role: fetch(client, entries, work / role) for role, entries in claimed["inputs"].items()}
    assert engine(run._finetune_command(spec_file, inputs, work / "out")[3:]) == 0
    deliver_results(client, finetune, work / "out" / "results.json")
    return submission.jobs.get(kind=Job.Kind.SCORE)


@pytest.mark.slow
def test_a_score_job_stores_the_per_class_figures_and_the_model_page_shows_them(
    client, alice, checkpoint, artefact_store
):
    score = finetuned(alice, checkpoint, artefact_store / "worker")
    result = recording.record(score)
    figures = ResultClasses.objects.get(result=result).figures
    assert [(c["name"], c["support"]) for c in figures["classes"]] == [("CPR:3", 16), ("CPR:4", 14)]
    assert figures["below_threshold"] == 1 and figures["min_support"] == 10  # CPR:9's 7 pairs: counted, not named
    assert recording.record(score) == result and ResultClasses.objects.filter(result=result).count() == 1

    shown = section(client.get(result.language_model.get_absolute_url()).content.decode())
    assert "CPR:3" in shown and "CPR:4" in shown and "CPR:9" not in shown
    assert "demo-relation-test" not in shown  # no example id


def test_the_api_gives_a_results_classes_and_null_where_none_were_stored(client, alice, bob):
    model = LanguageModel.objects.create(slug="alice-api", name="Alice API", owner=alice)
    with_classes(model, "demo-relation", 74.1)
    dataset = Dataset.objects.get(slug="demo-ner")
    Result.objects.create(language_model=model, dataset=dataset, metric=dataset.metric, value=70.0, source="job")
    secret = LanguageModel.objects.create(
        slug="bob-api", name="Bob API", owner=bob, visibility=LanguageModel.Visibility.PRIVATE
    )
    with_classes(secret, "demo-relation", 99.0)

    listed = client.get("/api/v1/results/?model=alice-api").json()["results"]
    assert {r["dataset"]: r["classes"] for r in listed} == {"demo-relation": FIGURES["classes"], "demo-ner": None}
    assert client.get("/api/v1/results/?model=bob-api").json()["count"] == 0  # a private model's, to no one else


JNLPBA_FIGURES = {  # untyped predictions against the typed test gold: recall and support only
    "classes": [
        {"name": "protein", "support": 5067, "precision": None, "recall": 71.4286, "f1": None},
        {"name": "cell_type", "support": 1921, "precision": None, "recall": 68.25, "f1": None},
    ],
    "below_threshold": 0,
    "min_support": 10,
}


def test_jnlpbas_page_shows_each_types_recall_and_says_precision_is_not_defined_for_untyped_spans(client, alice):
    model = LanguageModel.objects.create(slug="alice-genia", name="Alice Genia", owner=alice)
    with_classes(model, "jnlpba", 79.0, JNLPBA_FIGURES)
    for page in ("/datasets/jnlpba/", model.get_absolute_url()):
        shown = section(client.get(page).content.decode())
        rows = re.findall(r"<tr><th scope=\"row\" class=\"text\">(.*?)</th>(.*?)</tr>", shown)
        assert [name for name, _ in rows] == ["protein", "cell_type"]
        assert re.findall(r"<td>(.*?)</td>", rows[0][1]) == ["5067", "\u2014", "71.4", "\u2014"]
        assert "predicts untyped spans" in shown and "not defined" in shown


def test_without_a_typed_test_copy_jnlpbas_page_says_in_one_line_why_it_has_no_per_type_figures(client):
    shown = section(client.get("/datasets/jnlpba/").content.decode())
    assert "Scores per class" in shown
    assert re.findall(r"<p[^>]*>(.*?)</p>", shown, re.S) == [
        "JNLPBA&#x27;s files merge its entity types and its import had no typed copy of the test split beside them "
        "(crichton-IOB/test.tsv), so no per-type figures can be shown."
    ]
    assert section(client.get("/datasets/demo-ner/").content.decode()) == ""  # nothing merged there: nothing to say


def test_the_import_keeps_jnlpbas_typed_test_gold_for_scoring_and_never_in_the_workers_copy(client, tmp_path):
    from test_per_class import TYPED_SENTENCES, typed_file_lines, write_jnlpba

    from jobs import exports
    from registry.sync import load_contributions

    outcome = import_dataset("jnlpba", write_jnlpba(tmp_path, typed_file_lines()))
    dataset, spec = Dataset.objects.get(slug="jnlpba"), load_contributions().datasets["jnlpba"]
    gold = exports.loaded(dataset, spec, withheld=False)
    assert gold.fingerprint == outcome.loaded.fingerprint  # the examples are BLURB's, typed tags kept aside
    assert [gold.test_types[row["id"]] for row in gold.splits["test"]] == TYPED_SENTENCES
    assert exports.loaded(dataset, spec, withheld=True).test_types is None
    assert "Scores per class" not in section(client.get("/datasets/jnlpba/").content.decode())  # nothing missing now
