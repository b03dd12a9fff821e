"""ASGI entry point; platform/ must be on sys.path."""

import os

from django.core.asgi import get_asgi_application

from biolm.owner_only import owner_only_files

owner_only_files()  # before settings create var/: what the site writes there is readable by its user only
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "biolm_site.settings")
application = get_asgi_application()
