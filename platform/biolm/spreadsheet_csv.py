"""CSV that a spreadsheet opens as data, never as formulas: every CSV the site serves is written here.

A cell a reader typed (a model's name, its source) that starts with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return is a formula to Excel, LibreOffice and Google Sheets: ``=HYPERLINK("https://evil...")``
in a published model's name would become a live link, or worse, in whoever opens the leaderboard's
export. OWASP's advice (the "CSV Injection" page) is followed: such a text cell is prefixed with a single
quote ``'`` and every text cell is quoted, so a spreadsheet shows ``'=HYPERLINK(...)`` as text. A reader
of the file recovers the name by stripping that one leading quote (docs/readers.md says so). Numbers
are written as numbers, unquoted: ``-0.5`` is a score, not a formula, and OWASP counts numbers safe.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NEUTRALISING_PREFIX = "'"


def spreadsheet_cell(value: object) -> object:
    """A text cell that a spreadsheet would read as a formula, prefixed with ``'``; numbers and other text as they are.

    Only ``str`` is touched: an ``int`` or ``float`` stays a number; a ``bool`` is written "true" or "false".
    """
    if isinstance(value, bool):  # before numbers: csv would write True, which a spreadsheet reads as its own TRUE
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return NEUTRALISING_PREFIX + value
    return value


def csv_text(rows: Iterable[Sequence[object]]) -> str:
    """The rows as CSV, every text cell quoted and neutralised (:func:`spreadsheet_cell`), numbers unquoted.

    ``None`` is written as an empty quoted cell, as ``csv.writer`` does under ``QUOTE_NONNUMERIC``.
    """
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC)
    for row in rows:
        writer.writerow([spreadsheet_cell(value) for value in row])
    return out.getvalue()
