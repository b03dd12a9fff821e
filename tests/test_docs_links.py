"""Every relative link of the README and docs/ lands on a file, and every ``#anchor`` on one of its headings.

The README is a front page that sends each kind of reader to a page of docs/, and those pages link
to each other's sections. A section renamed or moved leaves its links dead on GitHub, and nothing
else notices, so this test reads every page as GitHub does: markdown links ``[text](path)``,
``[text](path#anchor)``, ``[text](#anchor)`` and reference definitions ``[label]: path``, outside
fenced code and code spans. An anchor must be the slug GitHub gives a heading of the target page:
its text lower-cased, markup and punctuation dropped (hyphens and underscores kept), spaces turned
into hyphens, and ``-1``, ``-2``... appended to repeats.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s()<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?([^\s<>]+)>?")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


@dataclass(frozen=True)
class Link:
    """One relative link: the page it is on (relative to the root), its line, and its target as written."""

    page: str
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}:{self.target}"


def prose_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """Yield (line number, line, is it inside a fenced code block) for every line of a page."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            yield number, line, True
        elif fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
            yield number, line, True
        else:
            yield number, line, False


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before repeats are numbered)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML is not part of the text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # punctuation and symbols go; letters, digits, '_', '-' stay
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page, numbering repeats as GitHub does (``x``, ``x-1``, ``x-2``)."""
    seen: dict[str, int] = {}
    found = set()
    for _, line, is_code in prose_lines(text):
        heading = None if is_code else HEADING.match(line)
        if heading is None:
            continue
        slug = github_slug(heading.group(1))
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def relative_links(page: Path, root: Path) -> list[Link]:
    """The links of one page that point into the repository (web addresses and mail are left out)."""
    name = page.relative_to(root).as_posix()
    links = []
    for number, line, is_code in prose_lines(page.read_text(encoding="utf-8")):
        if is_code:
            continue
        prose = CODE_SPAN.sub("", line)  # `[text](path)` in a code span is an example, not a link
        targets = [m.group(1) for m in INLINE_LINK.finditer(prose)]
        definition = REFERENCE_DEFINITION.match(prose)
        targets += [definition.group(1)] if definition else []
        links += [Link(name, number, target) for target in targets if not SCHEME.match(target)]
    return links


def target_path(link: Link, root: Path) -> Path:
    """The file a link names, resolved from its page's folder (the page itself for a bare ``#anchor``)."""
    path = link.target.split("#", 1)[0]
    page = root / link.page
    return (page.parent / path).resolve() if path else page


def link_problem(link: Link, root: Path) -> str | None:
    """Why a link is dead, or None when its file exists and its anchor (if any) is a heading there."""
    path = target_path(link, root)
    anchor = link.target.split("#", 1)[1] if "#" in link.target else None
    if not path.is_relative_to(root.resolve()):
        return f"{link}: leaves the repository"
    if not path.exists():
        return f"{link}: no file {path.relative_to(root.resolve()).as_posix()}"
    if anchor is not None:
        if path.suffix != ".md":
            return f"{link}: an anchor on a file that is not markdown"
        if anchor not in anchors(path.read_text(encoding="utf-8")):
            return f"{link}: {path.name} has no heading with the anchor #{anchor}"
    return None


def pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


LINKS = [link for page in pages(ROOT) for link in relative_links(page, ROOT)]


@pytest.mark.parametrize("link", LINKS, ids=str)
def test_every_relative_link_of_the_readme_and_docs_lands_on_a_file_and_heading(link):
    assert link_problem(link, ROOT) is None, link_problem(link, ROOT)


def test_the_readme_is_a_front_page_that_links_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200, "the README is a front page: move detail into docs/"
    linked = {target_path(link, ROOT) for link in relative_links(ROOT / "README.md", ROOT)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.resolve() in linked, f"the README does not link {page.relative_to(ROOT)}"


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("One machine: `make demo`", "one-machine-make-demo"),
        ("Testing: `biolm.testing` and the contract check", "testing-biolmtesting-and-the-contract-check"),
        ("`metric` and `companion_metrics`", "metric-and-companion_metrics"),
        ("A plugin's bugs are the plugin's", "a-plugins-bugs-are-the-plugins"),
        ("Does pretraining pay?", "does-pretraining-pay"),
        ("See [the docs](docs/x.md) first", "see-the-docs-first"),
        ("Mean ± std, re-ranked", "mean--std-re-ranked"),
    ],
)
def test_a_heading_anchor_follows_githubs_slug_rules(heading, slug):
    assert github_slug(heading) == slug


def test_a_dead_file_and_an_unknown_anchor_are_reported_and_code_is_not_read_as_links(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Setup\n\n## Setup\n\n```md\n# not a heading\n```\n")
    (tmp_path / "README.md").write_text(
        "See [setup](docs/guide.md#setup), [again](docs/guide.md#setup-1), [site](https://example.org/x.md)\n"
        "and [gone](docs/gone.md), [wrong](docs/guide.md#install), [code](docs/guide.md#not-a-heading).\n"
        "`[quoted](docs/quoted.md)` is code.\n\n"
        "```sh\necho '[fenced](docs/fenced.md)'\n```\n\n"
        "[ref]: docs/guide.md#guide\n"
    )
    links = relative_links(tmp_path / "README.md", tmp_path)
    problems = [link_problem(link, tmp_path) for link in links]

    assert [link.target for link in links] == [
        "docs/guide.md#setup",
        "docs/guide.md#setup-1",
        "docs/gone.md",
        "docs/guide.md#install",
        "docs/guide.md#not-a-heading",
        "docs/guide.md#guide",
    ]
    assert problems == [
        None,
        None,
        "README.md:2:docs/gone.md: no file docs/gone.md",
        "README.md:2:docs/guide.md#install: guide.md has no heading with the anchor #install",
        "README.md:2:docs/guide.md#not-a-heading: guide.md has no heading with the anchor #not-a-heading",
        None,
    ]


def test_the_readmes_key_figures_read_at_a_glance_each_one_figure_linking_its_measurement():
    """At most 12 rows, one figure a cell, each a link to the section of docs/performance.md that says how it was
    measured (the history and the other machines live there)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Key figures", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| what")]
    assert 0 < len(rows) <= 12, f"{len(rows)} rows"
    for row in rows:
        what, figure = [cell.strip() for cell in row.strip("|").split("|")]
        found = re.fullmatch(r"\[([^\]/;,]+)\]\((docs/performance\.md#[a-z0-9-]+)\)", figure)
        assert found, f"{what}: {figure!r} is not one figure linking a section of docs/performance.md"
        assert link_problem(Link("README.md", 0, found.group(2)), ROOT) is None, figure


def test_the_architecture_page_names_exactly_the_platform_modules_the_contracts_let_import_the_engine():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c for c in config["tool"]["importlinter"]["contracts"] if c.get("forbidden_modules") == ["workers.engine"]
    ]
    allowed = {line.split(" -> ")[0] for line in contract["ignore_imports"]}
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    item = re.search(r"^9\. Only these platform modules import the engine(.*?)(?:^\S|\Z)", page, re.S | re.M)
    assert item, "docs/architecture.md has no item 9 on the platform modules that import the engine"
    named = set(re.findall(r"`([a-z_]+\.[a-z_.]+)`", item.group(1))) - {"pyproject.toml"}
    assert named == allowed, f"the page names {sorted(named)}, pyproject.toml allows {sorted(allowed)}"
