"""How fast each page type opens in Chromium, on a warm cache: DOMContentLoaded and load, per page.

A site of its own (a scratch SQLite database with the built-in plugins synced: the papers' reported
rows, their sizes and the charts they feed; static files collected as a deployment collects them)
is served by gunicorn as deployed, and Debian's Chromium, driven by Playwright, opens each page type
once to fill its cache (plotly.js and the stylesheets then come from the cache, as for a reader who
has opened one chart page before), then ``repeats`` times more, reading the Navigation Timing entry
of each load: ``domContentLoadedEventEnd`` (the page parsed and its deferred scripts run: the
tables are there) and ``loadEventEnd`` (everything it asked for has arrived), in ms from the start
of the navigation. On chart pages ``charts_drawn_ms`` is when every chart had been drawn by plotly.js,
which charts.js fetches only once the page is drawn (templates/leaderboard/_plotly.html).

Goals (issue 30): DOMContentLoaded under 500 ms on every page, load under 1 s on chart pages (and,
since load may fire before charts.js has asked for plotly.js, the charts drawn under 1 s too); each
page records whether its medians meet them. Nothing is asserted: on a shared two-core machine
timings are noisy (tests/test_bench_pages.py checks only the JSON's shape).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import common
from bench.leaderboard import Server, environment

NAME = "pages"
GOALS = {"dom_content_loaded_ms": 500, "chart_page_load_ms": 1000}
VIEWPORT = {"width": 1400, "height": 900}
TIMEOUT_MS = 60_000
NAVIGATION = """() => {
    const entry = performance.getEntriesByType('navigation')[0];
    return {dom_content_loaded_ms: entry.domContentLoadedEventEnd, load_ms: entry.loadEventEnd,
            charts: document.querySelectorAll('div.chart[data-figure]').length};
}"""
LOADED = "() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0"
CHARTS_DRAWN = "() => [...document.querySelectorAll('div.chart[data-figure]')].every(d => d.matches('.js-plotly-plot'))"

# The site's page types, found in the synced database: each name and its path (None where the
# database has nothing to show on such a page, e.g. no model scored on the benchmark).
PAGES_QUERY = """
import json
from registry.models import Benchmark, LanguageModel
benchmark = Benchmark.objects.get(slug=BENCHMARK)
datasets = list(benchmark.entries.values_list("dataset__slug", flat=True).distinct())
models = list(LanguageModel.objects.filter(results__dataset__slug__in=datasets).distinct().order_by("pk")[:3])
model = max(models, key=lambda m: m.results.count(), default=None)
print(json.dumps({
    "home": "/",
    "benchmark": benchmark.get_absolute_url(),
    "benchmark_datasets": benchmark.get_absolute_url() + "?datasets=1",
    "datasets": "/datasets/",
    "dataset": f"/datasets/{datasets[0]}/" if datasets else None,
    "model": model.get_absolute_url() if model else None,
    "compare": (f"/compare/?benchmark={benchmark.slug}&models=" + ",".join(m.slug for m in models[:2]))
               if len(models) >= 2 else None,
    "queue": "/queue/",
    "sign_in": "/accounts/login/",
    "api_docs": "/api/docs/",
}))
"""


@dataclass(frozen=True)
class Config:
    benchmark: str = "blurb"  # its board, a dataset and a model of it; BLURB's rows come from the papers
    repeats: int = 5  # measured loads of each page, after the one that warms the cache
    server_workers: int = 2


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    with tempfile.TemporaryDirectory(prefix="biolm-bench-pages-") as scratch:
        folder = Path(scratch)
        env = environment(f"sqlite:///{folder / 'pages.sqlite3'}", folder / "var")
        paths = prepare_site(env, config.benchmark)
        server = Server(env, config.server_workers, folder / "gunicorn.log")
        server.start()
        try:
            pages = measure(f"http://127.0.0.1:{server.port}", paths, config.repeats)
        finally:
            server.stop()
    result = {
        "name": NAME,
        "unit": "milliseconds from the start of the navigation (Navigation Timing), medians over repeats, warm cache",
        "goals": GOALS,
        "pages": pages,
        "all_goals_met": all(page["goals_met"] for page in pages.values()),
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def prepare_site(env: dict[str, str], benchmark: str) -> dict[str, str]:
    """Migrate, sync the built-in plugins, collect the static files (unless ``STATIC_ROOT`` names a collected
    folder already), and return the path of each page type that the database can show."""

    def manage(*arguments: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=common.ROOT, env=env,
                              capture_output=True, text=True, timeout=900)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(arguments)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    manage("migrate", "--noinput", "-v", "0")
    manage("sync_plugins")
    if "STATIC_ROOT" not in os.environ:
        manage("collectstatic", "--noinput", "-v", "0")
    printed = manage("shell", "--no-imports", "-c", f"BENCHMARK = {benchmark!r}\n{PAGES_QUERY}")
    return {name: path for name, path in json.loads(printed.strip().splitlines()[-1]).items() if path}


def chromium() -> str:
    """BIOLM_CHROMIUM, else Debian's ``chromium`` on PATH (never a browser Playwright downloads)."""
    found = os.environ.get("BIOLM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("chromium not found: apt install chromium (or set BIOLM_CHROMIUM)")
    return found


def measure(site: str, paths: dict[str, str], repeats: int) -> dict[str, dict]:
    """Each page opened once to warm the cache, then ``repeats`` times: its timings' medians and the goals met."""
    from playwright.sync_api import sync_playwright

    pages = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), headless=True)
        context = browser.new_context(viewport=VIEWPORT, base_url=site)  # one cache for every page, as a reader's
        context.set_default_timeout(TIMEOUT_MS)
        try:
            for name, path in paths.items():
                page = context.new_page()
                open_once(page, path)  # the warm-up load
                loads = [open_once(page, path) for _ in range(repeats)]
                page.close()
                pages[name] = figures(path, loads)
        finally:
            context.close()
            browser.close()
    return pages


