"""Which code a job runs: biolm itself and every plugin that contributes what it uses, pinned by content.

A result is only as trustworthy as the code that made it. A job's spec pins, when it is built at
submit, the version and the content fingerprint (a digest of the installed files,
:mod:`biolm.plugin_set`) of biolm itself, which carries the built-in plugins, and of each
installed plugin that contributes something the job runs: the dataset's reader, the task type's
formulation, the metrics, the benchmark, the protocol, the architecture, the recipe. A worker
checks the pins against the code it is about to run (:func:`mismatches`), after bringing its
plugins up to date, and refuses a job whose code differs rather than run other code under the
pinned name.

No Django, no engine: the platform, the GPU worker and the engine share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from biolm import plugin_set
from biolm.contract.errors import ContractError
from biolm.contribution_kinds import KINDS
from biolm.plugin_identity import PluginIdentity
from biolm.plugins import Contributions

BIOLM = "biolm"
KIND_WORDS = {kind.name: kind.word for kind in KINDS}  # "metrics" -> "metric": how a pin names one


@dataclass(frozen=True)
class CodePin:
    """One piece of code a job runs: biolm (with its built-in plugins) or an installed plugin."""

    name: str  # "biolm", or the plugin's name (its entry point)
    distribution: str
    version: str
    fingerprint: str  # the content digest; "" for jobs queued before fingerprints were recorded
    provides: tuple[str, ...] = ()  # what the job uses of it: "dataset ncbi-disease", "metric entity-f1", ...

    @classmethod
    def of(cls, identity: PluginIdentity, provides: tuple[str, ...] = ()) -> CodePin:
        """The pin of the plugin ``identity`` names, for what a job uses of it."""
        return cls(identity.name, identity.distribution, identity.version, identity.fingerprint, tuple(provides))

    @property
    def identity(self) -> PluginIdentity:
        return PluginIdentity(self.name, self.distribution, self.version, self.fingerprint)

    @property
    def label(self) -> str:
        """``biolm-acme 0.2.0 (sha256:1a2b...)``: what a person compares."""
        return self.identity.label

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "fingerprint": self.fingerprint,
            "provides": list(self.provides),
        }

    @classmethod
    def from_json(cls, data: object) -> CodePin:
        if not isinstance(data, Mapping):
            raise ContractError(f"a code pin must be a JSON object, not {type(data).__name__}", "code")
        unknown = sorted(set(data) - {"name", "distribution", "version", "fingerprint", "provides"})
        if unknown:
            raise ContractError(f"code pin: unknown field(s) {', '.join(unknown)}", "code")
        texts = {key: data.get(key, "") for key in ("name", "distribution", "version", "fingerprint")}
        if not all(isinstance(value, str) for value in texts.values()) or not texts["name"]:
            raise ContractError(f"code pin {data!r}: name, distribution, version and fingerprint are text", "code")
        provides = data.get("provides", [])
        if not isinstance(provides, list) or not all(isinstance(item, str) for item in provides):
            raise ContractError(f"code pin {texts['name']}: provides must be a list of text", "code")
        return cls(**texts, provides=tuple(provides))


def pins_for(contributions: Contributions, uses: Iterable[tuple[str, str]]) -> tuple[CodePin, ...]:
    """biolm's pin, then one pin per installed plugin that contributes one of ``uses`` (``(kind, slug)``).

    Built-in contributions are biolm's own code, so biolm's pin covers them. A plugin registered in
    this process only (tests) has no installed files to pin: it is named without a fingerprint.
    """
    builtin = {info.name for info in contributions.plugins if info.source == "builtin"}
    installed = plugin_set.installed()
    provided: dict[str, list[str]] = {}
    for kind, slug in dict.fromkeys(uses):
        plugin = contributions.origin.get((kind, slug))
        if plugin is None:
            continue
        owner = BIOLM if plugin in builtin else plugin
        provided.setdefault(owner, []).append(f"{KIND_WORDS.get(kind, kind)} {slug}")
    pins = [CodePin.of(plugin_set.own_identity(), tuple(provided.pop(BIOLM, ())))]
    for name in sorted(provided):
        found = installed.get(name)
        pins.append(CodePin.of(found.identity if found is not None else PluginIdentity(name), tuple(provided[name])))
    return tuple(pins)


class CodeMismatch(Exception):
    """The code here is not the code a job pins; the message is the job's error, in one line.

    ``plugin`` names the plugin (or ``biolm``) to count the failure against. It is the plugin's,
    not the submission's: the job is not retried (another attempt would load the same code) and
    the submitter is refunded.
    """

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin


class CodeMissing(Exception):
    """A plugin a job pins is not installed here at all: the platform's to fix (install it where the workers run),
    so the job is retried, perhaps on another worker, and refunded if it never runs."""


@dataclass(frozen=True)
class PinCheck:
    """How the code here compares with a job's pins."""

    missing: tuple[str, ...]  # plugins not installed here: another worker may have them (the platform's)
    differing: tuple[tuple[str, str], ...]  # (plugin, "plugin version mismatch: ...") : the plugin's

    @property
    def ok(self) -> bool:
        return not self.missing and not self.differing

    def require(self) -> None:
        """:class:`CodeMismatch` naming the first differing plugin (every difference in its message), else
        :class:`CodeMissing` naming the plugins not installed here; nothing when the code is the pinned code."""
        if self.differing:
            raise CodeMismatch(self.differing[0][0], "; ".join(message for _, message in self.differing))
        if self.missing:
            raise CodeMissing(f"this machine lacks the plugin(s) {', '.join(self.missing)} that the job runs")


