"""The leaderboard of one benchmark as rows: the one source for the page, the API, the exports and snapshots.

Ranks are read as stored by :mod:`leaderboard.ranking` (paired bootstrap ties), never computed
here. A model missing datasets is listed below the ranked ones, saying what it misses, never
ranked on a partial mean. A quick preview's row (one grid point, one seed) is never ranked and
comes after every full-protocol row, marked ``preview``; the page shows those rows in a table of
their own, so a preview is never read as standing among the ranked models. What a reader
filters, sorts, searches and pins is a :class:`View` held in the URL's query string, so every
view is a deep link and the CSV/JSON exports give exactly the rows on screen. A model pretrained
on biolm carries its contamination report.

Whatever the number of models, building a board is a fixed handful of queries: the benchmark's
entries, a light query of every score's rank, score and sort key (its order is the board's), the
best value of each column (computed by the database), its ranking row, and the full rows (models
and architectures joined) of only the rows read. A board of 5,000 models is sorted on those light
rows; a page or an API answer then builds its 100 rows, not 5,000 (:class:`BoardRows`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import overload
from urllib.parse import urlencode

from django.db.models import F, FloatField, Max, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from leaderboard.models import Ranking, Score
from leaderboard.score_aggregation import aggregation_from_json
from registry.models import Benchmark, LanguageModel, ModelAlias

MAX_PINS = 4
PREVIEW_NOTE = "not ranked: a quick preview (one grid point, one seed), not comparable with the full protocol"
FILTERS = ("origin", "architecture", "size", "domain", "vocabulary", "start")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str  # "summary", "group" or "entry"
    title: str = ""


@dataclass(frozen=True)
class View:
    """What the reader asked for: filters, a name search, a sort, pinned models, per-dataset columns shown."""

    origin: str = ""  # reported | reproduced
    architecture: str = ""  # an architecture slug
    size: str = ""  # a LanguageModel.SIZE_BUCKETS slug
    domain: str = ""  # pubmed | pmc | clinical | general
    vocabulary: str = ""  # domain | general
    start: str = ""  # scratch | continual
    q: str = ""
    sort: str = ""  # "rank" (default), "model", "parameters", "score" or a column key
    desc: bool = True
    pins: tuple[str, ...] = ()
    datasets: bool = False

    @classmethod
    def from_params(cls, params) -> View:
        """Read a query string (a QueryDict or a plain mapping); unknown values are dropped, not errors."""

        def get(name: str) -> str:
            value = params.get(name, "")
            # NUL: PostgreSQL refuses it in a text parameter, and no name or slug holds one
            return value.replace("\x00", "").strip()[:200] if isinstance(value, str) else ""

        choices = {
            "origin": set(LanguageModel.Origin.values),
            "size": {slug for slug, *_ in LanguageModel.SIZE_BUCKETS},
            "domain": set(LanguageModel.Domain.values),
            "vocabulary": set(LanguageModel.VocabularyKind.values),
            "start": set(LanguageModel.Initialisation.values),
        }
        filters = {name: get(name) if get(name) in allowed else "" for name, allowed in choices.items()}
        pins = tuple(dict.fromkeys(p for p in get("pins").split(",") if p))[:MAX_PINS]
        return cls(
            **filters,
            architecture=get("architecture"),
            q=get("q"),
            sort=get("sort"),
            desc=get("dir") != "asc",
            pins=pins,
            datasets=get("datasets") in ("1", "on", "true"),
        )

    def params(self) -> dict[str, str]:
        """The query string's fields, defaults left out so that the plain URL is the default view."""
        values = {name: getattr(self, name) for name in FILTERS}
        values |= {"q": self.q, "sort": self.sort, "dir": "" if self.desc else "asc", "pins": ",".join(self.pins)}
        values["datasets"] = "1" if self.datasets else ""
        return {key: value for key, value in values.items() if value}

    def query(self, **changes) -> str:
        """``?...`` for this view with ``changes`` applied (e.g. another sort), for links on the page."""
        params = replace(self, **changes).params()
        return "?" + urlencode(params) if params else "?"

    @property
    def filtered(self) -> bool:
        return any(getattr(self, name) for name in FILTERS) or bool(self.q)

    def sort_link(self, key: str) -> str:
        """Clicking a sorted column flips it; another column sorts descending (best first), names ascending."""
        if self.sort_key == key:
            return self.query(sort=key, desc=not self.desc)
        return self.query(sort=key, desc=key not in ("model", "rank"))

    @property
    def sort_key(self) -> str:
        return self.sort or "rank"

    def aria_sort(self, key: str) -> str:
        if self.sort_key != key:
            return "none"
        if key == "rank" and not self.sort:
            return "ascending"
        return "descending" if self.desc else "ascending"

    def apply(self, models: QuerySet[LanguageModel]) -> QuerySet[LanguageModel]:
        """The models this view's filters and search keep."""
        if self.origin:
            models = models.filter(origin=self.origin)
        if self.architecture:
            models = models.filter(architecture__slug=self.architecture)
        if self.size:
            _, _, low, high = next(b for b in LanguageModel.SIZE_BUCKETS if b[0] == self.size)
            models = models.filter(parameter_count__gte=low)
            if high is not None:
                models = models.filter(parameter_count__lt=high)
        if self.domain:
            models = models.filter(pretraining_domain=self.domain)
        if self.vocabulary:
            models = models.filter(vocabulary_kind=self.vocabulary)
        if self.start:
            models = models.filter(initialisation=self.start)
        if self.q:
            models = models.filter(Q(name__icontains=self.q) | Q(slug__icontains=self.q))
        return models


