"""Gated data stays with its holder: a restricted dataset bound to a data holder runs only on the holder's workers,
its per-example predictions are for staff only, and its results are published only once the holder approves them.

A clinical dataset's files cannot be shipped with the tests (that is what restricted means), so demo-ner stands in
for one, marked restricted here as the clinical plugins mark i2b2/n2c2: everything below reads only its ``access``.
The platform side runs in the database with the real internal API, dispatcher and recording; the worker side is
the GPU runner's own seat and claim code.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from contract_documents import finetune_spec, results_document, score_spec
from django.urls import reverse
from rest_framework.test import APIClient

from biolm.placement import Need, Seat, holder_named_by, seat_of_queue, unplaced

HOLDER = "mayo"


# -- the rule both sides import ------------------------------------------------------------------------------------


def test_a_holders_seats_hold_only_its_jobs_and_no_other_seat_holds_them():
    mayo_gpu, platform_gpu = Seat(1, holder=HOLDER), Seat(1)
    held, public = Need(holder=HOLDER), Need()
    assert mayo_gpu.holds(held) and not mayo_gpu.holds(public)
    assert platform_gpu.holds(public) and not platform_gpu.holds(held)
    assert not Seat(1, holder="other").holds(held)
    assert [mayo_gpu.queue, Seat(4, holder=HOLDER).queue] == ["held-mayo.gpu", "held-mayo.gpu-4"]
    assert seat_of_queue("held-mayo.gpu-4") == Seat(4, holder=HOLDER) and seat_of_queue("held-mayo.cpu") is None
    assert (
        unplaced(held, [platform_gpu, Seat(8)])
        == "needs a worker of mayo's (its data stays on their hosts); none is live"
    )
    assert unplaced(held, [mayo_gpu]) == ""


def test_a_worker_reads_its_holder_from_its_credential_and_the_platforms_secret_names_none():
    assert holder_named_by("biolm-holder-mayo.Zx-_9") == HOLDER
    assert holder_named_by("a-long-platform-secret") == ""
    assert holder_named_by("biolm-holder-mayo") == "" and holder_named_by("biolm-holder-Bad Name.x") == ""


def test_a_holders_host_runs_its_workers_on_its_seats_queues(monkeypatch):
    from workers.runner.gpu_workers import worker_processes

    workers = worker_processes(2, environment={"BIOLM_WORKER_SECRET": "biolm-holder-mayo.abc"}, per_worker=1)
    assert [p.command[p.command.index("-Q") + 1] for p in workers] == ["held-mayo.gpu", "held-mayo.gpu"]


# -- the platform: binding, dispatch, claim ------------------------------------------------------------------------


@pytest.fixture
def holder(db):
    """The holder mayo, with demo-ner (marked restricted) bound to it: ``(holder, its workers' credential)``."""
    from jobs import held
    from registry.holders import add_holder
    from registry.models import Dataset

    Dataset.objects.filter(slug="demo-ner").update(access=Dataset.Access.RESTRICTED)
    made, credential = add_holder(HOLDER, "Mayo Clinic")
    held.bind(made, ["demo-ner"])
    return made, credential


def beat(credential: str, name: str, gpus: int = 1) -> int:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return api.post(
        "/internal/workers/heartbeat", {"name": name, "queues": ["gpu"], "gpus": gpus}, format="json"
    ).status_code


def claim(job, credential: str | None = None, delivery: str = "d1"):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {job.token}")
    headers = {"HTTP_X_BIOLM_WORKER_CREDENTIAL": credential} if credential is not None else {}
    body = {"delivery": delivery, "worker": "w@host"}
    return api.post(f"/internal/jobs/{job.pk}/claim", body, format="json", **headers)


def dispatched() -> dict[int, str]:
    from jobs import dispatch

    sent = []
    dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)
    return {job.pk: job.sent_to for job in sent}


def test_only_a_restricted_dataset_can_be_bound_and_a_holder_name_is_checked(holder):
    from jobs import held
    from registry.holders import HolderError, add_holder

    with pytest.raises(HolderError, match="demo-relation is public: only a restricted dataset"):
        held.bind(holder[0], ["demo-relation"])
    with pytest.raises(HolderError, match="is not a holder name"):
        add_holder("Mayo Clinic")
    with pytest.raises(HolderError, match="holder 'mayo' exists"):
        add_holder(HOLDER)


