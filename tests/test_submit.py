"""``manage.py submit`` and ``submissions.submitting.submit``: a submission becomes its job graph, or nothing at all."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import tarfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from jobs import artefacts
from jobs.models import Job
from registry.models import Dataset, DatasetImport, LanguageModel
from submissions.models import Submission
from submissions.submitting import QuotaExceeded, SubmissionError, SubmissionRequest, quota, submit

pytestmark = pytest.mark.django_db
BLURB_MINI = ["demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa"]


@pytest.fixture(autouse=True)
def artefact_store(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "store"},
        },
    }
    return tmp_path / "store"


@pytest.fixture
def checkpoint(tiny_bert_checkpoint) -> Path:
    return tiny_bert_checkpoint


def stored_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file()) if store.exists() else []


def test_a_checkpoint_on_a_benchmark_becomes_a_protocol_job_and_a_recording_job_per_dataset(
    alice, checkpoint, artefact_store
):
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint))
    model = submission.language_model
    assert model.address == "alice/tiny-bert" and model.owner == alice and model.checkpoint == str(checkpoint.resolve())
    jobs = list(submission.jobs.order_by("pk"))
    assert [j.dataset.slug for j in jobs if j.kind == Job.Kind.FINETUNE] == BLURB_MINI
    for job in jobs:
        if job.kind == Job.Kind.FINETUNE:
            assert job.queue == Job.Queue.GPU and not job.depends_on.exists()
            assert job.spec["benchmark"] == "blurb-mini" and job.spec["dataset"] == job.dataset.slug
        else:
            assert job.kind == Job.Kind.SCORE and job.queue == Job.Queue.CPU
            (finetune,) = job.depends_on.all()
            assert finetune.dataset == job.dataset and job.spec["finetune_job"] == finetune.pk
    # Workers read the checkpoint from the artefact store, byte for byte what was submitted, each file kept
    # once under its content's digest and handed to the worker under its path in the checkpoint.
    manifest = jobs[0].spec["model"]["checkpoint"]
    originals = {p.relative_to(checkpoint).as_posix(): p for p in checkpoint.iterdir()}
    prefix = jobs[0].spec["model"]["prefix"]
    assert {entry["path"] for entry in manifest} == set(originals)
    for entry in artefacts.download_manifest(manifest, prefix):  # what a worker is handed
        assert artefacts.sha256(Path(entry["url"])) == entry["sha256"] == artefacts.sha256(originals[entry["path"]])
    for entry in manifest:
        copy = artefact_store / entry["name"]
        assert entry["name"] == artefacts.blob_name(entry["sha256"])
        assert (
            entry["sha256"]
            == hashlib.sha256(copy.read_bytes()).hexdigest()
            == artefacts.sha256(originals[entry["path"]])
        )


def test_an_archive_is_unpacked_checked_and_named_after_itself(alice, checkpoint, tmp_path):
    archive = tmp_path / "my-model.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(checkpoint, arcname="my-model")
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=archive, datasets=("demo-qa",)))
    assert submission.language_model.address == "alice/my-model"
    assert submission.language_model.checkpoint == str(archive.resolve())
    assert submission.jobs.count() == 2


def test_a_recipe_and_corpus_pretrain_first_and_every_protocol_job_waits_for_it(alice, tmp_path, artefact_store):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Aspirin inhibits cyclooxygenase.\nBRCA1 mutations raise the risk of cancer.\n")
    request = SubmissionRequest(
        owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus, datasets=("demo-ner", "demo-qa"),
        pretrain_steps=20, overrides={"grid": "single", "seeds": 1},
    )  # fmt: skip
    submission = submit(request)
    pretrain = submission.jobs.get(kind=Job.Kind.PRETRAIN)
    assert pretrain.spec["recipe"] == "tiny" and pretrain.spec["steps"] == 20 and pretrain.queue == Job.Queue.GPU
    assert (artefact_store / pretrain.spec["corpus"]["name"]).read_text() == corpus.read_text()
    assert pretrain.spec["corpus"]["path"] == "corpus.txt"
    for job in submission.jobs.filter(kind=Job.Kind.FINETUNE):
        assert list(job.depends_on.all()) == [pretrain]
        assert job.spec["model"]["pretrained_by"] == pretrain.pk and job.spec["overrides"] == {
            "grid": "single",
            "seeds": 1,
        }
    assert submission.language_model.recipe.slug == "tiny" and submission.language_model.checkpoint == ""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"benchmark": "blurbb"}, r"no benchmark 'blurbb'; known: .*blurb-mini"),
        ({"datasets": ("ncbi-disease",)}, r"blurb-mini has no dataset 'ncbi-disease'; its datasets: demo-ner"),
        ({"overrides": {"epochz": 1}}, r"overrides: no setting 'epochz'; the settings a submission may change: grid"),
        ({"overrides": {"seeds": 0}}, r"overrides: seeds must be a whole number from 1 to 100, not 0"),
        ({"overrides": {"learning_rate": "abc"}}, r"overrides: learning_rate must be a number above 0"),
        ({"model": None}, r"send a checkpoint \(a \.zip, \.tar\.gz"),
        ({"recipe": "tiny"}, "send one of a checkpoint, a Hub id, or a recipe with a corpus, not two"),
        ({"model": Path("/nowhere/model")}, r"/nowhere/model: no such checkpoint directory or archive"),
        ({"model": None, "recipe": "tiny"}, r"a recipe needs a corpus"),
        ({"model": None, "recipe": "tinyy", "corpus": Path("c")}, r"no recipe 'tinyy'; known: .*tiny"),
        ({"model": None, "recipe": "tiny", "corpus": Path("/nowhere.txt")}, r"/nowhere.txt: no such corpus file"),
    ],
)
def test_a_bad_submission_says_what_is_wrong_and_leaves_nothing_behind(
    alice, checkpoint, artefact_store, changes, message
):
    values = {"owner": alice, "benchmark": "blurb-mini", "model": checkpoint, **changes}
    with pytest.raises(SubmissionError, match=message):
        submit(SubmissionRequest(**values))
    assert (
        not Submission.objects.exists()
        and not Job.objects.exists()
        and not LanguageModel.objects.filter(origin=LanguageModel.Origin.REPRODUCED).exists()
    )
    assert stored_files(artefact_store) == []


def test_an_incomplete_checkpoint_is_refused_before_anything_is_stored(alice, checkpoint, tmp_path, artefact_store):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((checkpoint / "config.json").read_text())
    with pytest.raises(SubmissionError, match="not a complete checkpoint: missing weights"):
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=broken))
    assert not Submission.objects.exists() and stored_files(artefact_store) == []


def test_the_daily_quota_counts_the_last_24_hours_and_not_refunded_submissions(alice, bob, checkpoint, settings):
    settings.BIOLM_SUBMISSIONS_PER_DAY = 2

    def request(owner, dataset: str) -> SubmissionRequest:  # another dataset each time: not the same submission
        return SubmissionRequest(owner=owner, benchmark="blurb-mini", model=checkpoint, datasets=(dataset,))

    first = submit(request(alice, "demo-qa"))
    submit(request(alice, "demo-ner"))
    assert quota(alice).left == 0 and quota(alice).resets_at == first.created_at + dt.timedelta(days=1)
    with pytest.raises(QuotaExceeded, match="alice has made 2 submissions in the last 24 hours") as refused:
        submit(request(alice, "demo-pico"))
    assert refused.value.resets_at == first.created_at + dt.timedelta(days=1)
    assert f"the next slot frees at {refused.value.resets_at:%Y-%m-%d %H:%M} UTC" in str(refused.value)
    Submission.objects.filter(pk=first.pk).update(refunded=True)  # it failed through the platform's fault
    submit(request(alice, "demo-pico"))
    submit(request(bob, "demo-qa"))


def test_the_submit_command_prints_the_queued_jobs_and_turns_errors_into_command_errors(alice, checkpoint, capsys):
    call_command("submit", "--model", str(checkpoint), "--benchmark", "blurb-mini", "--datasets", "demo-qa",
                 "--owner", "alice", "--protocol", '{"grid": "single"}', "--json")  # fmt: skip
    payload = json.loads(capsys.readouterr().out)
    assert [(j["kind"], j["queue"], j["dataset"]) for j in payload["jobs"]] == [
        ("finetune", "gpu", "demo-qa"),
        ("score", "cpu", "demo-qa"),
    ]
    with pytest.raises(CommandError, match="no user 'carol'"):
        call_command("submit", "--model", str(checkpoint), "--benchmark", "blurb-mini", "--owner", "carol")
    with pytest.raises(CommandError, match="--protocol: expected a JSON object, got list"):
        call_command("submit", "--model", str(checkpoint), "--benchmark", "blurb-mini", "--owner", "alice",
                     "--protocol", "[1]")  # fmt: skip


def test_a_failure_after_the_checkpoint_was_copied_removes_the_copy_with_the_rows(
    alice, checkpoint, artefact_store, monkeypatch
):
    def lost_connection(*args, **kwargs):
        assert stored_files(artefact_store), "the checkpoint is copied before the jobs are written"
        raise ConnectionError("the database went away")

    monkeypatch.setattr("jobs.graph.queue", lost_connection)
    with pytest.raises(ConnectionError):
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint))
    assert not Submission.objects.exists() and stored_files(artefact_store) == []


def imported_without_folds(benchmark: str) -> None:
    """Every dataset of ``benchmark`` recorded as imported, none with its cross-validation folds (what the rows say)."""
    for dataset in Dataset.objects.filter(entries__benchmark__slug=benchmark).distinct():
        DatasetImport.objects.create(dataset=dataset, fingerprint="0" * 32, source_path="/x", stored_path="/x")


def test_datasets_scored_on_folds_the_platform_does_not_hold_are_refused_with_what_to_do(alice, checkpoint):
    imported_without_folds("lewis2020")
    with pytest.raises(SubmissionError) as refused:
        submit(SubmissionRequest(owner=alice, benchmark="lewis2020", model=checkpoint))
    message = str(refused.value)
    assert "gad, eu-adr" in message or "eu-adr, gad" in message
    assert "import_dataset gad --folds DIR" in message and "import_dataset eu-adr --folds DIR" in message
    assert "--datasets" in message
    assert not Submission.objects.exists()
    submission = submit(SubmissionRequest(owner=alice, benchmark="lewis2020", model=checkpoint, datasets=("hoc",)))
    assert submission.jobs.count() == 2
