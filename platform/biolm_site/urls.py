"""URL routes: the leaderboard at the root, the admin under /admin/, the workers' API under /internal/."""

from django.contrib import admin
from django.urls import include, path

from biolm_site.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("datasets/", include("registry.urls")),
    path("internal/", include("jobs.urls")),
    path("", include("leaderboard.urls")),
]
