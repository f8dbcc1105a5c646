"""A scripted model for tests and dry rehearsals (like inspect's ``mockllm``).

``scripted:NAME`` answers from ``options["responses"]`` (question_id -> text) or
``options["default"]``; ``{top_id}``, ``{second_id}`` and ``{refusal}`` in a
reply are filled from the request, so one script works for any KB. Internal
(``harness.providers.INTERNAL``): it works, but no message or document offers it.
"""

from __future__ import annotations

from harness.prompts import REFUSAL
from harness.providers.base import Completion, Provider, Request


class ScriptedProvider(Provider):
    provider_name = "scripted"
    needs_network = False

    async def complete(self, request: Request) -> Completion:
        ctx = request.context
        responses = self.spec.options.get("responses", {})
        text = responses.get(ctx.question_id) if ctx else None
        if text is None:
            text = self.spec.options.get("default", "{refusal}")
        ids = [a.id for a in ctx.articles] if ctx else []
        text = (
            text.replace("{top_id}", ids[0] if ids else "")
            .replace("{second_id}", ids[1] if len(ids) > 1 else "")
            .replace("{refusal}", REFUSAL)
        )
        words = sum(len(m["content"].split()) for m in request.messages)
        return Completion(text, input_tokens=words, output_tokens=len(text.split()), finish_reason="stop")
