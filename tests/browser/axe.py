"""axe-core's WCAG 2.1 A/AA audit of a page, for the browser tests.

axe-core is pinned in the repository's package.json and package-lock.json and installed from npm by
``make test`` (``npm ci``, into node_modules/, git-ignored), never vendored and never served by the
site: the tests inject its ``axe.min.js`` into the page they check. The site's Content-Security-Policy
allows only its own scripts, so the browser contexts that audit are made with ``bypass_csp=True``
(:func:`axe_context_options`); every other context keeps the policy, so a script the site itself
would have refused still fails the tests that look for CSP refusals.

Where node_modules/axe-core is missing the auditing tests skip, saying what to run, except under
``BIOLM_REQUIRE_BROWSER=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

AXE_JS = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
SERIOUS = ("serious", "critical")

# Runs the audit in the page and returns each violation with the nodes it found (their selectors and
# axe's summary of what to fix), reduced to what a failing assertion should print.
_RUN = """async tags => {
    const outcome = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
    return outcome.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
    }));
}"""


def axe_source() -> str:
    """The text of axe.min.js; skips the test (fails under BIOLM_REQUIRE_BROWSER=1) where it is not installed."""
    if not AXE_JS.is_file():
        reason = f"axe-core not installed ({AXE_JS} missing): run `npm ci` (make test does)"
        if os.environ.get("BIOLM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} (BIOLM_REQUIRE_BROWSER=1: the accessibility checks must run here)", pytrace=False)
        pytest.skip(reason)
    return AXE_JS.read_text(encoding="utf-8")


def axe_context_options() -> dict[str, Any]:
    """Options for ``browser.new_context`` of a context whose pages are audited: the CSP bypassed, so
    that the injected axe.min.js may run (the site's policy allows only its own scripts)."""
    return {"bypass_csp": True}


def serious_violations(page, source: str | None = None) -> list[dict[str, Any]]:
    """axe-core's serious and critical WCAG 2.1 A/AA violations on ``page`` as it is now (an empty list
    when there are none). ``page`` must belong to a context made with :func:`axe_context_options`."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source if source is not None else axe_source())
    violations = page.evaluate(_RUN, list(WCAG_TAGS))
    return [v for v in violations if v["impact"] in SERIOUS]


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per violation and node: the rule, its impact, the element and what axe says to fix."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            summary = " ".join((node["summary"] or "").split())
            lines.append(f"{violation['id']} ({violation['impact']}): {node['target']}: {summary}")
    return "\n".join(lines)
