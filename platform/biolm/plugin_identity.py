"""Who a plugin is, in one type: what a pin records, what the admin's row shows and what every message calls it.

A plugin is its name (its entry point's, or a built-in module's), the distribution and version it was
installed from, the content fingerprint of its files (what a job pins: an in-place edit of an editable
install changes it) and where a fresh import reads it from. The code pins (:class:`biolm.contract.CodePin`),
the installed entry points (:class:`biolm.plugin_set.InstalledPlugin`), the registry's ``Plugin`` row and the
fault messages all derive their words from it, so a plugin is written one way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PluginIdentity:
    name: str
    distribution: str = ""
    version: str = ""
    fingerprint: str = ""  # "sha256:" + hex of its files; "" when not known
    location: str = ""  # the folder or file a fresh import reads it from; "" when not known

    @property
    def release(self) -> str:
        """``biolm-acme 0.2.0``: what was installed (the plugin's name where no distribution is known)."""
        return f"{self.distribution or self.name} {self.version}".strip()

    @property
    def label(self) -> str:
        """``biolm-acme 0.2.0 (sha256:1a2b...)``: what a person compares."""
        return f"{self.release} ({self.fingerprint})" if self.fingerprint else self.release

    @property
    def named(self) -> str:
        """``acme (biolm-acme 0.2.0)``: the plugin by name, with what was installed where that is known."""
        return (
            f"{self.name} ({self.distribution} {self.version})".replace(" )", ")") if self.distribution else self.name
        )

    def row(self) -> dict[str, str]:
        """The registry row's fields (``Plugin``: distribution, version, fingerprint)."""
        return {"distribution": self.distribution, "version": self.version, "fingerprint": self.fingerprint}
