"""The profile page's one form: naming a new API token (the sign-in and password forms are django-allauth's)."""

from __future__ import annotations

from allauth.account.forms import LoginForm
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


class SignInForm(LoginForm):
    """allauth's sign-in form, whose one field takes a username or an e-mail address: the browser is told so.

    allauth marks that field ``autocomplete="email"``, so a password manager that saved a username
    would not fill it in; ``username`` is the token for "the identifier the user signs in with".
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or e-mail address"
        self.fields["login"].widget.attrs.update({"autocomplete": "username", "placeholder": ""})
