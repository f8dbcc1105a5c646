"""A model that searches the KB for itself: its tools, backed by the KB's own retriever, and the loop that runs them.

A model with search settings (TOML ``search = true`` or ``[models.search]``, ``grace run --search MODEL``) is not
shown the top k: its prompt (``grounded-search.v1``) holds the question, and it gets two tools, ``search_kb(query,
k)`` and ``open_article(id)``. Their results come back in the article format of every GRACE prompt (``[ID: x]
title`` then the text), so what a model reads is the same whether grace pushed it or the model pulled it.

The loop is the runner's, once for every provider that speaks a tool protocol: each turn is one call through the
engine (its rate limits, retries and in-flight gate), cached on its own, keyed on the conversation so far (the first
turn's key, which names model, parameters, template, KB and repeat, plus every turn since). A re-run asks nothing
again, and a run killed mid-loop asks only the turns it had not been answered.

It stops, whatever the model does: after ``max_tool_calls`` calls (default :data:`DEFAULT_MAX_TOOL_CALLS`) it asks
for the answer with tools switched off (``tool_choice`` none), and a model that still calls tools then ends with the
text it gave. A call grace cannot run (an unknown tool, arguments that are not a JSON object, arguments over
:data:`MAX_ARGUMENT_BYTES`) is answered with what was wrong, counts towards the cap, and names the loop's outcome
(``tool_loop.outcome``), never a crash. Every turn is recorded in the row (``tool_loop``): each call, its arguments,
the IDs it returned, tokens and time.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness.core.errors import GraceError
from harness.core.hashing import json_hash
from harness.prompts import RetrievedArticle, article_block
from harness.providers.base import Completion, Request
from harness.run_folder.run_records import (
    LOOP_OUTCOMES,
    CallError,
    SearchSettings,
    ToolCallRecord,
    ToolLoopRecord,
    ToolTurn,
)
from harness.runner.tool_schema import MAX_K

if TYPE_CHECKING:
    from harness.runner.engine import CallResult, Engine, RunPlan

DEFAULT_MAX_TOOL_CALLS = SearchSettings.model_fields["max_tool_calls"].default
MAX_ARGUMENT_BYTES = 16_384  # a query or an ID is a line; anything longer is not read (nor sent back, nor recorded)
SHOWN_ARGUMENT = 2_000  # characters of a call's arguments kept in the row


def turn_key(first_key: str, messages: list[dict[str, Any]], start: int, tool_choice: str | None) -> str:
    """A later turn's cache key: the first turn's (model, parameters, template, KB, repeat, tools) and every
    message since; so a turn is answered from the cache only when the whole conversation before it is the same."""
    return json_hash({"first": first_key, "since": messages[start:], "tool_choice": tool_choice})


class SearchTools:
    """``search_kb`` and ``open_article`` over one KB and retriever; results cached per (query, k) for the run."""

    def __init__(self, kb: Any, retriever: Any, default_k: int):
        self.kb, self.retriever, self.default_k = kb, retriever, default_k
        self._found: dict[tuple[str, int], list[str]] = {}
        self._lexical = bool(getattr(retriever, "lexical", False))

    async def search(self, query: str, k: int) -> list[str]:
        key = (query, k)
        if key not in self._found:
            if self._lexical:  # microseconds: no thread
                hits = self.retriever.search_many([query], k)[0]
            else:  # an embedding model: off the event loop, so the other calls go on
                hits = (await asyncio.to_thread(self.retriever.search_many, [query], k))[0]
            self._found[key] = [h.id for h in hits]
        return self._found[key]

    def articles(self, ids: list[str]) -> str:
        by_id = self.kb.by_id
        return article_block([RetrievedArticle(i, by_id[i].title, by_id[i].text, 0.0) for i in ids])

    async def run(self, call: dict[str, str], allowed: list[str]) -> tuple[str, ToolCallRecord]:
        """The text the model is sent back for one call, and the call's record."""
        name, raw = str(call.get("name") or ""), call.get("arguments")
        raw = raw if isinstance(raw, str) else json.dumps(raw)
        size = len(raw.encode("utf-8", "replace"))
        record = ToolCallRecord(name=name[:200], arguments=raw[:SHOWN_ARGUMENT], size=size)

        def problem(kind: str, note: str) -> tuple[str, ToolCallRecord]:
            record.problem, record.note = kind, note
            return f"Error: {note}", record

        if name not in allowed:
            return problem("unknown_tool", f"there is no tool named {name[:100]!r}; the tools are "
                                           f"{', '.join(allowed)}")
        if size > MAX_ARGUMENT_BYTES:
            return problem("oversized_arguments", f"the arguments are over the limit of {MAX_ARGUMENT_BYTES:,} bytes; "
                                                  "send a short query")  # (the size is the record's, not the model's)
        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return problem("malformed_arguments", f"the arguments are not valid JSON ({exc}); send a JSON object")
        if not isinstance(args, dict):
            return problem("malformed_arguments", "the arguments must be a JSON object")
        if name == "search_kb":
            query, k = args.get("query"), args.get("k", self.default_k)
            if not isinstance(query, str) or not query.strip():
                return problem("malformed_arguments", "search_kb needs a non-empty string 'query'")
            if isinstance(k, bool) or not isinstance(k, int | float) or k < 1 or k != int(k):
                return problem("malformed_arguments", f"search_kb's 'k' must be a whole number from 1 to {MAX_K}")
            record.returned = await self.search(query, min(int(k), MAX_K))
            return (self.articles(record.returned) or "No article matches this query."), record
        ident = args.get("id")
        if isinstance(ident, int | float) and not isinstance(ident, bool):
            ident = str(int(ident)) if ident == int(ident) else str(ident)
        if not isinstance(ident, str) or not ident.strip():
            return problem("malformed_arguments", "open_article needs a string 'id'")
        if ident.strip() not in self.kb.by_id:
            return f"No article has the ID {ident.strip()[:100]!r}.", record
        record.returned = [ident.strip()]
        return self.articles(record.returned), record


