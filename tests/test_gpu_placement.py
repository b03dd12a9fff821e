"""A job asking for N GPUs runs only on a worker owning N free GPUs of one host (biolm.placement, jobs.dispatch).

The host's side: workers that own several GPUs, or share one, each on the broker queue of what it owns, and a
heartbeat that says what it owns and has free. The platform's side: dispatch sends a job only to a seat that
holds it, through a real (in-memory) broker; the claim hands back a job its worker cannot hold, uncharged; a job
no live worker can hold waits, and says why on its page, in the admin and on the queue page.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import stat
from pathlib import Path

import pytest
from celery import Celery
from contract_documents import pretrain_spec
from django.urls import reverse
from django.utils import timezone
from kombu import Connection
from rest_framework.test import APIClient

from biolm.placement import Need, Seat, seat_of_queue, unplaced
from workers.runner import health
from workers.runner.gpu_workers import describe_gpus, gpus_per_worker, node_name, worker_processes

H200 = {"name": "NVIDIA H200", "memory_bytes": 143771 * 2**20}


def queue_of(process) -> str:
    return process.command[process.command.index("-Q") + 1]


# -- the host: which GPUs each worker owns, and which broker queue it consumes -----------------------------------


def test_a_worker_owning_four_gpus_sees_all_four_and_consumes_the_four_gpu_queue():
    owners = worker_processes(8, environment={"DATABASE_URL": "postgres://secret"}, per_worker=4)
    assert [p.name for p in owners] == [node_name("gpu", 0), node_name("gpu", 1)]
    assert [p.environment["CUDA_VISIBLE_DEVICES"] for p in owners] == ["0,1,2,3", "4,5,6,7"]
    assert [p.environment["BIOLM_WORKER_GPUS"] for p in owners] == ["4", "4"]
    assert [queue_of(p) for p in owners] == ["gpu-4", "gpu-4"]
    assert {p.environment["CUDA_DEVICE_ORDER"] for p in owners} == {"PCI_BUS_ID"}  # CUDA's 2 is nvidia-smi's 2
    assert not any("DATABASE_URL" in p.environment for p in owners)


def test_gpus_left_over_by_the_division_make_one_smaller_worker():
    owners = worker_processes(6, environment={}, per_worker=4)
    assert [(p.environment["CUDA_VISIBLE_DEVICES"], queue_of(p)) for p in owners] == [("0,1,2,3", "gpu-4"),
                                                                                      ("4,5", "gpu-2")]  # fmt: skip


def test_workers_sharing_a_gpu_consume_the_shared_queue_and_one_gpu_workers_the_plain_one():
    shared = worker_processes(1, environment={}, per_gpu=2)
    assert [queue_of(p) for p in shared] == ["gpu-shared", "gpu-shared"]
    assert {p.environment["BIOLM_WORKER_SHARES_GPU"] for p in shared} == {"1"}
    (alone,) = worker_processes(1, environment={})
    (on_cpu,) = worker_processes(0, environment={}, per_gpu=2)  # a host without a GPU: one worker, not shared
    assert (queue_of(alone), alone.environment["BIOLM_WORKER_SHARES_GPU"]) == ("gpu", "0")
    assert (queue_of(on_cpu), on_cpu.environment["BIOLM_WORKER_SHARES_GPU"]) == ("gpu", "0")


def test_gpus_per_worker_comes_from_the_flag_else_the_variable_and_a_bad_one_is_one_line(monkeypatch):
    monkeypatch.delenv("BIOLM_GPUS_PER_WORKER", raising=False)
    assert gpus_per_worker() == 1
    monkeypatch.setenv("BIOLM_GPUS_PER_WORKER", "4")
    assert gpus_per_worker() == 4 and gpus_per_worker("2") == 2
    for bad in ("0", "four", "65"):
        with pytest.raises(ValueError, match=f"^--gpus-per-worker takes a whole number from 1 to 64, not '{bad}'$"):
            gpus_per_worker(bad)
    with pytest.raises(ValueError, match=r"^BIOLM_GPUS_PER_WORKER \(4\) and BIOLM_WORKERS_PER_GPU \(2\) cannot"):
        gpus_per_worker(per_gpu=2)


def test_the_runner_refuses_owning_and_sharing_at_once_before_starting_anything(monkeypatch, capsys):
    from workers.runner.__main__ import main

    monkeypatch.delenv("BIOLM_GPUS_PER_WORKER", raising=False)
    started = []
    monkeypatch.setattr("workers.runner.__main__.Supervisor", lambda *a, **k: started.append(a))
    with pytest.raises(SystemExit) as exit_info:
        main(["--gpus", "4", "--per-gpu", "2", "--gpus-per-worker", "2"])
    assert exit_info.value.code == 2 and not started
    assert "a worker either shares one GPU or owns several" in capsys.readouterr().err


def test_the_hosts_health_check_expects_one_worker_per_group_of_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOLM_WORKER_DIR", str(tmp_path))
    monkeypatch.delenv("BIOLM_WORKERS_PER_GPU", raising=False)
    for index in range(2):
        path = health.health_file(tmp_path, f"gpu{index}@{socket.gethostname()}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    assert health.main(["--gpus", "8", "--gpus-per-worker", "4"]) == 0
    assert health.main(["--gpus", "8"]) == 1  # one worker per GPU would be eight


def test_a_worker_consumes_its_seats_queue_in_place_of_the_plain_gpu_one():
    from workers.runner.app import consume_seat_queue

    queues = Celery("placement-test").amqp.queues
    queues.select(["gpu"])  # what `celery -A workers.runner.app worker -Q gpu` selects
    consume_seat_queue(queues, "gpu")
    assert list(queues.consume_from) == ["gpu"]
    consume_seat_queue(queues, "gpu-4")
    assert list(queues.consume_from) == ["gpu-4"]
    consumed, sent = queues["gpu-4"], Celery("placement-platform").amqp.queues["gpu-4"]  # send_task(queue="gpu-4")
    assert (consumed.exchange.name, consumed.routing_key) == (sent.exchange.name, sent.routing_key) == ("gpu-4",) * 2


# -- the rule both sides import --------------------------------------------------------------------------------


def test_n_gpus_need_a_worker_owning_n_and_a_shared_gpu_takes_fine_tuning_only():
    pretrain_4, pretrain_1, finetune = Need(4, shareable=False), Need(1, shareable=False), Need()
    assert Need.of("pretrain", {"gpus": 4}) == pretrain_4 and Need.of("finetune", {}) == finetune
    assert Seat(4).holds(pretrain_4) and Seat(8).holds(pretrain_4) and not Seat(2).holds(pretrain_4)
    assert Seat(1, shared=True).holds(finetune) and not Seat(1, shared=True).holds(pretrain_1)
    assert Seat(0).holds(pretrain_1) and not Seat(0).holds(Need(2, shareable=False))  # the CPU worker: one "GPU"
    assert [Seat(1, shared=True).queue, Seat(0).queue, Seat(1).queue, Seat(4).queue] == ["gpu-shared", "gpu", "gpu",
                                                                                          "gpu-4"]  # fmt: skip
    assert seat_of_queue("gpu-4") == Seat(4) and seat_of_queue("gpu-shared") == Seat(1, True)
    assert seat_of_queue("cpu") is None


def test_a_job_no_live_worker_can_hold_says_what_it_needs_and_what_the_largest_has():
    assert unplaced(Need(4, False), [Seat(1), Seat(2)]) == "needs 4 GPUs on one host; the largest live worker has 2"
    assert unplaced(Need(4, False), [Seat(4)]) == "" and unplaced(Need(4, False), []) == ""
    assert unplaced(Need(1, False), [Seat(1, shared=True)]) == (
        "needs 1 GPU of its own; every live worker shares its GPU (BIOLM_WORKERS_PER_GPU)"
    )


# -- the heartbeat ---------------------------------------------------------------------------------------------


def fake_nvidia_smi(folder: Path, output: str) -> Path:
    """An ``nvidia-smi`` on PATH that prints ``output`` and writes its arguments beside itself."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f'#!/bin/sh\necho "$@" > "{folder}/arguments"\nprintf "{output}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_a_workers_gpus_are_named_by_nvidia_smi_restricted_to_its_own_devices(tmp_path, monkeypatch):
    folder = fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200, 143771\\nNVIDIA H200, 143771\\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    assert describe_gpus("2,3") == [H200, H200]
    assert (folder / "arguments").read_text().split() == [
        "--query-gpu=name,memory.total", "--format=csv,noheader,nounits", "-i", "2,3"
    ]  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert describe_gpus("0") == []  # no nvidia-smi: the heartbeat says only how many


