"""``manage.py demo`` (what ``make demo`` runs) on the embedded defaults: SQLite and the filesystem broker.

The whole loop in real processes, cut to one dataset: the site and the workers start, the tiny
recipe is pretrained as a job, both models are fine-tuned and recorded, every process stops at
the end, and a second run reuses all of it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_demo_carries_both_models_to_the_leaderboard_and_a_rerun_reuses_them(tmp_path):
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("the demo runs on its embedded defaults (SQLite, filesystem broker): CI's second pass")
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    environment = {k: v for k, v in os.environ.items() if k in keep} | {
        "BIOLM_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "HF_HUB_OFFLINE": "1",
        "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
    }

    def manage(*arguments: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=environment,
                                capture_output=True, text=True, timeout=900)  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout

    manage("migrate", "--noinput", "-v", "0")
    manage("sync_plugins")
    manage("import_dataset", "demo-ner")
    port = str(free_port())
    first = manage("demo", "--port", port, "--no-serve", "--datasets", "demo-ner")
    assert "demo-tiny: submitted" in first and "all-minilm-l6: submitted" in first
    assert "pretrain  tiny" in first and "% of a run" in first  # progress was shown
    assert "all 5 jobs ended" in first and "0 did not succeed" in first, first[-2000:]
    query = (
        "from leaderboard.models import Result; "
        "print(sorted(f'{r.language_model.slug} {r.dataset.slug} {r.n_seeds}' "
        "for r in Result.objects.filter(scope='')))"
    )
    recorded = manage("shell", "-c", query)
    assert "['all-minilm-l6-v2 demo-ner 1', 'tiny-demo demo-ner 1']" in recorded
    # Each result's bootstrap vector was stored from its per-example test predictions (the honest ranks' input).
    resampled = manage("shell", "-c", "from leaderboard.models import ResultResamples as R; "
                       "print(sorted((r.dataset_key, len(r.values)) for r in R.objects.all()))")  # fmt: skip
    assert "[('demo-ner', 8000), ('demo-ner', 8000)]" in resampled
    second = manage("demo", "--port", port, "--no-serve", "--datasets", "demo-ner")
    assert "demo-tiny: reusing the earlier run (3 jobs done, 0 requeued)" in second
    assert "all-minilm-l6: reusing the earlier run (2 jobs done, 0 requeued)" in second
    leftovers = subprocess.run(["pgrep", "-f", f"runserver 127.0.0.1:{port}"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""
