"""The profile page and its API tokens (sign-up, sign-in and the password pages are django-allauth's)."""

from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("profile/", views.profile, name="profile"),
    path("tokens/", views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke", views.token_revoke, name="token-revoke"),
]
