"""The internal API GPU workers call: the only way a worker touches the platform's state.

A worker holds no database credentials. It receives a job id and the job's token in a Celery
message, and then calls, with ``Authorization: Bearer <job token>``:

* ``POST /internal/jobs/<id>/claim`` with a delivery id of its own making: the job is its to
  run (200, with the job's spec, its typed contract, and the locations of its inputs) or not
  (409: already taken, cancelled, finished, or its dependencies have not succeeded; or the worker,
  as its last heartbeat described it, cannot hold the job's GPUs, :mod:`biolm.placement`: the job is
  handed back, no attempt charged, and sent again to a worker that can), in which case the worker
  stops at once;
* ``POST .../heartbeat`` with progress and new log lines: "continue", or "stop" when the
  delivery lost the job (cancelled, reaped, redelivered elsewhere);
* ``PUT .../outputs/<name>``: results, the pretrained model, a pretraining checkpoint; or, when the
  artefact store is an S3 bucket, ``POST .../outputs/<name>/upload`` for pre-signed ``PUT``s straight
  to it and ``POST .../outputs/<name>/uploaded`` once they are sent (:mod:`jobs.direct_uploads`);
* ``POST .../complete`` or ``POST .../fail``;
* ``GET .../artefacts/<name>``: the inputs the claim listed, from the artefact store.

Every write is filtered on the delivery's claim (:mod:`jobs.lifecycle`), so a delivery that lost
its job changes nothing. Workers register their own liveness with ``POST
/internal/workers/heartbeat`` and the worker secret, and a supervisor that gave up on a worker
says so with ``POST /internal/workers/problem``. The schema is at ``/internal/schema/``, for the worker secret.

A data holder's workers (gated data kept on its own hosts, :mod:`jobs.held`) present its credential in place
of the worker secret: they are registered as its workers, serving its queue only, and a claim of one of its
jobs must carry that credential too (``X-Biolm-Worker-Credential``), or it is refused and handed back.
"""

from __future__ import annotations

import logging
import secrets
import uuid

from django.conf import settings
from django.db import transaction
from django.http import FileResponse, Http404
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, NotFound, PermissionDenied
from rest_framework.parsers import FileUploadParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from biolm import contract
from biolm.contract.jobs import COMPLETION_CHECKING, NODES_MAX
from biolm.disk_reservations import NoRoom
from biolm.placement import holder_of, on_gpu_workers
from biolm.upload_parts import MAX_PARTS
from jobs import artefacts, completion, direct_uploads, disk_room, dispatch, lifecycle, tasks
from jobs.models import WAITING, Job, Worker
from registry.holders import holder_with

logger = logging.getLogger("biolm.jobs")

OUTPUT_NAMES = ("results.json", "slice.json", "model.tar", "checkpoint.tar", "scores.json")
COUNTER_MAX = 2**31 - 1  # a job's progress columns (PositiveIntegerField): a larger step is refused, not a 500
S3_OBJECT_MAX = 5 * 2**40  # S3's largest object: no output is larger
CREDENTIAL_HEADER = "X-Biolm-Worker-Credential"  # a held job's claim: its holder's credential, beside the job token


