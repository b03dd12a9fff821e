"""One refund rule (submissions.refunds), said the same way everywhere: a job that fails on a plugin's bug refunds its
submission, and the signal, the job's summary, the page and its live updates, the status text, the e-mail, the
API, ``manage.py submission`` and the admin all say so, naming the plugin; a submission's own fault is refunded
nowhere."""

from __future__ import annotations

import html
import json

import pytest
from contract_documents import finetune_spec
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from accounts.tokens import create_token
from jobs import lifecycle
from jobs.models import Job
from registry.models import Dataset, LanguageModel
from submissions import notifications, services
from submissions.models import Submission
from submissions.refunds import refund_for

pytestmark = pytest.mark.django_db

PLUGIN = "biolm-acme"
CAUSE = f"a fault in plugin {PLUGIN}'s code"


def failed_submission(owner, cause: str, plugin: str = "") -> tuple[Submission, Job]:
    """A submission whose one job failed for good through ``cause`` at its only attempt."""
    model = LanguageModel.objects.create(slug=f"refund-{cause}", name="Refund BERT", owner=owner)
    submission = Submission.objects.create(submitter=owner, language_model=model)
    job = Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                             kind=Job.Kind.FINETUNE, max_attempts=1,
                             spec=finetune_spec("demo-ner", "blurb-mini").to_json())  # fmt: skip
    lifecycle.claim(job.pk, job.token, "d1", "gpu0@host")
    lifecycle.fail(job.pk, job.token, "d1", "KeyError: 'labels' in acme's metric", cause, plugin=plugin)
    submission.refresh_from_db()
    job.refresh_from_db()
    return submission, job


def everything_said(submission: Submission, superuser) -> dict[str, str]:
    """What every surface says of the failed submission's refund."""
    owner = Client()
    owner.force_login(submission.submitter)
    admin = Client()
    admin.force_login(superuser)
    (state,) = services.job_states(submission)
    status = owner.get(reverse("submissions:status", args=[submission.pk])).json()
    _, raw = create_token(submission.submitter, "script")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get(f"/api/v1/submissions/{submission.pk}").json()
    command = json.loads(_command_output(submission.pk))
    return {
        "signal": submission.refund_cause,
        "summary": state.refund,
        "page": html.unescape(owner.get(reverse("submissions:detail", args=[submission.pk])).content.decode()),
        "live updates": status["jobs"][0]["refund"],
        "status text": submission.status_text,
        "e-mail": notifications.body(submission),
        "api": api["jobs"][0]["refund"] + " " + api["status_text"],
        "manage.py submission": command["refund"],
        "admin list": html.unescape(admin.get("/admin/submissions/submission/").content.decode()),
        "admin page": html.unescape(
            admin.get(f"/admin/submissions/submission/{submission.pk}/change/").content.decode()
        ),
    }


def _command_output(pk: int) -> str:
    from io import StringIO

    out = StringIO()
    call_command("submission", str(pk), "--json", stdout=out)
    return out.getvalue()


def test_a_plugins_bug_is_refunded_everywhere_naming_the_plugin(alice, admin_user):
    submission, job = failed_submission(alice, Job.Cause.PLUGIN, plugin=PLUGIN)
    assert job.status == Job.Status.FAILED and job.blamed_plugin == PLUGIN
    assert submission.refunded
    sentence = refund_for(Job.Cause.PLUGIN, PLUGIN).sentence
    said = everything_said(submission, admin_user)
    for surface in ("summary", "page", "live updates", "e-mail", "api", "manage.py submission"):
        assert sentence in said[surface], f"{surface} does not say {sentence!r}"
    for surface in ("signal", "status text", "admin list", "admin page"):
        assert CAUSE in said[surface], f"{surface} does not name {PLUGIN} as the cause"
    assert said["status text"] == f"failed (refunded: {CAUSE})"
    assert "Not refunded" not in said["page"] and "counts against" not in said["e-mail"]


def test_the_platforms_failure_is_refunded_and_the_submissions_own_is_not(alice, bob, admin_user):
    platform, _ = failed_submission(alice, Job.Cause.PLATFORM)
    assert platform.status_text == "failed (refunded: the platform's fault)"
    own, _ = failed_submission(bob, Job.Cause.SUBMISSION)
    assert not own.refunded and own.status_text == "failed (counted against the quota)"
    said = everything_said(own, admin_user)
    for surface in ("summary", "page", "live updates", "e-mail", "api", "manage.py submission"):
        assert "Not refunded: it counts against your daily quota." in said[surface], surface
