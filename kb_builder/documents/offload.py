"""Run one function in a second Python process while this one works: a large document uses two cores.

The child is a plain interpreter (``python -m kb_builder.documents.offload``)
given a pickle, not multiprocessing: spawn re-runs the caller's main
script in the child (a script without a ``__main__`` guard would build its KB
twice), and fork can deadlock a process that runs threads (the CLI's progress
bar). Callers treat any failure as "no second core" and do the work themselves.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any


class Offloaded:
    """A call running in a child process; ``result()`` waits for it, ``cancel()`` stops it."""

    def __init__(self, func: Callable[..., Any], *args: Any) -> None:
        # the arguments go through a file: feeding a pipe from a thread while this process computes
        # starves the thread of the GIL, and the child would wait longer than it works
        fd, self._input = tempfile.mkstemp(prefix="grace-offload-", suffix=".pickle")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((func.__module__, func.__qualname__, args), fh, protocol=pickle.HIGHEST_PROTOCOL)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the child imports what we import
        try:
            if not sys.executable:
                raise OSError("no Python executable to start")
            # stderr dropped: a failure means "do it here", not a traceback across the user's progress bar
            self._proc = subprocess.Popen([sys.executable, "-m", __name__, self._input], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env=env)
        except OSError:
            os.unlink(self._input)
            raise
        self._done = False

    def result(self) -> Any:
        try:
            out = self._proc.communicate()[0]
        finally:
            self._finish()
        if self._proc.returncode != 0 or not out:
            raise OSError(f"offloaded work failed (exit code {self._proc.returncode})")
        return pickle.loads(out)

    def cancel(self) -> None:
        """Stop the child if it still runs; harmless after ``result()``."""
        if not self._done:
            self._proc.kill()
            self._proc.communicate()
            self._finish()

    def _finish(self) -> None:
        self._done = True
        with contextlib.suppress(OSError):
            os.unlink(self._input)


def _main(path: str) -> None:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the work prints must not corrupt the pickle
    with open(path, "rb") as fh:
        module, name, args = pickle.load(fh)
    func: Any = importlib.import_module(module)
    for part in name.split("."):
        func = getattr(func, part)
    out.write(pickle.dumps(func(*args), protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()


if __name__ == "__main__":
    _main(sys.argv[1])
