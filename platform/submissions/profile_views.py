"""The profile page: a submitter's submissions, daily quota and API tokens (at /accounts/profile/).

It lives with the submissions because that is what it shows; the accounts app keeps what identifies
a user (tokens, authentication, sign-in forms) and imports no other app.

A new token is rendered straight into the response to the POST that created it, never put in the
session or anywhere else: only its SHA-256 is kept (:mod:`accounts.tokens`), so once that page is
gone nobody, its owner included, can read the token again. The profile is never cached for the
same reason.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from accounts.forms import TokenForm
from accounts.models import ApiToken
from accounts.tokens import create_token, revoke_token
from submissions.submitting import quota


def _profile(request: HttpRequest, form: TokenForm, new_token: tuple[ApiToken, str] | None = None,
             status: int = 200) -> HttpResponse:  # fmt: skip
    user = request.user
    submissions = user.submissions.select_related("language_model").prefetch_related("benchmarks")
    context = {
        "submissions": submissions,
        "quota": quota(user),
        "tokens": user.api_tokens.all(),
        "form": form,
        "new_token": new_token[0] if new_token else None,
        "raw_token": new_token[1] if new_token else None,
        "api_url": request.build_absolute_uri(reverse("submissions-api:list")),
    }
    return render(request, "accounts/profile.html", context, status=status)


@never_cache
@login_required
def profile(request: HttpRequest) -> HttpResponse:
    return _profile(request, TokenForm())


@never_cache
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    """Create a token and show it on this response only (there is no redirect that could show it again).

    A GET (a visitor sent here to sign in before creating a token comes back by GET) goes to the profile.
    """
    if request.method != "POST":
        return redirect("accounts:profile")
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _profile(request, form, status=400)
    return _profile(request, TokenForm(), new_token=create_token(request.user, form.cleaned_data["name"]), status=201)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of the user's own tokens; another user's token id is a 404, as if it did not exist."""
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    if revoke_token(request.user, token.pk):
        messages.success(request, f"Token “{token.name}” revoked: scripts that use it are now refused.")
    else:
        messages.info(request, f"Token “{token.name}” was already revoked.")
    return redirect("accounts:profile")
