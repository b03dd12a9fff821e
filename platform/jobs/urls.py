"""The internal API of :mod:`jobs.api`, mounted under /internal/."""

from django.urls import path

from jobs import api

urlpatterns = [
    path("jobs/<int:job_id>/claim", api.ClaimView.as_view(), name="job-claim"),
    path("jobs/<int:job_id>/heartbeat", api.HeartbeatView.as_view(), name="job-heartbeat"),
    path("jobs/<int:job_id>/outputs/<str:name>", api.OutputView.as_view(), name="job-output"),
    path("jobs/<int:job_id>/outputs/<str:name>/upload", api.OutputUploadView.as_view(), name="job-output-upload"),
    path("jobs/<int:job_id>/outputs/<str:name>/uploaded", api.OutputUploadedView.as_view(), name="job-output-uploaded"),
    path("jobs/<int:job_id>/complete", api.CompleteView.as_view(), name="job-complete"),
    path("jobs/<int:job_id>/fail", api.FailView.as_view(), name="job-fail"),
    path("jobs/<int:job_id>/artefacts/<path:name>", api.ArtefactView.as_view(), name="job-artefact"),
    path("workers/heartbeat", api.WorkerHeartbeatView.as_view(), name="worker-heartbeat"),
    path("workers/problem", api.WorkerProblemView.as_view(), name="worker-problem"),
    path("schema/", api.InternalSchemaView.as_view(), name="internal-schema"),
]
