"""Import modules on a background thread while the main thread waits on the network.

A run spends most of its wall time waiting for replies, with the CPU idle; the
scoring and report modules it needs afterwards can be imported then instead of
after the last reply, where every millisecond adds to the run's wall time. The
import lock makes this safe: a main-thread import of a module still loading
here waits for it rather than loading it twice.
"""

from __future__ import annotations

import importlib
import threading


def preload(*modules: str) -> threading.Thread:
    """Start importing ``modules`` (best effort: a failure here is raised again by the real import later)."""

    def work() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - the caller's own import reports it
                continue

    thread = threading.Thread(target=work, name="grace-preload", daemon=True)
    thread.start()
    return thread
