"""Small helpers shared by the sentence- and document-level readers.

Two things every one of those readers needs and ``biolm.dataset_io`` does not provide:

* finding the three split files and, when one is missing, saying which file names were looked
  for (``find_split_file`` only returns ``None``);
* JSON with line numbers. ``json.loads`` forgets where an object started, yet a PubMedQA entry
  without ``final_decision`` or a SQuAD answer without ``answer_start`` must be reported with its
  line like any TSV row. :func:`load_located_json` parses with the pure-Python object parser
  (string scanning stays in C, so it costs milliseconds on PubMedQA) and returns dicts that
  carry the line of their opening brace.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from json.decoder import JSONObject
from json.scanner import py_make_scanner
from pathlib import Path
from typing import Any

from biolm.dataset_io import DataFormatError, read_json


def split_files(
    directory: Path, candidates: Mapping[str, tuple[str, ...]], optional: tuple[str, ...] = ()
) -> dict[str, Path]:
    """The first existing file for each split of ``candidates``; a missing split names what was tried.

    A split in ``optional`` may be missing: it is then left out of the result.
    """
    found = {}
    for split, names in candidates.items():
        for name in names:
            path = directory / name
            if path.is_file():
                found[split] = path
                break
        else:
            if split not in optional:
                tried = " or ".join(repr(name) for name in names)
                raise DataFormatError(directory, f"no {split} file: looked for {tried}")
    return found


def field_line(line: int, fields: list[str], column: int) -> int:
    """The line a CSV record's field starts on, the record starting on ``line``: quoted fields may hold line breaks."""
    return line + sum(field.count("\n") for field in fields[:column])


class LocatedDict(dict):
    """A JSON object that remembers the line its ``{`` is on, and can find the line of each key."""

    line: int = 0
    _source: tuple[str, list[int], int, int] | None = None  # (text, newline offsets, start, end)

    def key_line(self, key: str) -> int:
        """The line of ``key`` in this object (not in a nested one); the object's line if not found.

        Computed only when asked (an error is being reported), by scanning the object's text.
        """
        if self._source is None:
            return self.line
        text, newlines, start, end = self._source
        depth, index = 0, start + 1
        while index < end:
            char = text[index]
            if char == '"':
                close = _string_end(text, index)
                if depth == 0 and text[index + 1 : close] == json.dumps(key)[1:-1]:
                    following = text[close + 1 : end].lstrip()
                    if following.startswith(":"):
                        return bisect.bisect_left(newlines, index) + 1
                index = close + 1
                continue
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
            index += 1
        return self.line


def _string_end(text: str, quote: int) -> int:
    """The index of the quote that closes the JSON string opened at ``quote``."""
    index = quote + 1
    while text[index] != '"':
        index += 2 if text[index] == "\\" else 1
    return index


def load_located_json(path: Path) -> Any:
    """Parse a JSON file like :func:`read_json`, but every object is a :class:`LocatedDict`.

    Syntax, encoding, empty-file and missing-file problems are reported by ``read_json``
    (with the line of the syntax error); the second, locating parse then cannot fail.
    """
    read_json(path)
    text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    newlines = [match.start() for match in re.finditer("\n", text)]

    def parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
        start = s_and_end[1] - 1  # the position of "{"
        pairs, end = JSONObject(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo)
        located = LocatedDict(pairs)
        located.line = bisect.bisect_left(newlines, start) + 1
        located._source = (text, newlines, start, end)
        return located, end

    decoder = json.JSONDecoder()
    decoder.parse_object = parse_object
    decoder.scan_once = py_make_scanner(decoder)
    return decoder.decode(text)


def line_of(value: object, default: int = 1) -> int:
    """The line a located JSON object starts on (``default`` for anything else)."""
    return value.line if isinstance(value, LocatedDict) else default
