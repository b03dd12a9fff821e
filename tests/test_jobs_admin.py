"""The admin job queue: queue depth, live workers, progress, the log, and bulk actions through the lifecycle."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs import dispatch, lifecycle
from jobs.lifecycle import Progress
from jobs.models import Job
from registry.models import Dataset, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(alice):
    model = LanguageModel.objects.create(slug="m", name="M", owner=alice)
    submission = Submission.objects.create(submitter=alice, language_model=model)
    dataset = Dataset.objects.get(slug="demo-ner")
    made = [Job.objects.create(submission=submission, language_model=model, dataset=dataset, kind=Job.Kind.FINETUNE)
            for _ in range(3)]  # fmt: skip
    lifecycle.claim(made[0].pk, made[0].token, "d", "gpu0@host")
    lifecycle.heartbeat(made[0].pk, made[0].token, "d", Progress(30, 120, 0.25, 95.0), "epoch 1 done\n")
    return made


def test_the_job_queue_shows_depth_live_workers_and_progress(admin_client, jobs):
    dispatch.record_worker("gpu0@host", ["gpu"], slots=1)
    page = admin_client.get(reverse("admin:jobs_job_changelist")).content.decode()
    assert "<td>training (gpu)</td><td>2</td><td>1</td><td>1</td>" in page  # 2 waiting, 1 running, 1 live slot
    assert "gpu0@host" in page
    assert '<progress value="30" max="120"></progress> 30/120, loss 0.250' in page and "1:35" in page
    filtered = admin_client.get(reverse("admin:jobs_job_changelist"), {"status__exact": "running"}).content.decode()
    assert filtered.count('<progress value="30"') == 1 and "1 job" in filtered


def test_the_log_view_shows_the_workers_output(admin_client, jobs):
    page = admin_client.get(reverse("admin:jobs_job_change", args=[jobs[0].pk])).content.decode()
    assert "epoch 1 done" in page


def test_bulk_cancel_stops_a_running_job_at_its_next_heartbeat_and_retry_queues_it_again(admin_client, jobs):
    url = reverse("admin:jobs_job_changelist")
    admin_client.post(url, {"action": "cancel_jobs", "_selected_action": [jobs[0].pk, jobs[1].pk]})
    assert lifecycle.heartbeat(jobs[0].pk, jobs[0].token, "d") == lifecycle.Verdict.STOP
    assert Job.objects.get(pk=jobs[1].pk).status == Job.Status.CANCELLED
    admin_client.post(url, {"action": "retry_jobs", "_selected_action": [jobs[0].pk]})
    job = Job.objects.get(pk=jobs[0].pk)
    assert job.status == Job.Status.QUEUED and job.attempts == 0
    admin_client.post(url, {"action": "raise_priority", "_selected_action": [jobs[2].pk]})
    assert Job.objects.get(pk=jobs[2].pk).priority == 10


def test_only_staff_see_the_job_queue(client, alice):
    client.force_login(alice)
    assert client.get(reverse("admin:jobs_job_changelist")).status_code == 302


def test_the_plugin_list_counts_the_failures_each_plugins_code_caused_with_its_last_error(admin_client, jobs):
    from registry.models import Plugin
    from registry.sync import sync_contributions

    sync_contributions()
    builtin = Plugin.objects.get(name="plugins.tasks.metrics")
    assert builtin.source == Plugin.Source.BUILTIN and builtin.distribution == "biolm"
    assert builtin.fingerprint.startswith("sha256:") and "metrics" in builtin.contributes
    first, second = jobs[0], jobs[1]
    failed = {"status": Job.Status.FAILED, "failure_cause": Job.Cause.PLUGIN, "blamed_plugin": builtin.name}
    Job.objects.filter(pk=first.pk).update(**failed, error="Traceback ...\nplugin x: old error")
    Job.objects.filter(pk=second.pk).update(**failed, error="plugin x: newest error", finished_at=timezone.now())
    page = admin_client.get("/admin/registry/plugin/").content.decode()
    row = page.split("plugins.tasks.metrics", 1)[1].split("</tr>", 1)[0]
    assert ">2<" in row and "plugin x: newest error" in row
    detail = admin_client.get(f"/admin/registry/plugin/{builtin.pk}/change/").content.decode()
    assert f"job #{first.pk}" in detail and f"job #{second.pk}" in detail
