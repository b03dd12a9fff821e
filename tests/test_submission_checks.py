"""The checks ``submit`` adds for the web form and the API, the content-addressed store, quick previews, and
the e-mail at a submission's end.

The Open LLM Leaderboard's checks before anything is queued: the tokenizer loads, a licence is given, and
the same weights already submitted by the same user link to that submission instead of queuing again.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest
from django.core import mail

from jobs import artefacts
from jobs.lifecycle import cancel
from jobs.models import Job
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.signals import follow
from submissions.submitting import SubmissionError, SubmissionRequest, submit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def store(artefact_store) -> Path:
    """The test's own artefact store (tests/conftest.py), where blobs land."""
    return artefact_store / "store"


@pytest.fixture
def checkpoint(tiny_bert_checkpoint) -> Path:
    return tiny_bert_checkpoint


def stored(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file()) if store.exists() else []


def nothing_left(store: Path) -> bool:
    return (
        not Submission.objects.exists()
        and not Job.objects.exists()
        and not LanguageModel.objects.filter(origin=LanguageModel.Origin.REPRODUCED).exists()
        and stored(store) == []
    )


def web_request(owner, model: Path, **changes) -> SubmissionRequest:
    values = {"owner": owner, "benchmark": "blurb-mini", "model": model, "datasets": ("demo-qa",),
              "licence": "apache-2.0", "require_licence": True, "private": True}  # fmt: skip
    return SubmissionRequest(**{**values, **changes})


def test_a_tokenizer_that_does_not_load_is_refused_beside_the_checkpoint_and_leaves_nothing(
    alice, checkpoint, tmp_path, store
):
    broken = tmp_path / "broken-tokenizer"
    shutil.copytree(checkpoint, broken)
    (broken / "vocab.txt").unlink(missing_ok=True)
    (broken / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "NoSuchModel"}}')  # present, broken
    with pytest.raises(SubmissionError, match="its tokenizer does not load") as refused:
        submit(web_request(alice, broken))
    assert refused.value.field == "checkpoint" and "include the tokenizer files" in str(refused.value)
    assert nothing_left(store)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"licence": "  "}, "licence", "name the licence the weights are released under"),
        ({"homepage": "javascript:alert(1)"}, "homepage", "must be an http:// or https:// address"),
        ({"homepage": "ftp://example.org/paper"}, "homepage", "must be an http:// or https:// address"),
        ({"description": "x" * 5001}, "description", "shorten it to 5,000"),
        ({"datasets": ("nope",)}, "datasets", "blurb-mini has no dataset 'nope'"),
        ({"benchmark": "nope"}, "benchmark", "no benchmark 'nope'"),
        ({"name": "\u202e"}, "name", "the model's name is empty"),
    ],
)
def test_each_refusal_names_the_field_it_concerns_and_leaves_nothing(alice, checkpoint, store, changes, field, message):
    with pytest.raises(SubmissionError, match=message) as refused:
        submit(web_request(alice, checkpoint, **changes))
    assert refused.value.field == field
    assert nothing_left(store)


def test_the_shell_may_leave_the_licence_out_but_the_web_may_not(alice, checkpoint):
    assert submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-qa",)))
    with pytest.raises(SubmissionError, match="name the licence"):
        submit(web_request(alice, checkpoint, licence="", datasets=("demo-ner",)))


def test_the_details_given_are_kept_on_the_model(alice, checkpoint):
    submission = submit(web_request(alice, checkpoint, description="A <b>tiny</b> BERT.", homepage="https://x.org/p"))
    model = submission.language_model
    assert (model.licence, model.description, model.homepage) == (
        "apache-2.0",
        "A <b>tiny</b> BERT.",
        "https://x.org/p",
    )
    assert model.visibility == LanguageModel.Visibility.PRIVATE and submission.reused is False


