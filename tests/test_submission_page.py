"""A submission's page and its status.json: every job's state, progress and waiting reason, failures in plain
words, cancel and publish for the owner and staff, and a 404 for everyone else while it is private."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from checkpoints import tiny_bert
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import dispatch
from jobs.models import Job
from registry.models import LanguageModel
from submissions.models import Submission
from submissions.signals import follow
from submissions.submitting import SubmissionRequest, submit

pytestmark = pytest.mark.django_db
XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoints") / "tiny-bert", ["aspirin inhibits cyclooxygenase"] * 5, 120)


@pytest.fixture(autouse=True)
def store(artefact_store) -> Path:
    return artefact_store


@pytest.fixture
def submission(alice, checkpoint) -> Submission:
    """alice's private submission of a checkpoint on two BLURB-mini datasets, its jobs queued."""
    return submit(
        SubmissionRequest(
            owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-ner", "demo-qa"), private=True,
            name="Alice's BERT", description="Trained on\nPubMed.", licence="mit", homepage="https://example.org/a",
            require_licence=True,
        )
    )  # fmt: skip


def as_user(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def urls(submission: Submission) -> dict[str, str]:
    return {
        name: reverse(f"submissions:{name}", args=[submission.pk]) for name in ("detail", "status", "cancel", "publish")
    }


def finetune(submission: Submission, dataset: str) -> Job:
    return submission.jobs.get(kind=Job.Kind.FINETUNE, dataset__slug=dataset)


def test_the_owner_sees_the_submission_its_jobs_and_its_controls(submission, alice):
    response = as_user(alice).get(urls(submission)["detail"])
    html = response.content.decode()
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert "Alice&#x27;s BERT" in html and "BLURB-mini" in html and "demo-ner, demo-qa" in html
    assert "The benchmark's full protocol: BLURB (Gu et al. 2021, section 6.2)." in html
    assert "private: shown only to its owner and the site's staff" in html
    assert '<input type="hidden" name="published" value="1">' in html and ">Publish</button>" in html
    assert ">Cancel submission</button>" in html and "data-confirm=" in html
    assert html.count('name="csrfmiddlewaretoken"') == html.count("<form")  # every form, the header's sign-out too
    assert html.count("<tr data-job=") == 4
    assert "waiting: no training worker is running" in html  # no worker has ever heartbeated
    assert "waiting for the jobs it depends on" in html
    assert "0 of 3" in html and "Trained on<br>PubMed." in html
    assert '<a href="https://example.org/a" rel="nofollow noopener noreferrer">' in html
    assert re.search(r'<script defer src="/static/submissions/submission\.[0-9a-f]{12}\.js">', html)
    assert "data-when-finished hidden" in html  # the results' links wait for the end


@pytest.mark.parametrize("who", ["bob", "anonymous"])
def test_another_user_is_told_a_private_submission_does_not_exist(submission, bob, who):
    client = as_user(bob if who == "bob" else None)
    paths = urls(submission)
    assert client.get(paths["detail"]).status_code == 404
    assert client.get(paths["status"]).status_code == 404
    assert client.post(paths["cancel"]).status_code == 404
    assert client.post(paths["publish"], {"published": "1"}).status_code == 404
    submission.refresh_from_db()
    assert submission.status == Submission.Status.PENDING
    assert submission.language_model.visibility == LanguageModel.Visibility.PRIVATE
    assert not Job.objects.filter(status=Job.Status.CANCELLED).exists()


def test_staff_see_and_manage_anyones_submission(submission, staff):
    html = as_user(staff).get(urls(submission)["detail"]).content.decode()
    assert ">Cancel submission</button>" in html and ">Publish</button>" in html and "by alice" in html
    assert as_user(staff).get(urls(submission)["status"]).status_code == 200


def test_a_published_submission_is_shown_to_others_read_only_without_its_logs(submission, bob):
    job = finetune(submission, "demo-ner")
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED, failure_cause=Job.Cause.SUBMISSION, error="CUDA out of memory",
        log="step 1\nsecret path /home/alice\n", finished_at=timezone.now(),
    )  # fmt: skip
    LanguageModel.objects.filter(pk=submission.language_model_id).update(visibility=LanguageModel.Visibility.PUBLIC)
    response = as_user(bob).get(urls(submission)["detail"])
    html = response.content.decode()
    assert response.status_code == 200 and "<form" not in html.split("<main", 1)[1]
    assert "CUDA out of memory" in html and "/home/alice" not in html and "by alice" not in html
    data = as_user(bob).get(urls(submission)["status"]).json()
    assert all(job["log_tail"] == "" for job in data["jobs"])
    assert as_user(bob).post(urls(submission)["cancel"]).status_code == 404


