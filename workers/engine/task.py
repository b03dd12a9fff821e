"""What the engine knows about the task at hand: the dataset, its task type and the metric specs.

Everything is taken from the plugin contributions, so a third-party task type or metric is
fine-tuned and scored exactly as a built-in one: the task type names the formulation and the
protocol defaults, the metric specs carry the implementations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from biolm.plugins import Contributions
from biolm.schemas import Schema, get_schema
from biolm.specs import DatasetSpec, MetricSpec, TaskTypeSpec


@dataclass(frozen=True)
class Task:
    """A dataset with the task type and metrics its plugins contribute."""

    dataset: DatasetSpec
    task_type: TaskTypeSpec
    metrics: Mapping[str, MetricSpec]

    @classmethod
    def of(cls, contributions: Contributions, dataset: str | DatasetSpec) -> Task:
        """The task of ``dataset`` (a slug or a spec); errors name what is known."""
        if isinstance(dataset, str):
            spec = contributions.datasets.get(dataset)
            if spec is None:
                known = ", ".join(sorted(contributions.datasets))
                raise ValueError(f"unknown dataset {dataset!r}; known: {known}")
        else:
            spec = dataset
        task_type = contributions.task_types.get(spec.task_type)
        if task_type is None:
            raise ValueError(f"dataset {spec.slug!r} names the task type {spec.task_type!r}, which no plugin provides")
        return cls(spec, task_type, dict(contributions.metrics))

    @property
    def schema(self) -> Schema:
        return get_schema(self.task_type.schema)

    @property
    def metric_slugs(self) -> tuple[str, ...]:
        """The dataset's metric, then its companions (the dataset's own, else the task type's)."""
        companions = self.dataset.companion_metrics
        if companions is None:
            return self.task_type.metrics(self.dataset.metric)
        return tuple(dict.fromkeys((self.dataset.metric, *companions)))

    def metric(self, slug: str) -> MetricSpec:
        try:
            return self.metrics[slug]
        except KeyError:
            raise ValueError(f"no plugin provides the metric {slug!r}") from None

    @property
    def epochs(self) -> int:
        return self.dataset.epochs or self.task_type.epochs

    @property
    def seeds(self) -> int:
        return self.dataset.seeds or self.task_type.seeds
