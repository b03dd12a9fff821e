"""Every way to sign in is rate-limited, per account: the admin's login address, a username and its e-mail
address, one client address, two web processes sharing a Redis; and sign-up, in production's settings,
does not tell whether an address is registered.

Each test drives the real sign-in (django-allauth behind the site's URLs) through Django's test client,
except the last, which starts two gunicorn processes.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from allauth.core.internal import ratelimit
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from bench.harness import free_port, wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.backend]

ROOT = Path(__file__).resolve().parents[2]
TOO_MANY = "Too many failed login attempts"
RIGHT = {"staff": "staff-password-123", "alice": "alice-password-123", "bob": "bob-password-123"}


@pytest.fixture(autouse=True)
def _fresh_counts(settings):
    """allauth keeps its counts in the cache; each test starts with none, under the shipped default limit.

    Passwords are hashed with MD5 here (Django's advice for tests): each of the many failed sign-ins
    would otherwise cost a full PBKDF2, and what is counted does not depend on the hash.
    """
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip,5/5m/key"}
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


def _sign_in(client: Client, login: str, password: str, next_url: str = ""):
    return client.post(reverse("account_login"), {"login": login, "password": password, "next": next_url})


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


# The admin's login address


def test_the_admin_login_address_checks_no_password_and_sends_to_the_site_s_sign_in(client, staff):
    page = client.get("/admin/login/?next=/admin/jobs/")
    assert page.status_code == 302
    assert page["Location"] == reverse("account_login") + "?next=/admin/jobs/"
    # a POST of the admin's old form with the right password signs nobody in: it is sent on, unread
    posted = client.post("/admin/login/?next=/admin/", {"username": "staff", "password": RIGHT["staff"]})
    assert posted.status_code == 302 and posted["Location"].startswith(reverse("account_login"))
    assert not _signed_in(client)


def test_staff_signing_in_on_the_site_s_page_reach_the_admin(client, staff):
    to_sign_in = client.get("/admin/", follow=True)
    assert to_sign_in.redirect_chain[-1][0] == reverse("account_login") + "?next=/admin/"
    signed_in = _sign_in(client, "staff", RIGHT["staff"], next_url="/admin/")
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/login/?next=/admin/jobs/")["Location"] == "/admin/jobs/"


def test_a_signed_in_user_without_staff_rights_is_told_so_rather_than_sent_round_in_a_loop(client, alice):
    client.force_login(alice)
    page = client.get("/admin/login/?next=/admin/")
    assert page.status_code == 403 and "who is not staff" in page.content.decode()
    assert client.post("/admin/login/", {"username": "staff", "password": "a-guess"}).status_code == 403


def test_wrong_admin_passwords_are_counted_and_then_even_the_right_one_is_refused(client, staff):
    for guess in range(5):
        refused = _sign_in(client, "staff", f"a-guess-{guess}", next_url="/admin/")
        assert refused.status_code == 200 and "not correct" in refused.content.decode()
    locked = _sign_in(client, "staff", RIGHT["staff"], next_url="/admin/")
    assert locked.status_code == 200 and TOO_MANY in locked.content.decode()
    assert not _signed_in(client) and client.get("/admin/").status_code == 302


def test_the_lock_lasts_the_limit_s_window_and_no_longer(client, staff, monkeypatch):
    """allauth's clock moved on by hand: still locked 4 min 59 s after the first failure, open at 5 min 1 s."""
    now = [time.time()]
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: now[0], monotonic=time.monotonic,
                                                           sleep=time.sleep))  # fmt: skip
    for guess in range(5):
        _sign_in(client, "staff", f"a-guess-{guess}", next_url="/admin/")
    now[0] += 4 * 60 + 59
    assert TOO_MANY in _sign_in(client, "staff", RIGHT["staff"], next_url="/admin/").content.decode()
    now[0] += 2
    signed_in = _sign_in(client, "staff", RIGHT["staff"], next_url="/admin/")
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"


