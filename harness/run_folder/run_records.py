"""Typed records of a run folder: one ``ResponseRecord`` per line of ``responses.jsonl``, and ``run.json``.

The response line is a contract (the scorer and users' own tools read it): it
carries the raw text plus everything needed to audit it later: what was
retrieved, which prompt (hash), tokens, cost, latency, whether it came from the
cache, the error if the call failed, and the ``fingerprint`` of everything that
determined it, so a resumed run can tell a row that still answers today's
question from a stale one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RESPONSES_SCHEMA_VERSION = 3  # 2: fingerprint, question_hash and params on every row; 3: queue_ms, service_ms
RUN_INFO_SCHEMA_VERSION = 3  # 2: "rows" describes what is on file; 3: "attempts", each command's calls and servers


class RedactionRecord(BaseModel):
    """--redact-pii: what was redacted in one command's calls, counts never values (``run.json["redaction"]``,
    ``spotcheck.json["redaction"]``; made by :class:`harness.privacy.Redactor`)."""

    enabled: bool = True  # always true: the block is written only when --redact-pii was on
    types: list[str]  # what was looked for
    names: str | None  # what found person names, or None
    names_note: str = ""  # why names were not looked for, when they were not
    prompts: int = 0  # distinct prompts redacted (asked, cached or already on file)
    prompts_with_pii: int = 0  # of those prompts, how many had something redacted
    found: dict[str, int] = Field(default_factory=dict)  # type -> distinct values per prompt, summed over prompts


class CallError(BaseModel):
    kind: str  # what failed: rate_limit, server, timeout, connection, auth, bad_request, context_length, not_tried...
    message: str  # the error as the provider (or grace) said it, cut to 500 characters
    attempts: int  # attempts made before giving up (0: not sent, the model was stopped first)
    status: int | None = None  # the HTTP status of the last attempt, when there was one
    retryable: bool | None = None  # False: the server said the request itself is wrong (asking again cannot help)


def _absent_if_none(default: Any = None) -> Any:
    """A field the file holds only once it has a value (as it was written before it was typed)."""
    return Field(default, exclude_if=lambda v: v is None)


class CitedSpan(BaseModel):
    """A span the API cited natively (Anthropic's citations of document blocks), as checked against its article."""

    article: str | None  # the article its document index names; null: an index past the articles sent
    text: str  # the cited text, as the API returned it (cut to 1,000 characters)
    start: int | None = None  # its character offsets in the article's text, as the API said them; null: not said
    end: int | None = None  # the character offset just past its end, as the API said it; null: not said
    found: bool  # the cited text is in the article (no model needed): false is a span the article does not hold
    at_offsets: bool  # and exactly at the offsets the API gave


class ToolCallRecord(BaseModel):
    """One tool call of a search loop, as the model made it and as grace answered it."""

    name: str  # the tool the model called (as it spelt it: an unknown one is recorded too)
    arguments: str  # its arguments, the JSON text as sent (cut to 2,000 characters; the size says how long it was)
    size: int  # bytes of the arguments as sent (a turn read back from the cache: at most 1 over the size limit)
    returned: list[str] = Field(default_factory=list)  # the article IDs the call returned, in order
    # what went wrong, when something did: unknown_tool | malformed_arguments | oversized_arguments | over_cap
    problem: str | None = _absent_if_none()
    note: str | None = _absent_if_none()  # what the model was told went wrong


class ToolTurn(BaseModel):
    """One model call of a search loop: its tokens and time, and the tools it called."""

    calls: list[ToolCallRecord] = Field(default_factory=list)  # the tools it called in this turn, in order
    input_tokens: int | None = None  # prompt tokens of this turn, as the provider counted them; null: not said
    output_tokens: int | None = None  # answer tokens of this turn, as the provider counted them; null: not said
    latency_ms: float | None = None  # this turn's, milliseconds; null: from the cache without a time, or offline
    cached: bool = False  # true: this turn was answered from grace's response cache (nothing paid)
    finish_reason: str | None = None  # the API's finish reason (tool_calls / tool_use: the turn called tools)


# a search loop's named outcomes, the first that applies (harness.runner.tool_loop): it reached its cap of tool calls,
# called a tool that does not exist, sent arguments that are not a JSON object of the tool's fields, sent arguments
# over the size limit; else completed
LOOP_OUTCOMES = ("hit_cap", "unknown_tool", "malformed_arguments", "oversized_arguments", "completed")


class ToolLoopRecord(BaseModel):
    """A response row's search loop (``tool_loop``): every turn, and how the loop ended."""

    turns: list[ToolTurn] = Field(default_factory=list)  # each model call of the loop, in order
    tool_calls: int = 0  # calls made, every turn's (the guidance's "how many endpoint calls during the loop")
    retrieved: list[str] = Field(default_factory=list)  # every article a call returned, first return first, once
    max_tool_calls: int | None  # the cap the loop ran under; null: not known (imported logs)
    # how it ended: answered | hit_cap (the cap was reached; the model was asked to answer without tools)
    stopped: str = "answered"
    # the named loop outcome: hit_cap, unknown_tool, malformed_arguments, oversized_arguments (first that applies),
    # else completed
    outcome: str = "completed"


class SearchSettings(BaseModel):
    """A model that searches the KB for itself (TOML ``search = true`` or ``[models.search]``, ``grace run --search``):
    its tools, its cap of tool calls per question, and how many articles a search returns unless it asks."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_tool_calls: int = Field(6, ge=1, le=100)  # tool calls per question; the loop then asks for the answer
    k: int | None = Field(None, ge=1, le=50)  # articles a search returns when the model does not say; None: --k
    tools: list[Literal["search_kb", "open_article"]] = Field(default_factory=lambda: ["search_kb", "open_article"])  # given


class ResponseRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    # version of the line's format (2 since fingerprint, question_hash and params)
    schema_version: int = RESPONSES_SCHEMA_VERSION
    question_id: str  # the gold question answered
    model: str  # the model's display name in the run (its name, else provider:model)
    repeat: int = 0  # which asking of the question this is, from 0 (--repeats)
    response: str | None = None  # the model's answer text, as returned; null when the call failed
    # IDs of the articles shown to the model, best first (empty: a system that retrieves itself)
    retrieved_ids: list[str] = Field(default_factory=list)
    # the retriever's score of each of those articles, same order (1/rank for a file without scores)
    retrieval_scores: list[float] = Field(default_factory=list)
    # a system that retrieves for itself (python:, http:, imported logs): the IDs it retrieved, in rank order; None
    # when grace's own retrieval (retrieved_ids) is what the model was shown
    system_retrieved: list[str] | None = _absent_if_none()
    # the citations a system returned as data rather than as [ID: x] in its text; None: read them from the text
    citations: list[str] | None = _absent_if_none()
    # who asked (imported logs) and the groups they belong to (from the log, or the gold question's groups column):
    # a citation of an article whose audience they are not in is a forbidden_citation
    user: str | None = _absent_if_none()  # who asked (imported logs); absent: unknown
    # the asker's groups (from the log, or the gold question's groups column); absent: unknown
    user_groups: list[str] | None = _absent_if_none()
    prompt_hash: str | None = None  # 16 hex digits of the SHA-256 of the messages sent (as JSON)
    template_hash: str | None = None  # 16 hex digits of the SHA-256 of the prompt template file
    fingerprint: str | None = None  # hash of question, retrieved articles, model, params, template, mode, KB, repeat
    # 16 hex digits of the SHA-256 of the question's text, to tell an answer to an edited question
    question_hash: str | None = None
    # the generation parameters sent with the call (temperature, max_tokens...)
    params: dict[str, Any] = Field(default_factory=dict)
    input_tokens: int | None = None  # prompt tokens, as the provider counted them; null when it did not say
    output_tokens: int | None = None  # answer tokens, as the provider counted them; null when it did not say
    # what the call cost (or would, for a cache hit), USD; null when the model has no price
    cost_usd: float | None = None
    # time from sending to the answer, milliseconds (a cache hit: the original call's; null: failed or offline)
    latency_ms: float | None = None
    # time the call waited in grace for its turn before it was sent (the in-flight limit, a rate limit), milliseconds
    queue_ms: float | None = _absent_if_none()
    # the model's own time on the call, milliseconds: latency_ms less its wait in the server's queue, where that can be
    # told (harness.runner.server_queue); absent: not told (a hosted API), latency_ms is the figure
    service_ms: float | None = _absent_if_none()
    service_from: str | None = _absent_if_none()  # server (its own timings) | slots (none queued) | measured
    cached: bool = False  # true when the answer came from grace's response cache (nothing paid)
    error: CallError | None = None  # why the call failed; null when it was answered
    finish_reason: str | None = None  # "length" (or max_tokens / MAX_TOKENS): the output limit cut the answer off
    json_mode: str | None = None  # set when the server made us ask for JSON another way than the schema
    batch: str | None = None  # the batch it was answered in (grace's label, see batches.jsonl); None: real time
    attempts: int = 0  # attempts made (0 for a cache hit or a call never sent)
    created_at: str | None = None  # when the line was written: ISO 8601, UTC, to the second
    # a model that searched for itself (harness.runner.tool_loop): every turn of its loop; absent: one plain call
    tool_loop: ToolLoopRecord | None = _absent_if_none()
    # native citations (an anthropic: model with options.native_citations): each span the API cited, checked
    cited_spans: list[CitedSpan] | None = _absent_if_none()


_RUN_BLOCK = ConfigDict(extra="forbid", validate_assignment=True)


class RunKb(BaseModel):
    """``run.json["kb"]``: the KB the rows on file were answered from."""

    model_config = _RUN_BLOCK

    path: str  # the KB folder, as given
    kb_hash: str  # the KB's content hash (manifest.json kb_hash)
    articles: int  # number of articles in the KB
    embedder: str | None = None  # the retriever the questions were answered from (--embedder, else the KB's)


class RunGold(BaseModel):
    """``run.json["gold"]``: the gold set the run asked."""

    model_config = _RUN_BLOCK

    path: str | None  # the gold CSV, as given
    hash: str  # 16 hex digits of the SHA-256 of the file's bytes
    questions: int  # number of gold questions
    must_refuse: int  # how many of them must be refused


class SampleDraw(BaseModel):
    """Which gold questions a ``grace run --sample N`` asked: a seeded draw of the gold set, told by its size.

    The gold set stays the file's (its hash is the full file's), so ``grace compare`` and trends put a sample run
    beside the full runs of that gold set, on the questions both answered."""

    model_config = _RUN_BLOCK

    n: int  # questions drawn and asked
    of: int  # questions of the gold set it was drawn from
    seed: int  # the draw's seed (--seed): the same gold file, n and seed draw the same questions
    by: str | None = None  # "category": drawn within each gold category, in proportion (one at least); null: uniform

    def describe(self) -> str:
        """``30 of 90 questions, sampled with seed 0 by category``: what the figures of such a run are over."""
        return f"{self.n:,} of {self.of:,} questions, sampled with seed {self.seed}" + (f" by {self.by}" if self.by else "")


class RunSample(SampleDraw):
    """``run.json["sample"]``: ``grace run --sample N`` asked these questions of the gold set, not all of them."""

    question_ids: list[str]  # the questions drawn, in the gold file's order
    # with by = "category": questions drawn per category (each category's share of n, one at least)
    per_category: dict[str, int] | None = _absent_if_none()


class RetrievedFile(BaseModel):
    """``--retrieved FILE``: the rankings file the run used instead of the KB's retriever."""

    model_config = _RUN_BLOCK

    path: str  # the rankings file, as given
    hash: str  # 16 hex digits of the SHA-256 of the file's bytes
    # --retrieved-map: the their_id,article_id CSV its own document IDs were mapped through (absolute path)
    map: str | None = _absent_if_none()
    map_hash: str | None = _absent_if_none()  # 16 hex digits of the SHA-256 of the map's bytes
    mapped: int | None = _absent_if_none()  # ranked entries that were not KB IDs and mapped onto an article
    unmapped: int | None = _absent_if_none()  # ranked entries that mapped onto no article: left out of the prompts
    unmapped_ids: list[str] | None = _absent_if_none()  # the most frequent unmapped IDs (up to 20)


