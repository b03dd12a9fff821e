"""``make bench``'s page timings (bench/pages.py) on a tiny site: the JSON it writes, not the times it
measures (a shared two-core machine makes them noisy; ``make bench`` reports them)."""

from __future__ import annotations

import json

import pytest

from bench import pages

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.backend]


def test_the_pages_benchmark_writes_each_page_types_timings_and_goals(tmp_path):
    try:
        pages.chromium()
    except RuntimeError as missing:
        pytest.skip(str(missing))
    result = pages.run(pages.Config(benchmark="blurb-mini", repeats=1, server_workers=1), tmp_path)
    written = json.loads((tmp_path / "pages.json").read_text(encoding="utf-8"))
    assert written["pages"] == result["pages"]
    assert written["goals"] == {"dom_content_loaded_ms": 500, "chart_page_load_ms": 1000}
    assert {"home", "benchmark", "datasets", "dataset", "queue", "sign_in", "api_docs"} <= set(written["pages"])
    for name, page in written["pages"].items():
        assert page["path"].startswith("/") and page["repeats"] == 1, name
        assert 0 < page["dom_content_loaded_ms"] <= page["load_ms"], name
        assert isinstance(page["goals_met"], bool) and page["goals_met"] == all(page["goals"].values()), name
        assert ("load" in page["goals"]) == page["chart_page"] == ("charts_drawn_ms" in page), name
    assert written["all_goals_met"] == all(page["goals_met"] for page in written["pages"].values())
    assert written["settings"]["repeats"] == 1 and written["machine"] and written["versions"]
