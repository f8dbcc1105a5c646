"""``bedrock:`` (boto3, Converse) and ``vertex:`` (google-genai, Vertex AI): the real SDKs against the fake API server.

boto3 signs every request with the fake credentials set below and the fake
server ignores the signature; google-genai gets a fixed access token (the
documented ``api_key_env`` / ``GOOGLE_OAUTH_ACCESS_TOKEN`` route), so neither
SDK looks for a real login.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import subprocess
import sys
from urllib.parse import unquote

import pytest

from harness.core.errors import GraceError
from harness.providers import endpoint_of, make_provider, parse_model_spec
from harness.providers.base import ModelSpec, ProviderError, Request
from harness.runner.config import load_config
from harness.scoring.outcomes import is_cut_off
from harness.testing import FakeAPIServer, Reply, cite_first_id
from tests.conftest import run_grace, small_bench, write
from tests.harness.providers.provider_calls import MESSAGES, call, call_error

NO_BOTO3 = "boto3 is not installed: the bedrock provider's optional SDK (pip install -e '.[test]' installs it)"
HAVE_BOTO3 = importlib.util.find_spec("boto3") is not None
needs_boto3 = pytest.mark.skipif(not HAVE_BOTO3, reason=NO_BOTO3)
CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0"  # a ':' and '.'s: the model ID is URL-encoded in the path
GEMINI = "gemini-2.5-flash"
SCHEMA = {"title": "grace answer", "type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}


@pytest.fixture(autouse=True)
def cloud_env(monkeypatch, tmp_path):
    """Fake AWS keys and region; nothing read from this machine's ~/.aws, gcloud login or instance metadata."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_BEARER_TOKEN_BEDROCK", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
                 "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_VERTEX_BASE_URL",
                 "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-adc.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))


def bedrock(srv: FakeAPIServer, **kw) -> ModelSpec:
    kw.setdefault("timeout_s", 5.0)
    return ModelSpec("bedrock", kw.pop("model", CLAUDE), base_url=srv.bedrock_base_url, **kw)


def vertex(srv: FakeAPIServer, **kw) -> ModelSpec:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("api_key", "vertex-token")  # an access token, as from `gcloud auth print-access-token`
    kw.setdefault("options", {"project": "my-proj", "location": "europe-west4"})
    return ModelSpec("vertex", kw.pop("model", GEMINI), base_url=srv.google_base_url, **kw)




def signing_scope(req) -> str:
    """``ACCESS_KEY/DATE/REGION/SERVICE`` from a SigV4 Authorization header."""
    credential = req.headers["authorization"].split("Credential=", 1)[1].split(",", 1)[0]
    key, _date, region, service, _ = credential.split("/")
    return f"{key}/{region}/{service}"


# --- bedrock ---------------------------------------------------------------------------------------------------


@needs_boto3
def test_bedrock_converse_request_and_answer(srv):
    srv.enqueue(Reply.ok("It is in Oslo. [ID: 17]", input_tokens=123, output_tokens=9))
    params = {"temperature": 0.2, "max_tokens": 50, "top_p": 0.9, "stop": "END", "top_k": 20}
    done = call(bedrock(srv, params=params))
    assert (done.text, done.input_tokens, done.output_tokens, done.finish_reason) == (
        "It is in Oslo. [ID: 17]", 123, 9, "end_turn")
    (req,) = srv.requests
    assert req.api == "bedrock" and req.method == "POST"
    assert req.path == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    assert unquote(req.path.split("/")[2]) == CLAUDE
    assert signing_scope(req) == "test/us-east-1/bedrock"  # boto3 signed it with the variables' keys and region
    assert req.body["system"] == [{"text": "Answer from the articles only."}]
    assert req.body["messages"] == [{"role": "user", "content": [{"text": MESSAGES[1]["content"]}]}]
    assert req.body["inferenceConfig"] == {"temperature": 0.2, "maxTokens": 50, "topP": 0.9, "stopSequences": ["END"]}
    assert req.body["additionalModelRequestFields"] == {"top_k": 20}  # the model's own field, passed through
    assert "outputConfig" not in req.body


@needs_boto3
def test_bedrock_answer_cut_off_by_max_tokens(srv):
    srv.enqueue("one two three four five six seven")
    done = call(bedrock(srv, params={"max_tokens": 3}))
    assert (done.text, done.output_tokens, done.finish_reason) == ("one two three", 3, "max_tokens")
    assert is_cut_off(done.finish_reason)  # the scorer counts it as truncated
    assert srv.requests[0].body["inferenceConfig"] == {"maxTokens": 3}


