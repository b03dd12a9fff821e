"""A host's checkpoint cache (``workers.runner.input_cache``): one download per file per host, shared by its
workers, keyed by the manifest's SHA-256 and kept within its size by evicting the least recently used."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from workers.runner.input_cache import InputCache


def entry(content: bytes, path: str = "model.safetensors") -> dict:
    return {"path": path, "size": len(content), "sha256": hashlib.sha256(content).hexdigest(), "url": "http://x/"}


class Source:
    """A download that writes what the platform holds and counts its calls in a file (across processes)."""

    def __init__(self, folder: Path, contents: dict[str, bytes], delay_s: float = 0.0) -> None:
        self.calls, self.contents, self.delay_s = folder / "downloads.txt", contents, delay_s

    def __call__(self, item: dict, target: Path) -> Path:
        with self.calls.open("a") as calls:
            calls.write(item["sha256"] + "\n")
        time.sleep(self.delay_s)
        target.write_bytes(self.contents[item["sha256"]])
        return target

    def count(self) -> int:
        return len(self.calls.read_text().splitlines()) if self.calls.exists() else 0


def test_a_second_job_on_the_host_links_the_cached_file_and_downloads_nothing(tmp_path):
    weights = os.urandom(4096)
    item = entry(weights)
    source = Source(tmp_path, {item["sha256"]: weights})
    cache = InputCache(tmp_path / "cache", 1 << 20)
    assert cache.fetch(item, tmp_path / "job-1" / "model.safetensors", source) is False
    assert cache.fetch(item, tmp_path / "job-2" / "model.safetensors", source) is True
    assert source.count() == 1
    first, second = (tmp_path / job / "model.safetensors" for job in ("job-1", "job-2"))
    assert first.read_bytes() == second.read_bytes() == weights
    assert first.stat().st_ino == second.stat().st_ino  # one copy on the disk
    assert not first.stat().st_mode & 0o222  # read-only: no job can change what the others read


def fetch_in_process(root: str, folder: str, weights: bytes, job: str) -> None:
    item = entry(weights)
    InputCache(Path(root), 1 << 20).fetch(
        item, Path(folder) / job / "w.bin", Source(Path(folder), {item["sha256"]: weights}, 0.5)
    )


def test_two_workers_fetching_the_same_file_at_once_download_it_once(tmp_path):
    weights = os.urandom(2048)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=fetch_in_process, args=(str(tmp_path / "cache"), str(tmp_path), weights, job))
               for job in ("a", "b")]  # fmt: skip
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert Source(tmp_path, {}).count() == 1
    assert (tmp_path / "a" / "w.bin").read_bytes() == (tmp_path / "b" / "w.bin").read_bytes() == weights


def test_the_least_recently_used_files_are_evicted_to_keep_the_cache_within_its_size(tmp_path):
    contents = {name: bytes([index]) * 1000 for index, name in enumerate("abc")}
    items = {name: entry(data, f"{name}.bin") for name, data in contents.items()}
    source = Source(tmp_path, {items[name]["sha256"]: data for name, data in contents.items()})
    cache = InputCache(tmp_path / "cache", 2500)  # room for two of the three
    cache.fetch(items["a"], tmp_path / "j1" / "a.bin", source)
    time.sleep(0.02)
    cache.fetch(items["b"], tmp_path / "j1" / "b.bin", source)
    time.sleep(0.02)
    assert cache.fetch(items["a"], tmp_path / "j2" / "a.bin", source)  # a used again: b is now the oldest
    time.sleep(0.02)
    cache.fetch(items["c"], tmp_path / "j2" / "c.bin", source)
    held = {path.name for path in (tmp_path / "cache").glob("??/*") if len(path.name) == 64}
    assert held == {items["a"]["sha256"], items["c"]["sha256"]}
    assert (tmp_path / "j1" / "b.bin").read_bytes() == contents["b"]  # a job's link outlives the eviction
    assert not cache.fetch(items["b"], tmp_path / "j3" / "b.bin", source)  # fetched again when needed


def test_a_failed_download_leaves_nothing_in_the_cache_and_the_next_job_downloads_again(tmp_path):
    weights = b"weights"
    item = entry(weights)
    cache = InputCache(tmp_path / "cache", 1 << 20)

    def broken(_: dict, target: Path) -> Path:
        target.write_bytes(b"half")
        raise OSError("connection reset")

    with pytest.raises(OSError, match="connection reset"):
        cache.fetch(item, tmp_path / "job-1" / "w", broken)
    assert [path.name for path in (tmp_path / "cache").rglob("*") if path.is_file() and ".lock" not in path.name] == []
    assert cache.fetch(item, tmp_path / "job-2" / "w", Source(tmp_path, {item["sha256"]: weights})) is False
    assert (tmp_path / "job-2" / "w").read_bytes() == weights


def test_the_cache_size_comes_from_the_environment_and_a_bad_value_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("BIOLM_INPUT_CACHE_BYTES", "0")
    assert InputCache.for_host(tmp_path) is None
    monkeypatch.setenv("BIOLM_INPUT_CACHE_BYTES", "1000")
    assert InputCache.for_host(tmp_path) == InputCache(tmp_path / "input-cache", 1000)
    monkeypatch.setenv("BIOLM_INPUT_CACHE_BYTES", "lots")
    with pytest.raises(ValueError, match="BIOLM_INPUT_CACHE_BYTES='lots'"):
        InputCache.for_host(tmp_path)
    with pytest.raises(ValueError, match="not a SHA-256"):
        InputCache(tmp_path, 10).fetch(
            {"path": "x", "size": 1, "sha256": "../../etc"}, tmp_path / "x", Source(tmp_path, {})
        )