def test_a_held_datasets_jobs_wait_for_its_holders_workers_while_public_ones_run_anywhere(
    holder, alice, tiny_bert_checkpoint, settings, admin_client
):
    from jobs import lifecycle, waiting
    from jobs.models import Job, Worker
    from submissions.submitting import SubmissionRequest, submit

    _, credential = holder
    settings.BIOLM_SLICE_PROTOCOLS = True
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", model=tiny_bert_checkpoint,
                                          datasets=("demo-ner", "demo-relation"), overrides={"seeds": 2}))  # fmt: skip
    jobs = list(submission.jobs.select_related("dataset"))
    gpu_jobs = [job for job in jobs if job.kind != Job.Kind.SCORE]
    assert {job.queue for job in gpu_jobs if job.dataset.slug == "demo-ner"} == {"held-mayo"}
    assert {job.queue for job in gpu_jobs if job.dataset.slug == "demo-relation"} == {"gpu"}
    ner_point = next(j for j in gpu_jobs if j.dataset.slug == "demo-ner" and not j.depends_on.exists())
    re_point = next(j for j in gpu_jobs if j.dataset.slug == "demo-relation" and not j.depends_on.exists())

    assert beat(settings.BIOLM_WORKER_SECRET, "platform0@gpu-host", gpus=8) == 204
    sent = dispatched()
    assert sent.get(re_point.pk) == "gpu-8" and not any(
        j.dataset.slug == "demo-ner" for j in Job.objects.filter(pk__in=sent)
    )
    states = waiting.queue_states(60)
    assert (
        waiting.reason(ner_point, states) == "waiting: no worker of mayo's is running (its data stays on their hosts)"
    )
    overview = admin_client.get("/admin/jobs/job/").content.decode()  # the operator's queue overview lists it
    assert "mayo&#x27;s training (held-mayo)" in overview and "no worker of mayo&#x27;s is running" in overview

    assert beat("biolm-holder-mayo.guessed", "intruder@gpu-host") == 403
    assert beat(credential, "mayo0@mayo-host") == 204
    assert Worker.objects.get(name="mayo0@mayo-host").holder == HOLDER
    sent = dispatched()
    assert sent.get(ner_point.pk) == "held-mayo.gpu"
    assert {Job.objects.get(pk=pk).dataset.slug for pk, queue in sent.items() if queue == "held-mayo.gpu"} == {
        "demo-ner"
    }

    ner_point.refresh_from_db()
    for wrong in (None, settings.BIOLM_WORKER_SECRET, "biolm-holder-mayo.guessed"):
        refused = claim(ner_point, wrong)
        assert refused.status_code == 409 and "held by mayo: only its workers" in refused.json()["detail"]
        ner_point.refresh_from_db()
        assert ner_point.status == Job.Status.QUEUED and ner_point.dispatched_at is None and ner_point.attempts == 0
    claimed = claim(ner_point, credential)
    assert claimed.status_code == 200, claimed.content
    assert lifecycle.claim(ner_point.pk, ner_point.token, "d2", "x") is None  # taken: by mayo's worker alone


def test_a_rotated_credential_stops_working_and_a_released_dataset_goes_back_to_the_platform(holder, alice):
    from jobs import held
    from jobs.models import Job
    from registry.holders import rotate
    from registry.models import Dataset, LanguageModel

    made, old = holder
    new = rotate(made)
    assert beat(old, "mayo0@host") == 403 and beat(new, "mayo0@host") == 204
    model = LanguageModel.objects.create(slug="m", name="m", owner=alice)
    waiting_job = Job.objects.create(language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                                     kind=Job.Kind.FINETUNE, queue="held-mayo")  # fmt: skip
    held.unbind(["demo-ner"])
    waiting_job.refresh_from_db()
    assert waiting_job.queue == Job.Queue.GPU and Dataset.objects.get(slug="demo-ner").held_by is None


# -- results: approval, and predictions for staff only ----------------------------------------------------------


