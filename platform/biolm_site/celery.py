"""The Celery application; configuration comes from Django settings (CELERY_*)."""

from __future__ import annotations

import os

from celery import Celery

from biolm.owner_only import owner_only_files

owner_only_files()  # `celery -A biolm_site worker|beat` starts here: var/ files (the beat schedule too) owner-only
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "biolm_site.settings")

app = Celery("biolm")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["jobs", "leaderboard"])