class BearerToken(BaseAuthentication):
    """``Authorization: Bearer <token>``: the token becomes ``request.auth``; the views say whose it must be."""

    def authenticate(self, request: Request) -> tuple[None, str]:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AuthenticationFailed("send the job's token (or the worker secret) as 'Authorization: Bearer <token>'")
        return None, value.strip()

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="biolm-workers"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the schema describes :class:`BearerToken`: HTTP bearer authentication."""

    target_class = "jobs.api.BearerToken"
    name = "jobToken"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The job's token (or, to register, the worker secret).",
        }


class WorkerView(APIView):
    authentication_classes = [BearerToken]


def _bearer(request: Request) -> str:
    return request.auth


def job_for(request: Request, job_id: int, *fields: str, related: tuple[str, ...] = ()) -> Job:
    """The job, if the request carries its token (compared in constant time); only ``fields`` of it, when named,
    and the ``related`` rows it points to read in the same query.

    An unknown job and another job's token get the same 404, so a token reveals no other job's existence.
    """
    token = _bearer(request)
    jobs = Job.objects.only("token", *fields) if fields else Job.objects
    if related:  # select_related() with no names would follow every foreign key
        jobs = jobs.select_related(*related)
    job = jobs.filter(pk=job_id).first()
    expected = job.token if job is not None else secrets.token_hex(16)  # compare anyway: the same time either way
    if not secrets.compare_digest(expected.encode(), token.encode()) or job is None:
        raise NotFound(f"no job #{job_id} with this token")
    return job


class ClaimIn(serializers.Serializer):
    delivery = serializers.CharField(max_length=64, help_text="An id the worker makes for this attempt.")
    worker = serializers.CharField(max_length=200, help_text="The worker's name, e.g. gpu0@host.")
    code = serializers.ListField(
        child=serializers.JSONField(), required=False, max_length=1000,
        help_text="The code it runs (biolm.contract.code_here: {name, distribution, version, fingerprint} each): "
        "a job that pins other code is handed back, not claimed.",
    )  # fmt: skip


class ClaimOut(serializers.Serializer):
    job = serializers.IntegerField()
    kind = serializers.CharField()
    spec = serializers.JSONField(help_text="The job's spec: its typed, versioned contract (biolm.contract).")
    inputs = serializers.JSONField(help_text="{role: [{path, url, size, sha256}]}: what to download, and where to.")
    held_by = serializers.CharField(
        help_text="The data holder whose hosts keep this job's data (its worker reads its own copy, gold included); "
        '"": the platform\'s data, as the inputs list it.'
    )
    uploads = serializers.JSONField(
        allow_null=True,
        help_text="{part_bytes}: outputs go straight to the S3 store in parts of this size; null: PUT "
        "them to .../outputs/<name>.",
    )


class HeartbeatIn(serializers.Serializer):
    delivery = serializers.CharField(max_length=64)
    step = serializers.IntegerField(min_value=0, max_value=COUNTER_MAX, required=False)
    total = serializers.IntegerField(min_value=0, max_value=COUNTER_MAX, required=False)
    loss = serializers.FloatField(required=False, allow_null=True)
    eta_s = serializers.FloatField(required=False, allow_null=True, min_value=0)
    log = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class VerdictOut(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=[lifecycle.Verdict.CONTINUE, lifecycle.Verdict.STOP])


class DeliveryIn(serializers.Serializer):
    delivery = serializers.CharField(max_length=64)


class FailIn(DeliveryIn):
    error = serializers.CharField(allow_blank=False)
    cause = serializers.ChoiceField(choices=[Job.Cause.PLATFORM, Job.Cause.SUBMISSION, Job.Cause.PLUGIN])
    plugin = serializers.CharField(
        max_length=200, required=False, allow_blank=True, help_text="With cause plugin: the plugin to count it against."
    )


class GpuDeviceIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="The GPU's model, as nvidia-smi names it.")
    memory_bytes = serializers.IntegerField(min_value=0, help_text="Its memory (nvidia-smi's memory.total).")


class WorkerIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    queues = serializers.ListField(child=serializers.ChoiceField(choices=Job.Queue.values), min_length=1)
    slots = serializers.IntegerField(min_value=1, max_value=64, default=1)
    gpus = serializers.IntegerField(
        min_value=0, max_value=64, default=0, help_text="GPUs its jobs run on; 0 (or absent): the CPU."
    )
    gpus_free = serializers.IntegerField(
        min_value=0, max_value=64, required=False, help_text="Of its GPUs, those no running job holds (absent: all)."
    )
    shares_gpu = serializers.BooleanField(
        default=False, help_text="It shares its GPU with other workers: it takes fine-tuning jobs only."
    )
    workers_per_gpu = serializers.IntegerField(
        min_value=1, max_value=64, default=1, help_text="When it shares its GPU: how many workers share it."
    )
    gpu_devices = serializers.ListField(
        child=GpuDeviceIn(), max_length=64, default=list, help_text="Each of its GPUs' model and memory."
    )
    executor = serializers.ChoiceField(
        choices=["local", "slurm"], default="local",
        help_text="local: it runs jobs on its own host; slurm: as batch jobs on a cluster (gpus: per node).",
    )  # fmt: skip
    nodes = serializers.IntegerField(
        min_value=1, max_value=NODES_MAX, default=1, help_text="A Slurm worker: the nodes one job may span."
    )

    def validate(self, data: dict) -> dict:
        if data.get("gpus_free", 0) > data["gpus"]:
            raise serializers.ValidationError({"gpus_free": f"more than its {data['gpus']} GPUs"})
        return data


class WorkerProblemIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    queues = serializers.ListField(child=serializers.ChoiceField(choices=Job.Queue.values), min_length=1)
    problem = serializers.CharField(max_length=2000, help_text="Why the worker's supervisor stopped restarting it.")


def _valid(serializer_class, request: Request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ClaimView(WorkerView):
    @extend_schema(request=ClaimIn, responses={200: ClaimOut, 409: None})
    def post(self, request: Request, job_id: int) -> Response:
        waiting_job = job_for(request, job_id, related=("dataset",))  # the inputs name its dataset's files
        data = _valid(ClaimIn, request)
        worker = Worker.objects.filter(name=data["worker"]).first()  # None until its first heartbeat
        refused = (_refused_held(waiting_job, request) or _cannot_hold(waiting_job, data["worker"], worker)
                   or _runs_other_code(waiting_job, data, worker))  # fmt: skip
        if refused:
            return Response({"detail": refused}, status=status.HTTP_409_CONFLICT)
        claimant = worker or data["worker"]
        job = lifecycle.claim(job_id, _bearer(request), data["delivery"], claimant, seen=waiting_job)
        if job is None:
            current = Job.objects.get(pk=job_id)
            return Response(
                {"detail": f"job #{job_id} cannot be claimed: it is {current.status}"}, status=status.HTTP_409_CONFLICT
            )
        try:
            inputs = completion.inputs_of(job, request.build_absolute_uri("/internal/jobs/"))
        except completion.InputError as exc:  # the platform's data is not ready: retried later, refunded if final
            lifecycle.fail(job.pk, job.token, data["delivery"], str(exc), Job.Cause.PLATFORM)
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        uploads = direct_uploads.claim_settings()
        held_by = holder_of(job.queue)
        return Response({"job": job.pk, "kind": job.kind, "spec": job.spec, "inputs": inputs, "held_by": held_by,
                         "uploads": uploads})  # fmt: skip


def _cannot_hold(job: Job, name: str, worker: Worker | None) -> str:
    """Why worker ``name`` may not take the waiting GPU ``job`` ("" when it may), after handing the job back.

    Dispatch sends a job only to a seat that holds it, so this catches a worker consuming another seat's
    queue (started by hand with ``-Q gpu-4`` on one GPU). A worker that has not heartbeated yet is taken at
    its word, as before seats had names.
    """
    if not on_gpu_workers(job.queue) or job.status not in WAITING or worker is None or worker.seat.holds(job.need):
        return ""
    lifecycle.hand_back(job.pk, job.token)
    transaction.on_commit(tasks.kick)
    return f"job #{job.pk} {job.need.describe()}; worker {name} has {worker.device}: handed back, no attempt charged"


def _runs_other_code(job: Job, claim: dict, worker: Worker | None) -> str:
    """Why the claiming worker may not take ``job``, whose pins its code is not ("" when it may), after handing the
    job back uncharged and noting why on the worker (the admin shows it).

    Refused after the claim, the job would fail as its plugin's, although nothing is wrong with the plugin: the
    host runs another release (a host not yet upgraded, or upgraded first). Handed back, it waits for a worker
    that runs the pinned code; the next tick sends it again, not this claim, so a worker alone with its
    other code is offered the job once a tick, not in a loop.
    """
    if "code" not in claim or job.status not in WAITING:
        return ""
    try:
        here = [contract.CodePin.from_json(entry) for entry in claim["code"]]
        pins = job.contract.code
    except contract.ContractError as exc:
        raise serializers.ValidationError({"code": str(exc)}) from None
    words = contract.other_code_words(pins, here)
    if not words:
        if worker is not None and worker.code_note:  # it runs the pinned code again: the admin's note goes
            Worker.objects.filter(pk=worker.pk).update(code_note="", code_note_at=None)
        return ""
    lifecycle.hand_back(job.pk, job.token)
    note = f"host {claim['worker']} {'; '.join(words)} (job #{job.pk})"
    Worker.objects.filter(name=claim["worker"]).update(code_note=note[:2000], code_note_at=timezone.now())
    logger.warning("%s: handed back", note)
    return f"{note}: handed back, no attempt charged"


class HeartbeatView(WorkerView):
    @extend_schema(request=HeartbeatIn, responses=VerdictOut)
    def post(self, request: Request, job_id: int) -> Response:
        # a beat every 5 s of every running job: its spec and log unread, its progress read once
        job = job_for(request, job_id, "token", "progress_step", "progress_total", "eta_s")
        data = _valid(HeartbeatIn, request)
        progress = None
        if "step" in data and "total" in data:
            progress = lifecycle.Progress(data["step"], data["total"], data.get("loss"), data.get("eta_s"))
        verdict = lifecycle.heartbeat(job.pk, job.token, data["delivery"], progress, data.get("log", ""), seen=job)
        return Response({"verdict": verdict})


class OutputView(WorkerView):
    parser_classes = [FileUploadParser]

    @extend_schema(request={"application/octet-stream": bytes}, responses={204: None, 409: None, 507: None})
    def put(self, request: Request, job_id: int, name: str) -> Response:
        job = job_for(request, job_id)
        if name not in OUTPUT_NAMES:
            raise NotFound(f"outputs are named {', '.join(OUTPUT_NAMES)}, not {name!r}")
        delivery = request.headers.get("X-Biolm-Delivery", "")
        if not lifecycle.holds(job.pk, job.token, delivery):
            return Response({"detail": "this delivery no longer holds the job"}, status=status.HTTP_409_CONFLICT)
        if direct_uploads.direct_store() is not None:
            raise serializers.ValidationError(
                {"file": "this platform's artefact store is an S3 bucket: POST .../upload for pre-signed PUTs"}
            )
        try:  # before the body is read: with other uploads, it must leave the disk's reserve free
            reservation = disk_room.reserve(f"job #{job.pk}'s {name}", request.META.get("CONTENT_LENGTH"))
        except NoRoom as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_507_INSUFFICIENT_STORAGE)
        try:
            upload = request.data.get("file")
            if upload is None:
                raise serializers.ValidationError({"file": "send the output as the request body"})
            completion.record_output(job.pk, name, upload)
        finally:
            disk_room.reservations().release(reservation)
        return Response(status=status.HTTP_204_NO_CONTENT)


SHA256_HEX = r"^[0-9a-f]{64}$"


class UploadPlanIn(serializers.Serializer):
    delivery = serializers.CharField(max_length=64)
    size = serializers.IntegerField(min_value=0, max_value=S3_OBJECT_MAX, help_text="The output's size in bytes.")
    sha256 = serializers.RegexField(SHA256_HEX, help_text="The output's SHA-256, in hex.")
    parts = serializers.ListField(
        child=serializers.RegexField(SHA256_HEX), min_length=1, max_length=MAX_PARTS,
        help_text="Each part's SHA-256 (hex), cut as biolm.upload_parts.part_size says; one for a single PUT.",
    )  # fmt: skip


class UploadPlanOut(serializers.Serializer):
    upload_id = serializers.CharField(allow_null=True, help_text="The multipart upload's id; null for a single PUT.")
    parts = serializers.JSONField(help_text="[{number, url, headers}]: PUT each part's bytes to its url, with headers.")


class UploadedIn(serializers.Serializer):
    delivery = serializers.CharField(max_length=64)
    upload_id = serializers.CharField(allow_null=True, required=False, default=None)


def _held_output(request: Request, job_id: int, name: str, delivery: str) -> Job | Response:
    job = job_for(request, job_id)
    if name not in OUTPUT_NAMES:
        raise NotFound(f"outputs are named {', '.join(OUTPUT_NAMES)}, not {name!r}")
    if not lifecycle.holds(job.pk, job.token, delivery):
        return Response({"detail": "this delivery no longer holds the job"}, status=status.HTTP_409_CONFLICT)
    return job


class OutputUploadView(WorkerView):
    """Pre-signed ``PUT``s of an output straight to the S3 store, each signed with its declared SHA-256."""

    @extend_schema(request=UploadPlanIn, responses={200: UploadPlanOut, 409: None, 422: None})
    def post(self, request: Request, job_id: int, name: str) -> Response:
        data = _valid(UploadPlanIn, request)
        job = _held_output(request, job_id, name, data["delivery"])
        if isinstance(job, Response):
            return job
        try:
            planned = direct_uploads.plan(completion.output_name(job.pk, name), data["size"], data["sha256"],
                                          data["parts"])  # fmt: skip
        except direct_uploads.UploadRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        return Response(planned)


class OutputUploadedView(WorkerView):
    """The planned upload is sent: completed, checked against its plan, and recorded as the job's output."""

    @extend_schema(request=UploadedIn, responses={204: None, 409: None, 422: None})
    def post(self, request: Request, job_id: int, name: str) -> Response:
        data = _valid(UploadedIn, request)
        job = _held_output(request, job_id, name, data["delivery"])
        if isinstance(job, Response):
            return job
        try:
            direct_uploads.finish(completion.output_name(job.pk, name), data["upload_id"])
        except direct_uploads.UploadRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CompleteView(WorkerView):
    @extend_schema(request=DeliveryIn, responses={200: None, 202: None, 409: None, 422: None})
    def post(self, request: Request, job_id: int) -> Response:
        job = job_for(request, job_id, related=("dataset",))  # its results must name its dataset
        delivery = _valid(DeliveryIn, request)["delivery"]
        if not lifecycle.holds(job.pk, job.token, delivery, seen=job):
            return Response({"detail": "this delivery no longer holds the job"}, status=status.HTTP_409_CONFLICT)
        if completion.checked_off_the_request(job):
            return _hand_over(job, delivery)
        try:
            with transaction.atomic():
                completion.accept_outputs(job)
                if not lifecycle.succeed(job.pk, job.token, delivery):
                    transaction.set_rollback(True)
                    return Response({"detail": "the job was taken from this delivery"}, status=status.HTTP_409_CONFLICT)
        except completion.OutputError as exc:  # the worker finished, but what it produced is unusable
            lifecycle.fail(job.pk, job.token, delivery, str(exc), Job.Cause.SUBMISSION)
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        transaction.on_commit(tasks.kick)
        return Response({"status": Job.Status.SUCCEEDED})


