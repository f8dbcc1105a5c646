"""A plugin whose import fails, as one with a dependency its installer forgot: grace names it and goes on."""

from __future__ import annotations

import grace_broken_demo_missing_dependency  # noqa: F401 - not installed anywhere, on purpose

from harness.providers.base import Provider


class BrokenProvider(Provider):
    provider_name = "broken"