class RunConfig(BaseModel):
    """``run.json["config"]``: the run's settings that decide what the rows on file hold."""

    model_config = _RUN_BLOCK

    k: int  # articles retrieved and shown per question (--k)
    repeats: int  # times each question is asked of each model (--repeats)
    # calls in flight per model at most (--concurrency); what each model ran at: counts[model].concurrency
    concurrency: int
    cache: bool  # true: answers are written to grace's response cache (false for imported logs)
    read_cache: bool  # false with --no-cache: every call is made again (answers are still cached)
    max_attempts: int  # attempts per call before its error is recorded (--max-attempts)
    seed: int  # the run's random seed (baselines' folds, scoring's bootstrap) (--seed)
    output_mode: str  # "inline" ([ID: x] in the text), "json" (a JSON answer), "imported" (grace import-logs)
    retrieved: RetrievedFile | None = _absent_if_none()  # --retrieved: the rankings used instead of the KB's retriever
    rerank: dict[str, Any] | None = _absent_if_none()  # --rerank: the reranker's record (harness.runner.rerank)


class CitationSettings(BaseModel):
    """``run.json["models"][i]["citations"]``: how this model's citations are read and scored (issue 39).

    Absent for a GRACE prompt (``[ID: x]`` in the text, one citation per answer): that reading is unchanged. A
    shipped system cites its own documents (paths, URLs, titles, quotes, its own index IDs) by markers (``[1]``,
    footnotes, links) and a source list, often several per answer: ``reads = "references"`` resolves each
    reference onto KB articles (``kb_builder.references``), ``scoring = "multi"`` scores several citations per answer
    by citation precision and recall against the gold's acceptable set. Scoring settings only: never part of a
    call's cache key (changing the mapping re-scores, it never re-asks).
    """

    model_config = _RUN_BLOCK

    scoring: Literal["single", "multi"] = "single"  # multi: several citations per answer (precision, recall, F1)
    # ids: GRACE's reading ([ID: x] in the text; a system's structured citations as KB IDs); references: markers and
    # source lists read (harness.scoring.markers), each reference resolved onto KB articles (kb_builder.references)
    reads: Literal["ids", "references"] = "ids"
    map: str | None = None  # a their_id,article_id CSV: the system's own reference -> KB article (as given)
    map_hash: str | None = None  # 16 hex digits of the SHA-256 of the mapping file's bytes
    rewrite: dict[str, str] = Field(default_factory=dict)  # path/URL prefix -> replacement, read before resolving


