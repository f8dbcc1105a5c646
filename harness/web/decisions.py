"""A reviewer's decision that holds: made only on what the reviewer saw, and one per item however many send one.

Every team app's decision goes through :func:`decide`: a gold question decided between
labellers (``grace annotate --team``), a claim decided between reviewers' verdicts
(``grace annotations review --team``), a curator's change approved or rejected (``grace kb
curate --reviewers``). The request says what its page showed (``seen``: a flat map of
strings, e.g. each person's label and the decision so far, or the articles' hashes and the
change's status); under the item's lock that is compared with the state now, and the
decision is recorded only when they are equal. So a decision without ``seen`` is refused
(400), a decision on labels that changed since is refused (409, with the state now), and of
two decisions sent at once on one fresh page, the first is recorded and the second finds the
state changed by it and is refused (409) instead of silently replacing it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any, TypeVar

from harness.web.server import Rejected

T = TypeVar("T")


class StaleDecision(Rejected):
    """A decision on a state that changed since the page showed it (409: reload and decide again); ``now`` is the
    state it changed to."""

    status = HTTPStatus.CONFLICT

    def __init__(self, message: str, now: Mapping[str, str] | None = None):
        super().__init__(message)
        self.now = dict(now or {})
        self.details = {"now": self.now}


class Unseen(Rejected):
    """A decision that does not say what it was made on (400)."""


def shown(state: Mapping[str, str]) -> str:
    return ", ".join(f"{k.lstrip('@')} {v or '(none)'}" for k, v in state.items()) or "nothing"


def decide(lock: threading.RLock | threading.Lock, what: str, seen: Any, now: Callable[[], Mapping[str, str]],
           record: Callable[[], T], say: Callable[[dict[str, str], dict[str, str]], str] | None = None) -> T:
    """``record()`` under ``lock`` when ``seen`` equals ``now()``; else refused with the state now (409; ``say(seen,
    now)`` words it, by default every part of the state now), or with what to send when ``seen`` is missing or not a
    map of strings (400)."""
    if not isinstance(seen, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in seen.items()):
        raise Unseen(f"a decision on {what} says what it was made on: send the 'seen' its page was given "
                     "(reload the page)")
    with lock:
        state = dict(now())
        if dict(seen) != state:
            message = say(dict(seen), state) if say is not None else (
                f"{what} changed since you opened it (now: {shown(state)}); reload and decide again")
            raise StaleDecision(message, state)
        return record()
