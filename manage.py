#!/usr/bin/env python
"""Django's command-line utility; puts platform/ (the source root) and the repository on sys.path."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def main() -> None:
    sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
    from biolm.owner_only import owner_only_files

    owner_only_files()  # before settings create var/: the database, logs and uploads are the platform user's only
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "biolm_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
