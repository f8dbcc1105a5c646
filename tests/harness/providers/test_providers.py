"""The three API providers, each with its real SDK, against the local fake API server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from email.utils import formatdate

import pytest

from harness.core.errors import GraceError
from harness.providers import make_provider
from harness.providers.base import ModelSpec, Request
from harness.providers.http_errors import from_status, parse_retry_after
from harness.testing import FakeAPIServer, Reply, cite_first_id
from tests.harness.providers.provider_calls import MESSAGES, call, call_error

PROVIDERS = ["openai", "anthropic", "google"]
ENV_VARS = [
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ADMIN_KEY", "OPENAI_CUSTOM_HEADERS", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE", "ANTHROPIC_CUSTOM_HEADERS",
    "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def base_url(srv: FakeAPIServer, provider: str) -> str:
    return {"openai": srv.openai_base_url, "anthropic": srv.anthropic_base_url, "google": srv.google_base_url}[provider]


def make_spec(srv: FakeAPIServer, provider: str, **kw) -> ModelSpec:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("timeout_s", 5.0)
    return ModelSpec(provider=provider, model="fake-model-1", base_url=base_url(srv, provider), **kw)


def auth_header(req) -> str:
    """The key as sent, whichever header this SDK version uses."""
    for name in ("x-api-key", "x-goog-api-key", "authorization"):
        if name in req.headers:
            return req.headers[name].removeprefix("Bearer ")
    return ""




# --- success ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_success_text_usage_finish_reason(srv, provider):
    srv.enqueue(Reply.ok("It is in Oslo. [ID: 17]", input_tokens=123, output_tokens=9))
    done = call(make_spec(srv, provider))
    assert done.text == "It is in Oslo. [ID: 17]"
    assert (done.input_tokens, done.output_tokens) == (123, 9)
    assert done.finish_reason == {"openai": "stop", "anthropic": "end_turn", "google": "STOP"}[provider]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_truncation_finish_reason_passes_through(srv, provider):
    raw = {"openai": "length", "anthropic": "max_tokens", "google": "MAX_TOKENS"}[provider]
    srv.enqueue(Reply.ok("It is in", finish_reason=raw))
    assert call(make_spec(srv, provider)).finish_reason == raw


def test_openai_request_shape(srv):
    srv.enqueue("ok")
    params = {"temperature": 0.0, "max_tokens": 50, "seed": 7, "stop": ["\n\n"], "top_k": 20}
    call(make_spec(srv, "openai", params=params))
    (req,) = srv.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.body["model"] == "fake-model-1"
    assert req.body["messages"] == MESSAGES
    # a custom base_url means a compatible server: max_tokens keeps its name
    assert (req.body["temperature"], req.body["max_tokens"], req.body["seed"], req.body["stop"]) == (0.0, 50, 7, ["\n\n"])
    assert req.body["top_k"] == 20  # unknown to the SDK's signature: sent through extra_body
    assert "response_format" not in req.body


def test_openai_official_api_renames_max_tokens():
    provider = make_provider(ModelSpec("openai", "gpt-5-mini", api_key="k", params={"max_tokens": 99}))
    kwargs = provider.build_kwargs(Request(messages=MESSAGES))
    assert kwargs["max_completion_tokens"] == 99 and "max_tokens" not in kwargs


def test_anthropic_request_shape(srv):
    srv.enqueue("ok")
    call(make_spec(srv, "anthropic", params={"temperature": 0.2, "seed": 3, "stop": "END"}))
    (req,) = srv.requests
    assert req.path == "/v1/messages"
    # SDK 2.x sends the key as "Authorization: Bearer"; older ones as x-api-key
    assert auth_header(req) == "test-key"
    assert req.body["system"] == "Answer from the articles only."
    assert req.body["messages"] == [MESSAGES[1]]
    assert req.body["max_tokens"] == 1024  # required by the API; defaulted
    assert req.body["temperature"] == 0.2 and req.body["stop_sequences"] == ["END"]
    assert "seed" not in req.body  # the Messages API rejects it


def test_google_request_shape(srv):
    srv.enqueue("ok")
    call(make_spec(srv, "google", params={"temperature": 0.1, "max_tokens": 64, "seed": 5, "stop": "END"}))
    (req,) = srv.requests
    assert req.path.endswith("/models/fake-model-1:generateContent")
    assert req.headers["x-goog-api-key"] == "test-key"
    assert req.body["contents"] == [{"role": "user", "parts": [{"text": MESSAGES[1]["content"]}]}]
    assert req.body["systemInstruction"]["parts"] == [{"text": "Answer from the articles only."}]
    config = req.body["generationConfig"]
    assert config["temperature"] == 0.1 and config["maxOutputTokens"] == 64
    assert config["seed"] == 5 and config["stopSequences"] == ["END"]


def test_google_unknown_param_is_a_bad_request(srv):
    err = call_error(make_spec(srv, "google", params={"temperture": 0.1}))
    assert (err.kind, err.retryable) == ("bad_request", False)
    assert "temperture" in err.message
    assert srv.requests == []


# --- JSON mode ---------------------------------------------------------------------------------------------

SCHEMA = {
    "title": "grace answer",
    "type": "object",
    "properties": {"answer": {"type": "string"}, "citation": {"type": "string"}},
    "required": ["answer", "citation"],
    "additionalProperties": False,
}


def json_request(schema=SCHEMA) -> Request:
    return Request(messages=MESSAGES, output_mode="json", json_schema=schema)


def test_openai_json_schema_strict(srv):
    srv.enqueue('{"answer": "Oslo", "citation": "17"}')
    assert call(make_spec(srv, "openai"), json_request()).text == '{"answer": "Oslo", "citation": "17"}'
    fmt = srv.requests[0].body["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "grace_answer", "schema": SCHEMA, "strict": True}}


def test_openai_json_object_without_schema_or_when_forced(srv):
    srv.enqueue("{}", "{}")
    call(make_spec(srv, "openai"), json_request(schema=None))
    call(make_spec(srv, "openai", options={"json_mode": "json_object"}), json_request())
    assert [r.body["response_format"] for r in srv.requests] == [{"type": "json_object"}] * 2


def test_anthropic_structured_output(srv):
    srv.enqueue('{"answer": "Oslo", "citation": "17"}')
    assert call(make_spec(srv, "anthropic"), json_request()).text.startswith('{"answer"')
    body = srv.requests[0].body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert body["messages"][-1]["role"] == "user"  # no prefill: Claude 4.6+ rejects it


def test_anthropic_prefill_mode_restores_brace(srv):
    srv.enqueue('"answer": "Oslo", "citation": "17"}')
    done = call(make_spec(srv, "anthropic", options={"json_mode": "prefill"}), json_request())
    assert done.text == '{"answer": "Oslo", "citation": "17"}'
    body = srv.requests[0].body
    assert body["messages"][-1] == {"role": "assistant", "content": "{"}
    assert "output_config" not in body


def test_google_json_mode(srv):
    srv.enqueue('{"answer": "Oslo", "citation": "17"}')
    call(make_spec(srv, "google"), json_request())
    config = srv.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA


# --- errors ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_with_retry_after(srv, provider):
    srv.enqueue(Reply.rate_limit(retry_after=3))
    err = call_error(make_spec(srv, provider))
    assert (err.kind, err.retryable, err.retry_after, err.status) == ("rate_limit", True, 3.0, 429)


def test_rate_limit_retry_after_ms_and_http_date(srv):
    srv.enqueue(Reply.rate_limit(retry_after=9, ms=1500))
    assert call_error(make_spec(srv, "anthropic")).retry_after == 1.5
    srv.enqueue(Reply.rate_limit(retry_after=formatdate(time.time() + 30, usegmt=True)))
    assert 25 <= call_error(make_spec(srv, "openai")).retry_after <= 31


def test_google_retry_delay_from_body(srv):
    srv.enqueue(Reply.rate_limit(retry_after=7, header=False))
    err = call_error(make_spec(srv, "google"))
    assert (err.kind, err.retry_after) == ("rate_limit", 7.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_error_then_success(srv, provider):
    srv.enqueue(Reply.error(500), Reply.ok("second try"))
    spec = make_spec(srv, provider)
    err = call_error(spec)
    assert (err.kind, err.retryable, err.status) == ("server", True, 500)
    assert call(spec).text == "second try"
    assert len(srv.requests) == 2  # exactly one HTTP call each: the SDK's own retries are off


def test_overloaded_529_with_retry_after(srv):
    srv.enqueue(Reply.error(529, retry_after=4))
    err = call_error(make_spec(srv, "anthropic"))
    assert (err.kind, err.retryable, err.retry_after) == ("server", True, 4.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout(srv, provider):
    srv.enqueue(Reply.slow(3.0))
    err = call_error(make_spec(srv, provider, timeout_s=0.3))
    assert (err.kind, err.retryable) == ("timeout", True)
    assert len(srv.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_body(srv, provider):
    srv.enqueue(Reply.malformed())
    err = call_error(make_spec(srv, provider))
    assert (err.kind, err.retryable) == ("bad_response", True)


@pytest.mark.parametrize(
    ("provider", "empty"),
    [
        ("openai", b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}'),
        ("anthropic", b'{"id": "x", "type": "message", "role": "assistant", "model": "m", "content": [],'
                      b' "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 0}}'),
        ("google", b'{"candidates": [], "promptFeedback": {"blockReason": "SAFETY"}}'),
    ],
)
def test_empty_reply_is_bad_response(srv, provider, empty):
    srv.enqueue(Reply(raw_body=empty))
    err = call_error(make_spec(srv, provider))
    assert (err.kind, err.retryable) == ("bad_response", True)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unauthorized_is_not_retryable(srv, provider):
    srv.enqueue(Reply.unauthorized())
    err = call_error(make_spec(srv, provider))
    assert (err.kind, err.retryable, err.status) == ("auth", False, 401)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_request_is_not_retryable(srv, provider):
    srv.enqueue(Reply.error(400, "unknown parameter"))
    err = call_error(make_spec(srv, provider))
    assert (err.kind, err.retryable, err.status) == ("bad_request", False, 400)
    assert "unknown parameter" in err.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_refused(provider):
    with socket.socket() as sock:  # a port that nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    err = call_error(ModelSpec(provider, "m", base_url=url, api_key="k", timeout_s=2))
    assert (err.kind, err.retryable) == ("connection", True)


# --- keys, environment, SDK ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "env"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"), ("google", "GEMINI_API_KEY")]
)
def test_missing_key_names_variable(provider, env):
    with pytest.raises(GraceError, match=env):
        make_provider(ModelSpec(provider, "m")).check_ready()
    with pytest.raises(GraceError, match="MY_KEY_VAR"):
        make_provider(ModelSpec(provider, "m", api_key_env="MY_KEY_VAR")).check_ready()


@pytest.mark.parametrize(
    ("provider", "key_env", "url_env"),
    [
        ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        ("google", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"),
    ],
)
def test_sdk_environment_variables_are_honoured(srv, monkeypatch, provider, key_env, url_env):
    monkeypatch.setenv(key_env, "env-key")
    monkeypatch.setenv(url_env, base_url(srv, provider))
    srv.enqueue("from env")
    assert call(ModelSpec(provider, "fake-model-1")).text == "from env"
    assert auth_header(srv.requests[0]) == "env-key"


def test_api_key_env_overrides_default_variable(srv, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "default-key")
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-key")
    srv.enqueue("ok")
    call(ModelSpec("openai", "m", base_url=srv.openai_base_url, api_key_env="LOCAL_LLM_KEY"))
    assert srv.requests[0].headers["authorization"] == "Bearer local-key"


@pytest.mark.parametrize(
    ("provider", "module", "package"),
    [("openai", "openai", "openai"), ("anthropic", "anthropic", "anthropic"), ("google", "google.genai", "google-genai")],
)
def test_missing_sdk_gives_install_hint(monkeypatch, provider, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(GraceError, match=f"pip install {package}"):
        make_provider(ModelSpec(provider, "m", api_key="k")).check_ready()


def test_no_sdk_imported_at_module_import():
    code = (
        "import sys, harness.providers.openai_chat, harness.providers.anthropic_messages, "
        "harness.providers.google_genai, harness.testing\n"
        "loaded = [m for m in ('openai', 'anthropic', 'google.genai', 'httpx2') if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the fake server and the shared error mapping -------------------------------------------------------------


def test_default_responder_cites_first_id(srv):
    srv.responder = cite_first_id
    done = call(make_spec(srv, "google"))
    assert done.text.endswith("[ID: 17]")
    refusal = call(make_spec(srv, "anthropic"), Request(messages=[{"role": "user", "content": "no articles"}]))
    assert refusal.text == "I don't have enough information to answer this question."


def test_fake_embeddings_endpoint(srv):
    import openai

    async def go():
        client = openai.AsyncOpenAI(api_key="k", base_url=srv.openai_base_url, max_retries=0)
        try:
            return await client.embeddings.create(model="e", input=["office in Oslo", "Oslo office", "tax rules"], dimensions=32)
        finally:
            await client.close()

    vecs = [d.embedding for d in asyncio.run(go()).data]
    assert [len(v) for v in vecs] == [32, 32, 32]
    dot = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    assert dot(vecs[0], vecs[1]) > dot(vecs[0], vecs[2])
    assert srv.requests[0].api == "openai-embeddings"


def test_parse_retry_after_variants():
    assert parse_retry_after({"Retry-After": "12"}) == 12.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_insufficient_quota_429_is_not_retried():
    err = from_status(429, "You exceeded your current quota", body={"error": {"code": "insufficient_quota"}})
    assert (err.kind, err.retryable) == ("bad_request", False)
