"""Amazon Bedrock through its Converse API (boto3's ``bedrock-runtime`` client).

Converse is one request shape for every model Bedrock serves (Claude, Llama,
Mistral, Nova, ...), so ``bedrock:MODEL_ID`` works for any of them, including
cross-region inference profiles (``us.anthropic.claude-...``) and ARNs.

Notes on the SDK that shape this class:

* boto3 is synchronous. Each call runs in a thread of this provider's own
  pool: ``asyncio.to_thread`` would share the loop's default executor, which
  has ``min(32, CPUs + 4)`` threads, and so would quietly cap a run's
  concurrency at 6 on a two-core machine. The connection pool gets as many
  slots as the thread pool, or urllib3 would discard connections under load.
* Retries: botocore retries throttling and 5xx itself (up to 3 or 5 times, with
  its own backoff). ``total_max_attempts: 1`` switches that off, leaving retries
  to the runner, which counts them and honours its own limits. Not
  ``max_attempts: 1``: botocore counts that one as retries after the first call,
  so it means two attempts. The explicit config also beats ``AWS_MAX_ATTEMPTS``
  and ``AWS_RETRY_MODE`` in the environment.
* Timeouts: ``connect_timeout`` and ``read_timeout`` from ``Provider.timeout_s``.
  Converse answers in one body after generating it, so the read timeout bounds
  the whole generation.
* Region, profile and credentials follow the usual AWS chain: ``AWS_REGION`` or
  ``AWS_DEFAULT_REGION`` (or the profile's region), ``AWS_PROFILE``, keys or
  roles; ``options.region`` and ``options.profile`` in the leaderboard TOML
  override them per model. A Bedrock API key in ``AWS_BEARER_TOKEN_BEDROCK`` is
  read by botocore itself. The endpoint is ``spec.base_url``, else boto3's own
  ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else the region's.

Parameters: ``max_tokens``, ``temperature``, ``top_p`` and ``stop`` go in
``inferenceConfig`` (the fields every Bedrock model takes); anything else (say
``top_k`` for Claude) goes in ``additionalModelRequestFields`` as written, where
Bedrock passes a model's own native fields through. A field the model does not
know fails with a ValidationException, which is not retried.

JSON mode (``options.json_mode``):

* ``prompt`` (default): Converse's ``outputConfig`` structured output is
  supported by a few models only, and the others reject it, so by default the
  answer's JSON Schema is appended to the system text and the scorer reads the
  JSON leniently, as for any model without a JSON flag.
* ``structured``: ``outputConfig.textFormat`` with the JSON Schema, for models
  that support it (recent Claude and Nova models); opt-in.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.core.errors import GraceError
from harness.providers import http_errors
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, require_sdk, tool_arguments

REGION_ENVS = ["AWS_REGION", "AWS_DEFAULT_REGION"]
JSON_MODES = ("prompt", "structured")
OPTIONS = ("region", "profile", "json_mode", "native_citations")
# Chat-completions names -> inferenceConfig fields, so one leaderboard config drives every provider.
_INFERENCE = {"max_tokens": "maxTokens", "max_completion_tokens": "maxTokens", "max_output_tokens": "maxTokens",
              "temperature": "temperature", "top_p": "topP", "stop": "stopSequences"}
# Error codes -> the HTTP status they mean to the runner. Bedrock's own statuses for most, but:
# ModelNotReadyException is a 429 (the model is loading: wait and retry), ModelErrorException a 424 that a
# retry may cure (the model failed, not the request), and the signing errors are credentials, whatever status.
_STATUS = {
    "ThrottlingException": 429, "ModelNotReadyException": 429, "ServiceUnavailableException": 503,
    "InternalServerException": 500, "ModelErrorException": 502, "ModelTimeoutException": 408,
    "ValidationException": 400, "ServiceQuotaExceededException": 400, "AccessDeniedException": 403,
    "ResourceNotFoundException": 404, "UnrecognizedClientException": 403, "InvalidSignatureException": 403,
    "ExpiredTokenException": 403, "IncompleteSignature": 403, "MissingAuthenticationToken": 403,
}
_THREADS = 64  # calls in flight at once per model; more wait for a thread


def _boto3() -> Any:
    return require_sdk("boto3", "boto3", "bedrock")


class BedrockProvider(Provider):
    provider_name = "bedrock"
    key_envs = ["AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"]  # or the rest of the AWS chain
    sdk_module, sdk_install = "boto3", "grace-eval[bedrock]"
    base_url_env = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    supports_tools = True

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._client: Any = None
        self._session: Any = None
        self._region: str | None = None
        self._pool: ThreadPoolExecutor | None = None

    def check_ready(self) -> None:
        """SDK, options, profile, region and credentials, all before any call (boto3 would only fail on the first)."""
        boto3 = _boto3()
        botocore_exc = require_sdk("botocore.exceptions", "boto3", "bedrock")
        name, options = self.spec.name, self.spec.options
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise GraceError(f"{name}: unknown option(s) {', '.join(unknown)}; bedrock takes {', '.join(OPTIONS)}")
        mode = options.get("json_mode")
        if mode is not None and mode not in JSON_MODES:
            raise GraceError(f"{name}: options.json_mode must be one of {', '.join(JSON_MODES)}, not {mode!r}")
        if not isinstance(options.get("native_citations", False), bool):
            raise GraceError(f"{name}: options.native_citations must be true or false")
        try:
            session = boto3.session.Session(profile_name=options.get("profile") or None)
        except botocore_exc.BotoCoreError as exc:  # ProfileNotFound, a broken config file
            raise GraceError(f"{name}: {exc}") from None
        region = options.get("region") or next((os.environ[e] for e in REGION_ENVS if os.environ.get(e)), None)
        region = region or session.region_name
        if not region:
            raise GraceError(f"{name}: no AWS region; set AWS_REGION (or options.region in the leaderboard config)")
        if not os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
            try:
                credentials = session.get_credentials()
            except botocore_exc.BotoCoreError as exc:  # an expired SSO session, a broken credential_process
                raise GraceError(f"{name}: AWS credentials: {exc}") from None
            if credentials is None:
                raise GraceError(f"{name}: no AWS credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                                 "or AWS_PROFILE (options.profile) for a profile, or AWS_BEARER_TOKEN_BEDROCK")
        self._session, self._region = session, region

    def _get_client(self) -> Any:
        if self._client is None:
            self.check_ready()
            config = require_sdk("botocore.config", "boto3", "bedrock")
            threads = max(_THREADS, self.spec.concurrency or 0)
            cfg = config.Config(
                retries={"total_max_attempts": 1, "mode": "standard"},  # one attempt: the runner retries
                connect_timeout=self.timeout_s,
                read_timeout=self.timeout_s,
                max_pool_connections=threads,
            )
            kwargs: dict[str, Any] = {"region_name": self._region, "config": cfg}
            if self.spec.base_url:  # else boto3 reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME itself
                kwargs["endpoint_url"] = self.spec.base_url
            self._client = self._session.client("bedrock-runtime", **kwargs)
            self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bedrock")
        return self._client

    def _json_mode(self, request: Request) -> str | None:
        if request.output_mode != "json" or request.json_schema is None:
            return None
        return self.spec.options.get("json_mode") or "prompt"

    def build_kwargs(self, request: Request) -> dict[str, Any]:
        """The ``converse`` arguments; public so a dry run can show them."""
        params = {**self.spec.params, **request.params}
        inference: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in params.items():
            field = _INFERENCE.get(key)
            if field is None:
                extra[key] = value
            else:
                inference.setdefault(field, [value] if field == "stopSequences" and isinstance(value, str) else value)
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        mode = self._json_mode(request)
        if mode == "prompt":
            ask = "Reply with one JSON object, and nothing else, that matches this JSON Schema:\n"
            system = "\n\n".join(s for s in (system, ask + json.dumps(request.json_schema)) if s)
        kwargs: dict[str, Any] = {
            "modelId": self.spec.model,
            "messages": _converse_messages(request.messages),
        }
        if self.spec.options.get("native_citations") and request.context is not None and request.context.articles:
            kwargs["messages"] = _as_documents(kwargs["messages"], request.context.articles)
        if request.tools:  # Converse has no "none": the loop's last turn ends it when the model still calls tools
            kwargs["toolConfig"] = {"tools": [{"toolSpec": {"name": t["name"], "description": t["description"],
                                                            "inputSchema": {"json": t["parameters"]}}}
                                              for t in request.tools], "toolChoice": {"auto": {}}}
        if system:
            kwargs["system"] = [{"text": system}]
        if inference:
            kwargs["inferenceConfig"] = inference
        if extra:
            kwargs["additionalModelRequestFields"] = extra
        if mode == "structured":
            schema = request.json_schema or {}
            title = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "answer"))[:64]
            kwargs["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": {
                "jsonSchema": {"schema": json.dumps(schema), "name": title}}}}
        return kwargs

    async def complete(self, request: Request) -> Completion:
        client = self._get_client()
        botocore_exc = require_sdk("botocore.exceptions", "boto3", "bedrock")
        parsers = require_sdk("botocore.parsers", "boto3", "bedrock")
        kwargs = self.build_kwargs(request)

        def classify(exc: Exception) -> ProviderError | None:
            if isinstance(exc, botocore_exc.ClientError):
                return _from_client_error(exc)
            if isinstance(exc, botocore_exc.ParamValidationError):  # checked by botocore before sending: a bad param
                return ProviderError("bad_request", f"invalid request: {exc}", retryable=False)
            if isinstance(exc, parsers.ResponseParserError):
                return http_errors.bad_response(f"unparseable response: {exc}")
            if isinstance(exc, botocore_exc.NoCredentialsError):
                return ProviderError("auth", str(exc), retryable=False)
            return None  # ReadTimeoutError, EndpointConnectionError, ...: the transport's

        with http_errors.mapped(classify):
            resp = await asyncio.get_running_loop().run_in_executor(self._pool, lambda: client.converse(**kwargs))
        completion = self._to_completion(resp)
        if self.spec.options.get("native_citations") and request.context is not None:
            completion.spans = _spans(resp, [a.id for a in request.context.articles])
            completion.citations = list(dict.fromkeys(s["article"] for s in completion.spans if s["article"]))
        return completion

    @staticmethod
    def _to_completion(resp: Any) -> Completion:
        message = ((resp or {}).get("output") or {}).get("message") or {}
        blocks = message.get("content")
        if not isinstance(blocks, list):
            shown = {k: v for k, v in (resp or {}).items() if k != "ResponseMetadata"}
            raise http_errors.bad_response(f"response has no message content: {str(shown)[:200]!r}")
        texts = [t for b in blocks if isinstance(b, dict) for t in _texts(b)]
        stop = resp.get("stopReason")
        uses = [b["toolUse"] for b in blocks if isinstance(b, dict) and isinstance(b.get("toolUse"), dict)]
        tool_calls = [{"id": str(u.get("toolUseId") or f"tooluse_{n}"), "name": str(u.get("name") or ""),
                       "arguments": json.dumps(u.get("input"))} for n, u in enumerate(uses)] or None
        if not texts and tool_calls:
            texts = [""]  # a turn that only calls tools
        if not texts:
            raise http_errors.bad_response(f"response has no text block (stopReason={stop!r})")
        usage = resp.get("usage") or {}
        return Completion(
            text="".join(texts),  # reasoningContent blocks (a model's thinking) are not the answer
            input_tokens=usage.get("inputTokens"),
            output_tokens=usage.get("outputTokens"),
            finish_reason=stop,  # "max_tokens" when the output limit cut it off, as the scorer expects
            tool_calls=tool_calls,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=False, cancel_futures=True)


def _texts(block: dict[str, Any]) -> list[str]:
    """A content block's answer text: a text block's, or a cited passage's (``citationsContent``)."""
    if isinstance(block.get("text"), str):
        return [block["text"]]
    cited = block.get("citationsContent")
    if isinstance(cited, dict):
        return [c["text"] for c in cited.get("content") or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return []


def _as_documents(messages: list[dict[str, Any]], articles: list[Any]) -> list[dict[str, Any]]:
    """Native citations (Claude on Bedrock): the articles as ``document`` blocks with citations enabled, before the
    question, in the order shown (``documentIndex`` is that order); the prompt's own article block left out."""
    from harness.prompts import without_articles

    documents = [{"document": {"format": "txt", "name": _document_name(a.id, n), "source": {"text": a.text},
                               "citations": {"enabled": True}}} for n, a in enumerate(articles)]
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i]["role"] == "user" and [set(b) for b in out[i]["content"]] == [{"text"}]:
            text = without_articles(out[i]["content"][0]["text"], articles)
            out[i] = {"role": "user", "content": [*documents, {"text": text}]}
            break
    return out