def test_cancelling_stops_every_unfinished_job_and_says_so(submission, alice):
    client = as_user(alice)
    assert client.get(urls(submission)["cancel"]).status_code == 405  # a link cannot cancel
    response = client.post(urls(submission)["cancel"], follow=True)
    assert set(submission.jobs.values_list("status", flat=True)) == {Job.Status.CANCELLED}
    submission.refresh_from_db()
    assert submission.status == Submission.Status.CANCELLED
    html = response.content.decode()
    assert "Cancelled: 4 jobs will not run." in html and ">Cancel submission</button>" not in html
    assert "data-when-finished hidden" not in html and "the BLURB-mini (demo data) leaderboard" in html
    again = client.post(urls(submission)["cancel"], follow=True).content.decode()
    assert "Nothing was left to cancel" in again


def test_publishing_and_unpublishing_flip_the_models_visibility(submission, alice):
    client = as_user(alice)
    model = submission.language_model
    published = client.post(urls(submission)["publish"], {"published": "1"}, follow=True).content.decode()
    model.refresh_from_db()
    assert (
        model.visibility == LanguageModel.Visibility.PUBLIC
        and "Published: the model and its results are public" in published
    )
    assert ">Unpublish</button>" in published
    assert as_user(None).get(urls(submission)["detail"]).status_code == 200
    client.post(urls(submission)["publish"], {"published": "0"})
    model.refresh_from_db()
    assert model.visibility == LanguageModel.Visibility.PRIVATE
    assert client.post(urls(submission)["publish"], {"published": "yes"}).status_code == 400


def test_status_json_reports_each_jobs_progress_and_why_it_waits(submission, alice):
    now = timezone.now()
    running = finetune(submission, "demo-ner")
    Job.objects.filter(pk=running.pk).update(
        status=Job.Status.RUNNING, progress_step=30, progress_total=120, eta_s=95.0, attempts=1, started_at=now,
        last_heartbeat=now - dt.timedelta(seconds=4), worker="gpu0@host",
    )  # fmt: skip
    follow([running.pk])
    response = as_user(alice).get(urls(submission)["status"])
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    data = response.json()
    assert data["status"] == "running" and data["status_text"] == "Running" and data["finished"] is False
    assert data["visibility"] == "private"
    jobs = {(job["kind"], job["dataset"]): job for job in data["jobs"]}
    ner = jobs["finetune", "demo-ner"]
    assert ner["status"] == "running" and ner["progress"] == 0.25 and ner["step"] == 30 and ner["total"] == 120
    assert (
        ner["eta_s"] == 95.0 and 4 <= ner["heartbeat_age_s"] < 60 and (ner["attempts"], ner["max_attempts"]) == (1, 3)
    )
    qa = jobs["finetune", "demo-qa"]
    assert qa["waiting_reason"] == "waiting: no training worker is running" and qa["heartbeat_age_s"] is None
    assert jobs["score", "demo-qa"]["waiting_reason"] == "waiting for the jobs it depends on"


def test_with_a_live_worker_a_waiting_job_shows_its_place_and_estimated_start(submission, alice):
    dispatch.record_worker("gpu0@host", ["gpu"])
    data = as_user(alice).get(urls(submission)["status"]).json()
    first = next(job for job in data["jobs"] if job["kind"] == "finetune")
    assert first["waiting_reason"] == "waiting for a free training worker"
    assert first["queue_position"] == 1 and first["estimated_start"] is not None
    html = as_user(alice).get(urls(submission)["detail"]).content.decode()
    assert "#1 in the training queue, starts about " in html