class ReplicaEntry(BaseModel):
    """``run.json["models"][i]["replicas"][j]``: one endpoint of a model served by several (its ``base_url`` list)."""

    model_config = _RUN_BLOCK

    url: str  # the replica's base URL, as configured
    answered: int = 0  # calls it answered in the last command (not from the cache)
    dropped: str | None = None  # why the run stopped sending to it (its breaker), naming the failures; null: live


class ModelEntry(BaseModel):
    """One model of ``run.json["models"]``: what it was asked with, and what the run learned about its endpoint."""

    model_config = _RUN_BLOCK

    name: str  # the model's display name, unique in the run (default provider:model)
    provider: str  # the provider, the part before the colon of --model (openai, anthropic, ollama...)
    model: str  # the provider's model name, the text after the first colon
    params: dict[str, Any] = Field(default_factory=dict)  # the generation parameters sent (temperature, max_tokens...)
    endpoint: str | None = None  # the base URL calls go to; null: the provider's default
    batch: bool = False  # true: asked through the provider's batch API
    price_input_per_mtok: float | None = None  # USD per 1M input tokens; null: unknown (no cost reported)
    price_output_per_mtok: float | None = None  # USD per 1M output tokens; null: unknown
    # USD per 1M [input, output] tokens through the batch API (half price unless set)
    price_batch_per_mtok: list[float] | None = None
    # USD per hour of one of its servers (a self-hosted model: TOML price_server_hour, --price-server-hour); absent: none
    price_server_hour: float | None = _absent_if_none()
    options: dict[str, Any] = Field(default_factory=dict)  # the provider's own options (the TOML entry's options table)
    # the plugin package and version that provided the provider ("grace-acme 1.2.0"); absent: a built-in provider
    plugin: str | None = _absent_if_none()
    # learned (Provider.learned()): the JSON mode a server made grace fall back to, and why; a baseline's fit
    json_mode: str | None = _absent_if_none()  # json_object_schema, json_object or prompt: what calls fell back to; absent: no fallback
    json_mode_reason: str | None = _absent_if_none()  # why the server made grace fall back: the error it gave
    # a baseline's fitted threshold: method, seed, and per fold its threshold and questions
    calibration: dict[str, Any] | None = _absent_if_none()
    # how its citations are read and scored (issue 39); absent: GRACE's reading, one citation per answer
    citations: CitationSettings | None = _absent_if_none()
    # a model on several endpoints (base_url = [...]): each replica, what it answered, and which were dropped and why;
    # absent: one endpoint. The calls were spread over them; the cache key names the first (endpoint)
    replicas: list[ReplicaEntry] | None = _absent_if_none()
    # a model that searched the KB for itself (issue 48): its tools and cap; absent: shown the top k in its prompt
    search: SearchSettings | None = _absent_if_none()
    # its rows record an agent loop it ran itself (imported logs with tool_calls): the report's funnel reads them
    tool_loop: bool | None = _absent_if_none()  # true: its rows hold the loop it ran (imported tool_calls)

    def learned(self) -> dict[str, Any]:
        """What the run learned about the endpoint, as ``Provider.learned()`` gives it."""
        return {k: getattr(self, k) for k in ("json_mode", "json_mode_reason", "calibration")
                if getattr(self, k) is not None}

    def learn(self, values: dict[str, Any]) -> None:
        """Record ``Provider.learned()``; a key this model has no field for is an error, never dropped."""
        for key, value in values.items():
            setattr(self, key, value)


