"""``/queue/``: the public view of the job queues (see :mod:`submissions.queue`)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from submissions.queue import queue_summary


@require_GET
@never_cache
def queue(request: HttpRequest) -> HttpResponse:
    return render(request, "submissions/queue.html", {"summary": queue_summary()})