@needs_boto3
def test_bedrock_cite_first_id_responder_reads_converse_bodies(srv):
    srv.responder = cite_first_id
    assert call(bedrock(srv)).text.endswith("[ID: 17]")


@needs_boto3
def test_bedrock_json_mode_in_the_prompt_by_default(srv):
    srv.enqueue('{"answer": "Oslo"}')
    done = call(bedrock(srv), Request(messages=MESSAGES, output_mode="json", json_schema=SCHEMA))
    assert done.text == '{"answer": "Oslo"}'
    (system,) = srv.requests[0].body["system"]
    assert system["text"].startswith("Answer from the articles only.\n\n")
    assert json.dumps(SCHEMA) in system["text"]
    assert "outputConfig" not in srv.requests[0].body


@needs_boto3
def test_bedrock_structured_json_mode_is_opt_in(srv):
    srv.enqueue('{"answer": "Oslo"}')
    call(bedrock(srv, options={"json_mode": "structured"}), Request(messages=MESSAGES, output_mode="json", json_schema=SCHEMA))
    body = srv.requests[0].body
    fmt = body["outputConfig"]["textFormat"]
    assert fmt["type"] == "json_schema" and fmt["structure"]["jsonSchema"]["name"] == "grace_answer"
    assert json.loads(fmt["structure"]["jsonSchema"]["schema"]) == SCHEMA
    assert body["system"] == [{"text": "Answer from the articles only."}]  # the schema is not repeated in the prompt


@needs_boto3
@pytest.mark.parametrize(
    ("reply", "kind", "retryable", "status"),
    [
        (Reply.rate_limit(retry_after=None), "rate_limit", True, 429),  # ThrottlingException
        (Reply(status=429, message="Model is getting ready", headers={"x-amzn-ErrorType": "ModelNotReadyException"}),
         "rate_limit", True, 429),
        (Reply.error(503, "Service unavailable"), "server", True, 503),  # ServiceUnavailableException
        (Reply.error(500), "server", True, 500),  # InternalServerException
        (Reply.error(424, "The model failed"), "server", True, 424),  # ModelErrorException: the model, not the request
        (Reply.error(408, "Model timed out"), "timeout", True, 408),  # ModelTimeoutException
        (Reply.error(400, "Input is too long for requested model."), "context_length", False, 400),
        (Reply.error(400, "The provided model identifier is invalid."), "unknown_model", False, 400),
        (Reply.error(400, "temperature must be <= 1"), "bad_request", False, 400),  # ValidationException
        (Reply.error(404, "Could not resolve the foundation model"), "unknown_model", False, 404),
        (Reply.error(403, "You don't have access to the model with the specified model ID."), "auth", False, 403),
        (Reply.unauthorized(), "auth", False, 401),  # UnrecognizedClientException: the keys were refused
    ],
)
def test_bedrock_error_codes(srv, reply, kind, retryable, status):
    srv.enqueue(reply)
    err = call_error(bedrock(srv))
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert reply.message in err.message
    assert len(srv.requests) == 1  # botocore's own retries are off: the runner retries


@needs_boto3
def test_bedrock_retry_after_header_is_honoured(srv):
    srv.enqueue(Reply.rate_limit(retry_after=3))
    assert call_error(bedrock(srv)).retry_after == 3.0


@needs_boto3
def test_bedrock_timeout_malformed_and_connection_refused(srv):
    srv.enqueue(Reply.slow(3.0))
    err = call_error(bedrock(srv, timeout_s=0.3))
    assert (err.kind, err.retryable) == ("timeout", True)
    assert len(srv.requests) == 1
    srv.enqueue(Reply.malformed())
    assert call_error(bedrock(srv)).kind == "bad_response"
    srv.enqueue(Reply(raw_body=b'{"output": {"message": {"role": "assistant", "content": []}}, "stopReason": "end_turn"}'))
    assert call_error(bedrock(srv)).kind == "bad_response"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    err = call_error(ModelSpec("bedrock", CLAUDE, base_url=f"http://127.0.0.1:{port}", timeout_s=2))
    assert (err.kind, err.retryable) == ("connection", True)