@dataclass
class Row:
    rank: int | None
    model: LanguageModel
    score: float | None
    values: dict[str, float | None] = field(default_factory=dict)
    spread: dict[str, dict] = field(default_factory=dict)  # entry key -> {"std", "n"}
    missing: list[str] = field(default_factory=list)
    test_overlap: dict[str, float] = field(default_factory=dict)  # dataset slug -> share of test examples
    rank_tied: bool = False
    rank_basis: str = ""  # "bootstrap" or "point"
    rank_interval: dict | None = None
    inference_per_s: float | None = None
    pinned: bool = False
    preview: bool = False  # a quick preview's score (one grid point, one seed): never ranked

    @property
    def ranked(self) -> bool:
        return self.rank is not None

    @property
    def rank_note(self) -> str:
        """What the rank claims, in words, for its tooltip."""
        if self.preview:
            return PREVIEW_NOTE
        if self.rank is None:
            return ""
        if self.rank_basis == "point":
            return "not tested: no predictions; ranked by its point score"
        interval = self.rank_interval
        if self.rank_tied and interval:
            return (
                f"cannot be told apart from {interval['name']}: the difference {interval['name']} minus this model "
                f"lies in [{interval['low']:.2f}, {interval['high']:.2f}] (95% paired bootstrap)"
            )
        if interval:
            low, high = interval["low"], interval["high"]
            return f"difference to {interval['name']}: [{low:.2f}, {high:.2f}] (95% paired bootstrap)"
        return "paired bootstrap over the test examples"

    @property
    def overlap_summary(self) -> str:
        """The largest overlap in words (empty when the model has no report or no overlap)."""
        if not self.test_overlap or max(self.test_overlap.values()) <= 0:
            return ""
        slug, share = max(self.test_overlap.items(), key=lambda item: item[1])
        return f"test-set overlap up to {100 * share:.1f}% ({slug})"

    @property
    def overlap_detail(self) -> str:
        return "; ".join(f"{slug}: {100 * share:.2f}%" for slug, share in sorted(self.test_overlap.items()))


