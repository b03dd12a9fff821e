"""Django REST framework authentication by API token: ``Authorization: Bearer biolm_...``."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from accounts.tokens import user_for_token


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0] not in (self.keyword, "Token"):
            raise exceptions.AuthenticationFailed("send the token as 'Authorization: Bearer <token>'")
        user = user_for_token(parts[1])
        if user is None:
            raise exceptions.AuthenticationFailed(
                "this API token is unknown or was revoked; create one on your profile"
            )
        return user, parts[1]

    def authenticate_header(self, request) -> str:
        return self.keyword
