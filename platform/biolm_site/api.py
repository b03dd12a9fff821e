"""What every API of the site shares: pagination, the error body, and how the schema names the bearer token.

The bottom of the site's layers (import-linter's contract): the apps' API views import it, it
imports none of them. The authentication extension names its class by path, so describing the
API token in the schema does not import the accounts app.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination


class PublicPagination(PageNumberPagination):
    """``?page=`` and ``?page_size=`` (default 100, at most 1000: a big leaderboard in one request)."""

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class ErrorSerializer(serializers.Serializer):
    """DRF's error body: a missing (or private) object, a page past the end, a method not allowed."""

    detail = serializers.CharField()


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """How the schema describes ``accounts.authentication.ApiTokenAuthentication``: HTTP bearer."""

    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token (biolm_...), created on your profile page. Only submitting needs one.",
        }
