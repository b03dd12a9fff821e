"""What the registry tells other apps when it has mirrored the plugin contributions.

The registry owns the contributed rows; results and scores belong to the leaderboard, which
depends on the registry and not the other way round. So the registry announces what changed
and the leaderboard (``leaderboard.sync``) records the published results and recomputes scores.
Receivers run inside the sync's transaction: a failure rolls the whole sync back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.dispatch import Signal

from biolm.specs import BenchmarkSpec, PublishedModelSpec


@dataclass
class BenchmarkSynced:
    """One benchmark after its rows were written."""

    benchmark: object  # registry.models.Benchmark
    spec: BenchmarkSpec
    definition_changed: bool  # its aggregation or its entries changed: every stored score is stale
    published: list[tuple[object, PublishedModelSpec]] = field(default_factory=list)  # (LanguageModel, row)


# Sent once per benchmark with ``synced=BenchmarkSynced`` and ``report=SyncReport``.
benchmark_synced = Signal()
# Sent once at the end of a sync with ``report=SyncReport``.
contributions_synced = Signal()