def _document_name(article_id: str, n: int) -> str:
    """Converse takes letters, digits, spaces, hyphens, parentheses and square brackets in a name, each unique."""
    return f"{n + 1} ({re.sub(r'[^A-Za-z0-9 -]', '-', str(article_id))[:150]})"


def _spans(resp: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The cited spans of a Converse reply (``citationsContent``, ``documentChar`` locations) as each article its
    document index names (None: an index past the articles sent) and the text it quotes."""
    message = ((resp or {}).get("output") or {}).get("message") or {}
    out = []
    for block in message.get("content") or []:
        cited = block.get("citationsContent") if isinstance(block, dict) else None
        for c in (cited.get("citations") or []) if isinstance(cited, dict) else []:
            where = ((c.get("location") or {}).get("documentChar") or {}) if isinstance(c, dict) else {}
            index = where.get("documentIndex")
            quoted = "".join(s.get("text") or "" for s in c.get("sourceContent") or [] if isinstance(s, dict))
            out.append({"article": ids[index] if isinstance(index, int) and 0 <= index < len(ids) else None,
                        "text": quoted, "start": where.get("start"), "end": where.get("end")})
    return out


def _converse_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation in Converse's shape; a search loop's calls as ``toolUse`` blocks of the assistant's turn
    (their input an object: text that is not one as {}) and their results as ``toolResult`` blocks of one user turn."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if m["role"] == "tool":
            block = {"toolResult": {"toolUseId": m["tool_call_id"], "content": [{"text": m["content"]}]}}
            if out and out[-1]["role"] == "user" and "toolResult" in out[-1]["content"][0]:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
            for c in m["tool_calls"]:
                blocks.append({"toolUse": {"toolUseId": c["id"], "name": c["name"],
                                           "input": tool_arguments(c["arguments"])}})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m["role"], "content": [{"text": m["content"]}]})
    return out


def _from_client_error(exc: Any) -> ProviderError:
    """A botocore ``ClientError`` as the runner's error kinds, by the error code Bedrock names."""
    response = getattr(exc, "response", None) or {}
    error = response.get("Error") or {}
    meta = response.get("ResponseMetadata") or {}
    code = str(error.get("Code") or "")
    message = str(error.get("Message") or exc)
    sent = int(meta.get("HTTPStatusCode") or 0) or None  # the status on the wire
    status = _STATUS.get(code) or sent or 500  # the status the code means, for classifying
    said = f"{code}: {message}" if code else message
    if code == "ResourceNotFoundException" or (code == "ValidationException" and "model identifier" in message.lower()):
        # "The provided model identifier is invalid.": every call of this model will fail the same way
        return ProviderError("unknown_model", f"HTTP {sent or status}: {said}", retryable=False, status=sent or status)
    err = http_errors.from_status(status, said, headers=meta.get("HTTPHeaders"), body=error)
    if sent and sent != status:  # classified by its code (a 424 ModelErrorException is retried): report what was sent
        err.status, err.message = sent, err.message.replace(f"HTTP {status}:", f"HTTP {sent}:", 1)
    return err