@needs_boto3
def test_bedrock_region_and_profile_from_options_and_variables(srv, monkeypatch, tmp_path):
    srv.enqueue("a", "b", "c")
    call(bedrock(srv, options={"region": "eu-central-1"}))
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-southeast-2")
    call(bedrock(srv))
    write(tmp_path / "config", "[profile bench]\nregion = eu-west-3\n")
    write(tmp_path / "credentials", "[bench]\naws_access_key_id = profilekey\naws_secret_access_key = s\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    for name in ("AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    call(bedrock(srv, options={"profile": "bench"}))
    assert [signing_scope(r) for r in srv.requests] == [
        "test/eu-central-1/bedrock", "test/ap-southeast-2/bedrock", "profilekey/eu-west-3/bedrock"]


@needs_boto3
def test_bedrock_endpoint_from_the_sdk_variable(srv, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.base_url)  # read by boto3 itself
    srv.enqueue("from env")
    spec = ModelSpec("bedrock", CLAUDE, timeout_s=5)
    assert call(spec).text == "from env"
    assert endpoint_of(spec) == srv.base_url  # recorded in run.json and part of the cache key


@needs_boto3
@pytest.mark.parametrize(
    ("options", "unset", "message"),
    [
        ({}, ["AWS_REGION"], "no AWS region; set AWS_REGION"),
        ({}, ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"], "no AWS credentials; set AWS_ACCESS_KEY_ID"),
        ({"profile": "nope"}, [], "nope"),
        ({"regoin": "eu-west-1"}, [], "unknown option(s) regoin"),
        ({"json_mode": "json_object"}, [], "json_mode must be one of prompt, structured"),
    ],
)
def test_bedrock_not_ready_fails_before_any_call(srv, monkeypatch, options, unset, message):
    for name in unset:
        monkeypatch.delenv(name)
    with pytest.raises(GraceError) as info:
        call(bedrock(srv, options=options))
    assert message in str(info.value)
    assert srv.requests == []


def test_bedrock_without_boto3_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # makes `import boto3` raise ImportError
    with pytest.raises(GraceError, match="pip install boto3"):
        make_provider(ModelSpec("bedrock", CLAUDE)).check_ready()


# --- vertex ----------------------------------------------------------------------------------------------------


def test_vertex_request_path_auth_and_answer(srv):
    srv.enqueue(Reply.ok("It is in Oslo. [ID: 17]", input_tokens=120, output_tokens=8))
    done = call(vertex(srv, params={"temperature": 0.1, "max_tokens": 64}))
    assert (done.text, done.input_tokens, done.output_tokens, done.finish_reason) == (
        "It is in Oslo. [ID: 17]", 120, 8, "STOP")
    (req,) = srv.requests
    assert req.api == "google"
    assert req.path.endswith(f"/projects/my-proj/locations/europe-west4/publishers/google/models/{GEMINI}:generateContent")
    assert req.headers["authorization"] == "Bearer vertex-token"
    assert "x-goog-api-key" not in req.headers
    config = req.body["generationConfig"]
    assert config["temperature"] == 0.1 and config["maxOutputTokens"] == 64
    assert req.body["systemInstruction"]["parts"] == [{"text": "Answer from the articles only."}]


def test_vertex_answer_cut_off_and_json_mode(srv):
    srv.enqueue(Reply.ok("It is in", finish_reason="MAX_TOKENS"), '{"answer": "Oslo"}')
    assert is_cut_off(call(vertex(srv)).finish_reason)
    call(vertex(srv), Request(messages=MESSAGES, output_mode="json", json_schema=SCHEMA))
    config = srv.requests[1].body["generationConfig"]
    assert config["responseMimeType"] == "application/json" and config["responseJsonSchema"] == SCHEMA


def test_vertex_project_location_and_token_from_variables(srv, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "env-token")
    monkeypatch.setenv("GOOGLE_API_KEY", "an-api-key")  # must not switch the SDK to express mode
    srv.enqueue("a", "b", "c")
    call(vertex(srv, api_key=None, options={}))  # no location anywhere: global, as in the SDK
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    call(vertex(srv, api_key=None, options={}))
    call(vertex(srv, api_key=None, options={"project": "toml-proj"}))  # options beat the variables
    assert ["/".join(r.path.split("/")[2:6]) for r in srv.requests] == [
        "projects/env-proj/locations/global", "projects/env-proj/locations/us-central1",
        "projects/toml-proj/locations/us-central1"]
    assert {r.headers["authorization"] for r in srv.requests} == {"Bearer env-token"}
    assert all("x-goog-api-key" not in r.headers for r in srv.requests)


def test_vertex_base_url_from_the_sdk_variable(srv, monkeypatch):
    monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", srv.google_base_url)  # read by google-genai itself
    srv.enqueue("from env")
    spec = ModelSpec("vertex", GEMINI, api_key="t", options={"project": "p"}, timeout_s=5)
    assert call(spec).text == "from env"
    assert "/projects/p/locations/global/" in srv.requests[0].path
    assert endpoint_of(spec) == srv.google_base_url


@pytest.mark.parametrize(
    ("reply", "kind", "retryable", "status"),
    [
        (Reply.rate_limit(retry_after=4, header=False), "rate_limit", True, 429),  # RESOURCE_EXHAUSTED, retryDelay
        (Reply.error(503), "server", True, 503),
        (Reply.error(400, "Invalid value at 'generation_config.temperature'"), "bad_request", False, 400),
        (Reply.error(403, "Permission denied on resource project my-proj"), "auth", False, 403),
    ],
)
def test_vertex_errors(srv, reply, kind, retryable, status):
    srv.enqueue(reply)
    err = call_error(vertex(srv))
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert len(srv.requests) == 1


def test_vertex_refused_login_is_an_auth_error(srv):
    from google.auth import credentials as ga_credentials
    from google.auth import exceptions as ga_exceptions

    class Revoked(ga_credentials.Credentials):
        def refresh(self, request):
            raise ga_exceptions.RefreshError("invalid_grant: Token has been expired or revoked.")

    async def go():
        provider = make_provider(vertex(srv))
        provider.check_ready()
        provider._credentials = Revoked()  # as application default credentials whose login was revoked
        try:
            return await provider.complete(Request(messages=MESSAGES))
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert (info.value.kind, info.value.retryable) == ("auth", False)
    assert "revoked" in info.value.message and srv.requests == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ModelSpec("vertex", GEMINI, api_key="t"), "no Google Cloud project; set GOOGLE_CLOUD_PROJECT"),
        (ModelSpec("vertex", GEMINI, options={"project": "p"}), "no Google Cloud credentials"),
        (ModelSpec("vertex", GEMINI, api_key_env="MY_TOKEN", options={"project": "p"}), "MY_TOKEN is not set"),
        (ModelSpec("vertex", GEMINI, api_key="t", options={"project": "p", "region": "x"}), "unknown option(s) region"),
    ],
)
def test_vertex_not_ready_fails_before_any_call(spec, message):
    with pytest.raises(GraceError) as info:
        make_provider(spec).check_ready()
    assert message in str(info.value)


