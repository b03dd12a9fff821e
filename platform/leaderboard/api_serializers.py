"""The public API's shapes for benchmarks, models, datasets and results (the leaderboard's is in serializers).

These serializers only ever read: the API is read-only, so every field describes output, and
the classes double as the OpenAPI schema's components. Links are absolute URLs (a script follows
them without knowing the host), built from the request in the serializer's context. A model's
``checkpoint``, ``owner`` and ``notes`` are never exposed: a checkpoint may be a path on the
platform's disk, and the other two are the submitter's business.

Slugs are plain strings, not ``SlugField``: spec slugs may hold a '.' (``biobert-base-v1.1``), which
the OpenAPI pattern of a SlugField would call invalid.

Which models may appear is decided by the views (``LanguageModel.objects.visible_to``), never
here: a serializer renders whatever queryset it is given.
"""

from __future__ import annotations

from operator import attrgetter

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from jobs import costs
from leaderboard import hub_card
from leaderboard.serializers import LeaderboardSerializer


@extend_schema_field(OpenApiTypes.URI)
class Link(serializers.Field):
    """An absolute URL to a named route, reversed with one attribute of the object (its slug by default).

    DRF's HyperlinkedIdentityField reads a single attribute; a score links to its benchmark's
    routes, so this one follows a dotted path (``benchmark.slug``).
    """

    def __init__(self, view_name: str, lookup: str = "slug", **kwargs) -> None:
        kwargs.update(source="*", read_only=True)
        super().__init__(**kwargs)
        self.view_name = view_name
        self.lookup = attrgetter(lookup)

    def to_representation(self, value) -> str:
        key = self.lookup(value)  # one argument, or a tuple of them (a model's address_parts)
        path = reverse(self.view_name, args=list(key) if isinstance(key, tuple) else [key])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class TurnaroundSerializer(serializers.Serializer):
    submissions = serializers.IntegerField(help_text="Published submissions counted.")
    median_s = serializers.FloatField(allow_null=True, help_text="Median seconds from submission to published.")
    p90_s = serializers.FloatField(allow_null=True, help_text="90th percentile (nearest rank), seconds.")
    gpu_hours_median = serializers.FloatField(allow_null=True, help_text="Median GPU-hours per submission.")


class TimeToLeaderboardSerializer(serializers.Serializer):
    full = TurnaroundSerializer(help_text="Full-protocol submissions.")
    previews = TurnaroundSerializer(help_text="Quick previews (one grid point, one seed), counted apart.")


class BenchmarkSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    citation = serializers.CharField(allow_blank=True)
    aggregation_version = serializers.CharField(help_text="Scores computed with another version are being redone.")
    n_models = serializers.IntegerField(help_text="Models with a score on it that the caller may see.")
    url = Link("leaderboard:benchmark", help_text="The leaderboard's page.")
    leaderboard = Link("api:benchmark-leaderboard", help_text="The leaderboard in this API.")
    time_to_leaderboard = serializers.SerializerMethodField(
        help_text="Submission-to-published times of public models' full-protocol submissions (median, 90th "
        "percentile, seconds) and their median GPU-hours; quick previews counted apart."
    )

    @extend_schema_field(TimeToLeaderboardSerializer())
    def get_time_to_leaderboard(self, benchmark) -> dict:
        return {
            "full": costs.time_to_leaderboard(benchmark.pk, preview=False).to_json(),
            "previews": costs.time_to_leaderboard(benchmark.pk, preview=True).to_json(),
        }


class PaginatedLeaderboardSerializer(LeaderboardSerializer):
    """The page's leaderboard (leaderboard.serializers) with its rows paginated; the header stays whole."""

    count = serializers.IntegerField(help_text="Rows in this view (after filters), over all pages.")
    next = serializers.URLField(allow_null=True, help_text="The next page of rows; null on the last.")
    previous = serializers.URLField(allow_null=True, help_text="The previous page of rows; null on the first.")


