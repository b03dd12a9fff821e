"""URL routes: the leaderboard at the root, the admin under /admin/, the workers' API under /internal/,
the public API under /api/ (v1, its schema and docs), accounts under /accounts/, and the submission
form, pages and public queue."""

from django.contrib import admin
from django.urls import include, path

from accounts.views import admin_login
from biolm_site import api_docs
from biolm_site.favicon import favicon
from biolm_site.health import healthz
from leaderboard import api_urls as public_api_urls
from leaderboard import dataset_page
from registry import urls as registry_urls

# A dataset's page shows its leaderboard, and the registry may not import the leaderboard
# (import-linter): this URLconf, which may import every app, adds the leaderboard's view to the
# registry's routes under the registry's name, so /datasets/<slug>/ and registry:dataset-detail hold.
registry_routes = [
    *registry_urls.urlpatterns,
    path("<slug:slug>/", dataset_page.dataset_detail, name="dataset-detail"),
]

# The public API's routes and, in the same ``api`` namespace, its schema and Swagger UI (the schema is generated
# from the apps' public routes, so its views live here, above the apps).
api_routes = [
    *public_api_urls.urlpatterns,
    path("api/schema/", api_docs.PublicSchemaView.as_view(), name="schema"),
    path("api/docs/", api_docs.PublicDocsView.as_view(), name="docs"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    # The admin's own login form would check passwords with no rate limit: its address sends to the site's sign-in.
    path("admin/login/", admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("datasets/", include((registry_routes, registry_urls.app_name))),
    path("internal/", include("jobs.urls")),
    path("accounts/", include("allauth.urls")),  # sign up, sign in and out, password change and reset
    path("accounts/", include("submissions.profile_urls")),  # the profile page and its API tokens
    path("api/v1/", include("submissions.api_urls")),  # submitting with an API token
    path("", include("submissions.urls")),  # /submit/, /submissions/<id>/, /queue/
    path("", include((api_routes, public_api_urls.app_name))),  # api/v1/..., api/schema/, api/docs/
    path("", include("leaderboard.urls")),
]