def recorded(model, dataset_slug: str, seeds: list[float], commit, submission=None):
    """A fine-tuning job's results on ``dataset_slug`` recorded by its score job, as the CPU worker records them."""
    from jobs import artefacts
    from jobs.models import Job
    from jobs.results import results_name
    from leaderboard import recording
    from registry.models import Dataset

    dataset = Dataset.objects.get(slug=dataset_slug)
    spec = finetune_spec(dataset_slug, "blurb-mini")
    finetune = Job.objects.create(language_model=model, dataset=dataset, kind=Job.Kind.FINETUNE, submission=submission,
                                  status=Job.Status.SUCCEEDED, attempts=1, spec=spec.to_json())  # fmt: skip
    artefacts.store_bytes(json.dumps(results_document(spec, seeds, withheld=False)).encode(), results_name(finetune.pk))
    score = Job.objects.create(language_model=model, dataset=dataset, kind=Job.Kind.SCORE,
                               spec=score_spec(spec, finetune.pk, dataset.metric.slug).to_json())  # fmt: skip
    with commit():
        result = recording.record(score)
    return score, result


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_a_held_result_is_published_only_once_its_holders_approver_approves_it(
    holder, alice, django_user_model, client, artefact_store, commit
):
    from leaderboard import recording
    from leaderboard.models import HeldResult, Result, Score
    from registry.models import LanguageModel

    made, _ = holder
    hana = django_user_model.objects.create_user("hana", password="pw", is_staff=True)
    other = django_user_model.objects.create_user("otto", password="pw", is_staff=True)
    made.approvers.add(hana)
    model = LanguageModel.objects.create(slug="m", name="M", owner=alice)
    score, result = recorded(model, "demo-ner", [80.0, 82.0], commit)
    assert recording.outcome(score, result).endswith("awaiting mayo's approval before it is published")
    assert result.approval == Result.Approval.PENDING
    assert not Result.objects.filter(pk=result.pk).exists() and Result.everything.filter(pk=result.pk).exists()
    assert "81.00" not in client.get(model.get_absolute_url()).content.decode()
    assert not Score.objects.filter(language_model=model, score__isnull=False).exists()

    change = reverse("admin:leaderboard_heldresult_change", args=[result.pk])
    client.force_login(other)
    assert client.get(reverse("admin:leaderboard_heldresult_changelist")).content.decode().count("/change/") == 0
    client.force_login(hana)
    refused = client.post(change, {"approval": "rejected", "approval_reason": ""})
    assert "Say why it is rejected" in refused.content.decode()
    with commit():
        done = client.post(change, {"approval": "approved", "approval_reason": "checked against the DUA"})
    assert done.status_code == 302, done.content.decode()[:2000]
    result = HeldResult.everything.get(pk=result.pk)
    assert (result.approval, result.approved_by, result.approval_reason) == (
        "approved",
        hana,
        "checked against the DUA",
    )
    assert Result.objects.filter(pk=result.pk).exists()
    assert "81.00" in client.get(model.get_absolute_url()).content.decode()

    recorded(model, "demo-ner", [70.0, 71.0], commit)  # new figures: asked again
    assert Result.everything.get(pk=result.pk).approval == Result.Approval.PENDING
    with commit():
        client.post(change, {"approval": "rejected", "approval_reason": "the run used the wrong split"})
    rejected = Result.everything.get(pk=result.pk)
    assert rejected.approval == "rejected" and rejected.approval_reason == "the run used the wrong split"
    assert not Result.objects.filter(pk=result.pk).exists()


def test_the_submitter_reads_that_a_held_result_awaits_its_holder_and_why_it_was_rejected(
    holder, alice, django_user_model, artefact_store, commit
):
    from leaderboard.approvals import decide
    from registry.models import LanguageModel
    from submissions.models import Submission
    from submissions.services import results_of

    model = LanguageModel.objects.create(slug="m", name="M", owner=alice)
    submission = Submission.objects.create(submitter=alice, language_model=model)
    _, result = recorded(model, "demo-ner", [80.0, 82.0], commit, submission)
    recorded(model, "demo-relation", [60.0, 62.0], commit, submission)
    shown = {row.slug: row.held for row in results_of(submission)[0]}
    assert shown["demo-relation"] == ""
    assert shown["demo-ner"].startswith("awaiting mayo's approval before it is published")
    root = django_user_model.objects.create_superuser("root", password="pw")
    decide(result, root, "rejected", "the DUA forbids this model's licence")
    (row,) = [row for row in results_of(submission)[0] if row.slug == "demo-ner"]
    assert row.held == "not published: mayo rejected it (the DUA forbids this model's licence)"


def test_a_public_datasets_result_needs_no_approval(holder, alice, artefact_store, commit):
    from leaderboard.models import Result
    from registry.models import LanguageModel

    model = LanguageModel.objects.create(slug="m", name="M", owner=alice)
    _, result = recorded(model, "demo-relation", [60.0, 61.0], commit)
    assert result.approval == Result.Approval.NOT_NEEDED and Result.objects.filter(pk=result.pk).exists()


