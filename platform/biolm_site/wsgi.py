"""WSGI entry point (gunicorn biolm_site.wsgi); platform/ must be on sys.path."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "biolm_site.settings")
application = get_wsgi_application()
