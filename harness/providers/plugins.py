"""Providers from other packages: the ``grace.providers`` entry-point group, read only when needed.

A package adds a provider by naming its :class:`~harness.providers.base.Provider` subclass in its metadata::

    [project.entry-points."grace.providers"]
    acme = "grace_acme.provider:AcmeProvider"

after which ``--model acme:MODEL`` works and ``grace providers`` lists it, with its package and version. This
is how simonw/llm and inspect_ai take third-party models: no list in grace to edit, and one small package per
provider.

Why read lazily: the metadata of every installed package is read to find the group (tens of milliseconds in
a large environment), so it is read only for a provider name that is not built in, or to list them; the
class is imported only when a model of it is used. A plugin that fails to import (a missing dependency, a
syntax error, a name that is not there) fails only the runs that use it, with its package and the error; it
never breaks ``grace --help``, ``grace providers`` or another provider. Its first import is tried in a
process of its own under a time limit (:class:`~harness.providers.user_code.ImportProbe`), so one that calls
``sys.exit``, ends the process or hangs at import is reported as broken the same way instead of stopping grace. A built-in name always wins: a plugin
cannot replace ``openai:`` under a user's feet (``grace providers`` says it is shadowed).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from harness.core.errors import GraceError
from harness.core.registry import resolve, split_target
from harness.providers.base import Provider

GROUP = "grace.providers"


@dataclass(frozen=True)
class Plugin:
    """One entry of the group: a provider name and the class a package says provides it."""

    name: str
    target: str  # "module:Class", as the package wrote it
    package: str  # the distribution that declares it ("" when importlib.metadata cannot tell)
    version: str
    shadowed_by: str = ""  # "grace" (a built-in of that name) or the package that claimed the name first

    @property
    def where(self) -> str:
        return f"{self.package} {self.version}".strip() or "an unnamed package"


_FOUND: list[Plugin] | None = None
_PROBED: dict[str, str] = {}  # "module:Class" -> "" (imports cleanly) or what went wrong


def forget() -> None:
    """Read the metadata again next time (after a package is installed, or a test puts one on ``sys.path``)."""
    global _FOUND
    _FOUND = None
    _PROBED.clear()
    import importlib

    importlib.invalidate_caches()


def discover(builtin: Collection[str]) -> list[Plugin]:
    """Every entry of the group, sorted by name, each marked when a built-in or an earlier package has its name."""
    global _FOUND
    if _FOUND is None:
        from importlib.metadata import entry_points

        found = []
        for ep in entry_points(group=GROUP):
            dist = getattr(ep, "dist", None)
            package = (dist.metadata["Name"] or "") if dist is not None else ""
            found.append(Plugin(ep.name, ep.value, package, (dist.version or "") if dist is not None else ""))
        _FOUND = found
    out, taken = [], {name: "grace" for name in builtin}
    for plugin in _FOUND:  # sys.path order: the first package to claim a name has it, as for imports
        by = taken.setdefault(plugin.name, plugin.package or "another package")
        out.append(plugin if by == (plugin.package or "another package") and plugin.name not in builtin
                   else Plugin(plugin.name, plugin.target, plugin.package, plugin.version, shadowed_by=by))
    return sorted(out, key=lambda p: (p.name, bool(p.shadowed_by)))


def find(name: str, builtin: Collection[str]) -> Plugin | None:
    """The plugin that provides ``name`` (None for a built-in name or a name nobody provides)."""
    if name in builtin:
        return None
    return next((p for p in discover(builtin) if p.name == name and not p.shadowed_by), None)


def probe(found: list[Plugin]) -> None:
    """Try the imports of these plugins side by side, each in a process of its own under the time limit, so
    :func:`load` imports in grace only what imported cleanly there (``grace providers`` probes them all at once)."""
    from harness.providers.user_code import ImportProbe

    todo = {p.target: p for p in found if p.target not in _PROBED}
    started = {}
    for target in todo:
        started[target] = ImportProbe(*split_target(target))
    for target, running in started.items():
        _PROBED[target] = running.result()


def load(plugin: Plugin) -> type[Provider]:
    """The plugin's provider class; a :class:`GraceError` naming the package, the entry and the error when the
    package is broken or the entry is not a :class:`Provider` subclass."""
    head = f"provider {plugin.name!r} comes from the plugin package {plugin.where} ({GROUP}: {plugin.target})"
    fix = f"fix or reinstall it (pip install --force-reinstall {plugin.package})" if plugin.package else "fix it"
    broken = f"; {fix}, or uninstall it (pip uninstall {plugin.package or '...'})"
    probe([plugin])
    if _PROBED[plugin.target]:
        raise GraceError(f"{head}, which failed to load: {_PROBED[plugin.target]}{broken}")
    try:
        obj = resolve(plugin.target)
    except SystemExit as exc:  # imported cleanly on its own, yet exits here: still only this plugin's failure
        raise GraceError(f"{head}, which failed to load: it called sys.exit({exc.code!r}) at import{broken}") from None
    except BaseException as exc:  # any failure of someone else's import: ImportError, SyntaxError, AttributeError...
        raise GraceError(f"{head}, which failed to load: {type(exc).__name__}: {exc}{broken}") from None
    if not (isinstance(obj, type) and issubclass(obj, Provider)):
        raise GraceError(f"{head}, which names {obj!r}, not a subclass of harness.providers.base.Provider; {fix}")
    if getattr(obj, "__abstractmethods__", None):
        missing = ", ".join(sorted(obj.__abstractmethods__))
        raise GraceError(f"{head}, whose class {obj.__name__} does not define {missing}; {fix}")
    return obj
