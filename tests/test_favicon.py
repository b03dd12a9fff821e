"""The site's icon: ``/favicon.ico`` answers with an image instead of a 404, and every page names its SVG icon,
which the Content-Security-Policy lets the browser load."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_favicon_ico_answers_200_with_an_icon_image(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    body = response.content
    assert body[:4] == b"\0\0\1\0" and b"PNG" in body[:40]  # an ICO file holding one PNG image
    assert "max-age=86400" in response["Cache-Control"]


def test_every_page_links_an_svg_icon_that_is_served_and_allowed_by_the_content_security_policy(client):
    page = client.get("/")
    link = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page.content.decode())

    assert link, "templates/base.html names no icon"
    icon = client.get(link.group(1))
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(icon.streaming_content if icon.streaming else [icon.content])
    img_src = re.search(r"img-src ([^;]+)", page["Content-Security-Policy"]).group(1)
    assert "'self'" in img_src.split()