def code_here() -> tuple[CodePin, ...]:
    """biolm's code and every installed plugin's, as a process started here now would run them: what a worker
    reports when it claims a job, so that the platform hands back a job whose pins it would refuse."""
    own = plugin_set.own_code()
    plugins = sorted(plugin_set.installed().items())
    return (
        CodePin(BIOLM, BIOLM, own.version, own.fingerprint),
        *(CodePin(name, found.distribution, found.version, found.fingerprint) for name, found in plugins),
    )


def check(pins: Sequence[CodePin]) -> PinCheck:
    """Compare ``pins`` with the code installed here now (call :func:`plugin_set.ensure_current` first)."""
    return compare(pins, code_here())


def compare(pins: Sequence[CodePin], here: Iterable[CodePin]) -> PinCheck:
    """Compare ``pins`` with the code ``here`` (:func:`code_here`, here or as a worker reported it).

    A pin without a fingerprint (a job queued before they were recorded) is compared by version
    only; a plugin registered in-process only (no distribution) cannot be compared and passes.
    """
    found_here = {pin.name: pin for pin in here}
    missing, differing = [], []
    for pin in pins:
        if pin.name != BIOLM and not pin.distribution:
            continue
        found = found_here.get(pin.name)
        if found is None:
            missing.append(pin.identity.named)
            continue
        same_version = (found.distribution, found.version) == (pin.distribution, pin.version)
        if not same_version or (pin.fingerprint and pin.fingerprint != found.fingerprint):
            shown = found if pin.fingerprint else CodePin(found.name, found.distribution, found.version, "")
            differing.append((pin.name, mismatch_message(pin, shown)))
    return PinCheck(tuple(missing), tuple(differing))


def other_code_words(pins: Sequence[CodePin], here: Iterable[CodePin]) -> list[str]:
    """How code ``here`` differs from ``pins``, as the admin says it: ``runs biolm-probe 0.1.0, the job pins
    biolm-probe 0.2.0`` or ``lacks biolm-probe 0.2.0``, one phrase per plugin; empty when it runs the pinned code."""
    here = tuple(here)
    checked = compare(pins, here)
    found_here = {pin.name: pin for pin in here}
    pinned = {pin.name: pin for pin in pins}
    words = [f"lacks {entry}" for entry in checked.missing]
    for name, _ in checked.differing:
        found, pin = found_here[name], pinned[name]
        same_version = (found.distribution, found.version) == (pin.distribution, pin.version)
        shown, wanted = (found.label, pin.label) if same_version else (_version(found), _version(pin))
        words.append(f"runs {shown}, the job pins {wanted}")
    return words


def _version(pin: CodePin) -> str:
    return pin.identity.release


def mismatch_message(pinned: CodePin, found: CodePin) -> str:
    """``plugin version mismatch: <plugin> <pinned> pinned, <found> installed``: the job's error, in one line."""
    return f"plugin version mismatch: {pinned.name} {pinned.label} pinned, {found.label} installed"