def test_on_a_cpu_only_site_the_submission_page_says_training_queue_and_never_gpu(submission, alice):
    dispatch.record_worker("trainer0@laptop", ["gpu"], gpus=0)  # the demo's training worker, on the CPU
    data = as_user(alice).get(urls(submission)["status"]).json()
    first = next(job for job in data["jobs"] if job["kind"] == "finetune")
    assert first["queue_name"] == "training" and first["waiting_reason"] == "waiting for a free training worker"
    html = as_user(alice).get(urls(submission)["detail"]).content.decode()
    assert "#1 in the training queue" in html and "gpu" not in html.lower()


def test_where_a_live_worker_has_a_gpu_the_page_names_the_gpu_training_queue(submission, alice):
    dispatch.record_worker("gpu0@box", ["gpu"], gpus=1)
    data = as_user(alice).get(urls(submission)["status"]).json()
    first = next(job for job in data["jobs"] if job["kind"] == "finetune")
    assert first["queue_name"] == "GPU training" and first["waiting_reason"] == "waiting for a free GPU training worker"
    assert "#1 in the GPU training queue" in as_user(alice).get(urls(submission)["detail"]).content.decode()


def test_a_failed_job_says_why_in_words_whether_it_was_refunded_and_shows_its_log_escaped(submission, alice):
    job = finetune(submission, "demo-qa")
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED, failure_cause=Job.Cause.PLATFORM, attempts=3,
        error="Traceback (most recent call last):\nWorkerLostError: the worker died", log=f"epoch 1\n{XSS}\n",
        finished_at=timezone.now(),
    )  # fmt: skip
    html = as_user(alice).get(urls(submission)["detail"]).content.decode()
    row = re.search(rf'<tr class="failure" data-failure-for="{job.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "the platform failed (a worker died or lost its connection); it is not counted against you: " in row
    assert "WorkerLostError: the worker died" in row and "Refunded (the platform&#x27;s fault)" in row
    assert '<details><summary>The log\'s last lines</summary><pre data-field="log_tail">epoch 1\n&lt;script&gt;' in row
    assert XSS not in html
    data = as_user(alice).get(urls(submission)["status"]).json()
    failed = next(j for j in data["jobs"] if j["id"] == job.pk)
    assert failed["refunded"] is True and failed["log_tail"] == f"epoch 1\n{XSS}"


def test_user_supplied_text_is_escaped_and_only_an_http_address_is_a_link(submission, alice):
    LanguageModel.objects.filter(pk=submission.language_model_id).update(
        name=XSS, description=f'{XSS} <img src=x onerror="alert(2)">', homepage="javascript:alert(1)"
    )
    html = as_user(alice).get(urls(submission)["detail"]).content.decode()
    assert XSS not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript:' not in html and "javascript:alert(1)" in html  # shown, not linked


def test_a_homepage_that_is_not_http_is_refused_by_submit_before_anything_is_written(alice, checkpoint):
    from submissions.submitting import SubmissionError

    with pytest.raises(SubmissionError) as refused:
        submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, homepage="javascript:alert(1)",
                                 licence="mit", require_licence=True))  # fmt: skip
    assert refused.value.field == "homepage" and not Submission.objects.exists()


def test_a_quick_preview_is_labelled_as_one(alice, checkpoint):
    quick = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=checkpoint, datasets=("demo-qa",),
                                     preview=True, private=True))  # fmt: skip
    html = as_user(alice).get(urls(quick)["detail"]).content.decode()
    assert "quick preview</span>" in html and "never ranked beside full-protocol results" in html
    assert "fine-tuning, 1 seed" in html
    data = json.loads(as_user(alice).get(urls(quick)["status"]).content)
    assert next(j for j in data["jobs"] if j["kind"] == "finetune")["seeds"] == 1


def test_the_admin_links_a_submission_to_its_page_and_keeps_its_followed_fields_read_only(submission, staff):
    staff.is_superuser = True
    staff.save()
    html = as_user(staff).get(reverse("admin:submissions_submission_change", args=[submission.pk])).content.decode()
    assert reverse("submissions:detail", args=[submission.pk]) in html
    assert 'name="status"' not in html and 'name="protocol"' not in html