def _hand_over(job: Job, delivery: str) -> Response:
    """Outputs that take minutes to check are checked by the CPU worker: the delivering worker is answered at once."""
    try:
        completion.check_delivered(job)
    except completion.OutputError as exc:
        lifecycle.fail(job.pk, job.token, delivery, str(exc), Job.Cause.SUBMISSION)
        return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    claim = lifecycle.hand_over(job.pk, job.token, delivery, uuid.uuid4().hex)
    if claim is None:
        return Response({"detail": "the job was taken from this delivery"}, status=status.HTTP_409_CONFLICT)
    transaction.on_commit(lambda: tasks.send_check(job.pk, job.token, claim))
    return Response({"status": COMPLETION_CHECKING}, status=status.HTTP_202_ACCEPTED)


class FailView(WorkerView):
    @extend_schema(request=FailIn, responses={200: None, 409: None})
    def post(self, request: Request, job_id: int) -> Response:
        job = job_for(request, job_id)
        data = _valid(FailIn, request)
        new_status = lifecycle.fail(
            job.pk, job.token, data["delivery"], data["error"], data["cause"], plugin=data.get("plugin", "")
        )
        if new_status is None:
            return Response({"detail": "this delivery no longer holds the job"}, status=status.HTTP_409_CONFLICT)
        transaction.on_commit(tasks.kick)
        return Response({"status": new_status})