class CallCounts(BaseModel):
    """``run.json["counts"][model]``: this command's calls."""

    model_config = _RUN_BLOCK

    planned: int  # calls this command had to make (rows not already on file)
    done: int  # calls finished: answered, from the cache, or failed
    cached: int  # of those, answers taken from the response cache
    errors: int  # calls that ended in an error (not_tried included)
    not_tried: int  # calls never sent because the model was stopped
    retries: int  # attempts beyond the first, over all calls
    timeouts: int  # attempts that timed out
    in_flight_limit: int | None = None  # lowered from the worker count by the server's slots or a timeout cluster
    stopped: str | None = None  # why the model was stopped early
    batch_submitted: int | None = _absent_if_none()  # batch mode only: requests sent in new batches by this command
    # requests in batches the provider has not finished (collected by a later command)
    batch_pending: int | None = _absent_if_none()
    # calls sent at once at most: its own concurrency or the run's, at most its calls (in_flight_limit: lowered to)
    concurrency: int | None = _absent_if_none()
    server_slots: int | None = _absent_if_none()  # requests its server works on at once, as said or measured
    slots_from: str | None = _absent_if_none()  # props (the server said) | measured | server timings
    answered: int | None = _absent_if_none()  # calls its endpoint answered (not from the cache)
    busy_s: float | None = _absent_if_none()  # seconds from its first call sent to its last call back
    output_tokens: int | None = _absent_if_none()  # answer tokens of the calls its endpoint answered
    # a model on several endpoints: each replica, what it answered and whether it was dropped, in this command
    replicas: list[ReplicaEntry] | None = _absent_if_none()