# One count per account


@pytest.mark.parametrize("then", ["alice@example.org", "ALICE@Example.org", "Alice"])
def test_a_username_and_its_e_mail_address_share_one_count(client, alice, bob, then):
    """The issue's case: six wrong passwords with the username, then the e-mail address and the right password."""
    for guess in range(6):
        _sign_in(client, "alice", f"a-guess-{guess}")
    locked = _sign_in(client, then, RIGHT["alice"])
    assert locked.status_code == 200 and TOO_MANY in locked.content.decode() and not _signed_in(client)
    assert _sign_in(client, "bob", RIGHT["bob"]).status_code == 302  # another account is not locked out


def test_guesses_split_between_the_two_names_add_up(client, alice):
    for login in ["alice", "alice@example.org", "alice", "alice@example.org", "alice"]:
        assert "not correct" in _sign_in(client, login, "a-guess").content.decode()
    assert TOO_MANY in _sign_in(client, "alice@example.org", RIGHT["alice"]).content.decode()


def test_names_of_no_account_are_counted_under_the_typed_text(client, alice):
    for guess in range(5):
        _sign_in(client, "nobody@example.org", f"a-guess-{guess}")
    assert TOO_MANY in _sign_in(client, "nobody@example.org", "a-guess").content.decode()
    assert _sign_in(client, "alice", RIGHT["alice"]).status_code == 302


def test_a_password_reset_lifts_the_account_s_lock_for_both_its_names(client, alice, mailoutbox):
    for guess in range(5):
        _sign_in(client, "alice", f"a-guess-{guess}")
    assert client.post(reverse("account_reset_password"), {"email": "alice@example.org"}).status_code == 302
    link = re.search(r"https?://testserver(/accounts/password/reset/key/\S+/)", mailoutbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    set_password_url = form_page.redirect_chain[-1][0] if form_page.redirect_chain else link
    new_password = {"password1": "reset-pass-31", "password2": "reset-pass-31"}
    assert client.post(set_password_url, new_password).status_code == 302
    assert _sign_in(Client(), "alice", "reset-pass-31").status_code == 302


# One count per client address


def test_one_address_gets_ten_failures_a_minute_whatever_the_accounts(alice, django_user_model):
    prober = Client(REMOTE_ADDR="203.0.113.5")
    for number in range(10):
        assert "not correct" in _sign_in(prober, f"user-{number}", "a-guess").content.decode()
    locked = _sign_in(prober, "alice", RIGHT["alice"])
    assert locked.status_code == 200 and TOO_MANY in locked.content.decode()
    assert _sign_in(Client(REMOTE_ADDR="198.51.100.7"), "alice", RIGHT["alice"]).status_code == 302


def test_behind_the_proxy_the_client_s_address_is_counted_not_the_proxy_s(alice, settings):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.2"  # every request reaches gunicorn from the proxy
    prober = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.5")
    for number in range(10):
        _sign_in(prober, f"user-{number}", "a-guess")
    assert TOO_MANY in _sign_in(prober, "alice", RIGHT["alice"]).content.decode()
    # a forged first entry changes nothing: the proxy appends the address it saw, and that one is read
    forged = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="198.51.100.99, 203.0.113.5")
    assert TOO_MANY in _sign_in(forged, "alice", RIGHT["alice"]).content.decode()
    other = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert _sign_in(other, "alice", RIGHT["alice"]).status_code == 302


# Sign-up in production's settings does not tell whether an address is registered