def test_the_same_weights_from_the_same_user_link_to_the_earlier_submission_instead_of_queuing_again(
    alice, bob, checkpoint, tmp_path
):
    first = submit(web_request(alice, checkpoint, datasets=("demo-qa", "demo-ner")))
    jobs = Job.objects.count()
    renamed = tmp_path / "renamed-copy"
    shutil.copytree(checkpoint, renamed)  # the same content under another name is the same weights
    again = submit(web_request(alice, renamed, datasets=("demo-ner",)))
    assert again.pk == first.pk and again.reused is True
    assert Job.objects.count() == jobs and Submission.objects.count() == 1
    # A preview, other settings, more datasets or another user are new submissions, and --rerun asks for one.
    assert submit(web_request(alice, checkpoint, preview=True)).reused is False
    assert submit(web_request(alice, checkpoint, datasets=("demo-ner",), overrides={"seeds": 2})).reused is False
    assert submit(web_request(alice, checkpoint, datasets=("demo-pico",))).reused is False
    assert submit(web_request(bob, checkpoint)).reused is False
    assert submit(web_request(alice, checkpoint, datasets=("demo-ner",), rerun=True)).reused is False
    # A failed or cancelled submission does not stand in the way of submitting again.
    cancel(Job.objects.filter(submission=first))
    assert submit(web_request(alice, checkpoint, datasets=("demo-qa",))).reused is False


def test_identical_checkpoint_files_are_stored_once_whoever_submits_them(alice, bob, staff, checkpoint, store):
    one_copy = sum(p.stat().st_size for p in checkpoint.iterdir() if p.is_file())
    for owner, dataset in ((alice, "demo-qa"), (bob, "demo-qa"), (staff, "demo-qa"), (alice, "demo-ner")):
        submit(web_request(owner, checkpoint, datasets=(dataset,)))
    assert sum(p.stat().st_size for p in stored(store)) == one_copy
    assert len(stored(store)) == len([p for p in checkpoint.iterdir() if p.is_file()])


def test_a_failed_submission_removes_only_the_blobs_it_wrote(alice, bob, checkpoint, tmp_path, store, monkeypatch):
    submit(web_request(alice, checkpoint))
    before = stored(store)
    changed = tmp_path / "changed"
    shutil.copytree(checkpoint, changed)
    (changed / "README.md").write_text("A file only bob's checkpoint has.\n")

    def lost_connection(*args, **kwargs):
        raise ConnectionError("the database went away")

    monkeypatch.setattr("jobs.graph.queue", lost_connection)
    with pytest.raises(ConnectionError):
        submit(web_request(bob, changed))
    assert stored(store) == before  # alice's blobs, which bob's checkpoint shares, are still there


def test_an_upload_is_named_after_the_file_the_user_gave_not_its_temporary_path(alice, checkpoint, tmp_path):
    temporary = tmp_path / "tmpa8f3k2.upload"
    shutil.copytree(checkpoint, temporary)
    submission = submit(web_request(alice, temporary, label="bio-tiny.tar.gz", name="Bio tiny"))
    model = submission.language_model
    assert model.checkpoint == "upload:bio-tiny.tar.gz" and model.name == "Bio tiny"
    assert model.address == "alice/bio-tiny" and "tmpa8f3k2" not in model.slug


def test_a_quick_preview_runs_one_grid_point_and_one_seed_and_is_marked(alice, checkpoint):
    submission = submit(web_request(alice, checkpoint, preview=True, datasets=("demo-qa", "demo-ner")))
    assert submission.preview
    for job in submission.jobs.all():
        if job.kind == Job.Kind.FINETUNE:
            assert job.spec["overrides"] == {"grid": "single", "seeds": 1}
        else:
            assert job.spec["preview"] is True
    full = submit(web_request(alice, checkpoint, datasets=("demo-pico",)))
    assert not full.preview
    assert not any(job.spec["preview"] for job in full.jobs.all())


