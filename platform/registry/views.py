"""Dataset pages: metadata, terms of use and import status. Examples and gold labels are never shown."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from registry.models import Dataset


def dataset_list(request: HttpRequest) -> HttpResponse:
    datasets = Dataset.objects.filter(active=True).select_related("task_type", "metric").prefetch_related("imports")
    return render(request, "registry/dataset_list.html", {"datasets": datasets})


def dataset_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(
        Dataset.objects.select_related("task_type", "metric").prefetch_related("entries__benchmark"),
        slug=slug,
        active=True,  # a dataset no plugin contributes any more is gone from the site
    )
    return render(
        request,
        "registry/dataset_detail.html",
        {
            "dataset": dataset,
            "latest": dataset.current_import,
            "benchmarks": {e.benchmark for e in dataset.entries.all()},
        },
    )