def test_the_heartbeat_says_how_many_gpus_the_worker_owns_and_how_many_its_job_leaves_free(monkeypatch):
    from workers.runner import app

    monkeypatch.setenv("BIOLM_WORKER_GPUS", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.delenv("BIOLM_WORKER_SHARES_GPU", raising=False)
    monkeypatch.setattr(app, "describe_gpus", lambda devices: [H200] * len(devices.split(",")))
    liveness = app.Liveness("gpu0@host")
    beat = liveness.beat()
    assert (beat["gpus"], beat["gpus_free"], beat["shares_gpu"], beat["gpu_devices"]) == (4, 4, False, [H200] * 4)

    class Running:  # what app.run_job holds while a job runs: the JobRun, whose spec the claim filled in
        spec = pretrain_spec(gpus=3)

    monkeypatch.setattr(app, "_running", Running())
    assert liveness.beat()["gpus_free"] == 1


# -- the platform: heartbeat, dispatch, claim, waiting ---------------------------------------------------------


def secret_client(settings) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {settings.BIOLM_WORKER_SECRET}")
    return client


def test_the_heartbeat_records_gpus_free_model_and_memory_and_the_pages_show_them(settings, client, admin_client):
    beat = {"name": "gpu0@box", "queues": ["gpu"], "gpus": 4, "gpus_free": 3, "gpu_devices": [H200] * 4}
    api = secret_client(settings)
    assert api.post("/internal/workers/heartbeat", beat, format="json").status_code == 204
    from jobs.models import Worker

    worker = Worker.objects.get(name="gpu0@box")
    assert (worker.gpus, worker.gpus_free, worker.shares_gpu, worker.gpu_devices) == (4, 3, False, [H200] * 4)
    assert worker.device == "4 GPUs (NVIDIA H200, 140 GiB each)" and worker.seat == Seat(4)
    bad = api.post("/internal/workers/heartbeat", {**beat, "gpus_free": 5}, format="json")
    assert bad.status_code == 400 and "more than its 4 GPUs" in bad.content.decode()
    html = client.get("/queue/").content.decode()
    assert '<td class="text">4 GPUs (NVIDIA H200, 140 GiB each)</td>\n      <td>3 of 4</td>' in html
    listing = admin_client.get(reverse("admin:jobs_worker_changelist")).content.decode()
    assert "4 GPUs (NVIDIA H200, 140 GiB each)" in listing and ">3<" in listing
    jobs_page = admin_client.get(reverse("admin:jobs_job_changelist")).content.decode()
    assert "<td>4 GPUs (NVIDIA H200, 140 GiB each)</td><td>3 of 4</td>" in jobs_page


@pytest.fixture
def jobs_of(alice):
    """``jobs_of(pretrain=[4, 1], finetune=2)``: waiting jobs of alice's, the pretraining ones asking for those GPUs."""
    from jobs.models import Job
    from registry.models import Dataset, LanguageModel

    def make(pretrain: tuple[int, ...] = (), finetune: int = 0) -> list[Job]:
        model = LanguageModel.objects.create(slug=f"m{LanguageModel.objects.count()}", name="m", owner=alice)
        made = [Job.objects.create(language_model=model, kind=Job.Kind.PRETRAIN, spec=pretrain_spec(gpus=n).to_json())
                for n in pretrain]  # fmt: skip
        dataset = Dataset.objects.get(slug="demo-ner")
        made += [Job.objects.create(language_model=model, dataset=dataset, kind=Job.Kind.FINETUNE)
                 for _ in range(finetune)]  # fmt: skip
        return made

    return make


def dispatched(**workers: tuple[int, bool]) -> dict[int, str]:
    """Record ``workers`` ({name: (gpus, shares_gpu)}) as live, dispatch, and answer {job id: broker queue}."""
    from jobs import dispatch

    for name, (gpus, shared) in workers.items():
        dispatch.record_worker(f"{name}@host", ["gpu"], gpus=gpus, shares_gpu=shared)
    sent = []
    dispatch.dispatch(sent.append, stale_after_s=60, redispatch_after_s=300)
    return {job.pk: job.sent_to for job in sent}


@pytest.mark.django_db
def test_a_four_gpu_job_goes_only_to_a_worker_owning_four_and_holds_it_alone(jobs_of):
    big, finetune, second = jobs_of(pretrain=(4,), finetune=2)
    sent = dispatched(small=(1, False), large=(4, False))
    assert sent == {big.pk: "gpu-4", finetune.pk: "gpu"}  # the second fine-tuning waits: both workers are taken
    assert dispatched() == {}
    from jobs import lifecycle

    lifecycle.claim(finetune.pk, finetune.token, "d", "small0@host")
    lifecycle.succeed(finetune.pk, finetune.token, "d")
    assert dispatched() == {second.pk: "gpu"}  # the four-GPU worker stays its job's alone


@pytest.mark.django_db
def test_fine_tuning_takes_the_smallest_free_worker_and_a_large_one_only_when_the_small_are_busy(jobs_of):
    first, second, third = jobs_of(finetune=3)
    sent = dispatched(large=(4, False), small=(1, False), shared=(1, True))
    assert sent == {first.pk: "gpu-shared", second.pk: "gpu", third.pk: "gpu-4"}


@pytest.mark.django_db
def test_a_worker_sharing_its_gpu_never_gets_a_pretraining_job(jobs_of):
    from jobs import waiting
    from jobs.models import Job

    pretrain, finetune = jobs_of(pretrain=(1,), finetune=1)
    assert dispatched(shared0=(1, True), shared1=(1, True)) == {finetune.pk: "gpu-shared"}
    reason = waiting.reason(Job.objects.get(pk=pretrain.pk), waiting.queue_states(60))
    assert reason == "waiting: needs 1 GPU of its own; every live worker shares its GPU (BIOLM_WORKERS_PER_GPU)"


@pytest.mark.django_db
def test_a_job_asking_for_more_gpus_than_any_live_worker_has_waits_and_says_so_everywhere(alice, admin_client,
                                                                                         artefact_store):  # fmt: skip
    from registry.imports import import_dataset
    from submissions import services
    from submissions.submitting import SubmissionRequest, submit

    import_dataset("demo-ner")
    corpus = artefact_store / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",), gpus=4))  # fmt: skip
    pretrain = submission.jobs.get(kind="pretrain")
    assert dispatched(gpu0=(2, False), gpu1=(1, False)) == {}
    expected = "waiting: needs 4 GPUs on one host; the largest live worker has 2"
    state = next(state for state in services.job_states(submission) if state.id == pretrain.pk)
    assert state.waiting_reason == expected and state.estimated_start is None
    assert expected in admin_client.get(reverse("admin:jobs_job_changelist")).content.decode()
    assert dispatched(big0=(4, False)) == {pretrain.pk: "gpu-4"}  # a worker owning four appears: it goes


@pytest.mark.django_db
def test_dispatch_puts_the_message_on_the_seats_broker_queue_and_the_claim_hands_back_what_a_worker_cannot_hold(
    alice, artefact_store, monkeypatch
):
    """The whole road: submit, the real dispatcher and ``send`` onto a broker, a wrong worker's claim, a right one's."""
    from jobs import dispatch, tasks
    from jobs.models import Job
    from registry.imports import import_dataset
    from submissions.submitting import SubmissionRequest, submit

    import_dataset("demo-ner")
    corpus = artefact_store / "corpus.txt"
    corpus.write_text("aspirin inhibits cyclooxygenase\n" * 20)
    submission = submit(SubmissionRequest(owner=alice, benchmark="blurb-mini", recipe="tiny", corpus=corpus,
                                          datasets=("demo-ner",), gpus=4))  # fmt: skip
    pretrain = submission.jobs.get(kind="pretrain")
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery prefers it to broker=: CI sets it to Redis
    broker = Celery("placement-broker", broker="memory://")
    monkeypatch.setattr(tasks, "current_app", broker)
    dispatch.record_worker("gpu0@small", ["gpu"], gpus=1)
    dispatch.record_worker("gpu0@large", ["gpu"], gpus=4, gpu_devices=[H200] * 4)
    assert dispatch.dispatch(tasks.send, stale_after_s=60, redispatch_after_s=300) == [pretrain.pk]
    with Connection("memory://") as connection:
        message = connection.SimpleQueue("gpu-4").get(timeout=1)
        assert message.payload[0] == [pretrain.pk, pretrain.token] and message.headers["task"] == "biolm.worker.run_job"
        message.ack()
        with pytest.raises(connection.SimpleQueue("gpu").Empty):
            connection.SimpleQueue("gpu").get(block=False)  # no one-GPU worker could have taken it

    worker = APIClient()
    worker.credentials(HTTP_AUTHORIZATION=f"Bearer {pretrain.token}")
    url = f"/internal/jobs/{pretrain.pk}/claim"
    refused = worker.post(url, {"delivery": "d1", "worker": "gpu0@small"}, format="json")
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        f"job #{pretrain.pk} needs 4 GPUs on one host; worker gpu0@small has 1 GPU: handed back, no attempt charged"
    )
    pretrain.refresh_from_db()
    assert (pretrain.status, pretrain.attempts, pretrain.dispatched_at, pretrain.sent_to) == ("queued", 0, None, "")
    assert dispatch.dispatch(tasks.send, stale_after_s=60, redispatch_after_s=300) == [pretrain.pk]  # sent again
    claimed = worker.post(url, {"delivery": "d2", "worker": "gpu0@large"}, format="json")
    assert claimed.status_code == 200, claimed.content
    pretrain.refresh_from_db()
    assert (pretrain.status, pretrain.attempts, pretrain.worker) == (Job.Status.RUNNING, 1, "gpu0@large")


@pytest.mark.django_db
def test_a_job_sent_before_seats_had_names_still_counts_against_its_queues_slots(jobs_of):
    from jobs.models import Job

    running, _ = jobs_of(finetune=2)
    Job.objects.filter(pk=running.pk).update(status=Job.Status.RUNNING, sent_to="", started_at=timezone.now(),
                                             last_heartbeat=timezone.now() - dt.timedelta(seconds=1))  # fmt: skip
    assert dispatched(gpu0=(1, False)) == {}  # the one slot is the running job's
