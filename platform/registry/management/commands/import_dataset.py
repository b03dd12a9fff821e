"""``manage.py import_dataset NAME [--path DIR]``: validate and register a dataset's official files."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from biolm.dataset_io import DataFormatError
from biolm.plugin_faults import blame
from registry.imports import UnknownDatasetError, dataset_spec, default_directory, import_dataset
from registry.sync import load_contributions


class Command(BaseCommand):
    help = (
        "Read a dataset's official files with its adapter, validate every example, and register it "
        "(content fingerprint, split sizes, label set, longest inputs). Nothing is kept if anything is wrong."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("names", nargs="*", metavar="NAME", help="Dataset slug(s), e.g. ncbi-disease.")
        parser.add_argument(
            "--path", type=Path, help="Directory of the official files (default: under BIOLM_DATA_DIR)."
        )
        parser.add_argument(
            "--folds",
            type=Path,
            help="Directory of the dataset's cross-validation folds (<k>/ or <name>-fold<k>/ each), for datasets a "
            "protocol scores on folds (GAD, EU-ADR under lewis2020; default: their location under BIOLM_DATA_DIR).",
        )
        parser.add_argument(
            "--available", action="store_true", help="Import every dataset whose files are at their default location."
        )
        parser.add_argument("--json", action="store_true", help="Print JSON instead of text.")

    def handle(self, *args, **options) -> None:
        contributions = load_contributions()
        names = list(options["names"])
        if options["available"]:
            names += [
                slug
                for slug, spec in contributions.datasets.items()
                if (directory := default_directory(spec)) is not None and directory.is_dir() and slug not in names
            ]
        if not names:
            raise CommandError("name a dataset (e.g. `import_dataset ncbi-disease`) or pass --available")
        if (options["path"] or options["folds"]) and len(names) > 1:
            raise CommandError("--path and --folds apply to one dataset; name exactly one")
        results = []
        for name in names:
            try:
                dataset_spec(name, contributions)
                outcome = import_dataset(name, options["path"], contributions, folds_path=options["folds"])
            except (UnknownDatasetError, DataFormatError) as exc:
                raise CommandError(f"{name}: {exc}") from None
            except Exception as exc:  # the dataset's reader (a plugin's code) raised: one line, never a traceback
                raise CommandError(f"{name}: {reader_failure(exc, contributions, name)}") from exc
            record = outcome.record
            results.append(
                {
                    "dataset": name,
                    "fingerprint": record.fingerprint,
                    "source_path": record.source_path,
                    "split_sizes": record.split_sizes,
                    "label_set": record.label_set,
                    "longest_examples": record.longest_examples,
                    "notes": record.notes,
                    "created": outcome.created,
                    "folds": _folds_summary(record.folds),
                    "folds_skipped": outcome.folds_skipped,
                }
            )
            if not options["json"]:
                self._describe(results[-1])
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))

    def _describe(self, result: dict) -> None:
        state = "imported" if result["created"] else "already imported (same content)"
        self.stdout.write(self.style.SUCCESS(f"{result['dataset']}: {state}, fingerprint {result['fingerprint']}"))
        sizes = ", ".join(f"{split} {n:,}" for split, n in result["split_sizes"].items())
        self.stdout.write(f"  from {result['source_path']}\n  examples: {sizes}")
        labels = result["label_set"]
        if labels:
            shown = ", ".join(labels[:12]) + (f", ... ({len(labels)} in all)" if len(labels) > 12 else "")
            self.stdout.write(f"  labels: {shown}")
        longest = ", ".join(f"{e['split']}:{e['id']} ({e['length']:,})" for e in result["longest_examples"])
        self.stdout.write(f"  longest inputs: {longest}")
        folds = result["folds"]
        if folds:
            sizes = ", ".join(f"{k}: {n['train']:,}/{n['test']:,}" for k, n in folds["sizes"].items())
            self.stdout.write(
                f"  {folds['count']} cross-validation folds from {folds['source_path']} (train/test {sizes})"
            )
        for note in result["notes"]:
            self.stdout.write(self.style.WARNING(f"  note: {note}"))
        if result["folds_skipped"]:
            self.stdout.write(self.style.WARNING(f"  note: {result['folds_skipped']}"))


def reader_failure(exc: Exception, contributions, name: str) -> str:
    """What to say when reading ``name``'s files raised something other than a DataFormatError.

    A plugin's code raised: the plugin, its reader and the line are named (``--traceback`` shows
    the rest). A file the system would not read is said as the system said it.
    """
    fault = blame(exc, contributions, dataset=name)
    if fault is not None:
        return f"{fault} (raise biolm.errors.DataFormatError for a file the reader cannot use; --traceback shows more)"
    if isinstance(exc, OSError):
        return f"cannot read the files: {exc}"
    raise exc


def _folds_summary(folds: dict) -> dict | None:
    """The folds an import holds, for the command's output (sizes per fold, not the stored paths)."""
    if not folds:
        return None
    sizes = {
        k: {"train": f["sizes"].get("train", 0), "test": f["sizes"].get("test", 0)}
        for k, f in folds["per_fold"].items()
    }
    return {
        "count": folds["count"],
        "fingerprint": folds["fingerprint"],
        "source_path": folds["source_path"],
        "sizes": sizes,
    }
