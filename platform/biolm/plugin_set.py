"""Noticing that the installed plugins changed, and bringing a running process up to date with them.

Workers run for weeks; plugins are installed, upgraded, re-installed from another folder, edited
in place and removed meanwhile. A fresh process (each engine run is one) sees the new set by
itself, but a long-lived one does not: the interpreter read its site folders' ``.pth`` files once,
at start-up, so an editable install (``pip install -e``, what ``startplugin`` suggests) is
invisible to it, an editable install's old folder stays on ``sys.path`` (or its import hook in
``sys.meta_path``) ahead of the new one, and modules of an upgraded plugin stay imported at their
old version. A worker would then record one version's numbers under another version's name.

:func:`installed` describes every ``biolm`` entry point as installed now, with a content
fingerprint of its code (:func:`content_fingerprint`: the files themselves, so an in-place edit
of an editable plugin changes it); :func:`ensure_current` compares that with what this process
last loaded and, when it changed, makes the process's import system what a fresh interpreter's
would be (:func:`_refresh`), so that the next import reads the new code from wherever it is now
installed. Collecting contributions afterwards (:func:`biolm.plugins.collect_contributions`) then
sees the new set. It is cheap enough to call before every job: file digests are cached by stat.
:func:`own_code` is the same fingerprint for biolm's own packages.

What pip and setuptools write for an editable install, both handled here: a ``.pth`` file in the
site folder, ``__editable__.<dist>-<version>.pth``, holding either a path line (the source folder,
for a src layout or ``editable_mode=compat``), which site.py appends to ``sys.path``, or an import
line (the default for a flat layout) that imports ``__editable___<dist>_<version>_finder`` from the
site folder and calls its ``install()``, which appends a finder class to ``sys.meta_path`` whose
``MAPPING`` names the package folders (plus a path hook and a placeholder ``sys.path`` entry when
the distribution has namespace packages). ``pip install --target`` processes no ``.pth`` file.

No Django here: the platform's workers and the GPU worker's checks share it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import site
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import biolm
from biolm.hookspecs import PROJECT_NAME
from biolm.plugin_identity import PluginIdentity

logger = logging.getLogger("biolm.plugins")

PROTECTED = frozenset({"biolm", "plugins", "workers"})  # the platform's own packages are never dropped
OWN_PACKAGES = ("biolm", "workers", "plugins")  # what :func:`own_code` fingerprints
EDITABLE_FINDER = re.compile(r"__editable___\w+_finder\Z")  # setuptools' import-hook module of an editable install
BYTECODE = (".pyc", ".pyo")


@dataclass(frozen=True)
class CodeVersion:
    """Code as this process would run it: a version and the content fingerprint of its files."""

    version: str
    fingerprint: str


@dataclass(frozen=True)
class InstalledPlugin:
    """One ``biolm`` entry point as installed now."""

    name: str
    value: str  # "module" or "module:attribute"
    distribution: str
    version: str
    files: str  # a digest of the distribution's RECORD: changes when it is reinstalled
    fingerprint: str = ""  # "sha256:" + 16 hex over its top-level packages' files (:func:`content_fingerprint`)
    sources: tuple[tuple[str, str], ...] = ()  # (top-level module, the folder or file a fresh import reads it from)

    @property
    def identity(self) -> PluginIdentity:
        location = self.sources[0][1] if self.sources else ""
        return PluginIdentity(self.name, self.distribution, self.version, self.fingerprint, location)

    @property
    def label(self) -> str:
        return self.identity.release

    @property
    def top_module(self) -> str:
        return self.value.partition(":")[0].partition(".")[0]

    @property
    def modules(self) -> tuple[str, ...]:
        """The top-level modules of its code: the entry point's, and the distribution's others."""
        return tuple(dict.fromkeys([self.top_module, *(name for name, _ in self.sources)]))


# -- content fingerprints ---------------------------------------------------------------------------------------------

_digest_lock = threading.Lock()
_digests: dict[str, tuple[tuple[int, int, int, int], str]] = {}  # path -> (its stat when hashed, sha256)


def _hash_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _file_digest(path: str, stat: os.stat_result) -> str:
    """The file's SHA-256, hashed again only when its size, times or inode changed.

    The change time counts too, which no tool can set: a copy that keeps size and modification
    time (``rsync -a``, a checkout) is still noticed.
    """
    key = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    with _digest_lock:
        known = _digests.get(path)
    if known is not None and known[0] == key:
        return known[1]
    digest = _hash_file(path)
    with _digest_lock:
        _digests[path] = (key, digest)
    return digest


def _files_of(name: str, location: str) -> Iterator[tuple[str, str]]:
    """``(name it is hashed under, path)`` for every file of a package folder, or for a single module file.

    Names are relative to the package (prefixed by its import name), so the same code installed
    in another folder, or on another machine, has the same fingerprint. Bytecode is left out: it
    is derived from the sources and differs between interpreters.
    """
    if not os.path.isdir(location):
        yield os.path.basename(location), location
        return
    for folder, subfolders, files in os.walk(location):
        subfolders[:] = sorted(sub for sub in subfolders if sub != "__pycache__")
        for file in sorted(files):
            if not file.endswith(BYTECODE):
                path = os.path.join(folder, file)
                yield f"{name}/{os.path.relpath(path, location).replace(os.sep, '/')}", path


def content_fingerprint(sources: Iterable[tuple[str, str]]) -> str:
    """``sha256:`` + 16 hex over every file of ``sources`` (``(import name, package folder or module file)``).

    Each file counts by its relative name and bytes; ``__pycache__`` and ``*.pyc`` do not. A
    stat walk when nothing changed: file digests are cached by stat (:func:`_file_digest`).
    """
    rows = []
    for name, location in sources:
        for relative, path in _files_of(name, location):
            try:
                stat = os.stat(path)
                if os.path.isfile(path):
                    rows.append(f"{relative}\0{_file_digest(path, stat)}\n")
            except OSError:  # removed meanwhile, or a dangling link
                continue
    return "sha256:" + hashlib.sha256("".join(sorted(rows)).encode()).hexdigest()[:16]


def own_code() -> CodeVersion:
    """biolm's version, and a content fingerprint of its packages ``biolm``, ``workers`` and ``plugins`` found here."""
    sources = []
    for name in OWN_PACKAGES:
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None) if module is not None else importlib.util.find_spec(name)
        if spec is None:
            continue
        places = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
        sources.extend((name, place) for place in places)
    return CodeVersion(version=biolm.__version__, fingerprint=content_fingerprint(sources))


