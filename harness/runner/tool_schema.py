"""The tools a model that searches is given (harness.runner.tool_loop), in grace's neutral shape: a name, a
description and a JSON Schema of the arguments, which each provider writes in its own wire format (OpenAI
functions, Anthropic tools, Gemini function declarations, Converse tool specs). Apart from the loop, so building a
request (harness.runner.engine) needs only these."""

from __future__ import annotations

from typing import Any

from harness.run_folder.run_records import SearchSettings

MAX_K = 20  # articles one search may return: more is a prompt the size of the KB

TOOLS: dict[str, dict[str, Any]] = {
    "search_kb": {
        "name": "search_kb",
        "description": "Search the company knowledge base. Returns the best-matching articles, best first, each as "
                       "[ID: <id>] <title> followed by the article's text.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to search for, in words."},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": "How many articles to return."}},
            "required": ["query"], "additionalProperties": False},
    },
    "open_article": {
        "name": "open_article",
        "description": "Open one knowledge-base article by its ID. Returns it as [ID: <id>] <title> followed by its text.",
        "parameters": {"type": "object", "properties": {
            "id": {"type": "string", "description": "The article's ID, as a search showed it."}},
            "required": ["id"], "additionalProperties": False},
    },
}


def tool_definitions(settings: SearchSettings) -> list[dict[str, Any]]:
    """The tools a model is given, in grace's neutral shape (each provider writes its own)."""
    return [TOOLS[name] for name in settings.tools]
