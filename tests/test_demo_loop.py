"""``manage.py demo`` (what ``make demo`` runs) on the embedded defaults: SQLite and the filesystem broker.

The whole loop in real processes, as a newcomer runs it: the site and the workers start, the tiny
recipe is pretrained as a job, both models are fine-tuned on all six BLURB-mini datasets and
recorded, the real checkpoint visibly learns, every process stops at the end, and a second run
reuses all of it.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections import Counter

import pytest
from embedded_demo import ROOT, environment, free_port, manage_in, skip_on_postgres

pytestmark = [pytest.mark.slow, pytest.mark.backend]

DEMO_DATA = ROOT / "plugins" / "datasets" / "demo"
DATASETS = ("demo-ner", "demo-pico", "demo-relation", "demo-similarity", "demo-doc-classification", "demo-qa")


def majority_baseline(dataset: str) -> float:
    """What predicting the majority (or a constant) scores on the dataset's test split, in the metric's points.

    Tagging every token or word O finds no entity and no PICO element (entity F1 and token macro F1 0);
    calling every pair ``false`` finds no relation (micro F1 over the relations, 0); no hallmark is on half
    the abstracts, so the majority predicts none (average micro F1 0); a constant similarity has no
    correlation (Pearson 0); the commonest answer is right on its share of the questions.
    """
    if dataset != "demo-qa":
        return 0.0
    answers = Counter(json.loads(line)["labels"][0] for line in (DEMO_DATA / dataset / "test.jsonl").open())
    return 100 * max(answers.values()) / sum(answers.values())


def test_the_majority_baselines_the_demo_is_held_to_come_from_its_files():
    """The baselines the demo is held to are what they claim: no hallmark is on half the training abstracts."""
    hallmarks = Counter(
        label
        for line in (DEMO_DATA / "demo-doc-classification" / "train.jsonl").open()
        for label in json.loads(line)["labels"]
    )
    abstracts = sum(1 for _ in (DEMO_DATA / "demo-doc-classification" / "train.jsonl").open())
    assert hallmarks and max(hallmarks.values()) < abstracts / 2
    assert majority_baseline("demo-qa") == 62.5  # 25 of the 40 test questions are answered yes


def blurb_mini_scores(output: str) -> dict[str, float]:
    """The BLURB-mini score of each model, in the order the demo's summary prints them."""
    return {name: float(value) for name, value in re.findall(r"^  (.+): BLURB-mini score ([-\d.]+)$", output, re.M)}


def test_the_demo_carries_both_models_to_the_leaderboard_and_a_rerun_reuses_them(tmp_path):
    skip_on_postgres()
    manage = manage_in(environment(tmp_path))

    manage("migrate", "--noinput", "-v", "0")
    manage("sync_plugins")
    manage("import_dataset", *DATASETS)
    port = str(free_port())
    first = manage("demo", "--port", port, "--no-serve")
    assert "demo-tiny: submitted" in first and "all-minilm-l6: submitted" in first
    assert "all 25 jobs ended" in first and "0 did not succeed" in first, first[-2000:]
    # Progress shows the steps in between of a run longer than 15 s (MiniLM-L6's 200 steps on demo-qa: ~30 s).
    qa_progress = set(re.findall(r"all-minilm-l6-v2 +finetune +demo-qa +running +(\d+)% of a run", first))
    assert len(qa_progress - {"0", "100"}) >= 2, first[-3000:]
    assert "pretrain  tiny" in first
    # The staff account for the admin job queue, its password printed the once it is made.
    assert f"admin job queue: http://127.0.0.1:{port}/admin/jobs/job/ (sign in as admin, password " in first
    query = (
        "from leaderboard.models import Result; "
        "print(sorted(f'{r.language_model.slug} {r.dataset.slug} {r.n_seeds}' "
        "for r in Result.objects.filter(scope='')))"
    )
    recorded = manage("shell", "-c", query)
    assert all(
        f"'{model} {dataset} 1'" in recorded for model in ("all-minilm-l6-v2", "tiny-demo") for dataset in DATASETS
    )
    # The real checkpoint visibly learns: on every dataset it is 5 points above what the majority (or a
    # constant) scores, and its BLURB-mini score is 5 points above the briefly pretrained toy's, printed first.
    values = (
        "from leaderboard.models import Result; "
        "print({(r.language_model.slug, r.dataset.slug): r.value for r in Result.objects.filter(scope='')})"
    )
    scores = ast.literal_eval(manage("shell", "-c", values).strip().splitlines()[-1])
    for dataset in DATASETS:
        assert scores["all-minilm-l6-v2", dataset] >= majority_baseline(dataset) + 5, (dataset, scores)
    board = blurb_mini_scores(first)
    assert list(board) == ["all-MiniLM-L6 (real checkpoint)", "tiny, pretrained briefly on the demo corpus"], board
    assert board["all-MiniLM-L6 (real checkpoint)"] >= board["tiny, pretrained briefly on the demo corpus"] + 5
    # Each result's bootstrap vector was stored from its per-example test predictions (the honest ranks' input).
    resampled = manage("shell", "-c", "from leaderboard.models import ResultResamples as R; "
                       "print(sorted((r.dataset_key, len(r.values)) for r in R.objects.all()))")  # fmt: skip
    assert all(f"('{dataset}', 8000), ('{dataset}', 8000)" in resampled for dataset in DATASETS), resampled
    second = manage("demo", "--port", port, "--no-serve")
    assert "demo-tiny: reusing the earlier run (13 jobs done, 0 requeued)" in second
    assert "all-minilm-l6: reusing the earlier run (12 jobs done, 0 requeued)" in second
    assert "the account exists" in second and "python manage.py changepassword admin" in second
    assert "password " + first.split("(sign in as admin, password ")[1].split(":")[0] not in second
    leftovers = subprocess.run(["pgrep", "-f", f"runserver 127.0.0.1:{port}"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