def own_identity() -> PluginIdentity:
    """biolm itself, with its built-in plugins, as a plugin identity: what their pins and registry rows carry."""
    own = own_code()
    return PluginIdentity("biolm", "biolm", own.version, own.fingerprint)


def identity_of(name: str, source: str, distribution: str = "", version: str = "") -> PluginIdentity:
    """A registered plugin's identity: biolm's own for a built-in, else what was installed under its name (the
    registration's distribution and version first, as its loader read them)."""
    if source == "builtin":
        return own_identity()
    found = installed().get(name)
    known = found.identity if found is not None else PluginIdentity(name)
    return PluginIdentity(name, distribution or known.distribution, version or known.version, known.fingerprint,
                          known.location)  # fmt: skip


# -- where a distribution's code is installed -------------------------------------------------------------------------

_mappings: dict[str, tuple[tuple[int, int, int, int], dict[str, str]]] = {}  # path -> (stat, MAPPING)


def _finder_mapping(path: str) -> dict[str, str]:
    """The ``MAPPING`` (top-level module -> folder or file) an editable install's finder declares, read, not run."""
    try:
        stat = os.stat(path)
        key = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
        known = _mappings.get(path)
        if known is not None and known[0] == key:
            return known[1]
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    mapping: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                break
            mapping = {str(key): str(place) for key, place in value.items()} if isinstance(value, dict) else {}
            break
    _mappings[path] = (key, mapping)
    return mapping


