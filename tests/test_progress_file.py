"""The engine's progress file: one whole state for the reader, whoever else writes beside it."""

from __future__ import annotations

import multiprocessing
import os

from workers.engine.progress_file import ProgressFile, read


def _write_many(path: str, label: str) -> None:
    writer = ProgressFile(path, min_interval_s=0)
    for step in range(300):
        writer.write(label, step, 1000)


def test_two_processes_writing_one_progress_file_never_rename_each_others_state_away(tmp_path):
    path = tmp_path / "progress.json"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(str(path), label)) for label in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0, 0]  # a shared temporary name fails one: ENOENT
    assert read(path)["step"] == 299 and not list(tmp_path.glob("*.tmp"))


def test_the_reader_sees_the_last_state_and_a_missing_file_as_none(tmp_path):
    path = tmp_path / "progress.json"
    assert read(path) is None
    ProgressFile(path, min_interval_s=0).write("pretrain", 3, 10, 1.5, tokens_per_second=20.0)
    state = read(path)
    assert (state["label"], state["step"], state["total"], state["loss"], state["tokens_per_second"]) == (
        "pretrain", 3, 10, 1.5, 20.0,
    )  # fmt: skip
    assert os.listdir(tmp_path) == ["progress.json"]