def test_the_submitter_is_emailed_once_when_the_submission_finishes_or_fails(alice, checkpoint):
    submission = submit(web_request(alice, checkpoint))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.db.transaction.on_commit", lambda callback, *a, **k: callback())
        jobs = Job.objects.filter(submission=submission)
        jobs.update(status=Job.Status.SUCCEEDED)
        follow(jobs.values_list("pk", flat=True))
        follow(jobs.values_list("pk", flat=True))  # nothing changed: no second e-mail
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"] and "finished" in message.subject
    assert f"/submissions/{submission.pk}/" in message.body
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FINISHED and submission.notified_at is not None


def test_the_failure_email_says_why_and_whether_the_quota_was_refunded(alice, checkpoint):
    submission = submit(web_request(alice, checkpoint))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.db.transaction.on_commit", lambda callback, *a, **k: callback())
        jobs = Job.objects.filter(submission=submission)
        jobs.update(status=Job.Status.FAILED, error="Traceback...\nValueError: the loss became NaN at step 12",
                    failure_cause=Job.Cause.SUBMISSION)  # fmt: skip
        follow(jobs.values_list("pk", flat=True))
    (message,) = mail.outbox
    assert "failed" in message.subject and "the loss became NaN at step 12" in message.body
    assert "counts against your daily quota" in message.body


def test_the_stored_blob_is_what_a_worker_downloads(alice, checkpoint, store):
    submission = submit(web_request(alice, checkpoint))
    finetune = submission.jobs.filter(kind=Job.Kind.FINETUNE).first()
    model = finetune.spec["model"]
    handed = {entry["path"]: entry for entry in artefacts.download_manifest(model["checkpoint"], model["prefix"])}
    assert set(handed) == {p.name for p in checkpoint.iterdir() if p.is_file()}
    for path, entry in handed.items():
        assert Path(entry["url"]).read_bytes() == (checkpoint / path).read_bytes()


def test_the_same_weights_packed_under_another_folder_name_are_still_the_same_weights(alice, checkpoint, tmp_path):
    first = submit(web_request(alice, checkpoint))
    archive = tmp_path / "renamed.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(checkpoint, arcname="some-other-folder-name")
    again = submit(web_request(alice, archive, label="renamed.tar.gz"))
    assert again.reused is True and again.pk == first.pk


def test_the_model_page_shows_what_the_submitter_said_escaped_and_links_only_http_urls(alice, checkpoint, client):
    submission = submit(web_request(alice, checkpoint, private=False, description="<script>alert(1)</script>\nline 2",
                                    homepage="https://example.org/paper?a=1&b=2"))  # fmt: skip
    model = submission.language_model
    html = client.get(model.get_absolute_url()).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>line 2" in html and "<script>alert(1)" not in html
    assert '<a href="https://example.org/paper?a=1&amp;b=2" rel="nofollow noopener ugc">' in html
    assert "<dd>apache-2.0</dd>" in html
    LanguageModel.objects.filter(pk=model.pk).update(homepage="javascript:alert(1)")  # never through submit()
    html = client.get(model.get_absolute_url()).content.decode()
    assert "javascript:alert(1)" in html and 'href="javascript:' not in html


def test_the_same_weights_are_evaluated_again_once_the_code_they_ran_with_changed(alice, checkpoint, monkeypatch):
    """Reuse compares every pinned version and content fingerprint: an upgraded plugin (here biolm itself, which
    carries the built-in plugins) makes the earlier evaluation another evaluation."""
    from biolm import plugin_set

    first = submit(web_request(alice, checkpoint, datasets=("demo-ner",)))
    assert submit(web_request(alice, checkpoint, datasets=("demo-ner",))).pk == first.pk
    upgraded = plugin_set.CodeVersion(plugin_set.own_code().version, "sha256:0123456789abcdef")
    monkeypatch.setattr(plugin_set, "own_code", lambda: upgraded)
    again = submit(web_request(alice, checkpoint, datasets=("demo-ner",)))
    assert again.reused is False and again.pk != first.pk
    (finetune,) = again.jobs.filter(kind=Job.Kind.FINETUNE)
    assert finetune.spec["code"][0]["fingerprint"] == "sha256:0123456789abcdef"