class ArtefactView(WorkerView):
    @extend_schema(responses={200: bytes})
    def get(self, request: Request, job_id: int, name: str) -> FileResponse:
        job = job_for(request, job_id)
        if job.status != Job.Status.RUNNING or not completion.may_read(job, name):
            raise Http404(f"job #{job_id} has no input of that name")
        store = artefacts.storage()
        if not store.exists(name):
            raise Http404(f"job #{job_id}'s input {name} is missing from the artefact store")
        return FileResponse(store.open(name, "rb"), as_attachment=True, filename=name.rsplit("/", 1)[-1])


def _require_worker_secret(request: Request) -> None:
    if not secrets.compare_digest(_bearer(request).encode(), settings.BIOLM_WORKER_SECRET.encode()):
        raise PermissionDenied("that is not the worker secret (BIOLM_WORKER_SECRET)")


def _worker_holder(credential: str) -> str:
    """Whose worker presents ``credential``: "" for the platform's secret, a data holder's name for its own
    credential (:mod:`registry.holders`); anything else is refused."""
    if secrets.compare_digest(credential.encode(), settings.BIOLM_WORKER_SECRET.encode()):
        return ""
    holder = holder_with(credential)
    if holder is None:
        raise PermissionDenied("that is neither the worker secret (BIOLM_WORKER_SECRET) nor a data holder's credential")
    return holder.name