class Attempt(BaseModel):
    """``run.json["attempts"][i]``: one command on the folder, oldest first, kept by every later one: what each
    model ran at, what its server did, and each replica's state (one that died in an interrupted command too)."""

    model_config = _RUN_BLOCK

    started_at: str  # when the command started: ISO 8601, UTC, to the second
    finished_at: str | None = None  # when it ended; null: it never said (killed, or the machine stopped)
    # finished | failed | interrupted | waiting for batches | unfinished (it never recorded its end)
    status: str
    counts: dict[str, CallCounts] = Field(default_factory=dict)  # its calls per model, as run.json["counts"] said


class RowCounts(BaseModel):
    """``run.json["rows"][model]``: what responses.jsonl holds for the model after this command."""

    model_config = _RUN_BLOCK

    rows: int = 0  # rows on file for the model (the latest per question and repeat)
    answered: int = 0  # rows with an answer
    errors: int = 0  # rows with an error instead
    stale: int = 0  # answers to an earlier text of the question, or to one no longer in the gold set
    params_variants: int = 0  # distinct sets of generation parameters among the rows (more than 1: mixed settings)


class RunImport(BaseModel):
    """``run.json["imported"]``: the production log a ``grace import-logs`` folder holds (no model was called).

    Every non-blank line of the log is one of ``imported``, ``malformed`` (listed in ``malformed.jsonl``) or
    ``unmatched`` (with gold: no gold question has its ID or text; listed in ``unmatched.jsonl``).
    """

    model_config = _RUN_BLOCK

    path: str  # the log file, as given
    hash: str  # 16 hex digits of the SHA-256 of the log file's bytes
    records: int  # non-blank lines
    imported: int  # records written to responses.jsonl
    malformed: int  # lines that could not be read as a record (malformed.jsonl)
    unmatched: int  # records no gold question matches (unmatched.jsonl); 0 without gold
    matched_by_id: int = 0  # with gold: records matched to a question by its ID
    matched_by_text: int = 0  # with gold: records matched to a question by its text, not its ID
    fields: dict[str, str]  # the field mapping read with: field -> JMESPath into a log line
    default_model: str  # the model of a record that names none


