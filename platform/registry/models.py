"""What plugins contribute, mirrored in the database, and the language models people evaluate.

Rows for architectures, recipes, datasets, metrics and benchmarks are written
only by :mod:`registry.sync` from plugin specs: the plugin is the single source
of truth, the table makes it queryable and joinable. A contribution that
disappears (plugin uninstalled) is marked inactive rather than deleted, so
results that refer to it survive.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from biolm.column_limits import (
    CHECKPOINT_MAX,
    CORPUS_MAX,
    LABEL_MAX,
    LANGUAGE_MODEL_SLUG_MAX,
    MODEL_TYPE_MAX,
    NAME_MAX,
    NAMESPACE_MAX,
    SLUG_MAX,
    SOURCE_MAX,
    VERSION_MAX,
    VOCABULARY_MAX,
)
from biolm.facets import facets
from biolm.model_identity import PAPERS_NAMESPACE
from biolm.placement import held_queue
from biolm.plugin_identity import PluginIdentity
from biolm.specs import DEFAULT_PROTOCOL


class PluginContributed(models.Model):
    """Fields every plugin-contributed row shares."""

    slug = models.SlugField(max_length=SLUG_MAX, unique=True)
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True)
    plugin = models.CharField(max_length=NAME_MAX, help_text="The plugin that contributes this row.")
    active = models.BooleanField(default=True, help_text="False once no installed plugin contributes it.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class Metric(PluginContributed):
    higher_is_better = models.BooleanField(default=True)


class TaskType(PluginContributed):
    pass


class Architecture(PluginContributed):
    model_type = models.CharField(max_length=MODEL_TYPE_MAX, help_text="Hugging Face config model_type.")
    presets = models.JSONField(default=dict, blank=True)
    max_sequence_length = models.PositiveIntegerField(default=512)
    citation = models.TextField(blank=True)


class PretrainingRecipe(PluginContributed):
    objectives = models.JSONField(default=list)
    settings = models.JSONField(default=dict, blank=True)
    citation = models.TextField(blank=True)


class DataHolder(models.Model):
    """An institution that holds gated data (under a data use agreement) on hosts of its own.

    The datasets bound to it (:attr:`Dataset.held_by`) are fine-tuned only by its workers: they consume its
    named queue (``held-<name>``, :mod:`biolm.placement`) and authenticate with its own credential, of which
    only a SHA-256 is kept (``manage.py holders``). Their results reach the leaderboard once one of its
    ``approvers`` (or a superuser) approves them in the admin.
    """

    name = models.SlugField(max_length=40, unique=True, help_text="Its queue is held-<name>.")
    title = models.CharField(max_length=200, blank=True, help_text="The institution, as pages may name it.")
    credential_sha256 = models.CharField(
        max_length=64, editable=False, help_text="SHA-256 of its workers' credential (shown once, never stored)."
    )
    approvers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="held_data",
        help_text="Who may approve or reject its datasets' results.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue(self) -> str:
        """The job queue its datasets' jobs wait in (:func:`biolm.placement.held_queue`)."""
        return held_queue(self.name)

    def may_approve(self, user) -> bool:
        return bool(user.is_superuser or (user.pk and self.approvers.filter(pk=user.pk).exists()))