def _refused_held(job: Job, request: Request) -> str:
    """Why this claim may not take a held dataset's ``job`` ("" when it may), after handing the job back.

    A held job's message goes only to its holder's seats, but the job token travels in it: the claim must also
    carry the holder's own credential (``X-Biolm-Worker-Credential``), which no other worker has.
    """
    holder = holder_of(job.queue)
    if not holder:
        return ""
    credential = request.headers.get(CREDENTIAL_HEADER, "")
    claimant = holder_with(credential) if credential else None
    if claimant is not None and claimant.name == holder:
        return ""
    if job.status in WAITING:
        lifecycle.hand_back(job.pk, job.token)
        transaction.on_commit(tasks.kick)
    logger.warning("job #%s: a worker without %s's credential tried to claim it", job.pk, holder)
    return f"job #{job.pk} is held by {holder}: only its workers, with its credential, may claim it"


class HoldsWorkerSecret(BasePermission):
    """Only a worker (or an operator with the worker secret) may read the internal API's schema."""

    def has_permission(self, request: Request, view) -> bool:
        _require_worker_secret(request)
        return True


class InternalSchemaView(SpectacularAPIView):
    """The OpenAPI schema of this internal API, for workers and the fuzzing tests: not for the public."""

    authentication_classes = [BearerToken]
    permission_classes = [HoldsWorkerSecret]


