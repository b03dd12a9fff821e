"""The submissions API's shapes: the multipart request that submits, and the submission it answers with.

:class:`SubmitSerializer` checks only the request's form (which fields, which types, overrides that
are a JSON object); every rule about what was sent (a checkpoint or a recipe with its corpus, the
benchmark and its datasets, the overrides' values, the steps, the archive, the tokenizer, the
licence, the quota) is ``submissions.submitting.submit``'s, written once and shared with the form
and the command line. A job's state is
``submissions.services.JobState.as_json()``, exactly what the submission page's live updates
carry; :class:`JobStateSerializer` only describes it for the schema.

Component names are distinct from the read-only API's (``Error`` is shared on purpose: the same
``{"detail": ...}`` body), since both live in one public schema.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from biolm.column_limits import NAME_MAX
from biolm.contract import Overrides
from registry.models import LanguageModel
from submissions import services
from submissions.models import Submission
from submissions.submitting import BASE_MODEL_MAX, LICENCE_NEEDED


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of the multipart request (the schema's ``binary``: clients and the fuzzer send bytes)."""


@extend_schema_field({"type": "string", "enum": ["full", "quick"], "deprecated": True})
class DeprecatedProtocolField(serializers.ChoiceField):
    """``protocol``: full or quick, the request's name for ``preview`` before the job contract (one release)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=["full", "quick"], **kwargs)


class SubmitSerializer(serializers.Serializer):
    """``POST /api/v1/submissions`` (multipart/form-data): a checkpoint, a Hub id, or a recipe with a corpus."""

    checkpoint = UploadField(
        required=False,
        allow_empty_file=True,  # the intake says what is wrong with it, in the words the form uses
        help_text="A .zip, .tar.gz, .tgz or .tar of a Hugging Face checkpoint: config.json, safetensors weights "
        "and the tokenizer's files. Pickled weights and custom code are refused.",
    )
    hub = serializers.CharField(
        required=False,
        max_length=300,
        help_text="Instead of a checkpoint: a Hugging Face Hub model id, org/name[@revision] (a branch, tag or "
        "commit; main when none). It is resolved to its commit at once; a CPU job fetches and checks the files.",
    )
    hub_token = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=300,
        write_only=True,
        help_text="With hub, for a gated or private repository: a read token of your Hub account. Kept encrypted "
        "until the fetch job ends, never returned; DELETE /api/v1/submissions/{id}/hub-token deletes it sooner.",
    )
    recipe = serializers.CharField(
        required=False,
        allow_blank=True,  # an empty form field: no recipe
        max_length=100,
        help_text="Instead of a checkpoint: a registered pretraining recipe's slug.",
    )
    corpus = UploadField(
        required=False, allow_empty_file=True, help_text="With a recipe: the corpus, text with one document per line."
    )
    steps = serializers.IntegerField(required=False, help_text="With a recipe: pretraining steps (1 to 100,000,000).")
    benchmark = serializers.CharField(max_length=100, help_text="The benchmark's slug, e.g. blurb-mini.")
    datasets = serializers.ListField(
        child=serializers.CharField(max_length=1000),
        required=False,
        max_length=200,
        help_text="Datasets of the benchmark to evaluate on: repeat the field or separate slugs with commas. "
        "Default: all of them.",
    )
    preview = serializers.BooleanField(
        required=False,
        help_text="true: a quick preview (one grid point, one seed), marked as such and never ranked beside results "
        "of the full protocol. Default false: the benchmark's protocol.",
    )
    protocol = DeprecatedProtocolField(
        required=False,
        help_text='Deprecated alias of `preview` (kept for one release): "quick" is preview=true, "full" false.',
    )
    overrides = serializers.JSONField(
        required=False,
        binary=True,  # a multipart field carries the JSON as text
        help_text="A JSON object of the protocol's settings to change (results then say 'custom settings'); the "
        "settings: " + ", ".join(Overrides.names()) + '. Example: {"seeds": 3}.',
    )
    rerun = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Evaluate again even if these weights were already evaluated with these settings and code.",
    )
    name = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=NAME_MAX,
        help_text="The model's name; default: the file's name.",
        error_messages={"max_length": f"the model's name is over {NAME_MAX} characters; give a shorter one"},
    )
    description = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    licence = serializers.CharField(  # required in the schema; an empty one is refused by submit, in its words
        allow_blank=True,
        max_length=1000,
        help_text="The licence the weights are released under, e.g. apache-2.0.",
        error_messages={"required": LICENCE_NEEDED},
    )
    homepage = serializers.CharField(
        required=False, allow_blank=True, max_length=2000, help_text="The paper or code, an http(s) URL."
    )
    pretraining_domain = serializers.ChoiceField(
        required=False, allow_blank=True, choices=LanguageModel.Domain.choices,
        help_text="What it was pretrained on; the leaderboard's domain filter reads it.",
    )  # fmt: skip
    vocabulary_kind = serializers.ChoiceField(
        required=False, allow_blank=True, choices=LanguageModel.VocabularyKind.choices,
        help_text="domain: its own vocabulary, built from its domain's text; general: inherited from a "
        "general-domain model such as BERT.",
    )  # fmt: skip
    initialisation = serializers.ChoiceField(
        required=False, allow_blank=True, choices=LanguageModel.Initialisation.choices,
        help_text="How its pretraining started; a base_model makes it continual.",
    )  # fmt: skip
    base_model = serializers.CharField(
        required=False, allow_blank=True, max_length=BASE_MODEL_MAX,
        help_text="The checkpoint it continued pretraining from (a Hub id or name), if any.",
    )  # fmt: skip

    def validate_datasets(self, values: list[str]) -> list[str]:
        """``a,b`` and ``a&datasets=b`` alike; duplicates once, in the order given."""
        slugs = [slug.strip() for value in values for slug in value.split(",")]
        return list(dict.fromkeys(slug for slug in slugs if slug))

    def validate_overrides(self, value: object) -> dict:
        if not isinstance(value, dict):
            raise serializers.ValidationError('write the settings as a JSON object, e.g. {"seeds": 3}')
        return value

    def validate(self, data: dict) -> dict:
        """``protocol`` (deprecated) becomes ``preview``; the two must agree when both are sent.

        Which of a checkpoint, a recipe and a corpus go together is ``submit``'s rule, said beside
        the field it concerns, as the form shows it.
        """
        if "protocol" in data:
            preview = data.pop("protocol") == "quick"
            if "preview" in self.initial_data and data.get("preview") != preview:
                raise serializers.ValidationError({"preview": ["send preview only (protocol is its old name)"]})
            data["preview"] = preview
        return data


class SubmissionModelSerializer(serializers.Serializer):
    """The model a submission evaluates: private until its owner publishes it from the submission page."""

    slug = serializers.CharField()
    address = serializers.CharField(help_text="Its address, owner/name: its page is /models/<address>/.")
    name = serializers.CharField()
    visibility = serializers.ChoiceField(choices=LanguageModel.Visibility.choices)
    page = serializers.SerializerMethodField(help_text="The model's page (its owner sees it while it is private).")

    @extend_schema_field(OpenApiTypes.URI)
    def get_page(self, model: LanguageModel) -> str:
        return _absolute(self.context, model.get_absolute_url())


class JobStateSerializer(serializers.Serializer):
    """One job as the submission page shows it (``submissions.services.JobState.as_json()``)."""

    id = serializers.IntegerField()
    kind = serializers.CharField(
        help_text='"pretrain", "finetune" (the protocol on one dataset) or "score" (scoring the test predictions '
        'and recording the result; "aggregate" before 2026-11: see the changelog in the schema\'s description).'
    )
    dataset = serializers.CharField(allow_null=True)
    seeds = serializers.IntegerField(allow_null=True, help_text="Seeds its protocol runs, where the spec says.")
    status = serializers.CharField()
    status_label = serializers.CharField()
    progress = serializers.FloatField(allow_null=True, help_text="0 to 1; null before the first heartbeat.")
    step = serializers.IntegerField()
    total = serializers.IntegerField()
    eta_s = serializers.FloatField(allow_null=True, help_text="Seconds left, while it runs.")
    queue = serializers.CharField(help_text='The queue\'s id, "gpu" or "cpu" (see queue_name).')
    queue_name = serializers.CharField(
        help_text='The queue as people read it: "training" ("GPU training" only where a live worker of it has a GPU) '
        'or "scoring".'
    )
    queue_position = serializers.IntegerField(allow_null=True, help_text="1 = next to start, while it waits.")
    estimated_start = serializers.DateTimeField(allow_null=True)
    waiting_reason = serializers.CharField(
        allow_blank=True, help_text='Why it waits, e.g. "waiting: no training worker is running".'
    )
    heartbeat_age_s = serializers.FloatField(allow_null=True, help_text="Seconds since its worker's last heartbeat.")
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    failure = serializers.CharField(allow_blank=True, help_text="Why it failed, in plain words.")
    failure_cause = serializers.CharField(allow_blank=True)
    refunded = serializers.BooleanField(
        allow_null=True,
        help_text="On failure: whether the daily quota was given back (the platform's fault, or a plugin's).",
    )
    refund = serializers.CharField(
        allow_blank=True, help_text="On failure: the refund in words, naming its cause (a plugin by name)."
    )
    log_tail = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    stalled_since = serializers.DateTimeField(
        allow_null=True,
        help_text="While it runs: since when no step has moved (after a minute) or no heartbeat came; else null.",
    )


class SubmissionSummarySerializer(serializers.Serializer):
    """A submission in the list: where it stands, without its jobs (GET its ``api_url`` for them)."""

    id = serializers.IntegerField()
    url = serializers.SerializerMethodField(help_text="The submission's page.")
    api_url = serializers.SerializerMethodField(help_text="This submission in this API, with its jobs.")
    status = serializers.ChoiceField(choices=Submission.Status.choices)
    status_text = serializers.CharField(help_text="The status in words; a failure says whether it was refunded.")
    finished = serializers.BooleanField(source="is_finished")
    preview = serializers.BooleanField(help_text="A quick preview: one grid point, one seed; never ranked.")
    protocol = serializers.SerializerMethodField(
        help_text='Deprecated (one release): "quick" for a preview, else "full". Read `preview`.'
    )
    benchmarks = serializers.SerializerMethodField()
    model = SubmissionModelSerializer(source="language_model")
    created_at = serializers.DateTimeField()

    @extend_schema_field({"type": "string", "enum": ["full", "quick"], "deprecated": True})
    def get_protocol(self, submission: Submission) -> str:
        return "quick" if submission.preview else "full"

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, submission: Submission) -> str:
        return _absolute(self.context, reverse("submissions:detail", args=[submission.pk]))

    @extend_schema_field(OpenApiTypes.URI)
    def get_api_url(self, submission: Submission) -> str:
        return _absolute(self.context, reverse("submissions-api:detail", args=[submission.pk]))

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_benchmarks(self, submission: Submission) -> list[str]:
        return sorted(benchmark.slug for benchmark in submission.benchmarks.all())


class SubmissionSerializer(SubmissionSummarySerializer):
    """A submission with every job's live state: what the submission page shows."""

    datasets = serializers.SerializerMethodField(help_text="The datasets it evaluates on, in job order.")
    jobs = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_datasets(self, submission: Submission) -> list[str]:
        return services.datasets_of(submission)

    @extend_schema_field(JobStateSerializer(many=True))
    def get_jobs(self, submission: Submission) -> list[dict]:
        return [state.as_json() for state in services.job_states(submission)]


class SubmittedSerializer(SubmissionSerializer):
    """The answer to a submit: the new submission (201), or the earlier one of the same weights (200)."""

    reused = serializers.BooleanField(
        help_text="True: the same weights were already evaluated on this benchmark and these datasets with the "
        "same settings and code; this is that submission and nothing new was queued (send rerun=true to "
        "evaluate again)."
    )


class RefusalSerializer(serializers.Serializer):
    """Why a submission was refused: one sentence that names the fix, under the field it concerns."""

    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text='{field: [sentence]}; "non_field_errors" for the submission as a whole.',
    )


class QuotaRefusalSerializer(RefusalSerializer):
    """The daily quota is spent; ``resets_at`` is when the next slot frees (also the ``Retry-After`` header)."""

    resets_at = serializers.DateTimeField()


def _absolute(context: dict, path: str) -> str:
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path