def test_vertex_without_google_genai_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(GraceError, match="pip install google-genai"):
        make_provider(ModelSpec("vertex", GEMINI, api_key="t", options={"project": "p"})).check_ready()


def test_model_specs_parse():
    assert (parse_model_spec(f"bedrock:{CLAUDE}").provider, parse_model_spec(f"bedrock:{CLAUDE}").model) == ("bedrock", CLAUDE)
    assert parse_model_spec("vertex:gemini-2.5-pro").model == "gemini-2.5-pro"


# --- grace run, with the runner's retries --------------------------------------------------------------------

BOARD = """
[run]
k = 3

[[models]]
spec = "bedrock:{claude}"
name = "claude-on-bedrock"
base_url = "{url}"
max_tokens = 200
temperature = 0
options = {{ region = "eu-central-1" }}

[[models]]
spec = "vertex:{gemini}"
name = "gemini-on-vertex"
base_url = "{url}"
api_key_env = "VERTEX_TOKEN"
max_tokens = 200
options = {{ project = "bench-proj", location = "europe-west4" }}
"""


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 4, ["what is the capital of france"])


def board(path, srv: FakeAPIServer, only: str | None = None):
    text = BOARD.format(claude=CLAUDE, gemini=GEMINI, url=srv.base_url)
    if only is not None:  # keep the [run] table and the one model
        head, *models = text.split("[[models]]")
        text = head + "".join("[[models]]" + m for m in models if f'"{only}:' in m)
    return write(path, text)


def rows(run_dir):
    return [json.loads(x) for x in (run_dir / "responses.jsonl").read_text().splitlines()]


def test_leaderboard_toml_with_bedrock_and_vertex_entries(tmp_path):
    with FakeAPIServer() as srv:
        specs, run = load_config(board(tmp_path / "board.toml", srv))
    by_name = {s.name: s for s in specs}
    claude, gemini = by_name["claude-on-bedrock"], by_name["gemini-on-vertex"]
    assert (claude.provider, claude.model, claude.options) == ("bedrock", CLAUDE, {"region": "eu-central-1"})
    assert claude.params == {"max_tokens": 200, "temperature": 0}
    assert (gemini.provider, gemini.api_key_env, gemini.options) == (
        "vertex", "VERTEX_TOKEN", {"project": "bench-proj", "location": "europe-west4"})
    assert run == {"k": 3}