def test_a_restricted_datasets_predictions_are_for_staff_only(holder, alice, staff, client, rf, artefact_store, commit):
    from django.http import Http404

    from leaderboard.models import Result
    from leaderboard.predictions import predictions
    from registry.models import LanguageModel

    model = LanguageModel.objects.create(slug="m", name="M", owner=alice)
    _, result = recorded(model, "demo-ner", [80.0, 82.0], commit)
    Result.everything.filter(pk=result.pk).update(approval=Result.Approval.APPROVED)  # published, predictions kept in
    url = reverse("leaderboard:predictions", args=[*model.address_parts, result.pk])
    client.force_login(alice)  # the model's own owner
    assert client.get(url).status_code == 404
    request = rf.get(url)
    request.user = alice
    with pytest.raises(Http404, match="restricted by a data use agreement: its predictions are shown to staff only"):
        predictions(request, *model.address_parts, result.pk)
    request.user = staff  # staff pass the rule (this job stored no predictions, which is the next 404)
    with pytest.raises(Http404, match="stored no test predictions"):
        predictions(request, *model.address_parts, result.pk)


# -- in real processes: the platform's worker, the holder's worker, and the data on the holder's host only ----------

QUICK = '{"grid": "single", "seeds": 2, "epochs": 1, "max_length": 64, "max_train_examples": 8, "max_eval_examples": 8}'
MARK_RESTRICTED = (
    "from registry.models import Dataset; Dataset.objects.filter(slug='demo-ner').update(access='restricted')"
)
APPROVE = (
    "from django.contrib.auth.models import User; from leaderboard.models import Result; "
    "from leaderboard.approvals import decide; r = Result.everything.get(dataset__slug='demo-ner'); "
    "decide(r, User.objects.get(username='hana'), 'approved', 'checked')"
)


@pytest.mark.slow
@pytest.mark.once  # one run against the real servers is enough; the SQLite pass adds nothing to it
def test_a_held_dataset_trains_and_scores_on_its_holders_worker_and_publishes_after_approval(
    tiny_bert_checkpoint, tmp_path
):
    from bench.harness import Platform, Redis

    platform = Platform(tmp_path / "platform")
    # The broker as docs/examples/redis-users.acl sets it up: each host's workers with a Redis user of their own.
    urls = users_acl(tmp_path / "users.acl")
    platform.redis = Redis(tmp_path / "redis", acl_file=tmp_path / "users.acl")
    broker = {user: url.format(port=platform.redis.port) for user, url in urls.items()}
    platform.environment["CELERY_BROKER_URL"] = broker["default"]
    try:
        platform.start(datasets=("demo-relation",))  # demo-ner is never imported here: its data is the holder's
        platform.manage("shell", "-c", MARK_RESTRICTED)
        added = platform.manage("holders", "add", HOLDER, "--title", "Mayo Clinic")
        credential = added.rsplit(": ", 1)[1].strip()
        platform.manage("holders", "bind", HOLDER, "demo-ner")
        platform.manage("shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('hana')")
        platform.manage("holders", "approver", HOLDER, "hana")
        platform.start_gpu_worker("platform-gpu", CELERY_BROKER_URL=broker["gpuhosts"])
        platform.start_gpu_worker("mayo-gpu", BIOLM_WORKER_SECRET=credential, CELERY_BROKER_URL=broker["mayo"])
        submitted = platform.submit("--model", str(tiny_bert_checkpoint), "--name", "held", "--benchmark", "blurb-mini",
                                    "--datasets", "demo-ner", "demo-relation", "--overrides", QUICK)  # fmt: skip
        for job in submitted["jobs"]:
            if job["kind"] == "score":
                ended = platform.wait_for_job(job["id"], ("succeeded", "failed"), timeout=600)
                assert ended["status"] == "succeeded", platform.diagnosis()
        jobs = [platform.job(job["id"]) for job in submitted["jobs"]]
        ner = platform.query("SELECT id FROM registry_dataset WHERE slug = 'demo-ner'")[0]["id"]
        held = [job for job in jobs if job["dataset_id"] == ner]
        public = [job for job in jobs if job["dataset_id"] != ner]
        ran_on = {row["job_id"]: row["worker"] for row in platform.query("SELECT job_id, worker FROM jobs_attempt")}
        assert {(job["kind"], ran_on[job["id"]]) for job in held} == {("finetune", "mayo-gpu@harness"),
                                                                      ("score", "mayo-gpu@harness")}  # fmt: skip
        assert {ran_on[job["id"]] for job in public} == {"platform-gpu@harness", "cpu@harness"}
        assert "awaiting mayo's approval" in next(job["log"] for job in held if job["kind"] == "score")
        published = ("SELECT d.slug, r.approval FROM leaderboard_result r "
                     "JOIN registry_dataset d ON d.id = r.dataset_id WHERE r.scope = ''")  # fmt: skip
        assert sorted((r["slug"], r["approval"]) for r in platform.query(published)) == [
            ("demo-ner", "pending"), ("demo-relation", "")]  # fmt: skip
        model = f"LanguageModel.objects.filter(slug='{submitted['model']}')"
        publish = f"{model}.update(visibility='public'); print({model}.get().get_absolute_url())"
        address = platform.manage("shell", "-c", f"from registry.models import LanguageModel; {publish}")
        (path,) = [line for line in address.split() if line.startswith("/models/")]  # the shell's notes beside it
        page = f"http://127.0.0.1:{platform.port}{path}"

        held_result_of = ("SELECT r.id FROM leaderboard_result r JOIN registry_dataset d ON d.id = r.dataset_id "
                          "WHERE d.slug = 'demo-ner' AND r.scope = ''")  # fmt: skip
        (held_result,) = platform.query(held_result_of)
        section = f'id="result-{held_result["id"]}"'
        assert section not in urllib.request.urlopen(page, timeout=30).read().decode()
        platform.manage("shell", "-c", APPROVE)
        assert section in urllib.request.urlopen(page, timeout=30).read().decode()
    finally:
        platform.stop()