def test_with_mandatory_verification_sign_up_answers_alike_and_mails_the_address_s_owner(client, alice, mailoutbox,
                                                                                          settings):  # fmt: skip
    settings.ACCOUNT_EMAIL_VERIFICATION = "mandatory"  # BIOLM_EMAIL_VERIFICATION=mandatory
    password = {"password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"}
    new = Client().post(reverse("account_signup"), {"username": "carol", "email": "carol@example.org", **password})
    taken = Client().post(reverse("account_signup"), {"username": "dave", "email": "alice@example.org", **password})
    assert (new.status_code, new["Location"]) == (taken.status_code, taken["Location"]) == (302, taken["Location"])
    assert "already registered" not in taken.content.decode()
    assert "already registered" not in Client().get(taken["Location"]).content.decode()
    to_alice = [message for message in mailoutbox if message.to == ["alice@example.org"]]
    assert len(to_alice) == 1 and "already" in (to_alice[0].subject + to_alice[0].body).lower()
    assert get_user_model().objects.filter(email__iexact="alice@example.org").count() == 1


def test_an_unknown_e_mail_verification_setting_stops_the_start_naming_the_variable():
    code = "import django; django.setup()"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
           "BIOLM_EMAIL_VERIFICATION": "required"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "BIOLM_EMAIL_VERIFICATION='required' is not one of none, optional, mandatory" in done.stderr


# Two web processes, one count


class _Browser:
    """A cookie-keeping client of one server that does not follow redirects."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect)

    def sign_in(self, login: str, password: str) -> tuple[int, str]:
        page = self.opener.open(self.base + "/accounts/login/", timeout=30).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        data = urllib.parse.urlencode({"login": login, "password": password, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + "/accounts/login/", data=data, headers={"Referer": self.base})
        try:
            response = self.opener.open(request, timeout=30)
        except urllib.error.HTTPError as answer:  # the 302 of a successful sign-in
            return answer.code, answer.read().decode()
        return response.status, response.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _gunicorn(env: dict[str, str], log: Path, servers: list[subprocess.Popen]) -> int:
    """One gunicorn process (one worker) on a free port, answering /healthz."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "biolm_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", "1", "--timeout", "60"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"gunicorn exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).status == 200
        except OSError:
            return False

    servers.append(process)
    wait_until(healthy, 90, f"gunicorn on port {port}")
    return port


@pytest.mark.slow
def test_two_web_processes_sharing_the_redis_cache_share_one_count(tmp_path, settings):
    """Three wrong passwords spread over two gunicorn processes lock the account on both (limit: 3)."""
    if "redis" not in settings.CACHES["default"]["BACKEND"].lower():
        pytest.skip("needs BIOLM_CACHE_URL naming a Redis, as CI's PostgreSQL pass sets it")
    cache_url = settings.CACHES["default"]["LOCATION"]
    name = f"u{uuid.uuid4().hex[:10]}"  # a fresh account: counts of other runs in this Redis never apply
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BIOLM_", "DATABASE_", "CELERY_"))}
    env |= {"PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
            "BIOLM_VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite3'}",
            "BIOLM_CACHE_URL": cache_url, "BIOLM_LOGIN_RATE_LIMIT": "3/5m/key"}  # fmt: skip
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
    create = (
        f"from django.contrib.auth.models import User; User.objects.create_user({name!r}, {name + '@x.org'!r}, 'pw')"
    )
    subprocess.run([*manage, "shell", "-c", create], cwd=ROOT, env=env, check=True, timeout=120)
    servers: list[subprocess.Popen] = []
    try:
        a, b = (_Browser(_gunicorn(env, tmp_path / f"gunicorn-{letter}.log", servers)) for letter in "ab")
        for browser, login in [(a, name), (b, f"{name}@x.org"), (a, name)]:
            status, page = browser.sign_in(login, "a-guess")
            assert status == 200 and "not correct" in page, page[-2000:]
        for browser, login in [(b, name), (a, f"{name}@x.org")]:
            status, page = browser.sign_in(login, "pw")
            assert status == 200 and TOO_MANY in page, f"{login} on {browser.base}: {status}"
    finally:
        for process in servers:
            process.terminate()
        for process in servers:
            process.wait(timeout=30)
