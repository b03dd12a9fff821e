"""The static files check (leaderboard.checks): a site whose static files were never collected says so, with the
command, when a management command starts, instead of failing every page on its first request."""

from __future__ import annotations

from django.test import override_settings

from leaderboard.checks import static_manifest_collected, uses_manifest


def test_the_test_site_names_its_static_files_from_a_manifest():
    assert uses_manifest(), "the tests run with DEBUG off, as a deployment does"


def test_collected_static_files_raise_no_warning():
    assert static_manifest_collected() == []  # the test session collected them (tests/conftest.py)


def test_a_static_root_without_a_manifest_warns_with_the_command_to_run(tmp_path):
    with override_settings(STATIC_ROOT=str(tmp_path)):
        (warning,) = static_manifest_collected()
    assert warning.id == "biolm.W001"
    assert str(tmp_path) in warning.msg
    assert "collectstatic --noinput" in warning.hint


def test_a_site_that_was_never_collected_serves_its_pages_with_the_source_files(tmp_path):
    """``manage.py runserver`` on a fresh checkout, before any collectstatic: every page used to answer 500
    ("Missing staticfiles manifest entry 'leaderboard/site.css'"). The site now names and serves the source files."""
    import json

    from embedded_demo import environment, manage_in

    env = environment(tmp_path, STATIC_ROOT=str(tmp_path / "never-collected"))
    manage = manage_in(env, timeout_s=300)
    manage("migrate", "--noinput", "-v", "0")
    answer = manage("shell", "-c", """
import json, re
from django.test import Client
client = Client()
page = client.get("/how-ranks-work/")
found = re.search(r'href="([^"]*site[^"]*[.]css)"', page.content.decode())
css = client.get(found.group(1)) if found else None
body = css and b"".join(css.streaming_content if css.streaming else [css.content])
print(json.dumps({"page": page.status_code, "href": found and found.group(1), "css": css and css.status_code,
                  "css_body": body and body[:40].decode()}))
""")  # fmt: skip
    seen = json.loads(answer.strip().splitlines()[-1])
    assert seen["page"] == 200
    assert seen["href"] == "/static/leaderboard/site.css"  # its own name: nothing was hashed
    assert seen["css"] == 200 and seen["css_body"].strip()
