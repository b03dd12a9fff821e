"""Accounts: django-allauth's sign-up, sign-in, sign-out and password pages in the site's layout, the
login rate limit, and the profile page with its submissions, daily quota and API tokens."""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from accounts.authentication import ApiTokenAuthentication
from accounts.models import ApiToken
from accounts.tokens import create_token, hash_token, user_for_token
from registry.models import Benchmark, LanguageModel
from submissions.models import Submission

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"
ESCAPED_XSS = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """allauth counts sign-ins in the cache: every test starts with none counted."""
    cache.clear()
    yield
    cache.clear()


def _signed_in_user(client: Client):
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id) if user_id else None


def _twice(password: str) -> dict[str, str]:
    return {"password1": password, "password2": password}


def _submission(owner, name: str, *, preview: bool = False, created: dt.datetime | None = None) -> Submission:
    model = LanguageModel.objects.create(slug=f"{owner.username}-{LanguageModel.objects.count()}", name=name,
                                         owner=owner, visibility=LanguageModel.Visibility.PRIVATE)  # fmt: skip
    submission = Submission.objects.create(submitter=owner, language_model=model, preview=preview)
    submission.benchmarks.add(Benchmark.objects.get(slug="blurb-mini"))
    if created is not None:
        Submission.objects.filter(pk=submission.pk).update(created_at=created)
        submission.refresh_from_db()
    return submission


