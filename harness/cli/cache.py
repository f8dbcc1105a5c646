"""``grace cache``: find, check and clear the response cache shared by every run.

The cache only saves money (answers live in run folders), so the tools here are
for when it is suspected of damage or grew too big: ``check`` reads without
changing anything, and ``clear`` asks first unless told ``--yes``, because a
cleared cache means paying for every call again.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from harness.core.errors import GraceError

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "cache": "Show, check or clear the response cache shared by all runs.",
}

_path_option = click.option(
    "--path", "cache_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    help="Cache file to use instead of the default ($GRACE_CACHE_DIR/responses.sqlite).",
)

def _resolve(cache_path: Path | None) -> Path:
    from harness.runner.cache import default_cache_path

    return cache_path or default_cache_path()


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _can_ask() -> bool:
    """A prompt nobody can answer would hang a CI job or a pipe; those must say --yes."""
    return sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")


@click.group()
def cache() -> None:
    """Show, check or clear the response cache (answers in run folders are never touched)."""


@cache.command("path")
@_path_option
def path_cmd(cache_path: Path | None) -> None:
    """Print where the response cache is (set GRACE_CACHE_DIR to move it)."""
    click.echo(str(_resolve(cache_path)))


@cache.command("check")
@_path_option
def check_cmd(cache_path: Path | None) -> None:
    """Count cached answers and run SQLite's integrity check; exit 1 if the cache is damaged.

    Reads only: nothing is created, moved or changed, so it is safe while a run is going.
    """
    from harness.runner.cache import check_cache

    health = check_cache(_resolve(cache_path))
    click.echo(f"cache:     {health.path}")
    if health.damaged_copies:
        click.echo(f"moved aside earlier: {len(health.damaged_copies)} file(s), e.g. {health.damaged_copies[0]} "
                   "(`grace cache clear` deletes them too)")
    if not health.exists and health.ok:
        click.echo("no cache file yet: the first `grace run` with a network model creates it")
        return
    if health.exists:
        wal = f" (+ {_size(health.wal_bytes)} write-ahead log)" if health.wal_bytes else ""
        click.echo(f"size:      {_size(health.size_bytes)}{wal}")
        click.echo(f"rows:      {'unknown' if health.rows is None else f'{health.rows:,}'}")
    if health.ok:
        click.echo("integrity: OK")
        return
    click.echo("integrity: DAMAGED")
    for problem in health.problems:
        click.echo(f"  {problem}")
    click.echo("fix: `grace cache clear` deletes it and the next run starts a fresh cache; answers already in run "
               "folders are kept, only answers that came from this cache will be asked (and paid for) again")
    sys.exit(1)  # not click's Exit: grace's main() runs click with standalone_mode=False


@cache.command("clear")
@_path_option
@click.option("--yes", "-y", is_flag=True, help="Delete without asking (required when there is no terminal to ask on).")
def clear_cmd(cache_path: Path | None, yes: bool) -> None:
    """Delete the response cache, its SQLite side files and any damaged copies moved aside.

    Every call is paid for again afterwards; answers already in run folders are kept.
    Do not clear while a run is going: its new answers would go to the deleted file.
    """
    from harness.runner.cache import damaged_copies, side_files

    path = _resolve(cache_path)
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, not a cache file; give the file (see `grace cache path`)")
    targets = [p for p in [path, *side_files(path)] if p.exists()]
    targets += [p for p in damaged_copies(path) if p not in targets]
    if not targets:
        click.echo(f"nothing to delete: no cache at {path}")
        return
    total = sum(p.stat().st_size for p in targets)
    if not yes:
        if not _can_ask():
            raise GraceError(f"{path}: not deleting the response cache without --yes when there is no terminal to "
                             "ask on; run `grace cache clear --yes`")
        for p in targets:
            click.echo(f"  {p}")
        if not click.confirm(f"Delete these {len(targets)} file(s), {_size(total)}? Every call will be paid for again",
                             default=False):
            click.echo("nothing deleted")
            return
    for p in targets:
        try:
            p.unlink(missing_ok=True)
        except OSError as exc:
            raise GraceError(f"{p}: cannot delete ({exc.strerror or exc})") from None
    click.echo(f"deleted {len(targets)} file(s), {_size(total)}; the next run starts a fresh cache "
               "(answers in run folders are kept)")