class WorkerProblemView(WorkerView):
    """A supervisor gave up on a worker that kept dying at start-up: the admin shows it as failing."""

    @extend_schema(request=WorkerProblemIn, responses={204: None})
    def post(self, request: Request) -> Response:
        _worker_holder(_bearer(request))
        data = _valid(WorkerProblemIn, request)
        dispatch.record_problem(data["name"], data["queues"], data["problem"])
        logger.error("worker %s is failing: %s", data["name"], data["problem"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkerHeartbeatView(WorkerView):
    @extend_schema(request=WorkerIn, responses={204: None})
    def post(self, request: Request) -> Response:
        holder = _worker_holder(_bearer(request))
        data = _valid(WorkerIn, request)
        offers_room = dispatch.heartbeat_offers_room(
            data["name"], settings.BIOLM_HEARTBEAT_STALE_S, queues=data["queues"], slots=data["slots"], holder=holder,
            gpus=data["gpus"], gpus_free=data.get("gpus_free"), shares_gpu=data["shares_gpu"],
            gpu_devices=data["gpu_devices"], executor=data["executor"], workers_per_gpu=data["workers_per_gpu"],
            nodes=data["nodes"],
        )  # fmt: skip
        if offers_room:
            transaction.on_commit(tasks.kick)
        return Response(status=status.HTTP_204_NO_CONTENT)
