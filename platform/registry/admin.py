"""Admin for plugin-contributed rows (read-mostly: plugins are their source) and language models."""

from django.contrib import admin

from registry.models import (
    Architecture,
    Benchmark,
    BenchmarkEntry,
    DataHolder,
    Dataset,
    DatasetImport,
    LanguageModel,
    Metric,
    ModelAlias,
    PretrainingRecipe,
    TaskType,
)


class ContributedAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "plugin", "active", "updated_at")
    list_filter = ("active", "plugin")
    search_fields = ("slug", "name", "description")
    readonly_fields = ("plugin", "updated_at")


@admin.register(Metric)
class MetricAdmin(ContributedAdmin):
    list_display = ("slug", "name", "higher_is_better", "plugin", "active")


@admin.register(TaskType)
class TaskTypeAdmin(ContributedAdmin):
    pass


@admin.register(Architecture)
class ArchitectureAdmin(ContributedAdmin):
    list_display = ("slug", "name", "model_type", "max_sequence_length", "plugin", "active")


@admin.register(PretrainingRecipe)
class PretrainingRecipeAdmin(ContributedAdmin):
    pass


@admin.register(Dataset)
class DatasetAdmin(ContributedAdmin):
    list_display = ("slug", "name", "task_type", "metric", "domain", "access", "held_by", "plugin", "active")
    list_filter = ("domain", "access", "held_by", "task_type", "active", "plugin")
    list_select_related = ("task_type", "metric")


@admin.register(DataHolder)
class DataHolderAdmin(admin.ModelAdmin):
    """Holders are made, bound and given credentials with ``manage.py holders``; here their approvers are kept."""

    list_display = ("name", "title", "queue", "created_at")
    readonly_fields = ("name", "credential_sha256", "created_at")
    filter_horizontal = ("approvers",)

    def has_add_permission(self, request) -> bool:
        return False  # the credential is shown once, by `manage.py holders add`


class BenchmarkEntryInline(admin.TabularInline):
    model = BenchmarkEntry
    extra = 0
    fields = ("position", "key", "dataset", "metric", "label", "variant")


@admin.register(Benchmark)
class BenchmarkAdmin(ContributedAdmin):
    list_display = ("slug", "name", "aggregation_version", "source_paper", "plugin", "active")
    inlines = [BenchmarkEntryInline]


class ModelAliasInline(admin.TabularInline):
    """Each paper's row for the model: written by sync_plugins from the plugins, read-only here."""

    model = ModelAlias
    extra = 0
    readonly_fields = ("benchmark", "row", "name", "source", "former_slug")
    exclude = ("notes",)
    can_delete = False


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "origin", "architecture", "parameter_count", "visibility", "owner", "version_of")
    list_filter = ("origin", "visibility", "architecture")
    search_fields = ("name", "slug", "pretraining_corpus", "vocabulary", "source_paper", "aliases__name")
    list_select_related = ("architecture", "owner", "version_of")
    autocomplete_fields = ("owner",)
    raw_id_fields = ("version_of",)
    inlines = [ModelAliasInline]


@admin.register(DatasetImport)
class DatasetImportAdmin(admin.ModelAdmin):
    """Sizes, fingerprint and the longest inputs' ids; never the examples or their labels."""

    list_display = ("dataset", "fingerprint", "split_sizes", "imported_at")
    list_filter = ("dataset__domain", "dataset__demo")
    search_fields = ("dataset__slug", "fingerprint", "source_path")
    readonly_fields = [f.name for f in DatasetImport._meta.fields]
