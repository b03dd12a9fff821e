"""The submission form: what a researcher chooses, checked for what only a web form can get wrong.

Everything else (the checkpoint's safety, its tokenizer, the licence, the homepage's scheme, the
overrides' values, the quota, the same weights submitted twice) is checked by
:func:`submissions.submitting.submit`, the one service that the command line, the API and this
form share; :meth:`SubmissionForm.refuse` shows its refusal beside the field it concerns. The form
itself only turns the posted values into a :class:`~submissions.submitting.SubmissionRequest`, and
refuses early, in words for a web page rather than for a shell, what would otherwise come back
with a command-line option in it: a missing file, a recipe without a corpus, no dataset ticked,
advanced settings that are not a JSON object.

The datasets are listed for every benchmark (a checkbox's value is ``benchmark:dataset``), so the
form works without JavaScript; only the chosen benchmark's ticks count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath

from django import forms
from django.forms.utils import ErrorDict
from django.utils.text import slugify

from biolm.archives import ARCHIVE_SUFFIXES
from biolm.column_limits import NAME_MAX
from biolm.contract import Overrides
from biolm.model_identity import PAPERS_NAMESPACE
from registry.models import BenchmarkEntry, DatasetImport, LanguageModel, PretrainingRecipe
from registry.registration import RegistrationError, clean_display_name
from submissions.submitting import BASE_MODEL_MAX, SubmissionError, import_command

SOURCES = [
    ("checkpoint", "A checkpoint: upload a Hugging Face checkpoint I trained"),
    ("hub", "A Hugging Face Hub model: give its id, and biolm fetches it from the Hub"),
    ("recipe", "A recipe: pretrain a registered recipe on my corpus here, then evaluate the result"),
]
PREVIEW_CHOICES = [
    ("false", "The benchmark's full protocol"),
    (
        "true",
        "A quick preview (one grid point, one seed: its results are marked as a preview and never ranked "
        "beside full-protocol results)",
    ),
]
OVERRIDES_HELP = (
    'A JSON object of the protocol\'s settings to change, e.g. {"seeds": 3}. Results obtained so are shown as '
    "on custom settings. The settings: " + ", ".join(Overrides.names()) + "."
)
# Common licence ids (SPDX, lower-cased as the Hugging Face Hub writes them), offered as suggestions.
LICENCES = (
    "apache-2.0", "mit", "bsd-3-clause", "bsd-2-clause", "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0", "cc0-1.0", "gpl-3.0", "lgpl-3.0", "agpl-3.0", "mpl-2.0", "openrail", "other",
)  # fmt: skip
NOT_STATED = ("", "not stated")
DOMAINS = [NOT_STATED, *LanguageModel.Domain.choices]
VOCABULARIES = [
    NOT_STATED,
    (LanguageModel.VocabularyKind.DOMAIN, "its own, built from its domain's text (a domain vocabulary)"),
    (LanguageModel.VocabularyKind.GENERAL, "inherited from a general-domain model such as BERT (a general vocabulary)"),
]
STARTS = [
    NOT_STATED,
    (LanguageModel.Initialisation.SCRATCH, "from scratch (random weights)"),
    (LanguageModel.Initialisation.CONTINUAL, "from a base model's weights (continual pretraining)"),
]
# Which form field a refusal of submit() concerns (its SubmissionError.field); None: the whole form.
FIELD_FOR = {"model": "checkpoint", "gpus": None, "slug": "name"}
ARCHIVE_WORDS = ", ".join(ARCHIVE_SUFFIXES[:-1]) + f" or {ARCHIVE_SUFFIXES[-1]}"


@dataclass(frozen=True)
class BenchmarkChoice:
    """An active benchmark and its datasets (slug, name), each dataset once, in the benchmark's order."""

    slug: str
    name: str
    datasets: tuple[tuple[str, str], ...]
    missing: tuple[str, ...] = ()  # its datasets not imported on this site: it cannot run here until they are

    @property
    def runnable(self) -> bool:
        return not self.missing

    @property
    def command(self) -> str:
        """The operator's command that imports what it misses ("" when it can run)."""
        return import_command(list(self.missing)) if self.missing else ""