class _FormAudit(HTMLParser):
    """The inputs of a page's forms that a person fills in, the labels' targets, and the CSRF inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str | None] = []
        self.labelled: set[str] = set()
        self.forms = 0
        self.post_forms = 0
        self.csrf_inputs = 0
        self.h1 = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h1":
            self.h1 += 1
        elif tag == "form":
            self.forms += 1
            self.post_forms += (attrs.get("method") or "").lower() == "post"
        elif tag == "label" and attrs.get("for"):
            self.labelled.add(attrs["for"])
        elif tag == "input" and attrs.get("name") == "csrfmiddlewaretoken":
            self.csrf_inputs += 1
        elif (tag == "input" and attrs.get("type") not in ("hidden", "submit")) or tag in ("select", "textarea"):
            self.fields.append(attrs.get("id"))


def _audit(response) -> _FormAudit:
    audit = _FormAudit()
    audit.feed(response.content.decode())
    return audit


# Sign up, sign in, sign out


def test_signing_up_creates_the_user_and_signs_them_in(client):
    form = {"username": "carol", "email": "carol@example.org", **_twice("a-long-passphrase-9")}
    response = client.post(reverse("account_signup"), form)
    assert response.status_code == 302 and response["Location"] == reverse("accounts:profile")
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.org" and carol.check_password("a-long-passphrase-9")
    assert _signed_in_user(client) == carol
    assert "Your profile" in client.get(response["Location"]).content.decode()


def test_sign_up_shows_each_refusal_beside_its_field_and_creates_nobody(client, alice):
    form = {"username": "carol", "email": "alice@example.org", "password1": "a-long-passphrase-9",
            "password2": "another-one-42"}  # fmt: skip
    response = client.post(reverse("account_signup"), form)
    page = response.content.decode()
    assert response.status_code == 200
    assert not get_user_model().objects.filter(username="carol").exists()
    # each error sits in its field's block, and the input points at it for screen readers
    email_block = re.search(r'<div class="field">.*?id="id_email".*?</div>', page, re.S).group(0)
    assert "already registered with this email" in email_block
    assert 'aria-invalid="true"' in email_block and 'aria-describedby="id_email_error"' in email_block
    password_block = re.search(r'<div class="field">[^<]*<label for="id_password2".*?</div>', page, re.S).group(0)
    assert "You must type the same password each time." in password_block


@pytest.mark.parametrize("login", ["alice", "alice@example.org"], ids=["by username", "by e-mail"])
def test_signing_in_by_username_or_by_e_mail(client, alice, login):
    response = client.post(reverse("account_login"), {"login": login, "password": "alice-password-123"})
    assert response.status_code == 302 and response["Location"] == reverse("accounts:profile")
    assert _signed_in_user(client) == alice


def test_a_wrong_password_is_refused_with_a_message(client, alice):
    response = client.post(reverse("account_login"), {"login": "alice", "password": "not-her-password"})
    assert response.status_code == 200 and _signed_in_user(client) is None
    assert "The username and/or password you specified are not correct." in response.content.decode()


def test_signing_out_needs_a_post(client, alice):
    client.force_login(alice)
    page = client.get(reverse("account_logout"))
    assert page.status_code == 200 and "Are you sure you want to sign out?" in page.content.decode()
    assert _signed_in_user(client) == alice  # a GET (a link, a prefetch, an <img>) signs nobody out
    response = client.post(reverse("account_logout"))
    assert response.status_code == 302 and response["Location"] == reverse("leaderboard:index")
    assert _signed_in_user(client) is None


# Passwords


def test_changing_the_password(client, alice):
    client.force_login(alice)
    form = {"oldpassword": "alice-password-123", **_twice("new-passphrase-77")}
    response = client.post(reverse("account_change_password"), form)
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("new-passphrase-77")
    assert _signed_in_user(client) == alice  # still signed in on this browser


def test_changing_the_password_needs_the_current_one(client, alice):
    client.force_login(alice)
    form = {"oldpassword": "a-guess-000", **_twice("new-passphrase-77")}
    response = client.post(reverse("account_change_password"), form)
    assert response.status_code == 200 and "Please type your current password." in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password("alice-password-123")


def test_a_password_reset_e_mail_carries_a_link_that_sets_a_new_password(client, alice, mailoutbox):
    response = client.post(reverse("account_reset_password"), {"email": "alice@example.org"})
    assert response.status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["alice@example.org"]
    link = re.search(r"https?://testserver(/accounts/password/reset/key/\S+/)", mailoutbox[0].body).group(1)

    # the link's key moves into the session, then the page asks for the new password
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200 and "Change Password" in form_page.content.decode()
    set_password_url = form_page.redirect_chain[-1][0] if form_page.redirect_chain else link
    done = client.post(set_password_url, _twice("reset-passphrase-31"))
    assert done.status_code == 302

    fresh = Client()
    signed_in = fresh.post(reverse("account_login"), {"login": "alice", "password": "reset-passphrase-31"})
    assert signed_in.status_code == 302 and _signed_in_user(fresh) == alice
    # the link works once
    assert "Bad Token" in client.get(link, follow=True).content.decode()


def test_a_password_reset_for_an_unknown_address_carries_no_reset_link(client, alice, mailoutbox):
    response = client.post(reverse("account_reset_password"), {"email": "nobody@example.org"})
    assert response.status_code == 302  # the same answer as for a known address: no way to probe for accounts
    assert all(message.to == ["nobody@example.org"] for message in mailoutbox)
    assert not any("/password/reset/key/" in message.body for message in mailoutbox)


# Login rate limit


def test_failed_sign_ins_are_rate_limited(client, alice, bob, settings):
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "3/5m/key"}
    for _ in range(3):
        refused = client.post(reverse("account_login"), {"login": "alice", "password": "a-guess-000"})
        assert "not correct" in refused.content.decode()
    # within the window even the right password is refused, with allauth's message
    response = client.post(reverse("account_login"), {"login": "alice", "password": "alice-password-123"})
    assert response.status_code == 200 and _signed_in_user(client) is None
    assert "Too many failed login attempts. Try again later." in response.content.decode()
    bob_signs_in = client.post(reverse("account_login"), {"login": "bob", "password": "bob-password-123"})
    assert bob_signs_in.status_code == 302 and _signed_in_user(client) == bob  # another account is not locked out


def test_sign_in_works_again_once_the_window_has_passed(client, alice, settings):
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "2/5m/key"}
    for _ in range(3):
        client.post(reverse("account_login"), {"login": "alice", "password": "a-guess-000"})
    cache.clear()  # what the window's end does
    response = client.post(reverse("account_login"), {"login": "alice", "password": "alice-password-123"})
    assert response.status_code == 302 and _signed_in_user(client) == alice


# The profile page


def test_the_profile_sends_anonymous_visitors_to_sign_in(client):
    response = client.get(reverse("accounts:profile"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next={reverse('accounts:profile')}"


def test_the_profile_lists_own_submissions_newest_first_and_not_other_users(client, alice, bob):
    now = timezone.now()
    older = _submission(alice, "Alice Older BERT", created=now - dt.timedelta(hours=5))
    newer = _submission(alice, "Alice Newer BERT", preview=True, created=now - dt.timedelta(hours=1))
    Submission.objects.filter(pk=newer.pk).update(status="failed", refunded=True, refund_cause="the platform's fault")
    _submission(bob, "Bob Secret BERT")
    client.force_login(alice)
    page = client.get(reverse("accounts:profile")).content.decode()

    assert "Bob Secret BERT" not in page
    assert page.index("Alice Newer BERT") < page.index("Alice Older BERT")
    assert f'href="{reverse("submissions:detail", args=[newer.pk])}"' in page
    assert f'href="{reverse("submissions:detail", args=[older.pk])}"' in page
    assert Benchmark.objects.get(slug="blurb-mini").name in page
    assert "quick preview" in page and "failed (refunded: the platform&#x27;s fault)" in page
    assert f"{older.created_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC" in page
    assert f'href="{reverse("submissions:new")}"' in page and "Submit a model" in page
    assert f'href="{reverse("account_change_password")}"' in page
    assert f'action="{reverse("account_logout")}"' in page


def test_the_profile_shows_the_daily_quota_and_the_date_and_time_the_next_slot_frees(client, alice, settings):
    settings.BIOLM_SUBMISSIONS_PER_DAY = 3
    client.force_login(alice)
    assert "3 of 3 submissions left today." in client.get(reverse("accounts:profile")).content.decode()
    first = _submission(alice, "One", created=timezone.now() - dt.timedelta(hours=20))
    _submission(alice, "Two")
    page = client.get(reverse("accounts:profile")).content.decode()
    frees = (first.created_at + dt.timedelta(days=1)).astimezone(dt.UTC)
    # The date too: 20 hours ago plus a day is tomorrow, which a bare "14:08 UTC" would pass for today.
    shown = f'<time datetime="{frees.isoformat()}">{frees:%a} {frees.day} {frees:%b %Y, %H:%M} UTC</time>'
    assert f"1 of 3 submissions left today; the next slot frees at {shown}." in page


def test_a_new_token_is_shown_once_and_only_its_sha256_is_stored(client, alice):
    client.force_login(alice)
    response = client.post(reverse("accounts:token-create"), {"name": "lab cluster"})
    assert response.status_code == 201 and "no-store" in response["Cache-Control"]
    raw = re.search(r'value="(biolm_[^"]+)"', response.content.decode()).group(1)
    assert user_for_token(raw) == alice

    token = ApiToken.objects.get(user=alice)
    assert token.name == "lab cluster" and token.key_hash == hash_token(raw) and raw.startswith(token.prefix)
    stored = [str(getattr(token, field.attname)) for field in ApiToken._meta.concrete_fields]
    assert not any(raw in value or raw[len(token.prefix) :] in value for value in stored)
    assert not any(raw in str(session.get_decoded()) for session in Session.objects.all())
    assert raw not in str(response.cookies)

    again = client.get(reverse("accounts:profile")).content.decode()
    assert raw not in again and "lab cluster" in again and f"{token.prefix}…" in again


def test_a_token_needs_a_name(client, alice):
    client.force_login(alice)
    response = client.post(reverse("accounts:token-create"), {"name": "  "})
    assert response.status_code == 400 and "Give the token a name" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_creating_a_token_by_get_creates_nothing(client, alice):
    client.force_login(alice)
    response = client.get(reverse("accounts:token-create"))
    assert response.status_code == 302 and response["Location"] == reverse("accounts:profile")
    assert not ApiToken.objects.exists()


def test_a_revoked_token_no_longer_authenticates_and_the_profile_says_when(client, alice):
    token, raw = create_token(alice, "laptop")
    client.force_login(alice)
    assert client.get(reverse("accounts:token-revoke", args=[token.pk])).status_code == 405  # a POST, never a link
    response = client.post(reverse("accounts:token-revoke", args=[token.pk]), follow=True)
    assert response.status_code == 200

    token.refresh_from_db()
    assert token.revoked_at is not None and user_for_token(raw) is None
    request = RequestFactory().get("/api/v1/submissions", HTTP_AUTHORIZATION=f"Bearer {raw}")
    with pytest.raises(AuthenticationFailed, match="revoked"):
        ApiTokenAuthentication().authenticate(request)

    page = response.content.decode()
    assert "Token “laptop” revoked" in page
    assert f"revoked on {token.revoked_at.astimezone(dt.UTC):%Y-%m-%d}" in page
    assert reverse("accounts:token-revoke", args=[token.pk]) not in page  # no Revoke button any more


def test_revoking_another_users_token_is_404_and_leaves_it_active(client, alice, bob):
    token, raw = create_token(bob, "bob's script")
    client.force_login(alice)
    assert client.post(reverse("accounts:token-revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.active and user_for_token(raw) == bob
    assert "bob&#x27;s script" not in client.get(reverse("accounts:profile")).content.decode()


def test_user_supplied_names_are_escaped_on_the_profile(client, django_user_model):
    mallory = django_user_model.objects.create_user(XSS, "mallory@example.org", "mallory-password-123")
    create_token(mallory, XSS)
    _submission(mallory, XSS)
    client.force_login(mallory)
    page = client.get(reverse("accounts:profile")).content.decode()
    assert XSS not in page
    assert page.count(ESCAPED_XSS) >= 4  # the header's menu, "signed in as", the token and the model


def test_a_post_without_the_csrf_token_is_refused(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(reverse("accounts:token-create"), {"name": "forged"}).status_code == 403
    assert not ApiToken.objects.exists()


# Every page: the site's layout, one h1, labelled fields, a CSRF token in every form

ANONYMOUS_PAGES = ["account_login", "account_signup", "account_reset_password"]
SIGNED_IN_PAGES = ["account_change_password", "account_logout", "accounts:profile"]


@pytest.mark.parametrize("name", ANONYMOUS_PAGES + SIGNED_IN_PAGES)
def test_every_account_page_is_in_the_site_layout_with_labelled_fields_and_csrf(client, alice, name):
    if name in SIGNED_IN_PAGES:
        client.force_login(alice)
        create_token(alice, "a revocable token")  # so that the profile shows a Revoke form too
    response = client.get(reverse(name))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'aria-label="Main"' in page and '<main id="content">' in page  # base.html's header and main
    audit = _audit(response)
    assert audit.h1 == 1
    assert all(field_id in audit.labelled for field_id in audit.fields), audit.fields
    assert audit.fields or name == "account_logout"  # the sign-out page is a button
    assert audit.post_forms >= 1 and audit.csrf_inputs >= audit.post_forms


def test_the_sign_in_field_tells_password_managers_it_takes_the_username(client):
    page = client.get(reverse("account_login")).content.decode()
    (field,) = re.findall(r"<input[^>]*name=\"login\"[^>]*>", page)
    assert 'autocomplete="username"' in field and 'autocomplete="email"' not in field