def open_once(page, path: str) -> dict:
    """One navigation to ``path``: its DOMContentLoaded and load times, and when its charts were drawn."""
    response = page.goto(path, wait_until="load")
    if response is None or response.status != 200:
        raise RuntimeError(f"{path} answered {response and response.status}")
    page.wait_for_function(LOADED)
    timings = page.evaluate(NAVIGATION)
    if timings["charts"]:
        page.wait_for_function(CHARTS_DRAWN, polling=10)
        timings["charts_drawn_ms"] = page.evaluate("() => performance.now()")
    return timings


def figures(path: str, loads: list[dict]) -> dict:
    """Medians (and the slowest) of one page's loads, and whether they meet the goals."""
    median = {key: statistics.median(load[key] for load in loads) for key in ("dom_content_loaded_ms", "load_ms")}
    chart_page = loads[0]["charts"] > 0
    goals_met = {"dom_content_loaded": median["dom_content_loaded_ms"] < GOALS["dom_content_loaded_ms"]}
    if chart_page:
        median["charts_drawn_ms"] = statistics.median(load["charts_drawn_ms"] for load in loads)
        goals_met["load"] = median["load_ms"] < GOALS["chart_page_load_ms"]
        # plotly.js is fetched after the page is drawn, so load may fire before it: the charts count too.
        goals_met["charts_drawn"] = median["charts_drawn_ms"] < GOALS["chart_page_load_ms"]
    return {
        "path": path,
        "chart_page": chart_page,
        "charts": loads[0]["charts"],
        "repeats": len(loads),
        **{key: round(value, 1) for key, value in median.items()},
        "slowest_load_ms": round(max(load["load_ms"] for load in loads), 1),
        "goals_met": all(goals_met.values()),
        "goals": goals_met,
    }


def summary(result: dict) -> str:
    rows = [
        [name, "yes" if page["chart_page"] else "no", page["dom_content_loaded_ms"], page["load_ms"],
         page.get("charts_drawn_ms"), "yes" if page["goals_met"] else "NO"]
        for name, page in result["pages"].items()
    ]  # fmt: skip
    goals = f"goals: DOMContentLoaded < {GOALS['dom_content_loaded_ms']} ms, chart pages load < "
    goals += f"{GOALS['chart_page_load_ms']} ms; medians of {result['settings']['repeats']} warm loads"
    return "\n".join([common.table(["page", "charts", "DCL ms", "load ms", "charts drawn ms", "goals"], rows), goals])


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))
