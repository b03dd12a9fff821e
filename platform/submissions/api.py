"""Submitting through the API: ``/api/v1/submissions``, authenticated by an API token alone.

A script does what the submission form does, with ``Authorization: Bearer biolm_...`` (a token
created on the profile page, stored hashed, revocable):

* ``POST /api/v1/submissions`` (multipart/form-data): a checkpoint archive, or a recipe with a
  corpus, on a benchmark. It calls the one ``submissions.submitting.submit`` with the form's checks (a
  licence, the tokenizer loads, the same weights link back to the earlier submission) and
  publishes nothing: the model stays private until its owner publishes it from the submission
  page. A refusal is a 400 with the sentence beside the field it concerns, as the form shows it
  (``{"errors": {field: [sentence]}}``), a spent quota a 429 with when it resets; either way
  nothing is written, neither rows nor files. A request whose declared length is over the archive
  limit, or would leave the disk under its reserve, is a 413 answered before its body is read.
* ``GET /api/v1/submissions``: the caller's own submissions, newest first, paginated;
* ``GET /api/v1/submissions/<id>``: one with its jobs' live state (the submission page's);
* ``POST /api/v1/submissions/<id>/cancel``.

Only the token authenticates: a browser's session cookie is not accepted (it would let any page
the user visits submit in their name without a CSRF token). Another user's submission is a 404,
as on the pages; staff may read and cancel any.
"""

from __future__ import annotations

import math
from contextlib import ExitStack

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.cache import patch_cache_control, patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotAuthenticated, ParseError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import ApiTokenAuthentication
from biolm_site.api import ErrorSerializer, PublicPagination
from jobs import hub_tokens
from submissions import api_serializers as shapes
from submissions import services, uploads
from submissions.forms import archive_suffix, upload_name
from submissions.models import Submission
from submissions.submitting import QuotaExceeded, SubmissionError, SubmissionRequest, submit

HOW_TO_AUTHENTICATE = (
    "send an API token as 'Authorization: Bearer biolm_...'; create one on your profile page (/accounts/profile/)"
)
NON_FIELD = "non_field_errors"

UNAUTHENTICATED = OpenApiResponse(ErrorSerializer, description="No API token, or one that is unknown or revoked.")
MISSING = OpenApiResponse(ErrorSerializer, description="No such submission of yours.")
PK = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The submission's id.")  # the route's pk


