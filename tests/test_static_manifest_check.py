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