@dataclass(frozen=True)
class Catalogue:
    """What the form offers: the active benchmarks with their datasets (and those not imported), and the recipes."""

    benchmarks: tuple[BenchmarkChoice, ...]
    recipes: tuple[tuple[str, str], ...]

    @classmethod
    def load(cls) -> Catalogue:
        """Three queries: every active benchmark's entries, the datasets imported, and the recipes."""
        grouped: dict[str, tuple[str, dict[str, str]]] = {}
        entries = (
            BenchmarkEntry.objects.filter(benchmark__active=True)
            .select_related("benchmark", "dataset")
            .order_by("benchmark__name", "benchmark__slug", "position")
        )
        for entry in entries:
            _, datasets = grouped.setdefault(entry.benchmark.slug, (entry.benchmark.name, {}))
            datasets.setdefault(entry.dataset.slug, entry.dataset.name)
        imported = set(DatasetImport.objects.values_list("dataset__slug", flat=True).distinct())
        benchmarks = tuple(
            BenchmarkChoice(slug, name, tuple(datasets.items()), tuple(d for d in datasets if d not in imported))
            for slug, (name, datasets) in grouped.items()
        )
        recipes = tuple(PretrainingRecipe.objects.filter(active=True).order_by("name").values_list("slug", "name"))
        return cls(benchmarks, recipes)

    def benchmark(self, slug: str) -> BenchmarkChoice | None:
        return next((b for b in self.benchmarks if b.slug == slug), None)

    @property
    def unavailable(self) -> tuple[BenchmarkChoice, ...]:
        """The benchmarks shown disabled: some of their datasets are not imported here."""
        return tuple(b for b in self.benchmarks if not b.runnable)

    @property
    def default(self) -> BenchmarkChoice | None:
        """The form's first choice: the first benchmark that can run here (else the first, shown disabled)."""
        return next((b for b in self.benchmarks if b.runnable), self.benchmarks[0] if self.benchmarks else None)


def upload_name(name: str) -> str:
    """The uploaded file's own name without any folder a browser sent with it (the name messages show)."""
    return PurePosixPath(name.replace("\\", "/")).name[:200]