@dataclass
class Leaderboard:
    benchmark: Benchmark
    columns: list[Column]
    rows: Sequence[Row]  # a BoardRows: each row built when read
    view: View = field(default_factory=View)
    ranking: Ranking | None = None
    total: int = 0  # rows before filtering: "12 of 40 models"
    best_values: dict[str, float] = field(default_factory=dict)  # see best

    @property
    def primary_label(self) -> str:
        return primary_label(self.benchmark)

    @property
    def visible_columns(self) -> list[Column]:
        """Group and summary columns always; per-dataset ones when the reader turned them on."""
        return [c for c in self.columns if c.kind != "entry" or self.view.datasets]

    @property
    def preview_columns(self) -> list[Column]:
        """The per-dataset columns, whatever the reader's switch: a preview often covers a few datasets, and
        those numbers (not group summaries it may lack) are what it has to show. Ordered group by group, so
        that the group names the ranked table uses can head them (:attr:`preview_groups`)."""
        return [column for _, columns in self.preview_groups for column in columns]

    @property
    def preview_groups(self) -> list[tuple[str, list[Column]]]:
        """The per-dataset columns under the name of the group that holds them, as the ranked table heads its
        group columns ("Relation Extraction" over "Demo relations"); entries in no group (or a benchmark that
        shows no group scores) come last under an empty name."""
        entries = {c.key: c for c in self.columns if c.kind == "entry"}
        aggregation = aggregation_from_json(self.benchmark.aggregation)
        grouped: list[tuple[str, list[Column]]] = []
        placed: set[str] = set()
        if aggregation.show_group_scores:
            for group in aggregation.groups:
                members = [entries[key] for key in group.members if key in entries and key not in placed]
                placed.update(c.key for c in members)
                if members:
                    grouped.append((group.name, members))
        rest = [c for key, c in entries.items() if key not in placed]
        return grouped + ([("", rest)] if rest else [])

    @property
    def _full(self) -> list[Light]:
        return [light for light in self.rows.lights if not light.preview]

    @property
    def untested(self) -> int:
        """Ranked full-protocol rows ranked by their point score: reported in a paper, no predictions to test."""
        return sum(1 for r in self._full if r.rank is not None and r.rank_basis == "point")

    @property
    def all_untested(self) -> bool:
        """Every ranked row is untested: the legend says so once, and no row needs a mark."""
        return self.untested > 0 and self.untested == sum(1 for r in self._full if r.rank is not None)

    @property
    def best(self) -> dict[str, float]:
        """The best value of each column among the full-protocol rows shown (bold on the page), all pages.

        A preview's number is left out: one lucky seed must not take the bold from a protocol's mean.
        """
        return self.best_values

    @property
    def points(self) -> list[Light]:
        """The full-protocol rows' light figures (name, size, speed, score), in board order, for charts."""
        return self._full

    @property
    def full_rows(self) -> BoardRows:
        """The full-protocol rows, ranked and unranked: the leaderboard proper."""
        return self.rows.subset(lambda light: not light.preview)

    @property
    def preview_rows(self) -> BoardRows:
        """Quick previews (one grid point, one seed each), never ranked: shown apart from the board."""
        return self.rows.subset(lambda light: light.preview)

    def as_json(self, rows: list[Row] | None = None) -> dict:
        """The board as plain dicts (cached and pickled as they are), with ``rows`` only (default: every row):
        a page or an API answer serialises the rows it shows, not the thousands it leaves out."""
        from leaderboard.serializers import LeaderboardSerializer

        return LeaderboardSerializer(context={"rows": rows}).to_representation(self)


def primary_label(benchmark: Benchmark) -> str:
    """The name of the benchmark's leaderboard score ("BLURB score", "Mean of tasks (platform convention)")."""
    aggregation = aggregation_from_json(benchmark.aggregation)
    names = {s.slug: s.name for s in aggregation.summaries} | {g.slug: g.name for g in aggregation.groups}
    return names.get(aggregation.primary, "score")


_YEAR = re.compile(r"\b(?:19|20)\d{2}[a-z]?\b")
_TABLES = re.compile(r"\bTables?\s+(\d+[A-Za-z]?(?:\s*[-\u2013]\s*\d+[A-Za-z]?)?)")


def short_citation(citation: str) -> str:
    """A paper's citation as a badge can hold it: the first author's surname, the year and the tables.

    ``"Gu et al. 2021 (PubMedBERT), Table 6"`` gives ``"Gu 2021, T6"``; ``"Yang et al. 2022 (GatorTron),
    Tables 1-2"`` gives ``"Yang 2022, T1-2"``. The full text stays in the badge's tooltip and screen-reader
    text. A source without a year (a model card) is returned as it is: there is nothing to shorten it to.
    """
    year = _YEAR.search(citation)
    if not citation.strip() or year is None:
        return citation.strip()
    surname = re.split(r"[\s,]+", citation.strip(), maxsplit=1)[0]
    tables = [re.sub(r"\s+", "", t).replace("\u2013", "-") for t in _TABLES.findall(citation)]
    short = f"{surname} {year.group(0)}"
    return f"{short}, T{', T'.join(dict.fromkeys(tables))}" if tables else short


