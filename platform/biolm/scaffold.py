"""Generate a new plugin package from ``biolm/plugin_template`` (``manage.py startplugin``).

The template is a working plugin with one small example of every hook and its tests; names in
it are placeholders (``__distribution__``, ``__module__``, ``__prefix__``) replaced in file
contents and paths. Files ending in ``.tmpl`` lose the suffix (they are not Python the linters
should read in biolm's own tree). No Django here: a plugin author can call :func:`create_plugin`
from anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "plugin_template"
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


@dataclass(frozen=True)
class PluginNames:
    """The names a plugin called ``name`` gets: distribution, module and slug prefix."""

    distribution: str  # biolm-acme
    module: str  # biolm_acme
    prefix: str  # acme

    @classmethod
    def of(cls, name: str) -> PluginNames:
        if not NAME_RE.match(name):
            raise ValueError(
                f"plugin name {name!r} must be lower-case letters and digits separated by '-' or '_', "
                "starting with a letter (e.g. biolm-acme)"
            )
        distribution = name.replace("_", "-")
        prefix = distribution.removeprefix("biolm-") or distribution
        return cls(distribution, distribution.replace("-", "_"), prefix)

    def substitute(self, text: str) -> str:
        return (
            text.replace("__distribution__", self.distribution)
            .replace("__module__", self.module)
            .replace("__prefix__", self.prefix)
        )


def create_plugin(name: str, directory: Path) -> Path:
    """Write the plugin package ``name`` into ``directory / name`` and return that path.

    Refuses to write into an existing, non-empty directory: nothing of the user's is overwritten.
    """
    names = PluginNames.of(name)
    target = Path(directory) / names.distribution
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} already exists and is not empty; choose another name or --dir")
    for source in sorted(TEMPLATE.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        relative = names.substitute(str(source.relative_to(TEMPLATE))).removesuffix(".tmpl")
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(names.substitute(source.read_text(encoding="utf-8")), encoding="utf-8")
    return target
