"""``manage.py datasets [--json]``: every known dataset, whether it is imported, and how it differs from its paper."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from registry.imports import default_directory
from registry.models import Dataset
from registry.sync import load_contributions


class Command(BaseCommand):
    help = "List datasets: registered (imported, with sizes and fingerprint) and missing (with where to get them)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print JSON instead of text.")

    def handle(self, *args, **options) -> None:
        contributions = load_contributions()
        rows = {d.slug: d for d in Dataset.objects.filter(active=True).prefetch_related("imports")}
        listing = []
        for slug, spec in sorted(contributions.datasets.items()):
            dataset = rows.get(slug)
            latest = dataset.current_import if dataset else None
            directory = default_directory(spec)
            status = "registered" if latest else ("available" if directory and directory.is_dir() else "missing")
            listing.append(
                {
                    "dataset": slug,
                    "name": spec.name,
                    "status": status,
                    "access": spec.access,
                    "demo": spec.demo,
                    "readable": spec.adapter is not None,
                    "paper_splits": {s.name: {"size": s.size, "unit": s.unit} for s in spec.splits},
                    "imported_sizes": latest.split_sizes if latest else None,
                    "imported_paper_unit_sizes": latest.paper_unit_sizes if latest else None,
                    "differs_from_paper": (
                        {split: {"paper": p, "files": m} for split, (p, m) in latest.differences_from_paper().items()}
                        if latest
                        else {}
                    ),
                    "fingerprint": latest.fingerprint if latest else None,
                    "notes": latest.notes if latest else [],
                    "default_path": str(directory) if directory else None,
                    "source": spec.source,
                }
            )
        if options["json"]:
            self.stdout.write(json.dumps(listing, indent=2))
            return
        for status in ("registered", "available", "missing"):
            group = [row for row in listing if row["status"] == status]
            if not group:
                continue
            self.stdout.write(self.style.MIGRATE_HEADING(f"{status} ({len(group)})"))
            for row in group:
                self.stdout.write(f"  {row['dataset']:<22} {row['name']}" + ("  [demo data]" if row["demo"] else ""))
                paper = ", ".join(
                    f"{split} {info['size']:,} {info['unit']}"
                    for split, info in row["paper_splits"].items()
                    if info["size"] is not None
                )
                if paper:
                    self.stdout.write(f"      paper:    {paper}")
                if row["imported_sizes"]:
                    units = {split: info["unit"] for split, info in row["paper_splits"].items()}
                    measured = ", ".join(
                        f"{split} {n:,} {units.get(split, 'examples')}"
                        for split, n in row["imported_paper_unit_sizes"].items()
                    )
                    examples = ", ".join(f"{s} {n:,}" for s, n in row["imported_sizes"].items())
                    self.stdout.write(f"      files:    {measured} ({examples} examples; {row['fingerprint']})")
                for split, sizes in row["differs_from_paper"].items():
                    self.stdout.write(
                        self.style.WARNING(
                            f"      differs:  {split} has {sizes['files']:,} in the files, "
                            f"{sizes['paper']:,} in the paper"
                        )
                    )
                for note in row["notes"]:
                    self.stdout.write(self.style.WARNING(f"      note: {note}"))
                if status == "available":
                    self.stdout.write(
                        f"      files at {row['default_path']}: `manage.py import_dataset {row['dataset']}`"
                    )
                elif status == "missing":
                    where = "restricted: bring your own files" if row["access"] == "restricted" else "files not found"
                    how = "" if row["readable"] else " (no reader yet)"
                    source = f"; source: {row['source']}" if row["source"] else ""  # a spec need not name one
                    self.stdout.write(f"      {where}{how}{source}")