def _storable(comp: Completion) -> Completion:
    """The turn as the cache keeps it: each argument cut to one byte over the limit, so a 10 MB argument costs
    the shared cache 16 KB and is still judged oversized when the turn is read back."""
    if not comp.tool_calls or all(len(str(c.get("arguments"))) <= MAX_ARGUMENT_BYTES for c in comp.tool_calls):
        return comp
    calls = [{**c, "arguments": str(c.get("arguments"))[:MAX_ARGUMENT_BYTES + 1]} for c in comp.tool_calls]
    return replace(comp, tool_calls=calls)


def _kept(call: dict[str, str]) -> dict[str, str]:
    """A call as it goes back to the model in the conversation: arguments over the limit replaced by a note, so a
    10 MB argument is not sent back on every later turn (nor keyed, nor cached)."""
    args = call.get("arguments")
    args = args if isinstance(args, str) else json.dumps(args)
    if len(args) > MAX_ARGUMENT_BYTES:
        args = json.dumps({"omitted": f"over the limit of {MAX_ARGUMENT_BYTES:,} bytes"})
    return {"id": str(call.get("id") or "")[:200], "name": str(call.get("name") or "")[:200], "arguments": args}


def _outcome(loop: ToolLoopRecord) -> str:
    problems = {c.problem for t in loop.turns for c in t.calls}
    if loop.stopped == "hit_cap":
        return "hit_cap"
    return next((o for o in LOOP_OUTCOMES if o in problems), "completed")


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