class Dataset(PluginContributed):
    class Domain(models.TextChoices):
        BIOMEDICAL = "biomedical"
        CLINICAL = "clinical"

    class Access(models.TextChoices):
        PUBLIC = "public"
        RESTRICTED = "restricted", "restricted (data use agreement)"

    task_type = models.ForeignKey(TaskType, on_delete=models.PROTECT, related_name="datasets")
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="datasets")
    domain = models.CharField(max_length=20, choices=Domain.choices)
    access = models.CharField(max_length=20, choices=Access.choices, default=Access.PUBLIC)
    splits = models.JSONField(default=list, help_text="[{name, size, unit}] as the dataset's paper reports them.")
    labels = models.JSONField(default=list, blank=True)
    source = models.TextField(blank=True)
    licence = models.TextField(blank=True)
    citation = models.TextField(blank=True)
    adapter = models.JSONField(null=True, blank=True, help_text="The AdapterSpec that reads official files.")
    demo = models.BooleanField(default=False, help_text="Invented demo data, not a real benchmark dataset.")
    hub_dataset = models.CharField(
        max_length=200, blank=True, help_text="Its id on the Hugging Face Hub (org/name), where one exists."
    )
    hub_task = models.CharField(
        max_length=200, blank=True, help_text="The task within it the Hub's evaluation results name (default: slug)."
    )
    text_shareable = models.BooleanField(
        default=False, help_text="Its licence lets its text be redistributed: the dev-example viewer shows it."
    )
    held_by = models.ForeignKey(
        DataHolder, null=True, blank=True, on_delete=models.PROTECT, related_name="datasets",
        help_text="Restricted data kept on its holder's hosts: only its workers run these jobs (manage.py holders).",
    )  # fmt: skip

    def examples_visible_to(self, user) -> bool:
        """Whether ``user`` may see this dataset's examples or per-example predictions: anyone for public data,
        staff only for restricted data (a data use agreement's), whoever holds it."""
        return self.access != self.Access.RESTRICTED or bool(user is not None and user.is_staff)

    @property
    def shows_text(self) -> bool:
        """Whether readers may see its examples' text (not only ids, labels and predictions): invented demo data,
        or data whose licence allows redistribution (:attr:`biolm.specs.DatasetSpec.text_shareable`)."""
        return self.demo or self.text_shareable

    @property
    def current_import(self) -> DatasetImport | None:
        return self.imports.order_by("-imported_at").first()


class DatasetImport(models.Model):
    """One validated import of a dataset's files, stored as a datasets.DatasetDict on disk.

    Gold labels live only in the stored files, never in the database or on a page:
    this row keeps sizes, the label set, the fingerprint and the longest inputs' ids.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="imports")
    fingerprint = models.CharField(max_length=32, help_text="Content hash of the canonical examples.")
    source_path = models.CharField(max_length=1000, help_text="The directory the official files were read from.")
    stored_path = models.CharField(max_length=1000, help_text="Where the validated DatasetDict is saved.")
    split_sizes = models.JSONField(default=dict, help_text="Examples per split.")
    paper_unit_sizes = models.JSONField(default=dict, help_text="Per split, in the unit the paper counts.")
    label_set = models.JSONField(default=list)
    longest_examples = models.JSONField(default=list, help_text="[{split, id, length}] of the longest inputs.")
    notes = models.JSONField(default=list, blank=True)
    folds = models.JSONField(
        default=dict,
        blank=True,
        help_text="The cross-validation folds imported with it, for protocols that score on folds: "
        "{count, fingerprint, source_path, stored_path, per_fold: {k: {fingerprint, sizes, source_path}}}.",
    )
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "fingerprint"], name="unique_import_per_content")]
        ordering = ["-imported_at"]

    def __str__(self) -> str:
        return f"{self.dataset.slug}@{self.fingerprint}"

    def differences_from_paper(self) -> dict[str, tuple[int, int]]:
        """{split: (paper, measured)} where the imported files differ from the paper's table."""
        return {
            split["name"]: (split["size"], self.paper_unit_sizes[split["name"]])
            for split in self.dataset.splits
            if split["size"] is not None
            and split["name"] in self.paper_unit_sizes
            and self.paper_unit_sizes[split["name"]] != split["size"]
        }


class Protocol(PluginContributed):
    """A paper's fine-tuning procedure (a plugin's :class:`biolm.specs.ProtocolSpec`), as pages show it."""

    statistic = models.CharField(max_length=10, default="mean", help_text="What it reports over runs: mean or median.")
    citation = models.CharField(max_length=SOURCE_MAX, blank=True, help_text="The paper and section it comes from.")


class Plugin(models.Model):
    """An installed plugin as the last ``sync_plugins`` saw it: what jobs pin, and what their failures are counted on.

    ``name`` is the plugin's registered name (its entry point; a built-in plugin's module). The jobs
    whose failure its code caused (``Job.blamed_plugin``) are counted against it in the admin.
    """

    class Source(models.TextChoices):
        BUILTIN = "builtin", "built into biolm"
        ENTRYPOINT = "entrypoint", "installed package"

    name = models.CharField(max_length=NAME_MAX, unique=True)
    source = models.CharField(max_length=12, choices=Source.choices)
    distribution = models.CharField(max_length=NAME_MAX, blank=True)
    version = models.CharField(max_length=VERSION_MAX, blank=True)
    fingerprint = models.CharField(max_length=80, blank=True, help_text="The content digest of its installed files.")
    contributes = models.JSONField(default=dict, blank=True, help_text="{kind: [slug, ...]} it contributes.")
    active = models.BooleanField(default=True, help_text="False once it is no longer installed.")
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.identity.named

    @property
    def identity(self) -> PluginIdentity:
        return PluginIdentity(self.name, self.distribution, self.version, self.fingerprint)