class ModelSummarySerializer(serializers.Serializer):
    slug = serializers.CharField(help_text="Its key in the leaderboard's rows and compare's ?models=.")
    address = serializers.CharField(help_text="Its address, owner/name: its page and its card in this API.")
    name = serializers.CharField()
    origin = serializers.ChoiceField(
        choices=["reported", "reproduced"], help_text="Transcribed from a paper, or evaluated on biolm."
    )
    source_paper = serializers.CharField(allow_blank=True)
    architecture = serializers.SerializerMethodField(help_text="Its architecture's slug; empty when unknown.")
    parameters = serializers.IntegerField(source="parameter_count", allow_null=True)
    size = serializers.CharField(source="size_bucket", allow_blank=True, help_text="The leaderboard's size bucket.")
    pretraining_domain = serializers.CharField(allow_blank=True)
    vocabulary_kind = serializers.CharField(allow_blank=True)
    initialisation = serializers.CharField(allow_blank=True)
    url = Link("api:model-detail", lookup="address_parts", help_text="This model in this API.")
    page = Link("leaderboard:model", lookup="address_parts", help_text="The model's page.")

    @extend_schema_field(serializers.CharField(allow_blank=True))
    def get_architecture(self, model) -> str:
        """Empty rather than null, as in the leaderboard's rows: one convention for a script to handle."""
        return model.architecture.slug if model.architecture_id else ""


class ModelScoreSerializer(serializers.Serializer):
    """A model's standing on one benchmark, as the leaderboard stores it."""

    benchmark = serializers.CharField(source="benchmark.slug")
    benchmark_name = serializers.CharField(source="benchmark.name")
    score = serializers.SerializerMethodField(help_text="The primary summary; null while datasets are missing.")
    rank = serializers.IntegerField(allow_null=True, help_text="1 + the models significantly better; null: unranked.")
    tied = serializers.BooleanField(source="rank_tied", help_text="Shares its rank with the model above.")
    rank_basis = serializers.CharField(allow_blank=True, help_text='"bootstrap", "point", or empty when unranked.')
    missing = serializers.ListField(child=serializers.CharField(), help_text="Entries it has no result for.")
    preview = serializers.BooleanField(
        help_text="Built on a quick preview (one grid point, one seed): never ranked beside full-protocol scores."
    )
    aggregation_version = serializers.CharField()
    leaderboard = Link("api:benchmark-leaderboard", lookup="benchmark.slug")

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_score(self, score) -> float | None:
        """Rounded like the leaderboard, to the decimals the benchmark's paper prints."""
        return None if score.score is None else round(score.score, score.benchmark.precision)


class ClassFigureSerializer(serializers.Serializer):
    """One class's test figures (a relation type, PICO element, entity type or hallmark), seeds combined."""

    name = serializers.CharField(help_text="The class as the dataset names it (CPR:3, PAR, protein, ...).")
    support = serializers.IntegerField(help_text="Its gold instances in the test split (at least 10 to be given).")
    precision = serializers.FloatField()
    recall = serializers.FloatField()
    f1 = serializers.FloatField()


class ResultSerializer(serializers.Serializer):
    """One number a model obtained on a dataset under a metric (0-100 scale)."""

    model = serializers.CharField(source="language_model.slug")
    model_name = serializers.CharField(source="language_model.name")
    dataset = serializers.CharField(source="dataset.slug")
    metric = serializers.CharField(source="metric.slug")
    variant = serializers.CharField(allow_blank=True)
    scope = serializers.CharField(
        allow_blank=True, help_text="The benchmark whose paper printed this number; empty for one measured here."
    )
    mean = serializers.FloatField(source="value", help_text="Over its seeds (or folds); a paper's number as printed.")
    std = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    n_seeds = serializers.IntegerField(allow_null=True)
    source = serializers.CharField(allow_blank=True)
    inference_per_s = serializers.FloatField(allow_null=True, help_text="Test-set inference, examples per second.")
    gpu_hours = serializers.FloatField(
        allow_null=True,
        help_text="GPU-hours its fine-tuning took (retries included, a shared GPU at its share); "
        "0: it ran on CPUs; null: a paper's number, or recorded before biolm kept attempts.",
    )
    wall_s = serializers.FloatField(allow_null=True, help_text="Seconds from its fine-tuning's first start to its end.")
    gpu_model = serializers.CharField(allow_blank=True, help_text="The GPUs its workers reported; empty: CPUs.")
    preview = serializers.BooleanField(
        help_text="From a quick preview (one grid point, one seed), not the full protocol; a full result replaces it."
    )
    updated_at = serializers.DateTimeField()
    classes = serializers.SerializerMethodField(
        help_text="Per-class test figures from the stored predictions, for classes with at least 10 gold test "
        "instances; null where the metric has no classes or none were computed. Never anything per example."
    )

    @extend_schema_field(ClassFigureSerializer(many=True, allow_null=True))
    def get_classes(self, result) -> list[dict] | None:
        stored = getattr(result, "classes", None)  # the reverse one-to-one: absent raises, which getattr answers
        return stored.figures.get("classes", []) if stored is not None else None