def _module_in(folder: str, name: str) -> str | None:
    """Where a path-based import of ``name`` finds a regular package or a module in ``folder``."""
    package = os.path.join(folder, name)
    suffixes = importlib.machinery.all_suffixes()
    if os.path.isdir(package) and any(os.path.isfile(os.path.join(package, "__init__" + s)) for s in suffixes):
        return package
    return next((package + s for s in suffixes if os.path.isfile(package + s)), None)


def _editable_places(dist: importlib.metadata.Distribution) -> tuple[list[str], dict[str, str]]:
    """The folders an editable install's ``.pth`` path lines add, and its finders' ``MAPPING``."""
    folders: list[str] = []
    mapping: dict[str, str] = {}
    for file in dist.files or ():
        path = str(dist.locate_file(file))
        if file.name.endswith(".pth"):
            for line in _lines(path):
                if line.strip() and not line.startswith(("#", "import ", "import\t")):
                    folders.append(os.path.abspath(os.path.join(os.path.dirname(path), line.rstrip())))
        elif file.name.endswith(".py") and EDITABLE_FINDER.match(file.name[:-3]):
            mapping.update(_finder_mapping(path))
    return folders, mapping


def _sources(dist: importlib.metadata.Distribution, value: str) -> tuple[tuple[str, str], ...]:
    """``(top-level module, where a fresh interpreter imports it from)`` for the entry point's and its distribution's.

    Searched in a fresh interpreter's order: ``sys.path`` (the site folder, then ``.pth`` path
    lines) before the import hooks that an editable install appends to ``sys.meta_path``.
    """
    names = [value.partition(":")[0].partition(".")[0]]
    names += [line for line in (dist.read_text("top_level.txt") or "").split() if line.isidentifier()]
    folders, mapping = _editable_places(dist)
    folders.insert(0, str(dist.locate_file("")))
    found = []
    for name in dict.fromkeys(names):
        place = next((p for folder in folders if (p := _module_in(folder, name))), None)
        if place is None and name in mapping:
            mapped = mapping[name]
            place = mapped if os.path.exists(mapped) else _module_in(os.path.dirname(mapped), name)
        if place is None:  # a namespace package, found where no regular one is
            place = next((p for folder in folders if os.path.isdir(p := os.path.join(folder, name))), None)
        if place is not None:
            found.append((name, place))
    return tuple(found)


def _describe(point: importlib.metadata.EntryPoint, known: dict) -> InstalledPlugin:
    dist = getattr(point, "dist", None)
    if dist is None:
        return InstalledPlugin(point.name, point.value, "", "", "")
    record = dist.read_text("RECORD") or ""
    key = (dist.metadata["Name"], point.value.partition(":")[0].partition(".")[0], record)
    if key not in known:
        sources = _sources(dist, point.value)
        # Code that cannot be located (an unusual installer) is known by its RECORD alone, as before.
        code = content_fingerprint(sources) if sources else "sha256:" + hashlib.sha256(record.encode()).hexdigest()[:16]
        known[key] = (code, sources)
    code, sources = known[key]
    return InstalledPlugin(point.name, point.value, dist.metadata["Name"], dist.version,
                           hashlib.sha256(record.encode()).hexdigest()[:12], code, sources)  # fmt: skip


def installed() -> dict[str, InstalledPlugin]:
    """Every ``biolm`` entry point installed now, read afresh from the site folders, with its code's fingerprint."""
    importlib.invalidate_caches()
    known: dict = {}  # one walk per distribution, however many entry points it has
    return {point.name: _describe(point, known) for point in importlib.metadata.entry_points(group=PROJECT_NAME)}


def fingerprint(plugins: dict[str, InstalledPlugin] | None = None) -> str:
    """A short digest of the installed plugin set, by content: equal code, equal fingerprints, wherever installed."""
    plugins = installed() if plugins is None else plugins
    rows = sorted((p.name, p.value, p.distribution, p.version, p.fingerprint) for p in plugins.values())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


