"""The list of datasets. Examples and gold labels are never shown.

A dataset's own page shows its leaderboard, so it is :func:`leaderboard.dataset_page.dataset_detail`
(the registry does not import the leaderboard), mounted under ``registry:dataset-detail``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from registry.models import Dataset


def dataset_list(request: HttpRequest) -> HttpResponse:
    datasets = (
        Dataset.objects.filter(active=True)
        .select_related("task_type", "metric")
        .prefetch_related("imports")
        .order_by("name")
    )
    return render(request, "registry/dataset_list.html", {"datasets": datasets})
