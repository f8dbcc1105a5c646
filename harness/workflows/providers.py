"""``grace providers``: every provider a model can name, built in or from a plugin package, and whether it is usable.

Answers the questions a user has before a run, without making any call: which ``PROVIDER:`` names exist here,
which package each comes from (a plugin is someone else's code, so its package and version are shown), whether
the SDK it imports is installed, which variable its key is read from (and whether that is set; the key itself is
never shown), and which plugins are broken or shadowed, with the error. Every class is imported to find this out,
so a plugin that fails to import, exits or hangs at import is listed with its error instead of stopping the
listing (each plugin's import is first tried in a process of its own, under a time limit); no SDK is imported.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from harness.core.errors import GraceError

__all__ = ["ProviderInfo", "list_providers"]

GRACE_PACKAGE = "grace-eval"


@dataclass
class ProviderInfo:
    """One provider name, as ``grace providers`` shows it (``--json``: these fields)."""

    name: str  # what goes before the colon: --model NAME:MODEL
    source: Literal["built-in", "plugin"]
    package: str  # the distribution it comes from ("grace-eval" for the built-ins)
    version: str
    target: str  # "module:Class"
    needs_network: bool | None = None  # None: unknown (the class did not load)
    sdk: str | None = None  # the module its calls import, when it needs one beyond grace
    sdk_installed: bool | None = None  # None: needs none, or unknown
    install: str | None = None  # what to pip install for it
    key_envs: list[str] = field(default_factory=list)  # the variables its key is read from
    key_set: bool | None = None  # one of key_envs is set (None: it reads none)
    shadowed_by: str = ""  # a plugin whose name a built-in (or an earlier package) already has: never used
    error: str = ""  # a plugin that failed to load, and why

    @property
    def usable(self) -> bool:
        """Loads, is not shadowed, and its SDK is there (a key may still be missing)."""
        return not self.error and not self.shadowed_by and self.sdk_installed is not False

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usable": self.usable}


def list_providers() -> list[ProviderInfo]:
    """Built-ins first (documented ones only, in name order), then every plugin entry, broken or shadowed ones
    included; nothing is called and no key is read beyond whether its variable is set."""
    from harness.core.version import __version__
    from harness.providers import PROVIDERS, plugins, public_providers

    out = []
    for name in public_providers():
        info = ProviderInfo(name, "built-in", GRACE_PACKAGE, __version__, PROVIDERS[name])
        out.append(_describe(info, functools.partial(_built_in, name)))
    found = plugins.discover(PROVIDERS)
    plugins.probe([p for p in found if not p.shadowed_by])  # side by side: one that hangs costs its limit once
    for plugin in found:
        info = ProviderInfo(plugin.name, "plugin", plugin.package, plugin.version, plugin.target,
                            shadowed_by=plugin.shadowed_by)
        out.append(info if plugin.shadowed_by else _describe(info, functools.partial(plugins.load, plugin)))
    return out


def _built_in(name: str) -> type:
    from harness.providers import provider_class
    from harness.providers.base import ModelSpec

    provider: type = provider_class(ModelSpec(provider=name, model="-"))
    return provider


def _describe(info: ProviderInfo, load: Callable[[], type]) -> ProviderInfo:
    """Fill in what the class says about itself; a class that does not load is reported, not raised."""
    import importlib.util

    try:
        cls = load()
    except GraceError as exc:
        info.error = str(exc)
        return info
    info.needs_network = bool(getattr(cls, "needs_network", True))
    info.sdk, info.install = getattr(cls, "sdk_module", None), getattr(cls, "sdk_install", None)
    if info.sdk:
        try:
            info.sdk_installed = importlib.util.find_spec(info.sdk) is not None
        except (ImportError, ValueError):
            info.sdk_installed = False
    info.key_envs = [str(env) for env in getattr(cls, "key_envs", None) or []]
    if info.key_envs:
        info.key_set = any(os.environ.get(env) for env in info.key_envs)
    return info
