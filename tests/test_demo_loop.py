"""``manage.py demo`` (what ``make demo`` runs) on the embedded defaults: SQLite and the filesystem broker.

The whole loop in real processes, cut to one dataset: the site and the workers start, the tiny
recipe is pretrained as a job, both models are fine-tuned and recorded, every process stops at
the end, and a second run reuses all of it.
"""

from __future__ import annotations

import ast
import subprocess

import pytest
from embedded_demo import environment, free_port, manage_in, skip_on_postgres

pytestmark = [pytest.mark.slow, pytest.mark.backend]


def test_the_demo_carries_both_models_to_the_leaderboard_and_a_rerun_reuses_them(tmp_path):
    skip_on_postgres()
    manage = manage_in(environment(tmp_path))

    manage("migrate", "--noinput", "-v", "0")
    manage("sync_plugins")
    manage("import_dataset", "demo-ner")
    port = str(free_port())
    first = manage("demo", "--port", port, "--no-serve", "--datasets", "demo-ner")
    assert "demo-tiny: submitted" in first and "all-minilm-l6: submitted" in first
    assert "pretrain  tiny" in first and "% of a run" in first  # progress was shown
    assert "all 5 jobs ended" in first and "0 did not succeed" in first, first[-2000:]
    # The staff account for the admin job queue, its password printed the once it is made.
    assert f"admin job queue: http://127.0.0.1:{port}/admin/jobs/job/ (sign in as admin, password " in first
    query = (
        "from leaderboard.models import Result; "
        "print(sorted(f'{r.language_model.slug} {r.dataset.slug} {r.n_seeds}' "
        "for r in Result.objects.filter(scope='')))"
    )
    recorded = manage("shell", "-c", query)
    assert "['all-minilm-l6-v2 demo-ner 1', 'tiny-demo demo-ner 1']" in recorded
    # The real checkpoint visibly learns: tagging every token O (the majority tag) finds no entity, an
    # entity F1 of 0, and the real model is 5 points above that and above the briefly pretrained toy.
    values = (
        "from leaderboard.models import Result; "
        "print({r.language_model.slug: r.value for r in Result.objects.filter(scope='')})"
    )
    scores = ast.literal_eval(manage("shell", "-c", values).strip().splitlines()[-1])
    assert scores["all-minilm-l6-v2"] >= 0 + 5 and scores["all-minilm-l6-v2"] >= scores["tiny-demo"] + 5, scores
    # Each result's bootstrap vector was stored from its per-example test predictions (the honest ranks' input).
    resampled = manage("shell", "-c", "from leaderboard.models import ResultResamples as R; "
                       "print(sorted((r.dataset_key, len(r.values)) for r in R.objects.all()))")  # fmt: skip
    assert "[('demo-ner', 8000), ('demo-ner', 8000)]" in resampled
    second = manage("demo", "--port", port, "--no-serve", "--datasets", "demo-ner")
    assert "demo-tiny: reusing the earlier run (3 jobs done, 0 requeued)" in second
    assert "all-minilm-l6: reusing the earlier run (2 jobs done, 0 requeued)" in second
    assert "the account exists" in second and "python manage.py changepassword admin" in second
    assert "password " + first.split("(sign in as admin, password ")[1].split(":")[0] not in second
    leftovers = subprocess.run(["pgrep", "-f", f"runserver 127.0.0.1:{port}"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
