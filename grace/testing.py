"""``grace.testing``: what a provider plugin's tests and a worked example run against instead of a real model API.

:class:`FakeAPIServer` is a local server speaking the OpenAI, Anthropic, Gemini and Bedrock wire formats with
scripted replies (``Reply.rate_limit(retry_after=3)``, ``Reply.error(500)``, ``Reply.malformed()``): grace's own
provider tests run against it, so a plugin's can too, offline. :func:`simulate_panel` writes the response rows of a
seeded panel of models of chosen accuracies, for trying the scoring and labelling steps without calling any model.
"""

from __future__ import annotations

from harness.testing import FakeAPIServer as FakeAPIServer
from harness.testing import RecordedRequest as RecordedRequest
from harness.testing import Reply as Reply
from harness.testing import cite_first_id as cite_first_id
from harness.testing import prompt_text as prompt_text
from harness.testing.panel import simulate_panel as simulate_panel

__all__ = ["FakeAPIServer", "RecordedRequest", "Reply", "cite_first_id", "prompt_text", "simulate_panel"]
