"""The public API's docs: what its schema says each operation needs, and the Swagger UI page's markup."""

from __future__ import annotations

import json
import re

import pytest
from django.templatetags.static import static

pytestmark = pytest.mark.django_db

PUBLIC_READS = ["/api/v1/benchmarks/", "/api/v1/datasets/", "/api/v1/models/", "/api/v1/results/"]
TOKEN_ONLY = ["/api/v1/submissions", "/api/v1/submissions/{id}", "/api/v1/submissions/{id}/cancel"]


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def test_reading_endpoints_need_no_credentials_so_swagger_draws_no_padlock(schema):
    reads = {path: operations["get"] for path, operations in schema["paths"].items() if "submissions" not in path}
    assert set(PUBLIC_READS) <= set(reads)
    assert {path: operation["security"] for path, operation in reads.items()} == {path: [] for path in reads}


def test_submitting_endpoints_keep_their_api_token_requirement(schema):
    for path in TOKEN_ONLY:
        for method, operation in schema["paths"][path].items():
            assert operation["security"] == [{"apiToken": []}], (method, path)
    assert set(schema["components"]["securitySchemes"]) == {"apiToken"}  # the cookie scheme no operation names


def test_the_docs_page_has_a_language_the_darker_colours_and_no_deep_links(client):
    html = client.get("/api/docs/").content.decode()
    assert re.search(r'<html lang="en">', html)
    assert f'<link rel="stylesheet" href="{static("leaderboard/api-docs.css")}">' in html
    assert "<style" not in html  # its layout moved to the stylesheet
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", html))  # the CSP allows no inline script
    start_up = client.get("/api/docs/?script").content.decode()
    assert '"deepLinking": false' in start_up  # a link inside each operation's button: a nested control