class Benchmark(PluginContributed):
    citation = models.TextField(blank=True)
    source_paper = models.CharField(max_length=SOURCE_MAX, blank=True)
    aggregation = models.JSONField(help_text="The AggregationSpec as JSON; see biolm.specs.")
    aggregation_version = models.CharField(max_length=VERSION_MAX)
    precision = models.PositiveSmallIntegerField(default=2, help_text="Decimal places the paper prints.")
    published_source = models.CharField(max_length=SOURCE_MAX, blank=True)
    protocol = models.CharField(
        max_length=SLUG_MAX,
        default=DEFAULT_PROTOCOL,
        help_text="The slug of the paper's fine-tuning protocol (a Protocol).",
    )
    datasets = models.ManyToManyField(Dataset, through="BenchmarkEntry", related_name="benchmarks")

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:benchmark", args=[self.slug])


class BenchmarkEntry(models.Model):
    """One scored column of a benchmark: a dataset under a metric (and variant)."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="entries")
    key = models.SlugField(max_length=SLUG_MAX)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="entries")
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="entries")
    label = models.CharField(max_length=LABEL_MAX, blank=True)
    variant = models.CharField(max_length=LABEL_MAX, blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["benchmark", "position"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "key"], name="unique_entry_key_per_benchmark")]
        verbose_name_plural = "benchmark entries"

    def __str__(self) -> str:
        return f"{self.benchmark.slug}:{self.key}"

    @property
    def display_label(self) -> str:
        return self.label or self.dataset.name


# --- who may see which language model ------------------------------------------------------------------
#
# The one privacy rule: a public model is everyone's; a private one is its owner's and staff's, and to
# anyone else it does not exist (the same 404 as a missing one, absent from every list, count and
# export). :meth:`LanguageModelQuerySet.visible_to` says which models a user may see,
# :meth:`LanguageModel.is_visible_to` whether they may see one model; both read :func:`_viewer`, so
# they cannot disagree. A surface that shows the public only (ranks, snapshots, the public queue) asks
# ``visible_to(None)``, the anonymous visitor's view, rather than filtering on ``visibility`` itself.

_SEES_ALL = "staff"
_SEES_PUBLIC = "public"


def _viewer(user) -> str | int:
    """What ``user`` sees beyond public models: every model (:data:`_SEES_ALL`), their own (their pk), or
    nothing (:data:`_SEES_PUBLIC`: no user, or an anonymous one)."""
    if user is None or not user.is_authenticated:
        return _SEES_PUBLIC
    return _SEES_ALL if user.is_staff else user.pk


def visibility_audience(user) -> str:
    """Who sees which models, as a cache key: ``visible_to`` gives the same models to two users of the same
    audience ("public" for every anonymous visitor, "staff" for staff, "user-<pk>" for each signed-in user)."""
    viewer = _viewer(user)
    return viewer if isinstance(viewer, str) else f"user-{viewer}"


def default_namespace(owner) -> str:
    """The namespace a model of ``owner`` lives in: their username, or :data:`PAPERS_NAMESPACE` without one."""
    return owner.get_username() if owner is not None else PAPERS_NAMESPACE


class LanguageModelQuerySet(models.QuerySet["LanguageModel"]):
    def visible_to(self, user=None) -> LanguageModelQuerySet:
        """The models ``user`` may see: all of them for staff, the public ones and their own for a signed-in
        user, the public ones for anyone else (``None`` included: the public's view)."""
        viewer = _viewer(user)
        if viewer == _SEES_ALL:
            return self.all()
        seen = models.Q(visibility=LanguageModel.Visibility.PUBLIC)
        if viewer != _SEES_PUBLIC:
            seen |= models.Q(owner_id=viewer)
        return self.filter(seen)

    def merged_from(self, former_slug: str) -> LanguageModel | None:
        """The model a published row that was a model of its own (``blurb--biobert``) was merged into, if any
        (:class:`ModelAlias`): its old addresses redirect there."""
        return self.filter(aliases__former_slug=former_slug).first()

    def public(self) -> LanguageModelQuerySet:
        """The models anyone may see: :meth:`visible_to` with no user."""
        return self.visible_to(None)


class LanguageModel(models.Model):
    """An encoder on the leaderboard: published ("reported") or evaluated here ("reproduced")."""

    class Visibility(models.TextChoices):
        PUBLIC = "public"
        PRIVATE = "private"

    class Origin(models.TextChoices):
        REPORTED = "reported", "reported in a paper"
        REPRODUCED = "reproduced", "evaluated on biolm"

    class Domain(models.TextChoices):
        PUBMED = "pubmed", "PubMed"
        PMC = "pmc", "PMC full text"
        CLINICAL = "clinical", "clinical"
        GENERAL = "general", "general"

    class VocabularyKind(models.TextChoices):
        DOMAIN = "domain", "domain vocabulary"
        GENERAL = "general", "general vocabulary"

    class Initialisation(models.TextChoices):
        SCRATCH = "scratch", "from scratch"
        CONTINUAL = "continual", "continual pretraining"

    # Size buckets of the leaderboard's filter: (slug, label, lowest parameter count, highest excluded).
    SIZE_BUCKETS = (
        ("small", "under 50M", 0, 50_000_000),
        ("base", "50M to 200M", 50_000_000, 200_000_000),
        ("large", "200M to 1B", 200_000_000, 1_000_000_000),
        ("xl", "1B and more", 1_000_000_000, None),
    )

    # The internal key (compare's ?models=, the API's "slug", file names): never a page's address.
    slug = models.SlugField(max_length=LANGUAGE_MODEL_SLUG_MAX, unique=True)
    # The public address, namespace/address_name (the Hugging Face Hub's owner/name): unique per namespace
    # only, so a name taken in another user's namespace is never refused, renamed or otherwise revealed.
    namespace = models.CharField(
        max_length=NAMESPACE_MAX, blank=True, help_text="Its submitter's username, or papers for a reported model."
    )
    address_name = models.CharField(max_length=LANGUAGE_MODEL_SLUG_MAX, blank=True)
    name = models.CharField(max_length=NAME_MAX)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="language_models"
    )
    architecture = models.ForeignKey(Architecture, null=True, blank=True, on_delete=models.PROTECT)
    recipe = models.ForeignKey(PretrainingRecipe, null=True, blank=True, on_delete=models.SET_NULL)
    parameter_count = models.BigIntegerField(null=True, blank=True)
    parameter_count_source = models.CharField(
        max_length=SOURCE_MAX, blank=True,
        help_text="Where the count is stated (paper and table, or model card); blank when counted from the weights.",
    )  # fmt: skip
    vocabulary = models.CharField(max_length=VOCABULARY_MAX, blank=True)
    pretraining_corpus = models.CharField(max_length=CORPUS_MAX, blank=True)
    max_sequence_length = models.PositiveIntegerField(null=True, blank=True)
    checkpoint = models.CharField(
        max_length=CHECKPOINT_MAX, blank=True, help_text="Local path, artefact URL or Hub id."
    )
    base_model = models.CharField(
        max_length=200, blank=True,
        help_text="The checkpoint it continued pretraining from, if any (a Hub id or name).",
    )  # fmt: skip
    hub_id = models.CharField(
        max_length=200, blank=True, help_text="The Hugging Face Hub repository it was submitted from (org/name)."
    )
    hub_commit = models.CharField(max_length=40, blank=True, help_text="The Hub commit its weights were fetched at.")
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    origin = models.CharField(max_length=12, choices=Origin.choices, default=Origin.REPRODUCED)
    source_paper = models.CharField(max_length=SOURCE_MAX, blank=True)
    # Two checkpoints of one model (BioBERT-Large v1.1 beside BioBERT-Base v1.1) stay two models, linked.
    version_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="versions",
        help_text="The model this one is another version (checkpoint) of; both pages link the other.",
    )  # fmt: skip
    notes = models.TextField(blank=True)
    # What its submitter says of it on the submission form (shown escaped; only an http(s) link is a link).
    description = models.TextField(blank=True)
    licence = models.CharField(max_length=100, blank=True, help_text="The licence its weights are released under.")
    homepage = models.URLField(max_length=500, blank=True, help_text="Its paper or code.")
    content_sha256 = models.CharField(
        max_length=64, blank=True, db_index=True,
        help_text="SHA-256 of the checkpoint's file names and contents: its owner's same weights reuse this model.",
    )  # fmt: skip
    pretraining = models.JSONField(
        null=True, blank=True, help_text="The pretraining report written with the checkpoint (pretraining.json)."
    )
    # The leaderboard's filters: stated by a published row or derived from the words above (biolm.facets).
    pretraining_domain = models.CharField(max_length=10, choices=Domain.choices, blank=True)
    vocabulary_kind = models.CharField(max_length=10, choices=VocabularyKind.choices, blank=True)
    initialisation = models.CharField(max_length=10, choices=Initialisation.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Indexed: every board's cache version reads the newest change to any model (board_cache.version).
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    objects = LanguageModelQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["namespace", "address_name"], name="unique_model_address_per_namespace")
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        self.fill_defaults()
        super().save(*args, **kwargs)

    def fill_defaults(self) -> LanguageModel:
        """Fill the facets the model's words imply, unless they were stated, and the address, unless given:
        its owner's username (``papers`` without one) and its slug.

        ``save`` calls it; ``bulk_create`` calls no ``save``, so whoever creates models in bulk calls it.
        """
        derived = facets(self.vocabulary or "", self.pretraining_corpus or "")
        for name, value in derived.items():
            if not getattr(self, name):
                setattr(self, name, value)
        if not self.namespace:
            self.namespace = default_namespace(self.owner)
        if not self.address_name:
            self.address_name = self.slug
        return self

    @property
    def address(self) -> str:
        """``namespace/name``, as pages, links and the API name it."""
        return f"{self.namespace}/{self.address_name}"

    @property
    def address_parts(self) -> tuple[str, str]:
        """The address as the arguments of the ``leaderboard:model`` and ``api:model-detail`` routes."""
        return self.namespace, self.address_name

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:model", args=self.address_parts)

    @property
    def hub_page(self) -> str:
        """Its repository on the Hub it was submitted from, at the commit evaluated ("" for other models)."""
        if not self.hub_id:
            return ""
        return f"{settings.BIOLM_HUB_ENDPOINT}/{self.hub_id}/tree/{self.hub_commit or 'main'}"

    def is_visible_to(self, user=None) -> bool:
        """Whether ``user`` may see this model: exactly when ``visible_to(user)`` holds it, without a query."""
        viewer = _viewer(user)
        if viewer == _SEES_ALL or self.visibility == self.Visibility.PUBLIC:
            return True
        return viewer != _SEES_PUBLIC and self.owner_id == viewer

    @property
    def size_bucket(self) -> str:
        if self.parameter_count is None:
            return ""
        return next(
            label for _, label, low, high in self.SIZE_BUCKETS
            if self.parameter_count >= low and (high is None or self.parameter_count < high)
        )  # fmt: skip