# -- bringing this process up to date ---------------------------------------------------------------------------------

_lock = threading.Lock()
_loaded: dict[str, InstalledPlugin] | None = None  # what this process last loaded
_held: set[str] = set()  # sys.path entries this process has because a .pth file listed them


def ensure_current() -> list[str]:
    """Refresh this process if the installed plugins changed since it last looked; what changed, in words.

    A change is any difference in an entry point's distribution, version, content fingerprint or
    install place. The first call records the set (a process that just started already sees it),
    after catching up with ``.pth`` files installed since the interpreter started.
    """
    global _loaded
    with _lock:
        now = installed()
        if _loaded is None:
            _refresh([], now)
            _loaded = installed()
            return []
        if now == _loaded:
            return []
        before = _loaded
        _refresh(_changed(before, now), now)
        _loaded = installed()
        changes = describe_changes(before, _loaded)
        logger.warning("the installed plugins changed (%s): reloaded them", "; ".join(changes))
        return changes


def describe_changes(before: dict[str, InstalledPlugin], after: dict[str, InstalledPlugin]) -> list[str]:
    """What changed between two plugin sets, in words, one line per entry point.

    ``biolm-acme 0.2 installed``, ``biolm-acme 0.2 -> 0.3``, ``biolm-acme 0.2 removed``; for the
    same version, ``biolm-acme 0.2 code changed (sha256:... -> sha256:...)`` (other files: an edit
    in place, another folder's copy) or ``biolm-acme 0.2 reinstalled`` (the same files, anew).
    """
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is None:
            changes.append(f"{new.label} installed")
        elif new is None:
            changes.append(f"{old.label} removed")
        elif old.version != new.version:
            changes.append(f"{old.label} -> {new.version}")
        elif old.fingerprint != new.fingerprint:
            changes.append(f"{new.label} code changed ({old.fingerprint} -> {new.fingerprint})")
        elif old != new:
            changes.append(f"{new.label} reinstalled")
    return changes


def _changed(before: dict[str, InstalledPlugin], after: dict[str, InstalledPlugin]) -> list[InstalledPlugin]:
    """Both sides of every entry point that differs: the old one's modules and places go, the new one's come."""
    return [old for name, old in before.items() if after.get(name) != old] + [
        new for name, new in after.items() if before.get(name) != new
    ]


def _refresh(changed: list[InstalledPlugin], now: dict[str, InstalledPlugin]) -> None:
    """Make this process's import system what a fresh interpreter's would be, for the plugins that changed.

    Stale editable finders go first, then ``sys.path`` follows the ``.pth`` files, the finders of
    new ``.pth`` files are installed, and the changed plugins' modules (and any plugin imported
    from somewhere other than where it is installed now) are forgotten, with their folders'
    import caches, so that the next import reads the new code.
    """
    importlib.invalidate_caches()
    stale = _stale_modules(changed, now.values())
    old_places = [place for plugin in changed for _, place in plugin.sources] + _imported_places(stale)
    gone = _drop_stale_finders(stale | {name for plugin in changed for name in plugin.modules})
    gone += _follow_path_lines()
    importlib.invalidate_caches()
    _run_import_lines()
    for top in sorted(stale):
        _drop_modules(top)
    importlib.invalidate_caches()
    _forget_importer_caches(gone + old_places)


def _stale_modules(changed: list[InstalledPlugin], now: Iterable[InstalledPlugin]) -> set[str]:
    """The top-level modules to forget, so that their next import reads the installed code.

    They are the entry points' modules of the plugins that changed, their distributions' other
    modules where imported from those distributions' places, and any plugin's module imported from
    somewhere other than where a fresh interpreter would import it now (a change this process missed).

    A distribution's other top-level names (``top_level.txt``) are forgotten only when imported
    from its own places: a sloppy distribution listing ``tests`` or ``utils`` must not take
    another package's modules away.
    """
    stale = {plugin.top_module for plugin in changed}
    for plugin in changed:
        stale.update(name for name, place in plugin.sources if _imported_from(name, place))
    for plugin in now:
        stale.update(
            name for name, place in plugin.sources if name == plugin.top_module and _imported_from(name, place) is False
        )
    return stale - PROTECTED


