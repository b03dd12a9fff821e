"""The registry's pages under /datasets/. A dataset's own page (``dataset-detail``) shows its leaderboard,
which the registry may not import, so the project's URLconf (biolm_site.urls) adds it to these routes."""

from django.urls import path

from registry import views

app_name = "registry"

urlpatterns = [
    path("", views.dataset_list, name="dataset-list"),
]