class ToolLoop:
    """One search model's loop: its settings and the tools it calls."""

    def __init__(self, settings: SearchSettings, tools: SearchTools):
        self.settings, self.tools = settings, tools
        self.allowed = list(settings.tools)

    async def answer(self, engine: Engine, plan: RunPlan, request: Request, key: str, limiter: Any,
                     gate: Any) -> CallResult | None:
        """Run the loop for one question; None when the model was stopped before its first turn was sent."""
        from harness.runner.engine import CallResult, cached_result

        spec, cap = plan.spec, self.settings.max_tool_calls
        use_cache = engine.cache is not None and plan.provider.needs_network
        loop = ToolLoopRecord(max_tool_calls=cap)
        messages, start = list(request.messages), len(request.messages)
        seen: dict[str, None] = {}
        attempts, forced, all_cached = 0, False, True
        last: Completion | None = None
        while True:
            choice = "none" if forced else "auto"
            turn = replace(request, messages=messages, tool_choice=choice)
            k = key if len(messages) == start else turn_key(key, messages, start, choice)
            hit = cached_result(engine.cache, k) if use_cache and engine.read_cache else None
            if hit is not None:
                comp, latency, cached = hit.completion, hit.latency_ms, True
            else:
                comp, sent, tries, err, waited = await engine._call(plan, turn, limiter, gate)
                attempts += tries
                if tries == 0 and not loop.turns:
                    return None
                if comp is None:  # failed, or the model was stopped while this turn waited: asked again next run
                    err = err or CallError(kind="not_tried", message="not tried: the model was stopped mid-loop",
                                           attempts=0)
                    error = CallResult(None, None, attempts, err, False, None, key)
                    error.loop = self._close(loop, seen, forced)
                    return error
                latency = round(sent.latency_ms, 1) if sent is not None and plan.provider.needs_network else None
                cached = all_cached = False
                if use_cache:  # an argument over the limit kept just over it: read back, it is still too long
                    engine.cache.put(k, spec.name, CallResult(_storable(comp), latency, tries, None, False, None, k,
                                                              waited).cache_row())
            assert comp is not None
            last = comp
            record = ToolTurn(input_tokens=comp.input_tokens, output_tokens=comp.output_tokens, latency_ms=latency,
                              cached=cached, finish_reason=comp.finish_reason)
            loop.turns.append(record)
            if not comp.tool_calls:
                break
            if forced:  # told to answer without tools, and called them anyway: it ends with the text it gave
                record.calls = [ToolCallRecord(name=str(c.get("name"))[:200], arguments=str(c.get("arguments"))[
                    :SHOWN_ARGUMENT], size=len(str(c.get("arguments"))), problem="over_cap",
                    note="called after the cap, when told to answer") for c in comp.tool_calls[:cap]]
                break
            room = cap - loop.tool_calls
            made = comp.tool_calls[:room + 1]  # past the cap: one is told why, the rest dropped
            calls = [_kept(c) for c in made]  # as they go back to the model: an oversized argument left out
            replies = []
            for original, call in zip(made, calls, strict=True):
                if loop.tool_calls >= cap:
                    text = (f"Not run: the limit of {cap} tool calls per question is reached. Answer now from the "
                            "articles you have.")
                    rec = ToolCallRecord(name=call["name"], arguments=call["arguments"][:SHOWN_ARGUMENT],
                                         size=len(call["arguments"]), problem="over_cap", note=text)
                else:
                    text, rec = await self.tools.run(original, self.allowed)
                    loop.tool_calls += 1
                    seen.update(dict.fromkeys(rec.returned))
                record.calls.append(rec)
                replies.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": text})
            messages = [*messages, {"role": "assistant", "content": comp.text or "", "tool_calls": calls}, *replies]
            if loop.tool_calls >= cap:
                forced = True
        final = Completion(text=last.text, input_tokens=_sum([t.input_tokens for t in loop.turns]),
                           output_tokens=_sum([t.output_tokens for t in loop.turns]),
                           finish_reason=last.finish_reason, json_mode=last.json_mode)
        times = [t.latency_ms for t in loop.turns if t.latency_ms is not None]
        result = CallResult(final, round(sum(times), 1) if times else None, attempts, None, all_cached, None, key)
        result.loop = self._close(loop, seen, forced)
        return result

    @staticmethod
    def _close(loop: ToolLoopRecord, seen: dict[str, None], capped: bool) -> ToolLoopRecord:
        """The loop's record, finished: what its calls returned, how it stopped, its named outcome."""
        loop.retrieved = list(seen)
        loop.stopped = "hit_cap" if capped else "answered"
        loop.outcome = _outcome(loop)
        return loop


def attach_loops(plans: list[RunPlan], kb: Any, embedder: str | None, k: int, redacting: bool = False) -> None:
    """Give each plan of a searching model its loop, over the KB's retriever (``embedder``: the run's, else the KB's)."""
    searching = [p for p in plans if getattr(p.spec, "search", None) is not None]
    if not searching:
        return
    if redacting:
        raise GraceError(f"--redact-pii does not redact search results yet; run {searching[0].spec.name} (a model "
                         "that searches) without it, or without search")
    from harness.providers import provider_class

    for p in searching:  # the spec's provider class: a model on replicas is served by several of it
        if not (getattr(p.provider, "supports_tools", False) or provider_class(p.spec).supports_tools):
            raise GraceError(f"{p.spec.name}: search needs a provider with a tool protocol (openai: and "
                             "openai-compatible servers, anthropic:, google:, vertex:, bedrock:); "
                             f"{p.spec.provider}: has none in grace")
        if p.batch:
            raise GraceError(f"{p.spec.name}: a search loop cannot go through a batch API (each turn waits for the "
                             "answer to the one before); remove batch = true for this model")
    retriever = kb.retriever(embedder)
    for p in searching:
        p.loop = ToolLoop(p.spec.search, SearchTools(kb, retriever, p.spec.search.k or k))
