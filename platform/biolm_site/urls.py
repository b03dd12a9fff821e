"""URL routes: the leaderboard at the root, the admin under /admin/."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("datasets/", include("registry.urls")),
    path("", include("leaderboard.urls")),
]
