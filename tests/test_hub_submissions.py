"""Submitting by Hugging Face Hub id: resolved at submit, fetched and checked by the graph's first job (CPU worker).

Against a Hub stand-in (tests/hub_standin.py) that ``huggingface_hub`` itself talks to, on a free port.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from hub_standin import HubRepository, HubStandIn
from huggingface_hub import constants

from biolm.intake_limits import ArchiveLimits
from jobs import completion, hub_tokens, tasks
from jobs.models import HubToken, Job
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.submitting import SubmissionError, SubmissionRequest, submit

pytestmark = pytest.mark.django_db
CPU = "cpu-worker"
CARD = {"license": "apache-2.0", "base_model": "google-bert/bert-base-uncased"}
TOKEN = "hf_alicesOwnReadToken0123456789"


@pytest.fixture
def hub(settings, monkeypatch, artefact_store, tiny_bert_checkpoint):
    """The stand-in Hub, with a public, a gated, a private, a pickle-only and a code-carrying repository."""
    server = HubStandIn().start()
    settings.BIOLM_HUB_ENDPOINT = server.endpoint
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    server.tokens |= {TOKEN, "hf_someoneElsesToken"}
    server.add_checkpoint("biolm-test/tiny-bert", tiny_bert_checkpoint, card=CARD, tags={"v1": ""},
                          files={"train.py": b"import os\n", "README.md": b"# tiny\n"})  # fmt: skip
    server.repositories["biolm-test/tiny-bert"].tags["v1"] = server.repositories["biolm-test/tiny-bert"].commit
    server.add_checkpoint("biolm-test/gated-bert", tiny_bert_checkpoint, gated=True, granted={TOKEN})
    server.add_checkpoint("biolm-test/private-bert", tiny_bert_checkpoint, private=True, granted={TOKEN})
    pickled = {"config.json": (tiny_bert_checkpoint / "config.json").read_bytes(), "pytorch_model.bin": b"\x80\x04."}
    server.add("biolm-test/pickled-bert", HubRepository(files=pickled))
    yield server
    server.stop()


def hub_request(owner, hub_id: str, **options) -> SubmissionRequest:
    return SubmissionRequest(owner=owner, benchmark="blurb-mini", hub=hub_id, datasets=("demo-ner",), **options)


def run_fetch(job: Job) -> str | None:
    job.refresh_from_db()
    return tasks.execute_platform_job(job.pk, job.token, f"delivery-{job.attempts}", CPU)


def test_a_hub_id_becomes_a_fetch_job_that_the_fine_tuning_waits_for_and_nothing_is_fetched_at_submit(alice, hub):
    submission = submit(hub_request(alice, "biolm-test/tiny-bert@v1"))
    repo = hub.repositories["biolm-test/tiny-bert"]
    model = submission.language_model
    assert (model.address, model.hub_id, model.hub_commit) == ("alice/tiny-bert", "biolm-test/tiny-bert", repo.commit)
    assert (model.licence, model.base_model) == ("apache-2.0", "google-bert/bert-base-uncased")  # from the card
    fetch, finetune, score = submission.jobs.order_by("pk")
    assert (fetch.kind, fetch.queue) == (Job.Kind.FETCH, Job.Queue.CPU)
    assert fetch.spec["repository"] == "biolm-test/tiny-bert" and fetch.spec["revision"] == repo.commit
    assert list(finetune.depends_on.all()) == [fetch]
    assert finetune.spec["model"] == {"fetched_by": fetch.pk, "prefix": fetch.spec["output"]}
    assert score.kind == Job.Kind.SCORE
    assert not [path for method, path, _ in hub.requests if method == "GET" and "/resolve/" in path]


def test_the_fetch_job_takes_only_the_allowed_files_through_the_intake_and_stores_them_for_the_fine_tuning(
    alice, hub, tiny_bert_checkpoint
):
    submission = submit(hub_request(alice, "biolm-test/tiny-bert"))
    fetch, finetune = submission.jobs.order_by("pk")[:2]
    assert run_fetch(fetch) == Job.Status.SUCCEEDED
    fetched = {path.rsplit("/", 1)[1] for method, path, _ in hub.requests if method == "GET" and "/resolve/" in path}
    assert "train.py" not in fetched and "config.json" in fetched  # code is never fetched, only what is allowed
    model = LanguageModel.objects.get(pk=submission.language_model_id)
    assert model.parameter_count > 0 and model.architecture.model_type == "bert"
    inputs = completion.inputs_of(finetune, "http://platform/api/jobs/")["model"]
    originals = {p.name: p for p in tiny_bert_checkpoint.iterdir() if p.is_file()}
    assert {entry["path"] for entry in inputs} >= set(originals)
    fetch.refresh_from_db()
    assert "fetched" in fetch.log and "checked" in fetch.log


@pytest.mark.parametrize(
    ("hub_id", "token", "field", "words"),
    [
        ("biolm-test/nothing-here", "", "hub", "no model repository biolm-test/nothing-here on the Hub"),
        ("biolm-test/private-bert", "", "hub", "a private repository needs a Hub token"),
        ("biolm-test/tiny-bert@no-such-branch", "", "hub", "has no revision 'no-such-branch'"),
        ("biolm-test/gated-bert", "", "hub", "is gated on the Hub"),
        ("biolm-test/gated-bert", "hf_someoneElsesToken", "hub_token", "has no access to this gated repository"),
        ("biolm-test/gated-bert", "hf_notATokenTheHubKnows", "hub_token", "it is invalid, expired"),
        ("biolm-test/pickled-bert", "", "hub", "pytorch_model.bin"),
        ("not a hub id", "", "hub", "is not a Hugging Face Hub model id"),
    ],
)
def test_what_the_hub_refuses_is_said_beside_the_field_and_nothing_is_kept(alice, hub, hub_id, token, field, words):
    with pytest.raises(SubmissionError) as refused:
        submit(hub_request(alice, hub_id, hub_token=token))
    assert refused.value.field == field and words in str(refused.value)
    assert not token or token not in str(refused.value)
    assert not Submission.objects.exists() and not LanguageModel.objects.filter(owner=alice).exists()


def test_pickled_weights_only_are_refused_with_the_conversion_named(alice, hub):
    with pytest.raises(SubmissionError, match=r"safe_serialization=True.*model\.safetensors"):
        submit(hub_request(alice, "biolm-test/pickled-bert"))


def test_a_repository_over_the_size_cap_is_refused_at_submit(alice, hub, settings):
    settings.BIOLM_ARCHIVE_LIMITS = ArchiveLimits(max_total_bytes=1000)
    with pytest.raises(SubmissionError, match=r"over this site's cap .*BIOLM_ARCHIVE_MAX_BYTES"):
        submit(hub_request(alice, "biolm-test/tiny-bert"))


def test_a_hub_that_does_not_answer_at_submit_queues_nothing_and_says_to_send_again(alice, hub, settings):
    hub.repositories["biolm-test/tiny-bert"].failing = 10
    with pytest.raises(SubmissionError, match=r"answered 503.*nothing was queued"):
        submit(hub_request(alice, "biolm-test/tiny-bert"))
    assert not Submission.objects.exists()


def test_a_gated_repository_is_fetched_with_the_token_kept_encrypted_apart_and_forgotten_when_done(alice, hub):
    submission = submit(hub_request(alice, "biolm-test/gated-bert", hub_token=TOKEN))
    fetch = submission.jobs.get(kind=Job.Kind.FETCH)
    held = HubToken.objects.get(job=fetch)
    assert TOKEN not in held.ciphertext and hub_tokens.token_for(fetch) == TOKEN
    assert TOKEN not in json.dumps([job.spec for job in submission.jobs.all()])
    assert run_fetch(fetch) == Job.Status.SUCCEEDED
    fetch.refresh_from_db()
    assert not HubToken.objects.exists() and TOKEN not in fetch.log + fetch.error
    assert all(with_token for _, path, with_token in hub.requests if "gated-bert/resolve/" in path)


def test_a_token_revoked_before_the_fetch_is_not_used_and_the_fetch_fails_as_the_submissions(alice, hub):
    submission = submit(hub_request(alice, "biolm-test/gated-bert", hub_token=TOKEN))
    assert hub_tokens.held_for(submission) and hub_tokens.revoke(submission) == 1
    fetch = submission.jobs.get(kind=Job.Kind.FETCH)
    assert run_fetch(fetch) == Job.Status.FAILED
    fetch.refresh_from_db()
    assert fetch.failure_cause == Job.Cause.SUBMISSION and "is gated on the Hub" in fetch.error


def test_the_hubs_own_failures_are_the_platforms_retried_then_refunded_and_the_token_goes_with_the_job(alice, hub):
    submission = submit(hub_request(alice, "biolm-test/gated-bert", hub_token=TOKEN))
    fetch = submission.jobs.get(kind=Job.Kind.FETCH)
    hub.repositories["biolm-test/gated-bert"].failing = 1000
    assert run_fetch(fetch) == Job.Status.FAILED  # this attempt; the job waits for its retry
    fetch.refresh_from_db()
    assert fetch.status == Job.Status.RETRYING and fetch.failure_cause == Job.Cause.PLATFORM
    assert "answered 503" in fetch.error and HubToken.objects.filter(job=fetch).exists()  # kept for the retry
    Job.objects.filter(pk=fetch.pk).update(status=Job.Status.QUEUED, not_before=None, attempts=fetch.max_attempts - 1)
    run_fetch(fetch)
    fetch.refresh_from_db()
    submission.refresh_from_db()
    assert fetch.status == Job.Status.FAILED and fetch.failure_cause == Job.Cause.PLATFORM
    assert submission.refunded and not HubToken.objects.exists()


def test_a_cancelled_fetchs_token_is_forgotten_by_the_next_tick(alice, hub):
    submission = submit(hub_request(alice, "biolm-test/gated-bert", hub_token=TOKEN))
    Job.objects.filter(submission=submission).update(status=Job.Status.CANCELLED)
    tasks.tick_once(None)
    assert not HubToken.objects.exists()


def test_the_same_commit_submitted_again_is_a_reuse_and_a_new_commit_is_a_new_model(alice, hub, tmp_path):
    first = submit(hub_request(alice, "biolm-test/tiny-bert"))
    again = submit(hub_request(alice, "biolm-test/tiny-bert@v1"))  # v1 is the same commit as main
    assert again.pk == first.pk and again.reused
    hub.repositories["biolm-test/tiny-bert"].files["README.md"] = b"# tiny, trained further\n"
    newer = submit(hub_request(alice, "biolm-test/tiny-bert"))
    assert not newer.reused and newer.language_model_id != first.language_model_id
    assert newer.language_model.address == "alice/tiny-bert-2"


def test_a_checkpoint_and_a_hub_id_together_are_refused(alice, hub, tiny_bert_checkpoint):
    with pytest.raises(SubmissionError, match="not two"):
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", hub="biolm-test/tiny-bert",
                                 model=tiny_bert_checkpoint))  # fmt: skip
    with pytest.raises(SubmissionError, match="a Hub token goes with a Hub id") as refused:
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=tiny_bert_checkpoint, hub_token=TOKEN))
    assert refused.value.field == "hub_token"


def test_manage_py_submit_takes_a_hub_id_and_reads_the_token_from_the_environment(alice, hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    call_command("submit", "--hub", "biolm-test/gated-bert@main", "--benchmark", "blurb-mini",
                 "--datasets", "demo-ner", "--owner", "alice")  # fmt: skip
    fetch = Job.objects.get(kind=Job.Kind.FETCH)
    assert hub_tokens.token_for(fetch) == TOKEN
    assert TOKEN not in capsys.readouterr().out


@pytest.mark.slow
def test_a_hub_model_is_fetched_fine_tuned_on_its_stored_copy_and_recorded_on_its_board(
    alice, hub, artefact_store, client
):
    """The whole graph of a submission by Hub id: fetch (CPU), then the fine-tuning job's claim hands the worker
    the fetched checkpoint from the store, the engine runs on it, and the score job records the model's row."""
    from checkpoints import demo_texts, tiny_bert
    from worker_side import API, deliver_results, fetch, worker_client

    from leaderboard import recording
    from leaderboard.models import Result

    django_client = client
    from registry.imports import import_dataset
    from workers.engine.__main__ import main as engine
    from workers.runner.execution import JobRun

    hub.add_checkpoint("biolm-test/demo-bert", tiny_bert(artefact_store / "demo-bert", demo_texts(), 600, hidden=32))
    import_dataset("demo-ner")
    overrides = {"grid": "single", "seeds": 1, "epochs": 1, "max_train_examples": 40, "max_length": 64}
    submission = submit(hub_request(alice, "biolm-test/demo-bert", overrides=overrides))
    fetch_job = submission.jobs.get(kind=Job.Kind.FETCH)
    assert run_fetch(fetch_job) == Job.Status.SUCCEEDED

    finetune = submission.jobs.get(kind=Job.Kind.FINETUNE)
    client = worker_client(finetune)
    claimed = client.post(f"{API}jobs/{finetune.pk}/claim", {"delivery": "d1", "worker": "gpu0@test"}, format="json")
    assert claimed.status_code == 200, claimed.content
    work = artefact_store / "worker"
    spec_file = work / "spec.json"
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(claimed.json()["spec"]))
    inputs = {role: fetch(client, entries, work / role) for role, entries in claimed.json()["inputs"].items()}
    assert (inputs["model"] / "model.safetensors").is_file() and not (inputs["model"] / "train.py").exists()
    run = JobRun(finetune.pk, finetune.token, api_url="http://testserver/internal/", worker="gpu0@test", work_dir=work)
    assert engine(run._finetune_command(spec_file, inputs, work / "out")[3:]) == 0
    deliver_results(client, finetune, work / "out" / "results.json")

    result = recording.record(submission.jobs.get(kind=Job.Kind.SCORE))
    model = LanguageModel.objects.get(pk=submission.language_model_id)
    assert result == Result.objects.get(language_model=model, dataset__slug="demo-ner")
    assert (model.hub_id, model.hub_commit) == ("biolm-test/demo-bert", hub.repositories["biolm-test/demo-bert"].commit)

    written = json.loads((work / "out" / "results.json").read_text())
    assert written["version"] == 2 and written["dev_predictions"]["42"]  # the engine keeps the dev predictions
    Result.objects.filter(pk=result.pk).update(preview=False)
    viewer = django_client.get(f"{model.get_absolute_url()}dev-examples/{result.pk}/")
    assert viewer.status_code == 200 and "demo-ner-dev-0001" in viewer.content.decode()
    page = django_client.get(model.get_absolute_url()).content.decode()
    assert f'biolm-test/demo-bert</a> at commit <code title="{model.hub_commit}">' in page