@needs_boto3
def test_grace_run_end_to_end_with_bedrock_and_vertex(bench, monkeypatch):
    monkeypatch.setenv("VERTEX_TOKEN", "run-token")
    with FakeAPIServer(responder=cite_first_id) as srv:
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config",
                              board(bench / "board.toml", srv), "--out", bench / "run")
        assert code == 0, out
        calls = list(srv.requests)
    got = rows(bench / "run")
    assert len(got) == 10 and all(r["error"] is None and r["response"] for r in got)
    assert {r["model"] for r in got} == {"claude-on-bedrock", "gemini-on-vertex"}
    assert all(r["input_tokens"] and r["output_tokens"] for r in got)
    by_api = {api: [c for c in calls if c.api == api] for api in ("bedrock", "google")}
    assert len(by_api["bedrock"]) == len(by_api["google"]) == 5
    assert {signing_scope(c) for c in by_api["bedrock"]} == {"test/eu-central-1/bedrock"}
    assert all(c.body["inferenceConfig"] == {"maxTokens": 200, "temperature": 0} for c in by_api["bedrock"])
    assert all("/projects/bench-proj/locations/europe-west4/" in c.path for c in by_api["google"])
    assert {c.headers["authorization"] for c in by_api["google"]} == {"Bearer run-token"}
    report = json.loads((bench / "run" / "report.json").read_text())
    assert set(report["leaderboard"]) == {"claude-on-bedrock", "gemini-on-vertex"}


@needs_boto3
def test_grace_run_bedrock_and_vertex_from_variables_only(bench, monkeypatch):
    """``--model bedrock:...`` / ``--model vertex:...`` with no config: everything from the usual variables."""
    with FakeAPIServer(responder=cite_first_id) as srv:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.base_url)
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", srv.google_base_url)
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "var-proj")
        monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", "var-token")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", f"bedrock:{CLAUDE}",
                              "--model", f"vertex:{GEMINI}", "--out", bench / "run", "--no-score")
        assert code == 0, out
        assert sorted(c.api for c in srv.requests) == ["bedrock"] * 5 + ["google"] * 5
        assert all("/projects/var-proj/locations/global/" in c.path for c in srv.requests if c.api == "google")
    assert all(r["error"] is None for r in rows(bench / "run"))


ONE_QUESTION = "question_id,question,expected_citations,must_refuse\nq1,how many sick days,1,false\n"


@pytest.fixture()
def one_model(bench, monkeypatch):
    """A one-question gold set, and a leaderboard of one of the two models (skipped for bedrock without boto3)."""
    write(bench / "one.csv", ONE_QUESTION)
    monkeypatch.setenv("VERTEX_TOKEN", "run-token")

    def make(provider: str, srv: FakeAPIServer):
        if provider == "bedrock" and not HAVE_BOTO3:
            pytest.skip(NO_BOTO3)
        return board(bench / "board.toml", srv, only=provider)

    return make


@pytest.mark.parametrize("provider", ["bedrock", "vertex"])
def test_runner_retries_throttling_then_answers(bench, one_model, provider):
    with FakeAPIServer(responder=cite_first_id) as srv:
        # a zero Retry-After keeps the test fast; the runner's own backoff (no header, as Bedrock sends) takes ~1 s
        srv.enqueue(Reply.rate_limit(retry_after=0), Reply.error(503, retry_after=0), Reply.ok("Ten days. [ID: 1]"))
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "one.csv", "--config",
                              one_model(provider, srv), "--out", bench / "run",
                              "--no-score", "--no-cache")
        assert code == 0, out
        assert len(srv.requests) == 3  # one HTTP call per attempt: the SDK's own retries are off
    (row,) = rows(bench / "run")
    assert row["response"] == "Ten days. [ID: 1]" and row["attempts"] == 3 and row["error"] is None


@pytest.mark.parametrize("provider", ["bedrock", "vertex"])
def test_runner_does_not_retry_a_validation_error(bench, one_model, provider):
    with FakeAPIServer(responder=cite_first_id) as srv:
        srv.enqueue(Reply.error(400, "Malformed input request: temperature must be between 0 and 1"))
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "one.csv", "--config",
                              one_model(provider, srv), "--out", bench / "run",
                              "--no-score", "--no-cache", "--max-attempts", "4")
        assert len(srv.requests) == 1, out
    (row,) = rows(bench / "run")
    assert row["error"]["kind"] == "bad_request" and row["attempts"] == 1
    assert "temperature must be between 0 and 1" in row["error"]["message"]


def test_no_sdk_imported_at_module_import():
    code = (
        "import sys, harness.providers.bedrock_converse, harness.providers.vertex_ai\n"
        "loaded = [m for m in ('boto3', 'botocore', 'google.genai', 'google.auth') if m in sys.modules]\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