class RunInfo(BaseModel):
    """``run.json``: what the rows on file were asked with, not only the last command line.

    Every block is typed and strict when written (an unknown key, or a value of the wrong type, is an error);
    :meth:`harness.run_folder.run_dir.RunDir.read_run_info` names the first problem of a file that does not fit.
    """

    model_config = _RUN_BLOCK

    schema_version: int = RUN_INFO_SCHEMA_VERSION  # version of run.json's format
    grace_version: str  # the grace that ran the command
    started_at: str  # when the command started: ISO 8601, UTC, to the second
    finished_at: str | None = None  # when it ended, same format; null while it runs
    status: str = "running"  # running | finished | interrupted | failed | waiting for batches
    kb: RunKb  # the KB the questions were answered from
    gold: RunGold  # the gold set asked
    templates: dict[str, str]  # prompt template name -> 16 hex digits of the SHA-256 of its file
    config: RunConfig  # the run's settings
    models: list[ModelEntry]  # every model this command asked or that has rows on file, and how it was asked
    counts: dict[str, CallCounts] = Field(default_factory=dict)  # this command's calls per model
    # every command on this folder that asked models, oldest first, this one last once it ends
    attempts: list[Attempt] = Field(default_factory=list)
    rows: dict[str, RowCounts] = Field(default_factory=dict)  # per model: what responses.jsonl holds after this command
    # --redact-pii: what this command's prompts had redacted, counted per type
    redaction: RedactionRecord | None = None
    imported: RunImport | None = _absent_if_none()  # grace import-logs: the log the rows were read from
    # --sample N: the questions asked are a seeded draw of the gold set's; absent: every gold question
    sample: RunSample | None = _absent_if_none()

    def past_attempts(self) -> list[Attempt]:
        """The commands on the folder as the next one keeps them: these attempts, and this file's own command when
        it never recorded its end (killed: it is ``unfinished``) or wrote no attempts (an older grace)."""
        past = list(self.attempts)
        if self.status == "running" or (not past and self.counts):
            past.append(Attempt(started_at=self.started_at, finished_at=self.finished_at, counts=self.counts,
                                status="unfinished" if self.status == "running" else self.status))
        return past
