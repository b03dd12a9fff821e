"""The Django project: settings, URL routes, WSGI/ASGI entry points, the Celery app, typed env helpers.

It lives beside the ``biolm`` core, not inside it, so that the wall between the Django-free core
(which workers and plugin authors import) and the web platform is a package boundary that
import-linter checks (pyproject.toml), not a convention.
"""

# Celery's Django pattern: the app is configured whenever Django is, so tasks sent from the web
# process or a management command (shared_task, current_app) use this project's broker.
from biolm_site.celery import app as celery_app

__all__ = ("celery_app",)
