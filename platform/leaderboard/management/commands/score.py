"""``manage.py score --benchmark NAME --scores FILE.json``: aggregate a model's scores as the benchmark does.

The score file maps entry keys (dataset slugs for most benchmarks) to numbers on
the 0-100 scale, e.g. ``{"bc5-chem": 93.33, "ncbi-disease": 87.82, ...}``.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from biolm.aggregation import aggregate
from biolm.dataset_io import RepeatedKeyError, reject_repeated_keys
from biolm.plugins import collect_contributions, get_plugin_manager
from biolm.specs import BenchmarkSpec


class Command(BaseCommand):
    help = "Aggregate per-dataset scores from a JSON file into a benchmark's group and summary scores."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--benchmark", required=True, help="Benchmark slug, e.g. blurb.")
        parser.add_argument("--scores", required=True, type=Path, help='JSON file: {"dataset-slug": score, ...}')
        parser.add_argument("--json", action="store_true", help="Print JSON instead of text.")
        parser.add_argument(
            "--partial", action="store_true", help="Allow missing datasets (their groups and summaries stay empty)."
        )

    def handle(self, *args, **options) -> None:
        contributions = collect_contributions(
            get_plugin_manager(load_entrypoints=settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS)
        )
        benchmark = contributions.benchmarks.get(options["benchmark"])
        if benchmark is None:
            known = ", ".join(sorted(contributions.benchmarks))
            raise CommandError(f"unknown benchmark {options['benchmark']!r}; known benchmarks: {known}")
        ranges = {e.key: contributions.metrics[e.metric].value_range for e in benchmark.entries}
        scores = read_scores(options["scores"], benchmark, ranges)
        missing = [k for k in benchmark.entry_keys() if k not in scores]
        if missing and not options["partial"]:
            raise CommandError(
                f"{options['scores']}: missing score(s) for {', '.join(missing)} "
                f"(benchmark {benchmark.slug!r} needs all of them; pass --partial to aggregate anyway)"
            )
        outcome = aggregate(benchmark, scores)
        fractions = [key for key, value in scores.items() if 0 < abs(value) <= 1]
        if fractions:
            which = "every score is" if len(fractions) == len(scores) else f"{', '.join(fractions)} lie(s)"
            self.stderr.write(
                self.style.WARNING(f"{which} between 0 and 1; biolm expects the 0-100 scale the papers print")
            )
        precision = benchmark.precision
        if options["json"]:
            payload = {
                "benchmark": benchmark.slug,
                "primary": benchmark.aggregation.primary,
                "score": outcome.score,
                "groups": outcome.groups,
                "summaries": outcome.summaries,
                "entries": scores,
                "missing": list(outcome.missing),
                "aggregation_version": benchmark.aggregation.version,
            }
            self.stdout.write(json.dumps(payload, indent=2, allow_nan=False))  # strict JSON, always
            return
        fmt = lambda v: "-" if v is None else f"{v:.{precision}f}"  # noqa: E731
        width = max(len(e.label or e.key) for e in benchmark.entries)
        self.stdout.write(
            self.style.MIGRATE_HEADING(f"{benchmark.name} (aggregation v{benchmark.aggregation.version})")
        )
        for entry in benchmark.entries:
            self.stdout.write(f"  {(entry.label or entry.key):<{width}}  {fmt(scores.get(entry.key))}")
        for group in benchmark.aggregation.groups:
            self.stdout.write(f"  {group.name:<{width}}  {fmt(outcome.groups[group.slug])}  (group mean)")
        for summary in benchmark.aggregation.summaries:
            self.stdout.write(f"  {summary.name:<{width}}  {fmt(outcome.summaries[summary.slug])}")
        self.stdout.write(self.style.SUCCESS(f"score: {fmt(outcome.score)}"))


MAX_FILE_BYTES = 1024 * 1024  # a score file is a few hundred bytes; anything larger is not one


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a score")


def read_scores(
    path: Path, benchmark: BenchmarkSpec, ranges: dict[str, tuple[float, float]] | None = None
) -> dict[str, float]:
    """Read and check a score file; errors name the file, the line and what was expected.

    Refused: a path that is not a readable file, invalid or non-UTF-8 JSON, anything but one flat
    object, a key given twice, unknown keys, non-numbers, NaN and infinities, and values outside
    their metric's range (0-100 for most, -100-100 for correlations).
    """
    if path.is_dir():
        raise CommandError(f"{path}: is a directory; give the JSON file of scores")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise CommandError(f"{path}: {path.stat().st_size:,} bytes is too large for a score file")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=reject_repeated_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RepeatedKeyError as exc:
        raise CommandError(f"{path}: the key {exc.key!r} appears twice; give each score once") from None
    except RecursionError:
        raise CommandError(f"{path}: nested too deeply; expected one flat object of scores") from None
    except ValueError as exc:  # NaN/Infinity literals, integers of thousands of digits
        raise CommandError(f"{path}: invalid score file: {exc}") from None
    if not isinstance(data, dict):
        raise CommandError(f'{path}: expected a JSON object like {{"bc5-chem": 93.33}}, got {type(data).__name__}')
    keys = benchmark.entry_keys()
    unknown = [k for k in data if k not in keys]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name.lower(), keys, n=1, cutoff=0.6)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise CommandError(
            f"{path}: benchmark {benchmark.slug!r} has no dataset(s) {', '.join(hints)}; expected: {', '.join(keys)}"
        )
    scores: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CommandError(f"{path}: score for {key!r} must be a number, got {value!r:.60}")
        try:
            number = float(value)
        except OverflowError:
            raise CommandError(f"{path}: score for {key!r} is far too large to be a score") from None
        if not math.isfinite(number):
            raise CommandError(f"{path}: score for {key!r} must be a finite number, got {number}")
        low, high = (ranges or {}).get(key, (0.0, 100.0))
        if not low <= number <= high:
            raise CommandError(f"{path}: score for {key!r} is {number:g}, outside {low:g} to {high:g}")
        scores[key] = number
    return scores
