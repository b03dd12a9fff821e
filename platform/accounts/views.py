"""The admin's sign-in page, which checks no password: it sends everyone to the site's sign-in.

Django's admin has a login form of its own (``/admin/login/``) that checks passwords with no limit,
beside the site's, which django-allauth rate-limits: 15 wrong passwords in 12 seconds were all
checked there, and none counted toward the site's limit. With one form there is one limit, counted
per account (:mod:`accounts.adapter`). This view answers at ``/admin/login/`` (listed before the
admin's own routes), for GET and POST alike.
"""

from __future__ import annotations

from django.contrib.auth import REDIRECT_FIELD_NAME
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache


def _admin_next(request: HttpRequest) -> str:
    """Where the admin asked to return to, if it is a page of this site; else the admin's index."""
    wanted = request.POST.get(REDIRECT_FIELD_NAME) or request.GET.get(REDIRECT_FIELD_NAME) or ""
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, require_https=request.is_secure()):
        return wanted
    return reverse("admin:index")


@never_cache
def admin_login(request: HttpRequest) -> HttpResponse:
    """Staff go on to the admin; anyone not signed in goes to the site's sign-in and comes back here.

    A user signed in without staff rights gets a 403 saying so: sending them to the sign-in page would
    loop (allauth sends a signed-in user straight on to ``next``, the admin, which sends them here).
    """
    next_url = _admin_next(request)
    user = request.user
    if user.is_authenticated and user.is_active and user.is_staff:
        return redirect(next_url)
    if user.is_authenticated:
        return render(request, "accounts/admin_not_staff.html", {"next_url": next_url}, status=403)
    return redirect_to_login(next_url, reverse("account_login"))
