"""The fake server's batch endpoints: OpenAI's (and Azure's) Batch API, Anthropic's Message Batches and Gemini's
batch mode, in their documented wire formats, so the real SDK clients can submit, poll, cancel, list and collect.

One module per API (``fake_batches_openai``, ``fake_batches_anthropic``, ``fake_batches_gemini``: its wire format
and routes), the batches and the state machine they share in ``fake_batch_state``; here the store the server asks,
which routes a call to its API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qs

from harness.testing import fake_batches_anthropic, fake_batches_gemini, fake_batches_openai
from harness.testing.fake_batch_state import (
    Answer,
    BatchBehaviour,
    BatchState,
    Call,
    FakeAPIServer,
    FakeBatch,
    FakeItem,
    Handler,
)

__all__ = ["Answer", "BatchBehaviour", "BatchStore", "FakeBatch", "FakeItem"]

# in this order: a path two APIs share goes by the client (google-genai names itself in headers)
_ROUTES: list[tuple[str, re.Pattern[str], Handler, str]] = [
    *fake_batches_openai.ROUTES, *fake_batches_anthropic.ROUTES, *fake_batches_gemini.ROUTES]


class BatchStore(BatchState):
    """The batches and files of one server, and the route of each batch or file endpoint call to its API."""

    def handle(self, owner: FakeAPIServer, method: str, path: str, query: str, headers: Mapping[str, str],
               raw: bytes) -> Answer | None:
        """The answer to a batch or file endpoint call, or None when ``path`` is none of them.

        Gemini's API version "v1" (google-genai's default) puts its batches where OpenAI's are
        (``GET /v1/batches[/{id}]``), so those routes go by the client: google-genai names itself in headers.
        """
        lower = {k.lower(): v for k, v in headers.items()}
        call = Call(method, parse_qs(query), lower.get("content-type", ""), raw,
                     google="x-goog-api-client" in lower or "x-goog-api-key" in lower)
        for verb, pattern, handler, client in _ROUTES:
            match = pattern.match(path)
            if match is not None and verb == method and client in ("any", "google" if call.google else "other"):
                with self._lock:
                    self.calls.append((method, path))
                    return handler(self, owner, match, call)
        return None
