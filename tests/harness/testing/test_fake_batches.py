"""The fake server's batch APIs, driven by the vendors' real SDK clients (no mocks): OpenAI (and Azure) files +
batches, Anthropic Message Batches, Gemini batch mode."""

from __future__ import annotations

import asyncio
import io
import json
import urllib.request

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from harness.testing.fake_api import BatchBehaviour, FakeAPIServer, Reply, prompt_text

CHAT = "/v1/chat/completions"


@pytest.fixture
def fake(srv):
    """The module's server with default batch behaviour, answering each prompt with "re: <prompt>"."""
    srv.batch = BatchBehaviour()
    srv.responder = lambda body: f"re: {prompt_text(body)}"
    yield srv
    srv.batch = BatchBehaviour()


@pytest.fixture(scope="module")
def oai(server):
    return openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)


@pytest.fixture(scope="module")
def claude(server):
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0)


@pytest.fixture(scope="module")
def gemini(server):
    return genai.Client(api_key="k", http_options=types.HttpOptions(
        base_url=server.google_base_url, retry_options=types.HttpRetryOptions(attempts=1)))


def openai_lines(ids: list[str], url: str = CHAT, **body) -> bytes:
    lines = [{"custom_id": c, "method": "POST", "url": url,
              "body": {"model": "gpt-x", "messages": [{"role": "user", "content": f"q {c}"}], **body}} for c in ids]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def openai_batch(client: openai.OpenAI, data: bytes, endpoint: str = CHAT):
    file = client.files.create(file=("in.jsonl", io.BytesIO(data)), purpose="batch")
    return client.batches.create(input_file_id=file.id, endpoint=endpoint, completion_window="24h",  # type: ignore[arg-type]
                                 metadata={"run": "r1"})


def jsonl(client: openai.OpenAI, file_id: str | None) -> list[dict]:
    assert file_id is not None
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def claude_requests(ids: list[str], max_tokens: int = 50) -> list[dict]:
    return [{"custom_id": c, "params": {"model": "claude-x", "max_tokens": max_tokens,
                                        "messages": [{"role": "user", "content": f"q {c}"}]}} for c in ids]


def gemini_src(keys: list[str]) -> list[dict]:
    return [{"contents": [{"role": "user", "parts": [{"text": f"q {k}"}]}], "config": {"temperature": 0.0},
             "metadata": {"key": k}} for k in keys]


# --- OpenAI ----------------------------------------------------------------------------------------------


def test_openai_upload_create_poll_download(fake, oai):
    fake.batch = BatchBehaviour(polls_to_finish=2)
    file = oai.files.create(file=("in.jsonl", io.BytesIO(openai_lines(["a", "b"]))), purpose="batch")
    assert (file.object, file.purpose, file.status, file.filename) == ("file", "batch", "processed", "in.jsonl")
    assert file.bytes == len(openai_lines(["a", "b"])) and oai.files.retrieve(file.id).id == file.id
    batch = oai.batches.create(input_file_id=file.id, endpoint=CHAT, completion_window="24h", metadata={"run": "r1"})
    assert batch.id.startswith("batch_") and batch.status == "validating" and batch.output_file_id is None
    assert batch.request_counts is not None and batch.request_counts.total == 2 and batch.metadata == {"run": "r1"}
    assert oai.batches.retrieve(batch.id).status == "in_progress"
    done = oai.batches.retrieve(batch.id)
    assert done.status == "completed" and done.completed_at and done.error_file_id is None
    assert done.request_counts is not None and (done.request_counts.completed, done.request_counts.failed) == (2, 0)
    assert done.usage is not None and done.usage.total_tokens > 0
    out = jsonl(oai, done.output_file_id)
    assert [line["custom_id"] for line in out] == ["a", "b"]
    body = out[0]["response"]["body"]
    assert out[0]["response"]["status_code"] == 200 and out[0]["error"] is None and out[0]["id"].startswith("batch_req_")
    assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"] == "re: q a"
    assert body["usage"]["completion_tokens"] == 3
    assert fake.requests == [] and fake.batch_submitted == {"a": 1, "b": 1}
    assert ("POST", "/v1/files") in fake.batch_calls and ("GET", f"/v1/batches/{batch.id}") in fake.batch_calls
    assert fake.batches[batch.id].counts["succeeded"] == 2 and fake.batches[batch.id].custom_ids == ["a", "b"]


