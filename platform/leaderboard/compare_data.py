"""What the compare page shows: up to four models' groups on a radar and their per-dataset differences.

Each difference to the first model is tested by the same paired bootstrap as the ranks (the
shared resamples of the dataset's test examples, seeds combined inside each): it is
"significant" when 95% of the paired differences fall on one side of 0. A pair where either
side has no stored predictions (a number reported in a paper) is shown, marked "not tested".
A quick preview's numbers (one grid point, one seed) are marked as such, model and cell: the
reader chose to put them side by side, but must not take them for the full protocol's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from biolm.significance import difference
from leaderboard import charts
from leaderboard.models import Result, ResultResamples, Score
from leaderboard.resamples import decode
from leaderboard.score_aggregation import aggregation_from_json
from registry.models import Benchmark, LanguageModel, ModelAlias


@dataclass
class Cell:
    value: float | None
    std: float | None = None
    diff: float | None = None  # this model minus the reference
    low: float | None = None
    high: float | None = None
    verdict: str = ""  # "better", "worse", "tie" or "not tested"; empty for the reference itself
    preview: bool = False  # a quick preview's number (one grid point, one seed)


@dataclass
class Comparison:
    benchmark: Benchmark
    models: list[LanguageModel]
    not_found: list[str]
    scores: dict[str, float | None]
    rows: list[tuple[str, str, list[Cell]]] = field(default_factory=list)  # (entry key, label, cells)
    radar: charts.Chart | None = None
    previews: set[str] = field(default_factory=set)  # slugs of the models whose score is a quick preview


def comparison(benchmark: Benchmark, visible: QuerySet[LanguageModel], slugs: list[str]) -> Comparison:
    """The models of ``slugs`` that ``visible`` holds (in that order), compared on ``benchmark``.

    A published row's key from before it was merged into its model (``blurb--biobert``, in a link copied
    then) compares that model."""
    merged = ModelAlias.objects.filter(former_slug__in=slugs, language_model__in=visible)
    current = dict(merged.values_list("former_slug", "language_model__slug"))
    slugs = list(dict.fromkeys(current.get(slug, slug) for slug in slugs))
    found = {m.slug: m for m in visible.filter(slug__in=slugs).select_related("architecture")}
    models = [found[s] for s in slugs if s in found]
    not_found = [s for s in slugs if s not in found]  # a private model is "not found", as a missing one
    scores = {s.language_model_id: s for s in Score.objects.filter(benchmark=benchmark, language_model__in=models)}
    entries = list(benchmark.entries.select_related("dataset", "metric"))
    results: dict[tuple[int, str], Result] = {}
    for result in Result.objects.filter(language_model__in=models, dataset__in=[e.dataset_id for e in entries]):
        scope = benchmark.slug if found[result.language_model.slug].origin == LanguageModel.Origin.REPORTED else ""
        if result.scope != scope:
            continue
        for entry in entries:
            if (entry.dataset_id, entry.metric_id, entry.variant) == (
                result.dataset_id, result.metric_id, result.variant,
            ):  # fmt: skip
                results[(result.language_model_id, entry.key)] = result
    vectors = {
        row["result_id"]: decode(row["values"])
        for row in ResultResamples.objects.filter(result__in=[r.pk for r in results.values()]).values(
            "result_id", "values"
        )
    }
    outcome = Comparison(
        benchmark,
        models,
        not_found,
        {m.slug: (scores[m.pk].score if m.pk in scores else None) for m in models},
        previews={m.slug for m in models if m.pk in scores and scores[m.pk].preview},
    )
    for entry in entries:
        cells = []
        reference = results.get((models[0].pk, entry.key)) if models else None
        for index, model in enumerate(models):
            result = results.get((model.pk, entry.key))
            cell = Cell(result.value if result else None, result.std if result else None)
            cell.preview = result is not None and result.preview
            if index and result is not None and reference is not None:
                cell.diff = result.value - reference.value
                mine, theirs = vectors.get(result.pk), vectors.get(reference.pk)
                if mine is None or theirs is None or len(mine) != len(theirs):
                    cell.verdict = "not tested"
                else:
                    test = difference(mine, theirs)
                    cell.low, cell.high = test["low"], test["high"]
                    cell.verdict = ("better" if test["mean"] > 0 else "worse") if test["significant"] else "tie"
            cells.append(cell)
        outcome.rows.append((entry.key, entry.display_label, cells))
    aggregation = aggregation_from_json(benchmark.aggregation)
    axes = [g.name for g in aggregation.groups]
    if models and len(axes) >= 3:
        outcome.radar = charts.radar(
            f"{benchmark.name}: group scores",
            axes,
            {
                m.name: [(scores[m.pk].groups.get(g.slug) if m.pk in scores else None) for g in aggregation.groups]
                for m in models
            },
        )
    return outcome


@dataclass(frozen=True)
class Candidate:
    """A model the compare page's search box suggests: its internal key, name and address."""

    slug: str
    name: str
    address: str


def candidates(benchmark: Benchmark, visible: QuerySet[LanguageModel]) -> list[Candidate]:
    """The models ``visible`` holds that have a score on ``benchmark``, by name: the search box's suggestions.

    Only ``visible`` is read, so another user's private model is never suggested (nor found by :func:`find`).
    """
    scored = visible.filter(scores__benchmark=benchmark).distinct().order_by("name", "namespace", "address_name")
    return [Candidate(m.slug, m.name, m.address) for m in scored.only("slug", "name", "namespace", "address_name")]


def find(visible: QuerySet[LanguageModel], text: str) -> tuple[LanguageModel | None, str]:
    """The one model of ``visible`` that ``text`` names, or None and a sentence saying why not.

    ``text`` is what a reader typed or picked: an address (``papers/alder-bert``), a name (any case), or
    the internal key that ``?models=`` holds. A name two models share asks for the address instead.
    """
    text = text.strip()
    if not text:
        return None, "Type a model's name or address."
    namespace, _, address_name = text.partition("/")
    if address_name:
        by_address = visible.filter(namespace__iexact=namespace, address_name__iexact=address_name).first()
        if by_address is not None:
            return by_address, ""
    named = list(visible.filter(name__iexact=text)[:5])
    if len(named) == 1:
        return named[0], ""
    if named:
        addresses = ", ".join(sorted(m.address for m in named))
        return None, f"Several models are named {text}: pick one by its address ({addresses})."
    by_slug = visible.filter(slug=text).first()
    if by_slug is not None:
        return by_slug, ""
    return None, f"No model named {text} was found."


def pinned(
    slugs: list[str], visible: QuerySet[LanguageModel], add: str, remove: str, limit: int
) -> tuple[list[str], str]:
    """``slugs`` with the model ``add`` names appended and ``remove`` taken out, and a sentence when ``add``
    could not be: the compare form's one step (a pin or an unpin), the same with or without JavaScript."""
    kept = [s for s in dict.fromkeys(slugs) if s != remove]
    if not add.strip():
        return kept, ""
    model, problem = find(visible, add)
    if model is None:
        return kept, problem
    if model.slug in kept:
        return kept, f"{model.name} is already compared."
    if len(kept) >= limit:
        return kept, f"Up to {limit} models can be compared: remove one first."
    return [*kept, model.slug], ""
