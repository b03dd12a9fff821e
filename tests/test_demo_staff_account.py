"""``manage.py demo``'s staff account: made once with a random password that is printed then, and that opens
the admin's job queue through the site's sign-in (the admin's own login form sends there)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from submissions.management.commands.demo import ADMIN_QUEUE, STAFF_USER, staff_account, staff_sign_in

pytestmark = pytest.mark.django_db
SITE = "http://127.0.0.1:8000"


def test_the_demo_makes_a_staff_account_whose_printed_password_opens_the_admin_job_queue():
    password = staff_account()
    printed = staff_sign_in(SITE, password)

    assert f"{SITE}{ADMIN_QUEUE}" in printed and f"sign in as {STAFF_USER}, password {password}" in printed
    staff = get_user_model().objects.get(username=STAFF_USER)
    assert staff.is_staff and staff.is_superuser
    browser = Client()
    assert browser.get(ADMIN_QUEUE).status_code == 302  # not signed in: sent to sign in first
    signed_in = browser.post("/accounts/login/", {"login": STAFF_USER, "password": password})
    assert signed_in.status_code == 302, signed_in.content[:2000]
    queue = browser.get(ADMIN_QUEUE)
    assert queue.status_code == 200 and b"job-queue-overview" in queue.content


def test_a_rerun_of_the_demo_keeps_the_staff_password_and_says_how_to_set_a_new_one():
    first = staff_account()
    staff = get_user_model().objects.get(username=STAFF_USER)

    assert staff_account() is None
    printed = staff_sign_in(SITE, None)
    assert f"python manage.py changepassword {STAFF_USER}" in printed and "exists" in printed
    assert first not in printed
    staff.refresh_from_db()
    assert staff.check_password(first)  # the rerun left the password as it was