def test_openai_request_error_goes_to_error_file(fake, oai):
    fake.enqueue(Reply.ok("first"), Reply.error(400, "bad"))
    batch = oai.batches.retrieve(openai_batch(oai, openai_lines(["a", "b", "c"])).id)
    assert batch.status == "completed"
    assert batch.request_counts is not None and (batch.request_counts.completed, batch.request_counts.failed) == (2, 1)
    assert [line["response"]["body"]["choices"][0]["message"]["content"] for line in jsonl(oai, batch.output_file_id)] \
        == ["first", "re: q c"]
    (err,) = jsonl(oai, batch.error_file_id)
    assert err["custom_id"] == "b" and err["error"] is None
    assert err["response"]["status_code"] == 400 and err["response"]["body"]["error"]["message"] == "bad"


def test_openai_expired_batch_keeps_what_was_done(fake, oai):
    fake.batch = BatchBehaviour(expire_after=2)
    batch = oai.batches.retrieve(openai_batch(oai, openai_lines([f"r{i}" for i in range(5)])).id)
    assert batch.status == "expired" and batch.expired_at and batch.completed_at is None
    assert [line["custom_id"] for line in jsonl(oai, batch.output_file_id)] == ["r0", "r1"]
    errs = jsonl(oai, batch.error_file_id)
    assert [line["custom_id"] for line in errs] == ["r2", "r3", "r4"]
    assert all(line["response"] is None and line["error"]["code"] == "batch_expired" for line in errs)
    assert fake.batches[batch.id].counts == {"succeeded": 2, "expired": 3}