def test_the_submitter_deletes_the_token_from_the_submission_page_and_no_one_else_can(alice, bob, hub, client):
    submission = submit(hub_request(alice, "biolm-test/gated-bert", hub_token=TOKEN))
    address = f"/submissions/{submission.pk}/"
    client.force_login(bob)
    assert client.post(f"{address}hub-token/forget").status_code == 404 and hub_tokens.held_for(submission)
    client.force_login(alice)
    page = client.get(address).content.decode()
    assert "Delete my Hub token now" in page and TOKEN not in page and "biolm-test/gated-bert" in page
    assert client.post(f"{address}hub-token/forget").status_code == 302
    assert not hub_tokens.held_for(submission) and "Delete my Hub token now" not in client.get(address).content.decode()


def test_the_forms_hub_lookup_answers_the_card_or_the_refusal_in_submits_words(alice, hub, client):
    client.force_login(alice)
    card = client.get("/submit/hub.json", {"id": "biolm-test/tiny-bert@v1"}).json()
    assert card["commit"] == hub.repositories["biolm-test/tiny-bert"].commit and card["licence"] == "apache-2.0"
    assert card["name"] == "tiny-bert" and card["files"] >= 4  # config, weights, tokenizer: never train.py
    gated = client.get("/submit/hub.json", {"id": "biolm-test/gated-bert"}).json()
    assert gated["gated"] is True  # its public card is read without a token
    assert "no model repository" in client.get("/submit/hub.json", {"id": "biolm-test/none"}).json()["error"]