def _imported_places(tops: Iterable[str]) -> list[str]:
    """The folders the imported modules ``tops`` were read from (their packages' ``__path__``)."""
    return [place for top in tops if top in sys.modules for place in getattr(sys.modules[top], "__path__", ())]


def _imported_from(name: str, place: str) -> bool | None:
    """Whether module ``name`` was imported from ``place`` (a package folder or a module file); None: not imported."""
    module = sys.modules.get(name)
    if module is None:
        return None
    place = os.path.realpath(place)
    files = [module.__file__] if getattr(module, "__file__", None) else list(getattr(module, "__path__", ()))
    return any(_within(os.path.realpath(file), place) for file in files if file)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


def _drop_modules(top: str) -> None:
    """Forget ``top`` and its submodules, so that the next import reads the installed code.

    Their bytecode goes too: the interpreter trusts a ``.pyc`` whose source has the same size
    and modification second, which an in-place edit or a copy keeping times can have.
    """
    if not top or top in PROTECTED:
        return
    for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
        cached = getattr(sys.modules.pop(name), "__cached__", None)
        if cached and os.path.isfile(cached):
            with contextlib.suppress(OSError):  # a read-only site folder: the sources' times then tell
                os.remove(cached)


def _drop_stale_finders(tops: set[str]) -> list[str]:
    """Remove editable finders of re-installed or removed distributions; the folders they mapped.

    A finder is stale when it maps one of ``tops``, when its module file is gone (the
    distribution was uninstalled) or when that file now maps other folders (re-installed from
    elsewhere). Its module is forgotten too, so the current ``.pth`` line installs the new one.
    biolm's own finder is never touched.
    """
    gone: list[str] = []
    for name in [name for name in sys.modules if EDITABLE_FINDER.match(name)]:
        module = sys.modules[name]
        mapping = getattr(module, "MAPPING", None)
        if not isinstance(mapping, dict) or set(mapping) & PROTECTED:
            continue
        file = getattr(module, "__file__", None) or ""
        if not set(mapping) & tops and os.path.isfile(file) and _finder_mapping(file) == mapping:
            continue
        finder = getattr(module, "_EditableFinder", None)
        sys.meta_path[:] = [entry for entry in sys.meta_path if entry is not finder]
        hook = getattr(getattr(module, "_EditableNamespaceFinder", None), "_path_hook", None)
        sys.path_hooks[:] = [entry for entry in sys.path_hooks if hook is None or entry != hook]
        placeholder = getattr(module, "PATH_PLACEHOLDER", None)
        if placeholder:
            sys.path[:] = [entry for entry in sys.path if entry != placeholder]
            sys.path_importer_cache.pop(placeholder, None)
        del sys.modules[name]
        gone.extend(mapping.values())
    return gone


def site_folders() -> list[str]:
    """The site folders whose ``.pth`` files start-up reads, in its order."""
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user:
        folders.append(user)
    return [folder for folder in folders if os.path.isdir(folder)]


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _pth_files() -> Iterator[tuple[str, list[str]]]:
    """``(site folder, lines)`` of each ``.pth`` file start-up would read now, in its order."""
    for folder in site_folders():
        if folder not in sys.path:  # start-up reads the .pth files of the site folders it adds only
            continue
        try:
            names = sorted(name for name in os.listdir(folder) if name.endswith(".pth") and not name.startswith("."))
        except OSError:
            continue
        for name in names:
            yield folder, _lines(os.path.join(folder, name))