class ModelSourceSerializer(serializers.Serializer):
    """One paper's row for a reported model: the benchmark whose table lists it, and what that paper calls it."""

    benchmark = serializers.CharField(source="benchmark.slug", help_text="The benchmark whose published table it is.")
    name = serializers.CharField(help_text="The model's name in that paper.")
    source = serializers.CharField(allow_blank=True, help_text="The paper and table.")


class ModelDetailSerializer(ModelSummarySerializer):
    """The model card: its facets, its score on each benchmark and every result it has."""

    sources = ModelSourceSerializer(
        many=True,
        source="aliases.all",
        help_text="For a reported model: each paper that reports it (one model, many sources).",
    )
    version_of = serializers.SerializerMethodField(
        help_text="The address of the model this one is a version of, if any."
    )

    def get_version_of(self, model) -> str | None:
        return model.version_of.address if model.version_of_id else None

    parameters_source = serializers.CharField(
        source="parameter_count_source",
        allow_blank=True,
        help_text="Where the parameter count is stated (a paper and its table, or a model card); "
        "empty for a count taken from the weights, or when no count is stated.",
    )
    vocabulary = serializers.CharField(allow_blank=True)
    pretraining_corpus = serializers.CharField(allow_blank=True)
    max_sequence_length = serializers.IntegerField(allow_null=True)
    scores = ModelScoreSerializer(many=True, source="api_scores")
    results = ResultSerializer(many=True, source="api_results")
    model_index = serializers.SerializerMethodField(
        help_text="Its results evaluated on biolm by a benchmark's full protocol, as a Hugging Face model card's "
        "YAML header holding model-index (huggingface_hub.ModelCard reads it); empty when it has none."
    )
    hub_eval_results = serializers.SerializerMethodField(
        help_text="For its results on datasets the Hugging Face Hub holds: the Hub's evaluation-results files, "
        '{".eval_results/<name>.yaml": YAML text}.'
    )

    def get_model_index(self, model) -> str:
        return hub_card.card_header(model, self._page_url(model), self._card_values(model))

    def get_hub_eval_results(self, model) -> dict[str, str]:
        return hub_card.hub_eval_files(model, self._page_url(model), self._card_values(model))

    def _card_values(self, model) -> list[hub_card.CardValue]:
        """The model's card values, read once for both fields."""
        cached = self.context.setdefault("card_values", {})
        if model.pk not in cached:
            cached[model.pk] = hub_card.card_values(model)
        return cached[model.pk]

    def _page_url(self, model) -> str:
        request = self.context.get("request")
        path = model.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else settings.BIOLM_SITE_URL + path


class MetricSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    higher_is_better = serializers.BooleanField()


class TaskTypeSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class SplitSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField(allow_null=True, help_text="As the dataset's paper reports it.")
    unit = serializers.CharField(default="examples", help_text="What the size counts (examples, abstracts, ...).")


class DatasetSummarySerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    task_type = serializers.CharField(source="task_type.slug")
    metric = serializers.CharField(source="metric.slug")
    domain = serializers.CharField()
    access = serializers.CharField(help_text='"public", or "restricted" behind a data use agreement.')
    demo = serializers.BooleanField(help_text="Invented demo data, not a real benchmark dataset.")
    n_models = serializers.IntegerField(help_text="Models with a result on it that the caller may see.")
    url = Link("api:dataset-detail", help_text="This dataset in this API.")
    page = Link("registry:dataset-detail", help_text="The dataset's page.")


class DatasetDetailSerializer(DatasetSummarySerializer):
    """A dataset's card (never its examples or gold labels) and the results of the models the caller may see."""

    description = serializers.CharField(allow_blank=True)
    task_type = TaskTypeSerializer()
    metric = MetricSerializer()
    splits = SplitSerializer(many=True)
    licence = serializers.CharField(allow_blank=True)
    source = serializers.CharField(allow_blank=True)
    citation = serializers.CharField(allow_blank=True)
    benchmarks = serializers.ListField(
        child=serializers.CharField(), source="api_benchmarks", help_text="Active benchmarks that score it."
    )
    results = ResultSerializer(many=True, source="api_results")
