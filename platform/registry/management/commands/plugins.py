"""``manage.py plugins [--json]``: the installed plugins, what each contributes, and what is broken."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from biolm.plugins import collect_contributions, get_plugin_manager


class Command(BaseCommand):
    help = "List biolm plugins (built-in and installed), their contributions, and plugins that failed to load."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print JSON instead of text.")

    def handle(self, *args, **options) -> None:
        contributions = collect_contributions(
            get_plugin_manager(load_entrypoints=settings.BIOLM_LOAD_ENTRYPOINT_PLUGINS)
        )
        plugins = [
            {
                "name": info.name,
                "source": info.source,
                "distribution": info.distribution,
                "version": info.version,
                "contributes": contributions.by_plugin(info.name),
            }
            for info in contributions.plugins
        ]
        problems = [{"plugin": p.plugin, "message": p.message} for p in contributions.problems]
        if options["json"]:
            self.stdout.write(json.dumps({"plugins": plugins, "problems": problems}, indent=2))
            return
        for plugin in plugins:
            origin = plugin["source"]
            if plugin["distribution"]:
                origin += f", {plugin['distribution']} {plugin['version']}"
            self.stdout.write(self.style.MIGRATE_HEADING(f"{plugin['name']} ({origin})"))
            if not plugin["contributes"]:
                self.stdout.write("  (contributes nothing)")
            for kind, slugs in plugin["contributes"].items():
                self.stdout.write(f"  {kind}: {', '.join(slugs)}")
        if problems:
            self.stdout.write(self.style.ERROR(f"\n{len(problems)} problem(s); these contributions were skipped:"))
            for problem in problems:
                self.stdout.write(self.style.ERROR(f"  {problem['plugin']}: {problem['message']}"))