def _pth_paths() -> list[tuple[str, str]]:
    """``(site folder, path)`` for each folder a ``.pth`` path line would add to ``sys.path`` now (site.addpackage)."""
    paths: list[tuple[str, str]] = []
    for folder, lines in _pth_files():
        for line in lines:
            if line.startswith(("#", "import ", "import\t")) or not line.strip():
                continue
            path = os.path.abspath(os.path.join(folder, line.rstrip()))
            if os.path.exists(path) and path not in (p for _, p in paths):
                paths.append((folder, path))
    return paths


def _held_paths(expected: list[tuple[str, str]]) -> set[str]:
    """The ``sys.path`` entries there because of a ``.pth`` line: those after their site folder, as start-up puts them.

    One before its site folder came from elsewhere (``PYTHONPATH``, say) and is never removed.
    """
    held = set()
    for folder, path in expected:
        if path in sys.path and folder in sys.path and sys.path.index(path) > sys.path.index(folder):
            held.add(path)
    return held


def _protected_paths() -> set[str]:
    """Folders that ``sys.path`` must keep: the site folders, and those biolm's own packages were imported from."""
    kept = set(site_folders())
    for name in PROTECTED:
        for place in getattr(sys.modules.get(name), "__path__", ()):
            kept.add(os.path.dirname(place))
    return kept


def _follow_path_lines() -> list[str]:
    """Remove ``sys.path`` entries no ``.pth`` file lists any more, add new ones where start-up would; the removed."""
    expected = _pth_paths()
    wanted = {path for _, path in expected}
    kept = _protected_paths()
    gone = [path for path in _held if path not in wanted and path not in kept]
    sys.path[:] = [entry for entry in sys.path if entry not in gone]
    current, anchor = "", ""
    for folder, path in expected:  # start-up appends each site folder's lines right after it, in .pth name order
        if folder != current:
            current = anchor = folder
        if path not in sys.path:
            sys.path.insert(sys.path.index(anchor) + 1, path)
        if sys.path.index(path) > sys.path.index(folder):
            anchor = path
    _held.clear()
    _held.update(_held_paths(expected))
    return gone


def _run_import_lines() -> None:
    """Run each ``.pth`` import line whose module this process has not imported, as start-up does (site.addpackage).

    This installs the finders of editable installs made since start-up, and those whose stale
    predecessor :func:`_drop_stale_finders` removed.
    """
    for folder, lines in _pth_files():
        for line in lines:
            if not line.startswith(("import ", "import\t")):
                continue
            module = line.split(None, 1)[1].split(";")[0].split(",")[0].strip()
            if module in sys.modules:
                continue
            try:
                exec(line, {})  # what site.addpackage does with the same line at start-up
            except Exception as exc:
                logger.warning("a .pth line in %s failed: %s: %s", folder, type(exc).__name__, exc)


def _forget_importer_caches(places: Iterable[str]) -> None:
    """Drop ``sys.path_importer_cache`` entries for ``places`` and folders under them, and for folders that are gone."""
    roots = {os.path.realpath(place) for place in places if place}
    for key in list(sys.path_importer_cache):
        if not isinstance(key, str) or not os.path.isabs(key):
            continue
        real = os.path.realpath(key)
        if not os.path.exists(real) or any(_within(real, root) for root in roots):
            sys.path_importer_cache.pop(key, None)


def compare(required: dict[str, str], here: dict[str, InstalledPlugin] | None = None) -> tuple[list[str], list[str]]:
    """Which of a job's plugins (``{name: "distribution version"}``) are missing here, and which differ in version."""
    here = installed() if here is None else here
    missing = [f"{name} ({label})" for name, label in sorted(required.items()) if name not in here]
    differing = [
        f"{name}: the job was submitted with {label}, this worker has {here[name].label}"
        for name, label in sorted(required.items())
        if name in here and here[name].label != label
    ]
    return missing, differing


def lacking_message(missing: list[str], worker: str) -> str:
    """What a worker says when it cannot run a job for want of plugins."""
    return (
        f"worker {worker} lacks the plugin{'s' if len(missing) > 1 else ''} {', '.join(missing)} that this job "
        "needs: install it where the workers run (they load newly installed plugins before each job, "
        "no restart needed); the job is retried"
    )
