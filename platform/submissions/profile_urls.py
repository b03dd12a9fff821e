"""The profile page and its API tokens, under /accounts/ and the ``accounts`` namespace (sign-up, sign-in and the
password pages are django-allauth's). Included by the site's URLconf."""

from django.urls import path

from submissions import profile_views

app_name = "accounts"

urlpatterns = [
    path("profile/", profile_views.profile, name="profile"),
    path("tokens/", profile_views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke", profile_views.token_revoke, name="token-revoke"),
]
