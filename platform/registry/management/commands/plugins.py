"""``manage.py plugins [--json]``: the installed plugins, what each contributes, and what is broken.

Task types are shown with their schema and metrics, and datasets with their task type and metric,
because those are what a plugin author needs to write a reader or a benchmark against them.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from biolm.plugins import Contributions, collect_contributions, get_plugin_manager
from biolm.specs import Implementation


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
        task_types, datasets = task_type_details(contributions), dataset_details(contributions)
        if options["json"]:
            document = {"plugins": plugins, "task_types": task_types, "datasets": datasets, "problems": problems}
            self.stdout.write(json.dumps(document, indent=2))
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
                if kind == "task_types":
                    for slug in slugs:
                        self.stdout.write(f"    {slug}: {describe_task_type(task_types[slug])}")
                elif kind == "datasets":
                    for slug in slugs:
                        self.stdout.write(f"    {slug}: {describe_dataset(datasets[slug])}")
        if problems:
            self.stdout.write(self.style.ERROR(f"\n{len(problems)} problem(s); these contributions were skipped:"))
            for problem in problems:
                self.stdout.write(self.style.ERROR(f"  {problem['plugin']}: {problem['message']}"))


def implementation_path(value: Implementation) -> str:
    """A ``"module:attribute"`` path as given, or the one a callable would be named by."""
    if isinstance(value, str):
        return value
    return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', repr(value))}"


def task_type_details(contributions: Contributions) -> dict[str, dict]:
    """Each task type's schema, formulation, metrics and protocol defaults."""
    return {
        slug: {
            "plugin": contributions.origin.get(("task_types", slug), ""),
            "schema": spec.schema,
            "formulation": implementation_path(spec.formulation),
            "metric": spec.metric,
            "companion_metrics": list(spec.companion_metrics),
            "epochs": spec.epochs,
            "seeds": spec.seeds,
            "multi_element": spec.multi_element,
        }
        for slug, spec in sorted(contributions.task_types.items())
    }


def dataset_details(contributions: Contributions) -> dict[str, dict]:
    """Each dataset's task type, schema and metrics; ``companion_metrics`` is None when the task type's apply."""
    return {
        slug: {
            "plugin": contributions.origin.get(("datasets", slug), ""),
            "task_type": spec.task_type,
            "schema": spec.adapter.schema if spec.adapter is not None else None,
            "multi_label": spec.adapter.multi_label if spec.adapter is not None else False,
            "metric": spec.metric,
            "companion_metrics": list(spec.companion_metrics) if spec.companion_metrics is not None else None,
        }
        for slug, spec in sorted(contributions.datasets.items())
    }


def describe_task_type(details: dict) -> str:
    """``schema token-tagging, metric entity-f1, companions entity-precision, entity-recall``."""
    schema = details["schema"] + (" (multi-element)" if details["multi_element"] else "")
    text = f"schema {schema}, metric {details['metric']}"
    if details["companion_metrics"]:
        text += f", companions {', '.join(details['companion_metrics'])}"
    return text


def describe_dataset(details: dict) -> str:
    """``task type ner, metric entity-f1``, and its own companions when they replace the task type's."""
    text = f"task type {details['task_type']}{', multi-label' if details['multi_label'] else ''}"
    text += f", metric {details['metric']}"
    if details["companion_metrics"] is not None:
        companions = ", ".join(details["companion_metrics"]) or "none"
        text += f", companions {companions} (instead of the task type's)"
    return text