# -- the broker: the documented Redis users keep a holder's queue from the platform's GPU hosts ------------------


def users_acl(path: Path) -> dict[str, str]:
    """docs/examples/redis-users.acl at ``path``, a password in place of each name: ``{user: url}``, ``{port}`` left
    for the server's port."""
    names = {"default": "REDIS_PASSWORD", "gpuhosts": "GPU_HOSTS_PASSWORD", "mayo": "MAYO_PASSWORD"}
    acl = (Path(__file__).resolve().parents[1] / "docs" / "examples" / "redis-users.acl").read_text()
    for user, name in names.items():
        acl = acl.replace(f">{name}", f">{user}-pw")
    path.write_text(acl)
    return {user: f"redis://{user}:{user}-pw@127.0.0.1:{{port}}/0" for user in names}


@pytest.fixture
def shared_broker(tmp_path):
    """A Redis of the test's own with the users of docs/examples/redis-users.acl: ``{user: url}``."""
    from bench.harness import Redis

    urls = users_acl(tmp_path / "users.acl")
    redis = Redis(tmp_path / "redis", acl_file=tmp_path / "users.acl")
    redis.start()
    yield {user: url.format(port=redis.port) for user, url in urls.items()}
    redis.stop()


def consume(url: str, queue: str, holder: str = "") -> object:
    """One message of ``queue`` as a worker's kombu reads it (biolm's transport and options), or the error."""
    from kombu import Connection

    from biolm import broker

    options = broker.transport_options(url, Path("/nonexistent"), holder=holder)
    with Connection(url, transport=broker.transport(url), transport_options=options) as connection:
        try:
            message = connection.SimpleQueue(queue).get(timeout=5)
        except Exception as exc:  # what Redis answered a user its ACL does not allow
            return exc
        message.ack()
        return message.payload


def test_the_documented_redis_users_keep_a_holders_jobs_from_the_platforms_gpu_hosts(shared_broker):
    from kombu import Connection

    from biolm import broker

    url = shared_broker["default"]
    with Connection(url, transport=broker.transport(url)) as platform:  # the platform sends to both
        platform.SimpleQueue("held-mayo.gpu").put({"job": 1})
        platform.SimpleQueue("gpu").put({"job": 2})
    refused = consume(shared_broker["gpuhosts"], "held-mayo.gpu")
    assert "NOPERM" in str(refused) or "no permissions" in str(refused), refused
    assert "no permissions" in str(consume(shared_broker["mayo"], "gpu", holder=HOLDER))
    assert consume(shared_broker["mayo"], "held-mayo.gpu", holder=HOLDER) == {"job": 1}
    assert consume(shared_broker["gpuhosts"], "gpu") == {"job": 2}
