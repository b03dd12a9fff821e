"""URL routes: the leaderboard at the root, the admin under /admin/, the workers' API under /internal/,
the public API under /api/ (v1, its schema and docs), accounts under /accounts/, and the submission
form, pages and public queue."""

from django.contrib import admin
from django.urls import include, path

from biolm_site.health import healthz
from leaderboard import dataset_page
from registry import urls as registry_urls

# A dataset's page shows its leaderboard, and the registry may not import the leaderboard
# (import-linter): this URLconf, which may import every app, adds the leaderboard's view to the
# registry's routes under the registry's name, so /datasets/<slug>/ and registry:dataset-detail hold.
registry_routes = [
    *registry_urls.urlpatterns,
    path("<slug:slug>/", dataset_page.dataset_detail, name="dataset-detail"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("datasets/", include((registry_routes, registry_urls.app_name))),
    path("internal/", include("jobs.urls")),
    path("accounts/", include("allauth.urls")),  # sign up, sign in and out, password change and reset
    path("accounts/", include("submissions.profile_urls")),  # the profile page and its API tokens
    path("api/v1/", include("submissions.api_urls")),  # submitting with an API token
    path("", include("submissions.urls")),  # /submit/, /submissions/<id>/, /queue/
    path("", include("leaderboard.api_urls")),  # api/v1/..., api/schema/, api/docs/ (see that module)
    path("", include("leaderboard.urls")),
]
