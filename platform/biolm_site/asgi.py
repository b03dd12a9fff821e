"""ASGI entry point; platform/ must be on sys.path."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "biolm_site.settings")
application = get_asgi_application()
