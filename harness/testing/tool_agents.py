"""Scripted models that search for themselves, for the fake API server: each reads the conversation it is sent (in
the OpenAI, Anthropic, Gemini or Bedrock Converse wire shape), calls ``search_kb`` the way its name says and answers from what came back.

They make the search loop's figures (harness.runner.tool_loop, harness.scoring.funnel) checkable against a hand
count: what each one searched, what the server saw come back and what it cited are all in the server's requests.

* ``search-top1``: searches the question once, cites the top hit (refuses when nothing came back).
* ``search-twice``: searches the question's first three words, then reformulates to the whole question, and cites
  the top hit of the second search.
* ``cite-unseen``: searches once, then cites a KB article that no search returned (a citation it never saw).
* ``search-forever``: calls ``search_kb`` on every turn, even when told to answer (a model that never stops).

Any other model name answers ``OK``. Use ``FakeAPIServer(responder=ToolAgents(kb_ids))``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from harness.core.citation_text import CANONICAL
from harness.prompts import REFUSAL
from harness.testing.api_formats import Reply

_LABEL = re.compile(r"^[^:\n]{0,24}:\s*")  # "Question: " in any of the templates' languages


class Conversation:
    """What a model reads in a request body: the question, each tool result so far, whether it must answer now."""

    def __init__(self, body: dict[str, Any]):
        self.model = str(body.get("model") or "")
        choice = body.get("tool_choice")
        mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")  # Gemini
        self.forced = choice == "none" or (isinstance(choice, dict) and choice.get("type") == "none") or mode == "NONE"
        self.question = ""
        self.results: list[str] = []
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            content = m.get("content")
            if m.get("role") == "tool":
                self.results.append(str(content))
            elif m.get("role") == "user" and isinstance(content, list):  # Anthropic and Bedrock: blocks
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        inner = block.get("content")
                        self.results.append(inner if isinstance(inner, str) else json.dumps(inner))
                    elif isinstance(block.get("toolResult"), dict):
                        self.results += [str(c.get("text")) for c in block["toolResult"].get("content") or []]
                    elif isinstance(block.get("text"), str):
                        self._ask(block["text"])
            elif m.get("role") == "user" and isinstance(content, str):
                self._ask(content)
        for c in body.get("contents") or []:  # Gemini
            for part in c.get("parts") or [] if isinstance(c, dict) else []:
                if isinstance(part.get("functionResponse"), dict):
                    self.results.append(str((part["functionResponse"].get("response") or {}).get("result")))
                elif c.get("role") == "user" and isinstance(part.get("text"), str):
                    self._ask(part["text"])

    def _ask(self, text: str) -> None:
        """The first user text is the question (the template's label taken off)."""
        if not self.question and text.strip():
            self.question = _LABEL.sub("", text.strip().splitlines()[-1]).strip()

    def seen(self) -> list[str]:
        """Every article ID the tool results showed, in order, once each."""
        return list(dict.fromkeys(i for text in self.results for i in CANONICAL.findall(text)))


def _cite_top(text: str) -> str:
    ids = CANONICAL.findall(text)
    return f"It is in this article. [ID: {ids[0]}]" if ids else REFUSAL


class ToolAgents:
    """The responder: ``ToolAgents(kb_ids)(body) -> Reply``; ``kb_ids`` lets ``cite-unseen`` name a real article."""

    def __init__(self, kb_ids: Iterable[str] = ()):
        self.kb_ids = [str(i) for i in kb_ids]

    def __call__(self, body: dict[str, Any]) -> Reply:
        c = Conversation(body if isinstance(body, dict) else {})
        n = len(c.results)
        if c.model == "search-forever":
            return Reply.calls(("search_kb", {"query": f"{c.question} {n}", "k": 3}))
        if c.model == "search-top1":
            if n == 0 and not c.forced:
                return Reply.calls(("search_kb", {"query": c.question, "k": 3}))
            return Reply.ok(_cite_top(c.results[-1] if c.results else ""))
        if c.model == "search-twice":
            if n == 0 and not c.forced:
                return Reply.calls(("search_kb", {"query": " ".join(c.question.split()[:3]), "k": 3}))
            if n == 1 and not c.forced:
                return Reply.calls(("search_kb", {"query": c.question, "k": 3}))
            return Reply.ok(_cite_top(c.results[-1] if c.results else ""))
        if c.model == "cite-unseen":
            if n == 0 and not c.forced:
                return Reply.calls(("search_kb", {"query": c.question, "k": 3}))
            seen = set(c.seen())
            other = next((i for i in self.kb_ids if i not in seen), None)
            return Reply.ok(f"See this article. [ID: {other}]" if other else REFUSAL)
        return Reply.ok("OK")