class SubmissionForm(forms.Form):
    source = forms.ChoiceField(
        label="What to evaluate", choices=SOURCES, initial="checkpoint", widget=forms.RadioSelect
    )
    checkpoint = forms.FileField(label="Checkpoint archive", required=False, allow_empty_file=False)
    hub = forms.CharField(label="Hugging Face Hub id", required=False, max_length=300)  # resolved by submit()
    hub_token = forms.CharField(label="Hub token", required=False, max_length=300, strip=True)
    recipe = forms.ChoiceField(label="Recipe", required=False)
    corpus = forms.FileField(label="Corpus", required=False, allow_empty_file=False)
    steps = forms.IntegerField(  # how many is submit's rule, shown beside this field
        label="Pretraining steps",
        required=False,
        error_messages={
            "invalid": "give the number of pretraining steps as a whole number, or leave it empty for the recipe's",
        },
    )
    benchmark = forms.ChoiceField(
        label="Benchmark",
        error_messages={
            "required": "choose the benchmark to evaluate on",
            "invalid_choice": "choose a benchmark from the list (%(value)s is not one)",
        },
    )
    datasets = forms.MultipleChoiceField(label="Datasets", required=False)
    preview = forms.TypedChoiceField(
        label="Evaluation", choices=PREVIEW_CHOICES, initial="false", widget=forms.RadioSelect, required=False,
        coerce=lambda value: value == "true", empty_value=False,
    )  # fmt: skip
    overrides = forms.CharField(label="Changed settings (advanced)", required=False, help_text=OVERRIDES_HELP)
    rerun = forms.BooleanField(
        label="Evaluate again even if these weights were already evaluated with these settings", required=False
    )
    name = forms.CharField(
        label="Model name",
        max_length=NAME_MAX,
        error_messages={
            "required": "give the model a name: the leaderboard and its page show it",
            "max_length": "shorten the name to at most %(limit_value)d characters (it has %(show_value)d)",
        },
    )
    description = forms.CharField(label="Description", required=False, widget=forms.Textarea)
    licence = forms.CharField(label="Licence", required=False)  # required and checked by submit(), the API's check too
    homepage = forms.CharField(label="Paper or code URL", required=False)  # an http(s) address, checked by submit()
    # The leaderboard's filters; their values are checked by submit(), which also makes a base model "continual".
    pretraining_domain = forms.ChoiceField(label="Pretraining domain", required=False, choices=DOMAINS)
    vocabulary_kind = forms.ChoiceField(label="Vocabulary", required=False, choices=VOCABULARIES)
    initialisation = forms.ChoiceField(label="Pretraining started", required=False, choices=STARTS)
    base_model = forms.CharField(label="Base model", required=False, max_length=BASE_MODEL_MAX)

    def __init__(self, *args, catalogue: Catalogue, refused: dict[str, str] | None = None, **kwargs) -> None:
        """``refused``: uploads stopped while they arrived, field name to the sentence saying why."""
        super().__init__(*args, **kwargs)
        self.catalogue = catalogue
        self.refused = refused or {}
        self.fields["benchmark"].choices = [(b.slug, b.name) for b in catalogue.benchmarks]
        self.fields["recipe"].choices = [("", "choose a recipe"), *catalogue.recipes]
        self.fields["datasets"].choices = [
            (f"{b.slug}:{slug}", name) for b in catalogue.benchmarks for slug, name in b.datasets
        ]
        self.fields["datasets"].initial = [value for value, _ in self.fields["datasets"].choices]
        if catalogue.default is not None:
            self.fields["benchmark"].initial = catalogue.default.slug
        self.fields["recipe"].error_messages["invalid_choice"] = "choose a recipe from the list (%(value)s is not one)"
        for field in ("checkpoint", "corpus"):
            self.fields[field].error_messages.update(
                {"empty": "the file is empty; choose the right one", "invalid": "send the form with a file chosen"}
            )

    @classmethod
    def unread(cls, catalogue: Catalogue, refused: dict[str, str]) -> SubmissionForm:
        """The blank form with ``refused`` beside their fields (a request refused unread has no values to show)."""
        form = cls(catalogue=catalogue)
        form._errors = ErrorDict({field: form.error_class([sentence]) for field, sentence in refused.items()})
        return form

    def clean_name(self) -> str:
        try:
            return clean_display_name(self.cleaned_data["name"])
        except RegistrationError:
            raise forms.ValidationError("give the model a name of printable characters") from None

    def clean_overrides(self) -> dict:
        """The advanced settings as a JSON object (their values are checked by submit, beside this field)."""
        text = self.cleaned_data["overrides"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            raise forms.ValidationError('write the settings as a JSON object, e.g. {"seeds": 3}') from None
        if not isinstance(value, dict):
            raise forms.ValidationError('write the settings as a JSON object, e.g. {"seeds": 3}')
        return value

    def clean(self) -> dict:
        data = super().clean()
        for field, sentence in self.refused.items():
            self.add_error(field, sentence)
        if data.get("source") == "checkpoint" and "checkpoint" not in self.refused:
            self._check_archive(data.get("checkpoint"))
        elif data.get("source") == "hub":
            if not data.get("hub") and "hub" not in self.errors:
                self.add_error(
                    "hub", "give the model's Hub id: org/name, optionally @revision (a branch, tag or commit)"
                )
        elif data.get("source") == "recipe":
            if not data.get("recipe") and "recipe" not in self.errors:
                self.add_error("recipe", "choose the recipe to pretrain")
            if not data.get("corpus") and "corpus" not in self.errors and "corpus" not in self.refused:
                self.add_error("corpus", "choose the corpus to upload: a text file with one document per line")
        benchmark = self.catalogue.benchmark(data.get("benchmark", ""))
        if benchmark is not None:
            data["datasets"] = self._datasets_of(benchmark, data.get("datasets", []))
        return data

    def _check_archive(self, upload) -> None:
        if upload is None:
            if "checkpoint" not in self.errors:
                self.add_error(
                    "checkpoint", f"choose the checkpoint to upload: a {ARCHIVE_WORDS} archive of its folder"
                )
            return
        name = upload_name(upload.name)
        suffix = archive_suffix(name)
        if not suffix:
            self.add_error(
                "checkpoint",
                f"{name} is not an archive; pack the checkpoint's folder into a {ARCHIVE_WORDS} file "
                "(for example: tar czf my-model.tar.gz my-model/)",
            )
        elif not slugify(name.removesuffix(suffix)):
            self.add_error(
                "checkpoint", f"rename {name} so that its name holds letters or digits: it becomes the model's address"
            )

    def _datasets_of(self, benchmark: BenchmarkChoice, ticked: list[str]) -> tuple[str, ...]:
        """The ticked datasets of the chosen benchmark (ticks under another benchmark's heading do not count)."""
        chosen = tuple(value.split(":", 1)[1] for value in ticked if value.startswith(f"{benchmark.slug}:"))
        if not chosen:
            self.add_error("datasets", f"tick at least one of {benchmark.name}'s datasets")
        return chosen

    def refuse(self, error: SubmissionError) -> None:
        """Show ``submit()``'s refusal beside the field it concerns (at the top when it concerns the whole form)."""
        field = FIELD_FOR.get(error.field, error.field)
        if field == "checkpoint" and self.cleaned_data.get("source") == "recipe":
            field = "recipe"
        self.add_error(field if field in self.fields else None, str(error))

    def dataset_groups(self) -> list[tuple[BenchmarkChoice, list[tuple[str, str, bool]]]]:
        """Per benchmark, its datasets as (slug, name, ticked): all ticked at first, then as the user left them."""
        ticked = set(self["datasets"].value() or [])
        return [
            (benchmark, [(slug, name, f"{benchmark.slug}:{slug}" in ticked) for slug, name in benchmark.datasets])
            for benchmark in self.catalogue.benchmarks
        ]


def archive_suffix(name: str) -> str:
    """The archive suffix ``name`` ends with (``.tar.gz``, ...), or "" if it is not an archive's name."""
    return next((suffix for suffix in ARCHIVE_SUFFIXES if name.endswith(suffix)), "")


def base_model_suggestions(limit: int = 500) -> list[str]:
    """What the base model field suggests: the public models' Hub ids (their addresses outside ``papers/``)
    and names, each once, sorted; a submitter may type any other."""
    rows = LanguageModel.objects.public().values_list("namespace", "address_name", "name")[:limit]
    hub_ids = {f"{space}/{name}" for space, name, _ in rows if space and space != PAPERS_NAMESPACE}
    return sorted(hub_ids | {name for _, _, name in rows}, key=str.lower)
