"""``manage.py startplugin NAME [--dir DIR]``: generate a pip-installable biolm plugin package."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from biolm.scaffold import PluginNames, create_plugin


class Command(BaseCommand):
    help = (
        "Generate a pip-installable plugin package with one working example of every hook and its tests "
        "(pytest passes straight after generation)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="The distribution name, e.g. biolm-acme (slugs are prefixed with 'acme').")
        parser.add_argument("--dir", type=Path, default=Path("."), help="Where to create it (default: here).")

    def handle(self, *args, name: str, dir: Path, **options) -> None:
        try:
            target = create_plugin(name, dir)
        except (ValueError, FileExistsError) as exc:
            raise CommandError(str(exc)) from None
        names = PluginNames.of(name)
        self.stdout.write(self.style.SUCCESS(f"created {target}"))
        self.stdout.write(
            f"  module {names.module}, entry point 'biolm: {names.prefix}', slugs prefixed '{names.prefix}-'\n"
            f"  next: cd {target} && pytest          (tests use the installed biolm)\n"
            f"        pip install -e {target}         (then `manage.py plugins` lists it)"
        )
