"""Submitting through the API (submissions.api), included under ``api/v1/`` by the site's URLconf.

The public schema (/api/schema/) is generated from these routes too, under the same prefix
(``biolm_site.api_schemas.public_patterns``).
"""

from django.urls import path

from submissions import api

app_name = "submissions-api"

urlpatterns = [
    path("submissions", api.SubmissionList.as_view(), name="list"),
    path("submissions/<int:pk>", api.SubmissionDetail.as_view(), name="detail"),
    path("submissions/<int:pk>/cancel", api.SubmissionCancel.as_view(), name="cancel"),
    path("submissions/<int:pk>/hub-token", api.SubmissionHubToken.as_view(), name="hub-token"),
]
