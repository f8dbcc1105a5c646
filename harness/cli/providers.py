"""``grace providers``: the provider names ``--model`` takes, built in and from plugin packages."""

from __future__ import annotations

import json

import click

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "providers": "List the model providers: built-in and from plugin packages.",
}


def _sdk(info) -> str:
    if not info.sdk:
        return "-"
    if info.sdk_installed:
        return f"{info.sdk}: installed"
    return f"{info.sdk}: MISSING (pip install {info.install or info.sdk})"


def _key(info) -> str:
    if not info.key_envs:
        return "-" if info.needs_network is False or info.source == "built-in" else "(not said)"
    return " or ".join(info.key_envs) + (" (set)" if info.key_set else " (not set)")


@click.command("providers")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON (one object per provider).")
def providers(as_json: bool) -> None:
    """List the providers a model can name (--model PROVIDER:MODEL): grace's own and those that plugin packages
    add through the 'grace.providers' entry-point group.

    \b
    For each: the package it comes from and its version, whether the SDK it
    imports is installed (and what to pip install if not), and the variables its
    API key is read from (whether one is set; the key is never shown). A plugin
    that fails to import is listed with its package and the error; a plugin
    whose name is a built-in's is listed as shadowed (the built-in is used).
    Nothing is called.
    """
    from harness.workflows.providers import list_providers

    infos = list_providers()
    if as_json:
        click.echo(json.dumps({"providers": [info.to_dict() for info in infos]}, indent=2))
        return
    rows = [("provider", "from", "SDK", "key")]
    problems = []
    for info in infos:
        where = f"{info.package} {info.version}".strip() or "(unknown package)"
        if info.error or info.shadowed_by:
            problems.append(info)
            continue
        rows.append((f"{info.name}:", where, _sdk(info), _key(info)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for i, row in enumerate(rows):
        line = "  ".join(cell.ljust(widths[j]) if j < 3 else cell for j, cell in enumerate(row)).rstrip()
        click.echo(click.style(line, bold=True) if i == 0 else line)
    for info in problems:
        where = f"{info.package} {info.version}".strip() or "an unnamed package"
        if info.shadowed_by:
            by = "grace's built-in" if info.shadowed_by == "grace" else f"the plugin package {info.shadowed_by}'s"
            click.echo(click.style("shadowed ", fg="yellow") + f"{info.name}: from {where} ({info.target}) is not "
                       f"used: {by} {info.name}: has that name; uninstall one of them or rename the entry point")
        else:
            click.echo(click.style("broken   ", fg="red") + f"{info.name}: {info.error}")