def columns_for(benchmark: Benchmark, entries=None) -> list[Column]:
    aggregation = aggregation_from_json(benchmark.aggregation)
    columns = [Column(s.slug, s.name, "summary") for s in aggregation.summaries if s.slug != aggregation.primary]
    if aggregation.show_group_scores:
        columns += [Column(g.slug, g.name, "group") for g in aggregation.groups if g.slug != aggregation.primary]
    entries = entries if entries is not None else benchmark.entries.select_related("dataset", "metric")
    for entry in entries:
        title = f"{entry.dataset.name}: {entry.metric.name}" + (f" ({entry.variant})" if entry.variant else "")
        columns.append(Column(entry.key, entry.display_label, "entry", title))
    return columns


def test_overlap(model: LanguageModel, datasets: list[str]) -> dict[str, float]:
    """Shares of ``datasets``' test examples found in the model's pretraining corpus, from its report."""
    report = ((model.pretraining or {}).get("contamination") or {}).get("datasets") or {}
    return {slug: float(report[slug]["share"]) for slug in datasets if "share" in report.get(slug, {})}


@dataclass(frozen=True)
class Light:
    """What ordering a board needs of one score, read without its JSON: the board is sorted on these."""

    pk: int
    rank: int | None
    score: float | None
    preview: bool
    rank_basis: str
    inference_per_s: float | None
    name: str
    slug: str
    parameters: int | None
    column: float | None  # the sorted column's value, when the view sorts by one
    pinned: bool = False


class BoardRows(Sequence[Row]):
    """A board's rows in order, each built (one query per read, for every row it lacks) when first read.

    Its length, slices and iteration are a list's; a page reading 100 of 5,000 rows builds 100.
    Subsets (:meth:`subset`) share the rows already built.
    """

    def __init__(self, lights: list[Light], build: Callable[[list[Light]], list[Row]], built=None) -> None:
        self.lights = lights
        self._build = build
        self._built: dict[int, Row] = {} if built is None else built

    def __len__(self) -> int:
        return len(self.lights)

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._rows(self.lights[index])
        return self._rows([self.lights[index]])[0]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows(self.lights))

    def subset(self, keep: Callable[[Light], bool]) -> BoardRows:
        return BoardRows([light for light in self.lights if keep(light)], self._build, self._built)

    def _rows(self, lights: list[Light]) -> list[Row]:
        missing = [light for light in lights if light.pk not in self._built]
        if missing:
            for light, row in zip(missing, self._build(missing), strict=True):
                self._built[light.pk] = row
        return [self._built[light.pk] for light in lights]


_SOURCES = {"summary": "summaries", "group": "groups", "entry": "entries"}


def _sort_value(light: Light, key: str):
    if key == "model":
        return light.name.casefold()
    if key == "parameters":
        return light.parameters
    if key == "score":
        return light.score
    if key == "throughput":
        return light.inference_per_s
    return light.column


def _sorted(rows: list[Light], view: View) -> list[Light]:
    """Sort by the view's column, missing values last whatever the direction."""
    key = view.sort_key
    if key == "rank" and not view.sort:
        return rows  # stored order: rank, then score
    if key == "rank":
        ordered = sorted(rows, key=lambda r: (r.rank is None, r.rank or 0, -(r.score or 0)), reverse=False)
        return ordered if not view.desc else list(reversed(ordered))
    present = [r for r in rows if _sort_value(r, key) is not None]
    absent = [r for r in rows if _sort_value(r, key) is None]
    return sorted(present, key=lambda r: _sort_value(r, key), reverse=view.desc) + absent


LIGHT_FIELDS = ("pk", "rank", "score", "preview", "rank_basis", "inference_per_s", "language_model__name",
                "language_model__slug", "language_model__parameter_count")  # fmt: skip


