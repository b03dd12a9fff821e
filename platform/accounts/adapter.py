"""django-allauth's account adapter, changed in one respect: whose failed sign-ins are counted together.

allauth counts failed sign-ins per address (``ip``) and per *typed* identifier (``key``): ``alice``
and ``alice@example.org`` were two counts, so each account had the key limit's guesses once per name
it could be typed as. Here the key is the account that the typed text resolves to, found as
allauth's own authentication backend finds it (an e-mail address, then a username, both
case-insensitively), so every name of one account shares one count. Text that names no account is
counted under the text itself, so guessing at unknown names is limited too, and takes the same path
(one or two lookups) as a real name.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.internal.userkit import filter_users_by_email, get_user_by_username
from django.http import HttpRequest


def account_for_login(typed: str):
    """The account that ``typed`` (a username or an e-mail address) signs in to, or None.

    The same order as allauth's ``AuthenticationBackend``: an e-mail address first, then a username.
    """
    if not typed:
        return None
    if "@" in typed:
        users = filter_users_by_email(typed, prefer_verified=True, for_login=True)
        if users:
            return min(users, key=lambda user: user.pk)
    return get_user_by_username(typed)


def login_failure_key(**credentials: Any) -> str:
    """The rate limit's key for a sign-in with these credentials: ``account:<pk>``, else ``typed:<text>``."""
    typed = str(credentials.get("email") or credentials.get("username") or "")
    user = account_for_login(typed)
    return f"account:{user.pk}" if user is not None else f"typed:{typed.strip().lower()}"


class AccountAdapter(DefaultAccountAdapter):
    """allauth's adapter, counting failed sign-ins per account rather than per typed name."""

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        # allauth (65.x) calls this both to count a failure (pre_authenticate) and to wipe the count after
        # a password reset (_delete_login_attempts_cached_email); tests/security/test_sign_in_limits.py checks both
        # paths reach it. The site's domain that allauth prefixes is left out: it comes from the Host
        # header, and each allowed host would otherwise be a fresh count.
        return login_failure_key(**credentials)
