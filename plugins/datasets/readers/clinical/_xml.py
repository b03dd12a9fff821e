"""A small XML tree that remembers the line of every element, for error messages that point into the file.

``xml.etree`` forgets line numbers; users fixing an i2b2 file need "line 25722", not "somewhere
in the train file". Expat gives the line of each start tag. Text keeps its order relative to
child elements (the i2b2 2006 PHI tags sit inside the running text). As in any XML parser,
CR LF line ends are read as LF; the i2b2 offsets are counted on that text (it is what
``xml.etree``, used by the public i2b2 preprocessing scripts, sees as well).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from biolm.dataset_io import DataFormatError

_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding=["']([A-Za-z0-9._-]+)["']""")


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element | str] = field(default_factory=list)

    def elements(self, tag: str | None = None) -> Iterator[Element]:
        for child in self.children:
            if isinstance(child, Element) and (tag is None or child.tag == tag):
                yield child

    def first(self, tag: str, path: Path) -> Element:
        for child in self.elements(tag):
            return child
        raise DataFormatError(path, f"<{self.tag}> has no <{tag}> element", self.line)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


def parse_xml(path: Path, data: bytes | None = None) -> Element:
    """The root element of ``path`` (or of ``data`` read from it); malformed XML is a DataFormatError."""
    if data is None:
        if not path.exists():
            raise DataFormatError(path, "file not found")
        data = path.read_bytes()
    if not data.strip():
        raise DataFormatError(path, "file is empty")
    declared = _DECLARED_ENCODING.match(data)
    if declared is None or declared.group(1).lower() in (b"utf-8", b"utf8"):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise DataFormatError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})", line) from None
    parser = expat.ParserCreate()
    parser.buffer_text = True
    stack: list[Element] = []
    roots: list[Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = Element(tag, attrs, parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    def characters(data: str) -> None:
        if stack:
            stack[-1].children.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        message = f"not well-formed XML: {expat.ErrorString(exc.code)} (column {exc.offset + 1})"
        raise DataFormatError(path, message, exc.lineno) from None
    return roots[0]