def _lights(scores: QuerySet[Score], columns: list[Column], view: View) -> list[Light]:
    """Every score of the view in board order: ranked, unranked, then previews; pinned first."""
    column = next((c for c in columns if c.key == view.sort_key), None)
    extra = KeyTransform(column.key, _SOURCES[column.kind]) if column is not None else None
    ordered = scores.order_by(
        F("rank").asc(nulls_last=True), F("score").desc(nulls_last=True), "language_model__name", "pk"
    )
    if extra is not None:
        ordered = ordered.annotate(sorted_column=extra)
    fields = (*LIGHT_FIELDS, "sorted_column") if extra is not None else LIGHT_FIELDS
    ranked: list[Light] = []
    unranked: list[Light] = []
    previews: list[Light] = []
    for values in ordered.values_list(*fields):
        value = values[9] if extra is not None else None
        light = Light(*values[:9], column=value if isinstance(value, int | float) else None,
                      pinned=values[7] in view.pins)  # fmt: skip
        (previews if light.preview else ranked if light.rank is not None else unranked).append(light)
    lights = _sorted(ranked, view) + _sorted(unranked, view) + _sorted(previews, view)
    if view.pins:
        lights = [r for r in lights if r.pinned] + [r for r in lights if not r.pinned]
    return lights


def _best(scores: QuerySet[Score], columns: list[Column]) -> dict[str, float]:
    """The largest score and value of each column among the full-protocol rows (not previews), in one query."""
    maxima = {"score": Max("score")}
    for n, column in enumerate(columns):
        maxima[f"c{n}"] = Max(Cast(KeyTextTransform(column.key, _SOURCES[column.kind]), FloatField()))
    found = scores.filter(preview=False).aggregate(**maxima)
    best = {"score": found["score"]} if found["score"] is not None else {}
    for n, column in enumerate(columns):
        if found[f"c{n}"] is not None:
            best[column.key] = found[f"c{n}"]
    return best


def leaderboard_for(benchmark: Benchmark, models: QuerySet[LanguageModel] | None = None, view: View | None = None):
    """The board of ``models`` (a LanguageModel queryset; default: public ones) under ``view``."""
    view = view or View()
    models = LanguageModel.objects.public() if models is None else models
    entries = list(benchmark.entries.select_related("dataset", "metric"))
    columns = columns_for(benchmark, entries)
    datasets = list(dict.fromkeys(e.dataset.slug for e in entries))
    base = Score.objects.filter(benchmark=benchmark, language_model__in=models)
    total = base.count() if view.filtered else None
    shown = view.apply(models)
    if view.pins:  # a pinned model stays in sight whatever the filters
        shown = models.filter(Q(pk__in=shown.values("pk")) | Q(slug__in=view.pins))
    scores = base.filter(language_model__in=shown)
    lights = _lights(scores, columns, view)

    def build(wanted: list[Light]) -> list[Row]:
        found = {
            score.pk: score
            for score in Score.objects.filter(pk__in=[light.pk for light in wanted]).select_related(
                "language_model", "language_model__architecture"
            )
        }
        rows = [_row(found[light.pk], columns, datasets, view) for light in wanted]
        _cite_own_tables(benchmark, rows)
        return rows

    ranking = Ranking.objects.filter(benchmark=benchmark).first()
    board_total = total if total is not None else len(lights)
    return Leaderboard(benchmark, columns, BoardRows(lights, build), view, ranking, board_total, _best(scores, columns))


def _row(score: Score, columns: list[Column], datasets: list[str], view: View) -> Row:
    values: dict[str, float | None] = {}
    for column in columns:
        source = {"summary": score.summaries, "group": score.groups, "entry": score.entries}[column.kind]
        values[column.key] = source.get(column.key)
    model = score.language_model
    return Row(
        score.rank,
        model,
        score.score,
        values,
        dict(score.entry_spread or {}),
        list(score.missing),
        test_overlap(model, datasets),
        score.rank_tied,
        score.rank_basis,
        score.rank_interval,
        score.inference_per_s,
        model.slug in view.pins,
        score.preview,
    )


def _cite_own_tables(benchmark: Benchmark, rows: list[Row]) -> None:
    """A reported model several papers report (one model, many sources) shows, on each benchmark's board,
    the paper and table of that benchmark's numbers: its row's ``model.source_paper`` (the board's own copy
    of the model, which the page, the exports and the API's board read) becomes that table's."""
    reported = {row.model.pk: row.model for row in rows if row.model.origin == LanguageModel.Origin.REPORTED}
    aliases = ModelAlias.objects.filter(benchmark=benchmark, language_model_id__in=reported)
    for model_id, source in aliases.values_list("language_model_id", "source"):
        if source:
            reported[model_id].source_paper = source
