"""The job specs: one typed, versioned document per job kind, built and checked once, at submit.

Every layer a job crosses reads the same document: ``submit`` builds it (values checked, not only
keys) and stores it on the job; the claim returns it once; the GPU worker writes it to a file and
runs the engine with ``--spec FILE``; the engine records it in its results document; the recording
and the pages read it back. Each kind is a frozen dataclass with ``to_json`` and ``from_json``:
the JSON carries :data:`SPEC_VERSION` and the kind, and an unknown version, kind or field is
refused rather than misread.

* :class:`PretrainJob`: a recipe on a corpus, on some GPUs of one host.
* :class:`FinetuneJob`: a protocol on one dataset, for one model, with the submitter's overrides.
* :class:`ScoreJob`: scoring a fine-tuning job's test predictions against the gold only the platform
  holds, and recording the result.
* :class:`FetchJob`: fetching a checkpoint from the Hugging Face Hub, at one commit, through the intake.

Where a job's files are on a machine (the downloaded checkpoint, the exported data, the output
folder) is not part of the document: the worker passes them beside it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from biolm.contract.code import CodePin
from biolm.contract.errors import ContractError
from biolm.contract.overrides import Overrides
from biolm.contract.slices import Slice, check_reads
from biolm.contract.task_options import TaskOptions
from biolm.name_patterns import HUB_ID_RE
from biolm.spec_checks import SpecError, check_slug

SPEC_VERSION = 1  # fine-tuning and scoring specs
PRETRAIN_SPEC_VERSION = 2  # 2 added ``nodes``; version 1 (one node) is still read, for jobs queued before
GPUS_MAX = 64
NODES_MAX = 1024
STEPS_MAX = 100_000_000
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")  # a git commit's full hash, as the Hugging Face Hub names revisions
# What ``POST jobs/<id>/complete`` answers (202) when the platform checks the outputs after the call, off the
# web request (a pretraining job's model): the worker is done with the job, which is not yet succeeded.
COMPLETION_CHECKING = "checking"


def _fields(
    data: object, kind: str, allowed: set[str], required: set[str], versions: tuple[int, ...] = (SPEC_VERSION,)
) -> dict[str, Any]:
    """The document's fields, after its version and kind are checked; unknown and missing fields refused.

    ``versions``: those this biolm reads, the newest last (the one it writes).
    """
    if not isinstance(data, Mapping):
        raise ContractError(f"a {kind} spec must be a JSON object, not {type(data).__name__}")
    values = dict(data)
    version = values.pop("version", None)
    if version not in versions or isinstance(version, bool):
        readable = " or ".join(str(v) for v in versions)
        raise ContractError(f"this biolm reads {kind} spec version {readable}, not {version!r}", "version")
    if values.pop("kind", None) != kind:
        raise ContractError(f"not a {kind} spec (kind {data.get('kind')!r})", "kind")
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ContractError(f"{kind} spec: unknown field(s) {', '.join(unknown)}", unknown[0])
    missing = sorted(required - set(values))
    if missing:
        raise ContractError(f"{kind} spec: missing field(s) {', '.join(missing)}", missing[0])
    return values


def _slug(value: object, name: str, optional: bool = False) -> None:
    if optional and value is None:
        return
    try:
        check_slug(value, name)
    except SpecError as exc:
        raise ContractError(str(exc), name) from None


def _flag(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise ContractError(f"{name} must be true or false, not {value!r}", name)


def _count(value: object, name: str, low: int, high: int, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ContractError(f"{name} must be a whole number from {low:,} to {high:,}, not {value!r}", name)


def _text(value: object, name: str, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value:
        raise ContractError(f"{name} must be non-empty text, not {value!r}", name)


def _code(values: object) -> tuple[CodePin, ...]:
    if not isinstance(values, list | tuple):
        raise ContractError("code must be a list of pins", "code")
    return tuple(value if isinstance(value, CodePin) else CodePin.from_json(value) for value in values)


@dataclass(frozen=True)
class Artefact:
    """A file in the artefact store: its name there, its size and digest, and its path inside its folder."""

    name: str
    size: int
    sha256: str
    path: str = ""

    def __post_init__(self) -> None:
        _text(self.name, "artefact name")
        _count(self.size, f"the size of {self.name}", 0, 2**63 - 1)
        if not isinstance(self.sha256, str) or len(self.sha256) != 64:
            raise ContractError(f"the sha256 of {self.name} must be 64 hex digits", "sha256")
        if not isinstance(self.path, str):
            raise ContractError(f"the path of {self.name} must be text", "path")

    def to_json(self) -> dict:
        data = {"name": self.name, "size": self.size, "sha256": self.sha256}
        return {**data, "path": self.path} if self.path else data

    @classmethod
    def from_json(cls, data: object) -> Artefact:
        if not isinstance(data, Mapping) or set(data) - {"name", "size", "sha256", "path"}:
            raise ContractError(f"an artefact is {{name, size, sha256[, path]}}, not {data!r}", "artefact")
        try:
            return cls(**dict(data))
        except TypeError as exc:
            raise ContractError(f"artefact {data!r}: {exc}", "artefact") from None


@dataclass(frozen=True)
class ModelInput:
    """Where a fine-tuning job's encoder comes from: exactly one of a stored checkpoint, a pretraining job's
    output, a Hub fetch job's output, an architecture built from scratch, or a local folder (a person's own
    run of the engine)."""

    checkpoint: tuple[Artefact, ...] = ()
    prefix: str = ""  # the folder the worker lays the files out under
    pretrained_by: int | None = None  # the pretraining job that writes the checkpoint
    architecture: str | None = None  # NAME[:preset], e.g. bert:tiny
    directory: str | None = None
    fetched_by: int | None = None  # the Hub fetch job that stores the checkpoint

    def __post_init__(self) -> None:
        given = [bool(self.checkpoint), self.pretrained_by is not None, bool(self.architecture), bool(self.directory),
                 self.fetched_by is not None]  # fmt: skip
        if sum(given) != 1:
            raise ContractError(
                "the model is exactly one of: checkpoint (stored files), pretrained_by or fetched_by (a job), "
                "architecture or directory",
                "model",
            )
        _count(self.pretrained_by, "pretrained_by", 1, 2**63 - 1, optional=True)
        _count(self.fetched_by, "fetched_by", 1, 2**63 - 1, optional=True)
        if (self.checkpoint or self.made_by is not None) and not self.prefix:
            raise ContractError("a stored model needs its prefix (where its files are laid out)", "model")

    @property
    def made_by(self) -> int | None:
        """The job whose output the model is (a pretraining or a Hub fetch job), or None for files already stored."""
        return self.pretrained_by if self.pretrained_by is not None else self.fetched_by

    def to_json(self) -> dict:
        if self.checkpoint:
            return {"checkpoint": [a.to_json() for a in self.checkpoint], "prefix": self.prefix}
        if self.pretrained_by is not None:
            return {"pretrained_by": self.pretrained_by, "prefix": self.prefix}
        if self.fetched_by is not None:
            return {"fetched_by": self.fetched_by, "prefix": self.prefix}
        return {"architecture": self.architecture} if self.architecture else {"directory": self.directory}

    @classmethod
    def from_json(cls, data: object) -> ModelInput:
        if not isinstance(data, Mapping):
            raise ContractError(f"model must be a JSON object, not {type(data).__name__}", "model")
        unknown = sorted(
            set(data) - {"checkpoint", "prefix", "pretrained_by", "architecture", "directory", "fetched_by"}
        )
        if unknown:
            raise ContractError(f"model: unknown field(s) {', '.join(unknown)}", "model")
        values = dict(data)
        checkpoint = values.pop("checkpoint", [])
        if not isinstance(checkpoint, list | tuple):
            raise ContractError("model checkpoint must be a list of artefacts", "model")
        return cls(checkpoint=tuple(Artefact.from_json(entry) for entry in checkpoint), **values)

    @property
    def name(self) -> str:
        """How the results document names the model (a person's folder or architecture, or the stored files)."""
        return self.directory or self.architecture or self.prefix


class JobSpec:
    """What every job spec has: a kind, a version, the code it pins, and a JSON form."""

    KIND: ClassVar[str] = ""
    code: tuple[CodePin, ...]

    def to_json(self) -> dict:  # pragma: no cover - each kind defines it
        raise NotImplementedError

    def pinned(self, name: str) -> CodePin | None:
        return next((pin for pin in self.code if pin.name == name), None)


@dataclass(frozen=True)
class FinetuneJob(JobSpec):
    """A protocol on one dataset: grid on dev, seeds (or folds) on test, for one model."""

    KIND: ClassVar[str] = "finetune"

    dataset: str
    protocol: str
    metric: str  # what the run selects checkpoints and reports by: the benchmark's metric for the dataset
    model: ModelInput
    benchmark: str | None = None
    overrides: Overrides = field(default_factory=Overrides)
    task_options: TaskOptions = field(default_factory=TaskOptions)
    preview: bool = False  # a quick preview: marked as such wherever shown, never ranked
    cross_validation: bool = False  # the protocol scores the dataset on its folds
    code: tuple[CodePin, ...] = ()
    slice: str | None = None  # the part of the protocol this job runs (biolm.contract.slices); None: all of it
    reads: tuple[tuple[str, int], ...] = ()  # (slice document name, job id) of the earlier slices it reads

    def __post_init__(self) -> None:
        _slug(self.dataset, "dataset")
        _slug(self.protocol, "protocol")
        _slug(self.metric, "metric")
        _slug(self.benchmark, "benchmark", optional=True)
        _flag(self.preview, "preview")
        _flag(self.cross_validation, "cross_validation")
        for name, kind in (("model", ModelInput), ("overrides", Overrides), ("task_options", TaskOptions)):
            if not isinstance(getattr(self, name), kind):
                raise ContractError(f"{name} must be a {kind.__name__}", name)
        object.__setattr__(self, "code", _code(self.code))
        if self.slice is not None:
            Slice.parse(self.slice)
        object.__setattr__(self, "reads", check_reads(self.reads))
        if self.reads and self.slice is None:
            raise ContractError("only a slice of a protocol reads other slices' documents", "reads")

    @property
    def part(self) -> Slice | None:
        """The slice this job runs, or None for the whole protocol."""
        return None if self.slice is None else Slice.parse(self.slice)

    def whole(self) -> FinetuneJob:
        """The job of the whole protocol this one is a slice of: what its slices share, and what reuse compares."""
        return dataclasses.replace(self, slice=None, reads=())

    def whole_digest(self) -> str:
        """The SHA-256 of :meth:`whole`'s JSON: a slice's document carries it, so another job's is refused."""
        text = json.dumps(self.whole().to_json(), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_json(self) -> dict:
        sliced = {} if self.slice is None else {"slice": self.slice, "reads": [list(pair) for pair in self.reads]}
        return {
            "version": SPEC_VERSION,
            "kind": self.KIND,
            "dataset": self.dataset,
            "benchmark": self.benchmark,
            "protocol": self.protocol,
            "metric": self.metric,
            "overrides": self.overrides.to_json(),
            "task_options": self.task_options.to_json(),
            "preview": self.preview,
            "cross_validation": self.cross_validation,
            "model": self.model.to_json(),
            "code": [pin.to_json() for pin in self.code],
            **sliced,
        }

    @classmethod
    def from_json(cls, data: object) -> FinetuneJob:
        allowed = {"dataset", "benchmark", "protocol", "metric", "overrides", "task_options", "preview",
                   "cross_validation", "model", "code", "slice", "reads"}  # fmt: skip
        values = _fields(data, cls.KIND, allowed, {"dataset", "protocol", "metric", "model"})
        values["overrides"] = Overrides.from_json(values.get("overrides"))
        values["task_options"] = TaskOptions.from_json(values.get("task_options"))
        values["model"] = ModelInput.from_json(values["model"])
        values["code"] = _code(values.get("code", []))
        values["reads"] = check_reads(values.get("reads", []))
        return cls(**values)


@dataclass(frozen=True)
class ScoreJob(JobSpec):
    """Score a fine-tuning job's test predictions with the gold only the platform holds, and record the result."""

    KIND: ClassVar[str] = "score"

    dataset: str
    benchmark: str
    metric: str
    finetune_job: int
    variant: str = ""
    preview: bool = False
    code: tuple[CodePin, ...] = ()

    def __post_init__(self) -> None:
        _slug(self.dataset, "dataset")
        _slug(self.benchmark, "benchmark")
        _slug(self.metric, "metric")
        _count(self.finetune_job, "finetune_job", 1, 2**63 - 1)
        if not isinstance(self.variant, str) or len(self.variant) > 200:
            raise ContractError(f"variant must be text of at most 200 characters, not {self.variant!r}", "variant")
        _flag(self.preview, "preview")
        object.__setattr__(self, "code", _code(self.code))

    def to_json(self) -> dict:
        return {
            "version": SPEC_VERSION,
            "kind": self.KIND,
            "dataset": self.dataset,
            "benchmark": self.benchmark,
            "metric": self.metric,
            "variant": self.variant,
            "finetune_job": self.finetune_job,
            "preview": self.preview,
            "code": [pin.to_json() for pin in self.code],
        }

    @classmethod
    def from_json(cls, data: object) -> ScoreJob:
        allowed = {"dataset", "benchmark", "metric", "variant", "finetune_job", "preview", "code"}
        values = _fields(data, cls.KIND, allowed, {"dataset", "benchmark", "metric", "finetune_job"})
        values["code"] = _code(values.get("code", []))
        return cls(**values)


@dataclass(frozen=True)
class PretrainJob(JobSpec):
    """Pretrain a recipe on a corpus (torchrun on ``gpus`` GPUs of each of ``nodes`` hosts) and store the checkpoint.

    ``gpus`` is per node, as torchrun's ``--nproc-per-node`` and Slurm's ``--gpus-per-node`` count them.
    """

    KIND: ClassVar[str] = "pretrain"

    recipe: str
    corpus: Artefact
    output: str  # where the checkpoint is stored (an artefact-store prefix)
    steps: int | None = None  # the recipe's when None
    settings: Mapping[str, Any] = field(default_factory=dict)
    gpus: int = 1
    code: tuple[CodePin, ...] = ()
    nodes: int = 1

    def __post_init__(self) -> None:
        _slug(self.recipe, "recipe")
        _count(self.nodes, "nodes", 1, NODES_MAX)
        if not isinstance(self.corpus, Artefact):
            raise ContractError("corpus must be an artefact", "corpus")
        _text(self.output, "output")
        _count(self.steps, "steps", 1, STEPS_MAX, optional=True)
        _count(self.gpus, "gpus", 1, GPUS_MAX)
        if not isinstance(self.settings, Mapping):
            raise ContractError(f"settings must be a JSON object, not {self.settings!r}", "settings")
        object.__setattr__(self, "settings", dict(self.settings))
        object.__setattr__(self, "code", _code(self.code))

    def __hash__(self) -> int:
        return hash((self.recipe, self.corpus, self.output, self.steps, self.gpus, self.nodes, self.code))

    @property
    def processes(self) -> int:
        return self.gpus * self.nodes

    def to_json(self) -> dict:
        return {
            "version": PRETRAIN_SPEC_VERSION,
            "kind": self.KIND,
            "recipe": self.recipe,
            "corpus": self.corpus.to_json(),
            "output": self.output,
            "steps": self.steps,
            "settings": dict(self.settings),
            "gpus": self.gpus,
            "nodes": self.nodes,
            "code": [pin.to_json() for pin in self.code],
        }

    @classmethod
    def from_json(cls, data: object) -> PretrainJob:
        version = data.get("version") if isinstance(data, Mapping) else None
        allowed = {"recipe", "corpus", "output", "steps", "settings", "gpus", "code"} | (
            {"nodes"} if version == 2 else set()
        )
        values = _fields(data, cls.KIND, allowed, {"recipe", "corpus", "output"}, (1, PRETRAIN_SPEC_VERSION))
        values["corpus"] = Artefact.from_json(values["corpus"])
        values["code"] = _code(values.get("code", []))
        return cls(**values)


@dataclass(frozen=True)
class FetchJob(JobSpec):
    """Fetch a model repository of the Hugging Face Hub at one commit, check it as any submitted checkpoint, store it.

    The commit was resolved at submit (a branch or tag moves; a commit does not), so every attempt fetches the
    same files. A gated repository's token is not part of the spec: the platform keeps it apart, encrypted,
    until the job ends (:mod:`jobs.hub_tokens`), and the job runs where the database is, which reads it there.
    """

    KIND: ClassVar[str] = "fetch"

    repository: str  # org/name
    revision: str  # the commit's full hash
    output: str  # where the checked checkpoint is stored (an artefact-store prefix)
    code: tuple[CodePin, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.repository, str) or not HUB_ID_RE.match(self.repository):
            raise ContractError(f"repository must be a Hub id org/name, not {self.repository!r}", "repository")
        if not isinstance(self.revision, str) or not COMMIT_RE.match(self.revision):
            raise ContractError(f"revision must be a commit's 40 hex digits, not {self.revision!r}", "revision")
        _text(self.output, "output")
        object.__setattr__(self, "code", _code(self.code))

    def to_json(self) -> dict:
        return {
            "version": SPEC_VERSION,
            "kind": self.KIND,
            "repository": self.repository,
            "revision": self.revision,
            "output": self.output,
            "code": [pin.to_json() for pin in self.code],
        }

    @classmethod
    def from_json(cls, data: object) -> FetchJob:
        values = _fields(data, cls.KIND, {"repository", "revision", "output", "code"}, {"repository", "revision",
                                                                                        "output"})  # fmt: skip
        values["code"] = _code(values.get("code", []))
        return cls(**values)


JOB_KINDS: dict[str, type[JobSpec]] = {kind.KIND: kind for kind in (PretrainJob, FinetuneJob, ScoreJob, FetchJob)}


def parse_job_spec(data: object) -> PretrainJob | FinetuneJob | ScoreJob | FetchJob:
    """The spec of any kind, by its ``kind``; an unknown kind is a :class:`ContractError`."""
    kind = data.get("kind") if isinstance(data, Mapping) else None
    if kind not in JOB_KINDS:
        raise ContractError(f"unknown job kind {kind!r}; the kinds: {', '.join(JOB_KINDS)}", "kind")
    return JOB_KINDS[kind].from_json(data)
