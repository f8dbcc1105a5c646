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
import time
from collections.abc import Callable


def preload(*modules: str, when: Callable[[], bool] | None = None, poll_s: float = 0.05,
            needed: Callable[[], bool] | None = None) -> threading.Thread:
    """Start importing ``modules`` (best effort: a failure here is raised again by the real import later).

    ``when``: wait until it returns True (polled every ``poll_s``), so the imports do not compete with the
    work that has to happen before the first request leaves (the SDK import above all). ``needed``: asked once,
    on the thread (a slow look-up costs the caller nothing); False: import nothing.
    """

    def work() -> None:
        if needed is not None and not needed():
            return
        while when is not None and not when():
            time.sleep(poll_s)
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - the caller's own import reports it
                continue

    thread = threading.Thread(target=work, name="grace-preload", daemon=True)
    thread.start()
    return thread