def test_openai_cancel(fake, oai):
    fake.batch = BatchBehaviour(polls_to_finish=5)
    calls = []
    fake.responder = lambda body: calls.append(body) or "x"
    batch = openai_batch(oai, openai_lines(["a", "b"]))
    cancelling = oai.batches.cancel(batch.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at
    cancelled = oai.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled" and cancelled.cancelled_at and cancelled.output_file_id is None
    assert [line["error"]["code"] for line in jsonl(oai, cancelled.error_file_id)] == ["batch_cancelled"] * 2
    assert calls == []  # a cancelled batch answers nothing more
    assert oai.batches.cancel(batch.id).status == "cancelled"  # cancelling an ended batch changes nothing


def test_openai_output_file_can_be_torn_short_and_stray(fake, oai):
    fake.batch = BatchBehaviour(tear_results=(1,), drop_results=(2,), stray_results=1)
    fake.enqueue(Reply.ok("a"), Reply.ok("b"), Reply.ok("c"), Reply.error(400, "bad"))
    batch = oai.batches.retrieve(openai_batch(oai, openai_lines(["a", "b", "c", "d"])).id)
    assert batch.status == "completed"
    assert batch.output_file_id is not None
    lines = oai.files.content(batch.output_file_id).text.splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["custom_id"] == "a"
    with pytest.raises(ValueError):
        json.loads(lines[1])  # b's line, cut in half
    stray = json.loads(lines[2])  # c's line is missing; a copy of a's answer names a request never sent
    assert stray["custom_id"] == "stray-0" and stray["response"]["body"]["choices"][0]["message"]["content"] == "a"
    assert [line["custom_id"] for line in jsonl(oai, batch.error_file_id)] == ["d"]  # the error file: no stray


def test_openai_list_newest_first_and_paged(fake, oai):
    ids = [openai_batch(oai, openai_lines([f"l{i}"])).id for i in range(3)]
    page = oai.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more
    assert [b.id for b in oai.batches.list(limit=2)] == ids[::-1]  # auto-paging follows after=


def test_openai_invalid_input_fails_the_batch(fake, oai):
    bad = openai_lines(["a", "a"]) + openai_lines(["b"], url="/v1/embeddings") + b"not json\n"
    batch = openai_batch(oai, bad)
    assert batch.status == "failed" and batch.failed_at and batch.errors is not None and batch.errors.data
    assert [(e.code, e.line) for e in batch.errors.data] == [("duplicate_custom_id", 2), ("mismatched_endpoint", 3),
                                                              ("invalid_json_line", 4)]
    fake.batch = BatchBehaviour(max_requests=2)
    big = openai_batch(oai, openai_lines(["x", "y", "z"]))
    assert big.status == "failed" and big.errors is not None and big.errors.data[0].code == "too_many_requests"
    fake.batch = BatchBehaviour(max_bytes=10)
    assert openai_batch(oai, openai_lines(["x"])).status == "failed"
    assert fake.batch_submitted == {}  # refused batches submit nothing
    assert oai.batches.retrieve(batch.id).status == "failed"


def test_openai_polls_zero_and_submitted_counts(fake, oai):
    fake.batch = BatchBehaviour(polls_to_finish=0)
    first = openai_batch(oai, openai_lines(["a", "b"]))
    assert first.status == "completed" and first.output_file_id
    openai_batch(oai, openai_lines(["b", "c"]))
    assert fake.batch_submitted == {"a": 1, "b": 2, "c": 1}


def test_azure_client(fake):
    client = openai.AzureOpenAI(azure_endpoint=fake.base_url, api_key="k", api_version="2024-10-21", max_retries=0)
    lines = openai_lines(["az1"], url="/chat/completions")
    file = client.files.create(file=("in.jsonl", io.BytesIO(lines)), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/chat/completions", completion_window="24h")
    assert batch.status == "validating" and batch.endpoint == "/chat/completions"
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed"
    (line,) = jsonl(client, done.output_file_id)
    assert line["response"]["body"]["choices"][0]["message"]["content"] == "re: q az1"
    assert [path for _, path in fake.batch_calls] == ["/openai/files", "/openai/batches", f"/openai/batches/{batch.id}",
                                                      f"/openai/files/{done.output_file_id}/content"]
    assert fake.requests == []


def test_realtime_calls_still_work_and_share_the_queue(fake, oai):
    fake.enqueue("realtime", "batched")
    reply = oai.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "realtime"
    batch = oai.batches.retrieve(openai_batch(oai, openai_lines(["a"])).id)
    assert jsonl(oai, batch.output_file_id)[0]["response"]["body"]["choices"][0]["message"]["content"] == "batched"
    assert [r.path for r in fake.requests] == ["/v1/chat/completions"]
    assert fake.gets == [] or all("batches" not in g and "files" not in g for g in fake.gets)


def test_clear_resets_batch_state(fake, oai):
    openai_batch(oai, openai_lines(["a"]))
    fake.clear()
    assert fake.batches == {} and fake.batch_submitted == {} and fake.batch_calls == []


# --- Anthropic -------------------------------------------------------------------------------------------


def test_anthropic_create_poll_results(fake, claude):
    fake.batch = BatchBehaviour(expire_after=3)
    fake.enqueue(Reply.error(400, "prompt is too long"))
    requests = claude_requests(["e1", "s1", "s2", "x1"])
    requests[2]["params"]["max_tokens"] = 1
    batch = claude.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    assert batch.id.startswith("msgbatch_") and batch.processing_status == "in_progress" and batch.results_url is None
    assert batch.request_counts.processing == 4 and batch.ended_at is None
    ended = claude.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.ended_at is not None
    assert ended.results_url == f"{fake.anthropic_base_url}/v1/messages/batches/{batch.id}/results"
    counts = ended.request_counts
    assert (counts.processing, counts.succeeded, counts.errored, counts.expired, counts.canceled) == (0, 2, 1, 1, 0)
    results = {r.custom_id: r.result for r in claude.messages.batches.results(batch.id)}
    assert list(results) == ["e1", "s1", "s2", "x1"]
    assert results["e1"].type == "errored" and results["e1"].error.error.type == "invalid_request_error"
    assert results["e1"].error.error.message == "prompt is too long"
    assert results["s1"].type == "succeeded" and results["s1"].message.content[0].text == "re: q s1"
    assert results["s1"].message.usage.output_tokens == 3
    assert results["s2"].message.content[0].text == "re:" and results["s2"].message.stop_reason == "max_tokens"
    assert results["x1"].type == "expired"
    assert fake.requests == [] and fake.batch_submitted == {"e1": 1, "s1": 1, "s2": 1, "x1": 1}


def test_anthropic_async_results(fake, server):
    async def run() -> list[str]:
        client = anthropic.AsyncAnthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0)
        batch = await client.messages.batches.create(requests=claude_requests(["a1", "a2"]))  # type: ignore[arg-type]
        await client.messages.batches.retrieve(batch.id)
        return [r.result.message.content[0].text async for r in await client.messages.batches.results(batch.id)]

    assert asyncio.run(run()) == ["re: q a1", "re: q a2"]


def test_anthropic_cancel_and_list(fake, claude):
    fake.batch = BatchBehaviour(polls_to_finish=3)
    first = claude.messages.batches.create(requests=claude_requests(["c1", "c2"]))  # type: ignore[arg-type]
    second = claude.messages.batches.create(requests=claude_requests(["c3"]))  # type: ignore[arg-type]
    canceling = claude.messages.batches.cancel(first.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
    ended = claude.messages.batches.retrieve(first.id)
    assert ended.processing_status == "ended" and ended.request_counts.canceled == 2
    assert [r.result.type for r in claude.messages.batches.results(first.id)] == ["canceled", "canceled"]
    page = claude.messages.batches.list(limit=1)
    assert [b.id for b in page.data] == [second.id] and page.has_more
    assert [b.id for b in claude.messages.batches.list(limit=1)] == [second.id, first.id]


def test_anthropic_results_file_can_be_torn_short_and_stray(fake, claude):
    fake.batch = BatchBehaviour(tear_results=(0,), drop_results=(1,), stray_results=2)
    batch = claude.messages.batches.create(requests=claude_requests(["a", "b", "c"]))  # type: ignore[arg-type]
    claude.messages.batches.retrieve(batch.id)
    with urllib.request.urlopen(f"{fake.anthropic_base_url}/v1/messages/batches/{batch.id}/results") as reply:
        lines = reply.read().decode().splitlines()  # as sent: the SDK's decoder stops at the torn line
    assert len(lines) == 4 and json.loads(lines[1])["custom_id"] == "c"
    with pytest.raises(ValueError):
        json.loads(lines[0])
    assert [json.loads(line)["custom_id"] for line in lines[2:]] == ["stray-0", "stray-1"]
    assert json.loads(lines[2])["result"]["message"]["content"][0]["text"] == "re: q a"


@pytest.mark.parametrize("ids", [["bad id!"], ["x" * 65], ["dup", "dup"]])
def test_anthropic_bad_custom_id_is_400(fake, claude, ids):
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.batches.create(requests=claude_requests(ids))  # type: ignore[arg-type]
    assert info.value.status_code == 400 and fake.batches == {} and fake.batch_submitted == {}


def test_anthropic_limits_are_400(fake, claude):
    fake.batch = BatchBehaviour(max_requests=1)
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.create(requests=claude_requests(["a", "b"]))  # type: ignore[arg-type]
    fake.batch = BatchBehaviour(max_bytes=100)
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.create(requests=claude_requests(["a"]))  # type: ignore[arg-type]


# --- Gemini ----------------------------------------------------------------------------------------------


def test_gemini_create_get_inline_results(fake, gemini):
    fake.enqueue(Reply.ok("one"), Reply.error(400, "bad request"), Reply.ok("three four five"))
    src = gemini_src(["g1", "g2", "g3"]) + [{"contents": "q nokey", "config": {"max_output_tokens": 1}}]
    src[2]["config"]["max_output_tokens"] = 2
    job = gemini.batches.create(model="gemini-x", src=src, config={"display_name": "run-1"})  # type: ignore[arg-type]
    assert job.name is not None and job.name.startswith("batches/")
    assert job.state == types.JobState.JOB_STATE_PENDING and job.display_name == "run-1" and not job.done
    assert job.model == "models/gemini-x" and job.dest is None
    done = gemini.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED and done.done and done.end_time is not None
    assert done.dest is not None and done.dest.inlined_responses is not None
    first, second, third, fourth = done.dest.inlined_responses
    assert first.response is not None and first.response.text == "one" and first.metadata == {"key": "g1"}
    assert first.response.usage_metadata is not None and first.response.usage_metadata.candidates_token_count == 1
    assert second.response is None and second.error is not None and second.metadata == {"key": "g2"}
    assert (second.error.code, second.error.message) == (3, "bad request")
    assert third.response is not None and third.response.text == "three four"
    assert third.response.candidates and third.response.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert fourth.response is not None and fourth.response.text == "re:" and fourth.metadata is None
    assert fake.batch_submitted == {"g1": 1, "g2": 1, "g3": 1, f"{job.name}#3": 1}
    assert fake.requests == [] and fake.batches[job.name].counts == {"succeeded": 3, "errored": 1}
    assert ("POST", "/v1/models/gemini-x:batchGenerateContent") in fake.batch_calls


def test_gemini_running_then_expired(fake, gemini):
    fake.batch = BatchBehaviour(polls_to_finish=2, expire_after=1)
    job = gemini.batches.create(model="gemini-x", src=gemini_src(["a", "b"]))  # type: ignore[arg-type]
    assert job.name is not None
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_RUNNING
    done = gemini.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_EXPIRED and done.dest and done.dest.inlined_responses
    kept, lost = done.dest.inlined_responses
    assert kept.response is not None and kept.response.text == "re: q a"
    assert lost.error is not None and lost.error.code == 4 and lost.metadata == {"key": "b"}


def test_gemini_inline_results_can_be_short_and_stray(fake, gemini):
    fake.batch = BatchBehaviour(tear_results=(0,), drop_results=(1,), stray_results=1)  # nothing to tear inline
    job = gemini.batches.create(model="gemini-x", src=gemini_src(["a", "b", "c"]))  # type: ignore[arg-type]
    assert job.name is not None
    done = gemini.batches.get(name=job.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED and done.dest and done.dest.inlined_responses
    answers = done.dest.inlined_responses
    assert [a.metadata for a in answers] == [{"key": "a"}, {"key": "c"}, {"key": "stray-0"}]
    assert answers[2].response is not None and answers[2].response.text == "re: q a"


def test_gemini_cancel_list_delete(fake, gemini):
    fake.batch = BatchBehaviour(polls_to_finish=3)
    first = gemini.batches.create(model="gemini-x", src=gemini_src(["a"]))  # type: ignore[arg-type]
    second = gemini.batches.create(model="gemini-x", src=gemini_src(["b"]))  # type: ignore[arg-type]
    assert first.name and second.name
    gemini.batches.cancel(name=first.name)
    cancelled = gemini.batches.get(name=first.name)
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED and cancelled.dest and cancelled.dest.inlined_responses
    assert cancelled.dest.inlined_responses[0].error is not None and cancelled.dest.inlined_responses[0].error.code == 1
    assert [j.name for j in gemini.batches.list(config={"page_size": 1})] == [second.name, first.name]
    gemini.batches.delete(name=first.name)
    assert list(fake.batches) == [second.name]


def test_gemini_limits_are_400(fake, gemini):
    fake.batch = BatchBehaviour(max_requests=1)
    with pytest.raises(genai_errors.ClientError) as info:
        gemini.batches.create(model="gemini-x", src=gemini_src(["a", "b"]))  # type: ignore[arg-type]
    assert info.value.code == 400 and fake.batches == {}


def test_openai_and_gemini_share_v1_batches_paths(fake, oai, gemini):
    """Both use GET /v1/batches[/{id}] (google-genai's default API version is v1): told apart by the client."""
    openai_id = openai_batch(oai, openai_lines(["o"])).id
    job = gemini.batches.create(model="gemini-x", src=gemini_src(["g"]))  # type: ignore[arg-type]
    assert job.name is not None
    assert [b.id for b in oai.batches.list()] == [openai_id]
    assert [j.name for j in gemini.batches.list()] == [job.name]
    assert oai.batches.retrieve(openai_id).status == "completed"
    assert gemini.batches.get(name=job.name).state == types.JobState.JOB_STATE_SUCCEEDED


def test_own_server_takes_batch_behaviour():
    with FakeAPIServer(batch=BatchBehaviour(polls_to_finish=0)) as own:
        client = anthropic.Anthropic(base_url=own.anthropic_base_url, api_key="k", max_retries=0)
        batch = client.messages.batches.create(requests=claude_requests(["a"]))  # type: ignore[arg-type]
        assert batch.processing_status == "ended" and batch.results_url
