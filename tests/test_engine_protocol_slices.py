"""A protocol cut into slices (grid points, the selection, seeds or folds, the gather) that run as separate
engine invocations gives the results document of the same protocol run whole, run for run.

Both ways really train a tiny BERT checkpoint; each slice is its own ``finetune`` call with its own
``--out``, reading only the earlier slices' documents, as a worker on another host would.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from checkpoints import demo_texts, tiny_bert

from workers.engine.finetune import finetune
from workers.engine.protocol import Context
from workers.engine.protocol_slices import planned_slices
from workers.engine.runs import FinetuneSpec

TIMINGS = re.compile(r"seconds|per_second|latency|peak_memory|evaluation_share")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("checkpoint") / "tiny", demo_texts(), 600, hidden=32)


def without_timings(value):
    """The document less what a clock decides: what is left is decided by the runs and the protocol alone."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if not TIMINGS.search(key)}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def sliced(settings: dict, root: Path) -> tuple[dict, list[str]]:
    """Every slice of the job, each its own invocation; the gather's results and the slices run."""
    documents = root / "slices"
    documents.mkdir(parents=True)
    context = Context.of(FinetuneSpec.build(out=root / "plan", **settings))
    names = []
    for part in planned_slices(context):
        out = root / part.name
        finetune(FinetuneSpec.build(out=out, slice=str(part), slices=documents, **settings))
        names.append(str(part))
        if part.part != "gather":
            shutil.copy(out / "slice.json", documents / f"{part.name}.json")
    return json.loads((root / "gather" / "results.json").read_text()), names


@pytest.mark.slow  # the protocol twice: eight runs whole, eight in slices
def test_a_grid_and_seeds_run_in_slices_give_the_whole_jobs_results(tmp_path, checkpoint):
    settings = dict(dataset="demo-relation", model=checkpoint, grid="full", seeds=3, epochs=1, max_train_examples=32,
                    max_eval_examples=24, max_length=64)  # fmt: skip
    whole = finetune(FinetuneSpec.build(out=tmp_path / "whole", **settings))
    gathered, names = sliced(settings, tmp_path / "sliced")
    assert names == [*(f"point:{k}" for k in range(6)), "select", "seed:1", "seed:2", "gather"]
    assert len(whole["selection"]) == 6 and len(whole["runs"]) == 3
    assert without_timings(gathered) == without_timings(json.loads(json.dumps(whole, default=str)))
    assert gathered["efficiency"]["trainings"] == 8


@pytest.mark.slow  # ten folds, twice
def test_cross_validation_run_in_slices_gives_the_whole_jobs_results(tmp_path, checkpoint, official_data):
    official_data("EU-ADR", "biobert-REdata")
    settings = dict(dataset="eu-adr", model=checkpoint, protocol="lewis2020", seeds=2, epochs=1, max_train_examples=24,
                    max_eval_examples=16, max_length=64)  # fmt: skip
    whole = finetune(FinetuneSpec.build(out=tmp_path / "whole", **settings))
    gathered, names = sliced(settings, tmp_path / "sliced")
    points = len(whole["selection"])
    assert names == [*(f"point:{k}" for k in range(points)), "select", *(f"fold:{f}" for f in range(2, 11)), "gather"]
    assert len(whole["runs"]) == 9 * 2
    assert without_timings(gathered) == without_timings(json.loads(json.dumps(whole, default=str)))


def test_a_slice_refuses_another_jobs_documents_and_names_a_missing_one(tmp_path):
    settings = dict(dataset="demo-relation", architecture="bert:tiny", grid="full", seeds=2, epochs=1,
                    max_train_examples=8, max_eval_examples=8, max_length=32)  # fmt: skip
    documents = tmp_path / "slices"
    with pytest.raises(ValueError, match=r"point-0\.json is missing: run --slice point:0 first"):
        finetune(FinetuneSpec.build(out=tmp_path / "select", slice="select", slices=documents, **settings))
    other = finetune(FinetuneSpec.build(out=tmp_path / "p0", slice="point:0", **{**settings, "seeds": 3}))
    documents.mkdir()
    (documents / "point-0.json").write_text(json.dumps(other))
    with pytest.raises(ValueError, match="made for another job's spec"):
        finetune(FinetuneSpec.build(out=tmp_path / "select", slice="select", slices=documents, **settings))
    with pytest.raises(ValueError, match=r"this job's protocol has seed 1 to 1"):
        finetune(FinetuneSpec.build(out=tmp_path / "s5", slice="seed:5", slices=documents, **settings))
    with pytest.raises(ValueError, match="expected point:K, select, seed:K, fold:F or gather"):
        finetune(FinetuneSpec.build(out=tmp_path / "bad", slice="points", slices=documents, **settings))
