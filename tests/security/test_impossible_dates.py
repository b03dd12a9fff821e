"""A date no calendar has, in any URL that takes a snapshot's date, answers 404, never 500.

The date converter (leaderboard/urls.py) refuses it, so the page, its BibTeX and any view added later under
``<isodate:...>`` never hand it to the database.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db

IMPOSSIBLE = ["2026-02-30", "9999-99-99", "2026-13-01", "0000-01-01", "2025-02-29"]
DATE_TAKING = ["/leaderboard/blurb-mini/{date}/", "/leaderboard/blurb-mini/{date}/citation.bib"]


@pytest.fixture
def snapshot(db) -> str:
    call_command("snapshot", "--benchmark", "blurb-mini", "--date", "2024-02-29")  # a leap day: a real date
    return "2024-02-29"


@pytest.mark.parametrize("address", DATE_TAKING)
@pytest.mark.parametrize("date", IMPOSSIBLE)
def test_an_impossible_snapshot_date_answers_404(client, snapshot, address, date):
    assert client.get(address.format(date=date)).status_code == 404


@pytest.mark.parametrize("address", DATE_TAKING)
def test_a_real_date_still_serves_its_snapshot_and_one_without_a_snapshot_is_404(client, snapshot, address):
    assert client.get(address.format(date=snapshot)).status_code == 200
    assert client.get(address.format(date="2024-03-01")).status_code == 404
    assert reverse("leaderboard:snapshot", args=["blurb-mini", snapshot]) == f"/leaderboard/blurb-mini/{snapshot}/"
