"""MkDocs hook: the CLI reference (mkdocs-click) shows each option's real default, never ``Sentinel.UNSET``.

Click 8.2+ marks an option declared without a default with its ``UNSET`` sentinel, and mkdocs-click prints that
object as the default (192 of 398 rows read ``Sentinel.UNSET``). The value the command actually receives is what
the page should show: a flag's is False, any other option's None (its help then says what applies, as
``[default: 3]`` or "the KB's"). The row is still mkdocs-click's; only the default it reads is the resolved one.
"""

from __future__ import annotations

from typing import Any

import click


def resolved_default(option: click.Option) -> Any:
    """What the command receives when the option is not given."""
    default = option.default
    if type(default).__name__ != "Sentinel":
        return default
    return False if option.is_flag and not option.multiple else None


def on_config(config: Any) -> Any:
    from mkdocs_click import _docs

    original = getattr(_docs._format_table_option_row, "__wrapped__", _docs._format_table_option_row)

    def row(option: click.Option) -> str:
        shown = option.default
        option.default = resolved_default(option)
        try:
            return original(option)
        finally:
            option.default = shown

    row.__wrapped__ = original  # type: ignore[attr-defined]
    _docs._format_table_option_row = row
    return config
