"""The GPU worker's trust boundary: no Django, no database credentials, nothing of the platform's apps."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_worker_starts_without_database_url_and_loads_nothing_of_the_platform():
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    probe = (
        "import sys, workers.runner.app, workers.runner.execution, workers.runner.__main__\n"
        "platform = ('django.conf', 'django.db', 'django.apps', 'biolm_site', 'registry', 'jobs', 'leaderboard',"
        " 'submissions', 'plugins')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in platform or m.startswith(platform)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_no_worker_module_reads_database_url_or_imports_django():
    reads = re.compile(r"""(environ\[|environ\.get\(|getenv\()\s*["']DATABASE_URL""")
    imports = re.compile(r"^\s*(import|from)\s+django\b", re.M)
    for path in (ROOT / "workers" / "runner").rglob("*.py"):
        text = path.read_text()
        assert not reads.search(text) and not imports.search(text), path