class SubmissionsAPI(APIView):
    """What the submissions endpoints share: the API token alone, JSON, and answers no cache may keep."""

    authentication_classes = [ApiTokenAuthentication]  # never the session: see the module's docstring
    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]

    def permission_denied(self, request: Request, message=None, code=None) -> None:
        """No token at all: say how to send one (DRF's default sentence does not)."""
        if request.authenticators and not request.successful_authenticator:
            raise NotAuthenticated(HOW_TO_AUTHENTICATE)
        super().permission_denied(request, message, code)

    def handle_exception(self, exc: Exception) -> Response:
        """A malformed multipart body is a refusal like any other: the same ``errors`` shape."""
        if isinstance(exc, ParseError):
            return Response({"errors": {NON_FIELD: [str(exc.detail)]}}, status=status.HTTP_400_BAD_REQUEST)
        return super().handle_exception(exc)

    def finalize_response(self, request: Request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        patch_cache_control(response, private=True, no_store=True)  # a submitter's own, per token
        patch_vary_headers(response, ["Authorization"])
        return response

    def submission(self, pk: int) -> Submission:
        """The caller's submission (any, for staff); others' and missing ones alike: 404."""
        return services.submission_for(self.request.user, pk, manage=True)

    def shown(self, submission: Submission, shape=shapes.SubmissionSerializer) -> dict:
        return shape(submission, context={"request": self.request}).data


@extend_schema(tags=["submissions"])
class SubmissionList(SubmissionsAPI, generics.GenericAPIView):
    pagination_class = PublicPagination
    parser_classes = [MultiPartParser]
    serializer_class = shapes.SubmissionSummarySerializer

    def get_queryset(self) -> QuerySet[Submission]:
        return (
            Submission.objects.filter(submitter=self.request.user)
            .select_related("language_model")
            .prefetch_related("benchmarks")
            .order_by("-created_at", "-pk")
        )

    @extend_schema(
        summary="Your submissions",
        description="The caller's own submissions, newest first, without their jobs (follow `api_url`).",
        parameters=[
            OpenApiParameter("page", int, description="A page (from 1)."),
            OpenApiParameter("page_size", int, description="Submissions per page: default 100, at most 1000."),
        ],
        responses={
            200: shapes.SubmissionSummarySerializer(many=True),
            401: UNAUTHENTICATED,
            404: OpenApiResponse(ErrorSerializer, description="A page past the end."),
        },
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        summary="Submit a model",
        description="A checkpoint archive, or a recipe with a corpus, evaluated on a benchmark's datasets under "
        "its full protocol or a quick preview. The same checks as the submission form; the model stays private "
        "until you publish it from the submission page. A refusal writes nothing.",
        request={"multipart/form-data": shapes.SubmitSerializer},
        responses={
            201: OpenApiResponse(shapes.SubmittedSerializer, description="Submitted: its jobs are queued."),
            200: OpenApiResponse(
                shapes.SubmittedSerializer,
                description="The same weights were already submitted (`reused`): that submission, nothing queued.",
            ),
            400: OpenApiResponse(shapes.RefusalSerializer, description="Refused: the sentence says what to fix."),
            401: UNAUTHENTICATED,
            413: OpenApiResponse(
                shapes.RefusalSerializer,
                description="Refused before the body was read: its declared length is over the archive limit, or "
                "would leave the server's disk under its reserve.",
            ),
            429: OpenApiResponse(shapes.QuotaRefusalSerializer, description="The daily quota is spent."),
        },
        parameters=[
            OpenApiParameter(
                "Retry-After",
                OpenApiTypes.INT,
                OpenApiParameter.HEADER,
                response=[429],
                required=True,
                description="Seconds until the next submission slot frees.",
            )
        ],
    )
    def post(self, request: Request) -> Response:
        too_large = uploads.CheckpointSizeHandler(request._request)  # before the body is read, as the form does
        request._request.upload_handlers.insert(0, too_large)
        form = shapes.SubmitSerializer(data=request.data)  # streams the uploads to disk (a ParseError: a 400)
        try:
            if too_large.refused:  # the checkpoint was dropped unread: say why, not that it is missing
                answer = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE if too_large.unread else status.HTTP_400_BAD_REQUEST
                return refused({field: [sentence] for field, sentence in too_large.refused.items()}, answer)
            if not form.is_valid():
                return refused(form.errors)
            submission = submit_upload(request.user, form.validated_data)
        except QuotaExceeded as exc:
            wait = max(1, math.ceil((exc.resets_at - timezone.now()).total_seconds()))
            body = {"errors": {NON_FIELD: [str(exc)]}, "resets_at": exc.resets_at.isoformat()}
            return Response(body, status=status.HTTP_429_TOO_MANY_REQUESTS, headers={"Retry-After": str(wait)})
        except SubmissionError as exc:
            return refused({exc.field or NON_FIELD: [str(exc)]})
        finally:  # a stored copy is the artefact store's: the uploads go now, whatever happened, not with the response
            uploads.discard(f for name in request.FILES for f in request.FILES.getlist(name))
        answer = self.shown(submission, shapes.SubmittedSerializer)  # ``reused``: set by submit()
        return Response(answer, status=status.HTTP_200_OK if submission.reused else status.HTTP_201_CREATED)


FACETS = ("pretraining_domain", "vocabulary_kind", "initialisation", "base_model")  # the model's facts the filters read


def submit_upload(user, data: dict) -> Submission:
    """The request as ``submit()``'s: private, a licence required, each upload named as its file was.

    Whatever was sent goes to ``submit``, which says what does not go together (a checkpoint and a
    recipe, a corpus without a recipe) beside the field to fix. An upload is linked where the intake
    can read it (``submissions.uploads.on_disk``, as the form does), under a name with its own
    archive suffix, and removed on the way out.
    """
    checkpoint, corpus = data.get("checkpoint"), data.get("corpus")
    labelled = checkpoint if checkpoint is not None else corpus
    common = {
        "owner": user,
        "benchmark": data["benchmark"],
        "recipe": data.get("recipe", "").strip() or None,
        "hub": data.get("hub", "").strip() or None,
        "hub_token": data.get("hub_token", "").strip(),
        "pretrain_steps": data.get("steps"),
        "datasets": tuple(data.get("datasets", ())),
        "name": data.get("name", "").strip() or None,
        "preview": data.get("preview", False),
        "overrides": data.get("overrides") or {},
        "rerun": data.get("rerun", False),
        "label": upload_name(labelled.name) if labelled is not None else None,
        "description": data.get("description", ""),
        "licence": data["licence"],
        "homepage": data.get("homepage", ""),
        **{name: data.get(name, "") for name in FACETS},
        "require_licence": True,
        "private": True,  # until its owner publishes it from the submission's page
    }
    with ExitStack() as stack:
        if checkpoint is not None:
            name = f"checkpoint{archive_suffix(upload_name(checkpoint.name))}"
            common["model"] = stack.enter_context(uploads.on_disk(checkpoint, name))
        if corpus is not None:
            common["corpus"] = stack.enter_context(uploads.on_disk(corpus, "corpus.txt"))
        return submit(SubmissionRequest(**common))


def refused(errors: dict, answer: int = status.HTTP_400_BAD_REQUEST) -> Response:
    """``{"errors": {field: [sentence]}}``: each field's sentences as a flat list of strings."""
    flat = {field: list(_sentences(messages)) for field, messages in errors.items()}
    return Response({"errors": flat}, status=answer)


def _sentences(messages):
    """DRF nests a list field's errors by index; a client wants the sentences."""
    if isinstance(messages, dict):
        for nested in messages.values():
            yield from _sentences(nested)
    elif isinstance(messages, list | tuple):
        for nested in messages:
            yield from _sentences(nested)
    else:
        yield str(messages)


@extend_schema(tags=["submissions"], parameters=[PK])
class SubmissionDetail(SubmissionsAPI):
    @extend_schema(
        summary="A submission and its jobs",
        description="Its status and each job's live state: progress, ETA, queue position, the last heartbeat's "
        "age, attempts, and on failure the reason in plain words with the log's tail.",
        responses={200: shapes.SubmissionSerializer, 401: UNAUTHENTICATED, 404: MISSING},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(self.shown(self.submission(pk)))


@extend_schema(tags=["submissions"], parameters=[PK])
class SubmissionCancel(SubmissionsAPI):
    @extend_schema(
        summary="Cancel a submission",
        description="Cancels every unfinished job (a running one stops at its next heartbeat); a finished "
        "submission is left as it is. Answers the submission.",
        request=None,
        responses={200: shapes.SubmissionSerializer, 401: UNAUTHENTICATED, 404: MISSING},
    )
    def post(self, request: Request, pk: int) -> Response:
        submission = self.submission(pk)
        services.cancel_submission(submission)
        submission.refresh_from_db()
        return Response(self.shown(submission))


@extend_schema(tags=["submissions"], parameters=[PK])
class SubmissionHubToken(SubmissionsAPI):
    @extend_schema(
        summary="Delete the Hub token kept for a submission",
        description="A submission by Hub id with a token keeps it, encrypted, until its fetch job ends; this "
        "deletes it now (a fetch still to run then runs without it). Answers the submission.",
        request=None,
        responses={200: shapes.SubmissionSerializer, 401: UNAUTHENTICATED, 404: MISSING},
    )
    def delete(self, request: Request, pk: int) -> Response:
        submission = self.submission(pk)
        hub_tokens.revoke(submission)
        return Response(self.shown(submission))
