"""The shapes of the names biolm accepts: slugs, Hugging Face Hub ids, model addresses and ``module:function`` paths.

Slugs are stable, lower-case identifiers (``blurb``, ``ncbi-disease``) that appear in URLs, command lines and
score files, so they are validated strictly; addresses and Hub ids are the Hub's own ``owner/name``.
"""

from __future__ import annotations

import re

SLUG_RE = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")
# A repository's id on the Hugging Face Hub, org/name: no path, no scheme (its own limit is 96 characters a part).
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
# A model's address, the Hugging Face Hub's owner/name: letters, digits, '-', '_' and '.'.
ADDRESS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
CALLABLE_PATH_RE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*$")