class ModelAlias(models.Model):
    """One paper's row for a reported model: the name that paper gives it and the table it comes from.

    Papers name one checkpoint differently ("BioBERT", "BioBERT-Base-v1.1"); each published row names
    its model identity (``biolm.model_identity.ModelIdentity``), and this row records the paper's naming, so the
    model page can say what each paper called it and each benchmark's board cites its own table. Before
    identities each row was a model of its own at ``papers/<benchmark>--<row>``; ``former_slug`` keeps
    that key, so its old URLs (snapshots taken then link them) redirect to the one model.
    """

    language_model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="aliases")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="model_aliases")
    row = models.CharField(max_length=LANGUAGE_MODEL_SLUG_MAX, help_text="The row's slug in the benchmark's table.")
    name = models.CharField(max_length=NAME_MAX, help_text="The model's name in that paper.")
    source = models.CharField(max_length=SOURCE_MAX, blank=True, help_text="The paper and table of the row.")
    notes = models.TextField(blank=True, help_text="What the paper's row says of the model.")
    former_slug = models.CharField(
        max_length=LANGUAGE_MODEL_SLUG_MAX, unique=True,
        help_text="The row's own model key before identities: papers/<this> redirects to the model.",
    )  # fmt: skip

    class Meta:
        constraints = [models.UniqueConstraint(fields=["benchmark", "row"], name="one_alias_per_published_row")]
        ordering = ["benchmark__name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.benchmark.slug}) = {self.language_model}"
