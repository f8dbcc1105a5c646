"""Root of the ``grace`` CLI.

Command groups are found in their modules (:func:`discover`, each module's
``COMMANDS``) and imported on first use, so ``grace --help`` stays fast and never
imports an SDK or scikit-learn.
User errors (:class:`GraceError`) print one clear line and exit 2; Ctrl-C exits
130 after the command's own cleanup (runs flush as they go, so nothing is lost).
"""

from __future__ import annotations

import atexit
import gc
import importlib.util
import logging
import os
import sys
import threading
from typing import TextIO

import click

from harness.core.errors import GraceError
from harness.core.registry import resolve, split_target
from harness.core.version import __version__

# Each command module declares the commands it defines (``COMMANDS = {"name": "one-line help"}``, each an attribute
# of that name, a dash read as "_"); they are found by reading the modules' text, never importing them, so ``grace --help`` stays fast.
# Adding a command is its module here (and its workflow): no list to edit. ``grace --help`` lists these first,
# in this order, then any other command by name.
COMMAND_PACKAGE = "harness.cli"  # every command line is here (tests/source_tree/test_layers.py: the CLI is on top)
HELP_ORDER = ("kb", "run", "score", "report", "gate", "compare", "view", "annotate", "annotations", "gold", "spotcheck",
              "cache", "demo")


def discover() -> dict[str, tuple[str, str]]:
    """Command name -> (``"module:attr"``, one-line help), from every command module's ``COMMANDS``."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found: dict[str, tuple[str, str]] = {}
    for path in sorted((root / COMMAND_PACKAGE.replace(".", "/")).glob("*.py")):
        block = re.search(r"^COMMANDS = \{(.*?)^\}", path.read_text(encoding="utf-8"), re.M | re.S)
        for name, help_text in re.findall(r'^\s+"([\w-]+)": "([^"]*)",', block.group(1) if block else "", re.M):
            found[name] = (f"{COMMAND_PACKAGE}.{path.stem}:{name.replace('-', '_')}", help_text)  # import-logs: import_logs
    rank = {name: i for i, name in enumerate(HELP_ORDER)}
    return dict(sorted(found.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))


COMMANDS: dict[str, tuple[str, str]] = discover()


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        return importlib.util.find_spec(split_target(COMMANDS[name][0])[0]) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not self._available(name):
            return None
        return resolve(COMMANDS[name][0])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grace")
def cli() -> None:
    """grace: benchmark LLMs on grounded question answering by their citations."""


class _Notices(logging.Handler):
    """Notices from the ``grace`` logger (a repaired file, a resumed run) as one yellow line each on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        colour = "yellow" if record.levelno >= logging.WARNING else None
        click.echo(click.style(record.getMessage(), fg=colour) if colour else record.getMessage(), err=True)


def _show_notices() -> logging.Handler:
    logger = logging.getLogger("grace")
    handler = _Notices(logging.INFO)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


def _mask_streams() -> tuple[TextIO, TextIO] | None:
    """Wrap stdout and stderr so everything printed (grace's lines, rich, click, logging, an SDK's own messages,
    a traceback) passes through the mask: a key a server echoed never reaches the terminal
    (:mod:`harness.core.secrets`). Returns the streams it replaced, None when they were wrapped already."""
    from harness.core.secrets import MaskedStream

    if isinstance(sys.stdout, MaskedStream) and isinstance(sys.stderr, MaskedStream):
        return None
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout), MaskedStream(sys.stderr)
    return streams


def main(argv: list[str] | None = None) -> None:
    from harness.cli.output_streams import pipe_safe_streams

    streams = _mask_streams()
    handler = _show_notices()
    try:
        with pipe_safe_streams():  # grace ... | head: the output stops, the command's work does not
            _main(argv)
    finally:
        logging.getLogger("grace").removeHandler(handler)
        if streams is not None:  # called in-process (tests, a notebook): the caller's streams back as they were
            sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> None:
    try:
        rc = cli.main(args=argv, prog_name="grace", standalone_mode=False)
        if isinstance(rc, int) and rc:  # standalone_mode=False returns ctx.exit(n) codes instead of raising
            sys.exit(rc)
    except GraceError as exc:
        click.echo(click.style("error: ", fg="red", bold=True) + str(exc), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("interrupted; finished work is saved, run the same command again to resume", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except OSError as exc:  # a full disk, a read-only folder, a missing permission: the user's to fix
        from harness.core.files import disk_error

        err = disk_error(exc.filename or "a file grace was writing", exc)
        click.echo(click.style("error: ", fg="red", bold=True) + str(err), err=True)
        sys.exit(err.exit_code)


def entry() -> None:
    """The ``grace`` command: :func:`main`, then leave without tearing the interpreter down.

    Tearing down thousands of SDK and pydantic classes took 0.2-0.3 s after every
    command, longer than ``grace report`` itself. By the time ``main`` returns
    every file grace wrote is closed (writers flush per line), so the exit runs
    the ``atexit`` handlers, flushes the streams and ends the process. A thread
    still running (a web app's server) gets the ordinary exit, which waits for it.

    The cyclic garbage collector runs 1/50th as often: importing an SDK, numpy
    and pydantic allocates millions of objects, none of them garbage, and the
    default every-700-allocations passes over them cost ~5% of a command's time.
    """
    gc.set_threshold(35_000, 10, 10)
    _mask_streams()  # for the whole process: a traceback printed after main() is masked too
    try:
        main()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    if threading.active_count() > 1 or sys.getprofile() or sys.gettrace():  # a profiler or debugger reports at exit
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (grace ... | head): nothing more can be shown
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    entry()
