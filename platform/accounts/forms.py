"""The profile page's one form: naming a new API token (the sign-in and password forms are django-allauth's)."""

from __future__ import annotations

from django import forms

from accounts.models import ApiToken


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Token name",
        max_length=ApiToken._meta.get_field("name").max_length,
        help_text="What you will call it, so that you can tell your tokens apart later, e.g. 'lab cluster'.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
        error_messages={"required": "Give the token a name, e.g. 'lab cluster'."},
    )
