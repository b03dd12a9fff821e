"""``/healthz``: whether this web process can serve, for docker-compose's health check and load balancers.

It answers 200 when the database answers a query, 503 otherwise. Nothing is cached: a health
check must see the connection fail when it fails.
"""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse({"status": "unavailable", "database": str(exc).strip()[:200]}, status=503)
    return JsonResponse({"status": "ok"})
