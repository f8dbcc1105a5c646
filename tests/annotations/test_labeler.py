"""The LLM labeler end to end: the real SDKs against the local fake API server, the real engine and cache."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from annotations.labeler import parse_label, suggest_with_labeler
from annotations.suggestions import read_suggestions
from harness.testing import Reply, label_by_overlap, prompt_text
from kb_builder.gold import Question
from kb_builder.loader import load_kb
from tests.conftest import run_grace, write

ARTICLES = [
    {"id": "1", "title": "Leave > Sick leave", "text": "Employees get ten days of paid sick leave per year. Call your "
     "manager before 9:00 on the first day of illness. From the fourth day a doctor's note is required."},
    {"id": "2", "title": "Leave > Parental leave", "text": "Parents get sixteen weeks of parental leave at full pay. "
     "Tell HR eight weeks before the expected birth or adoption date."},
    {"id": "3", "title": "Travel > Flight booking", "text": "Book all flights through the Atlas travel portal at least "
     "fourteen days before departure. Economy class is the default for flights under six hours."},
    {"id": "4", "title": "Travel > Per diem", "text": "The meal per diem is 45 EUR a day within the EU and 60 EUR "
     "elsewhere. It is paid with the next salary after the expense claim is approved."},
    {"id": "5", "title": "IT > Laptop return", "text": "When you leave the company, return your laptop and chargers to "
     "the IT desk on your last working day. Remote staff get a prepaid courier box."},
]
QUESTIONS = [Question("q1", "how many sick days do I get"), Question("q2", "what is the meal allowance per day abroad"),
             Question("q3", "can I bring my dog")]
EXPECTED = {"q1": "1", "q2": "4", "q3": "REFUSE"}
MODEL = "openai:gpt-4o-mini"


@pytest.fixture()
def kb(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    return load_kb(tmp_path / "kb")


@pytest.fixture()
def srv(openai_server):
    openai_server.responder = label_by_overlap
    return openai_server


def label(kb, model=MODEL, **kwargs):
    buf = io.StringIO()
    out = suggest_with_labeler(kb, QUESTIONS, model, console=Console(file=buf, width=200), **kwargs)
    return out, buf.getvalue()


def test_labels_through_the_openai_sdk_in_json_schema_mode(kb, srv):
    out, text = label(kb, k=3)
    assert {s.question_id: s.suggested for s in out} == EXPECTED
    assert [s.question_id for s in out] == ["q1", "q2", "q3"]
    for s in out:
        assert (s.source, s.support, s.voters, s.votes, s.flag) == (f"labeler:{MODEL}", 1.0, 1, "", "")
        assert s.reason and s.usable
    top = kb.retriever().search_many([q.question for q in QUESTIONS], 1)
    assert [s.top_score for s in out] == [hs[0].score for hs in top]
    assert len(srv.requests) == 3
    body = srv.requests[0].body
    assert body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "label" and fmt["json_schema"]["strict"]
    assert list(fmt["json_schema"]["schema"]["properties"]) == ["reason", "article_ids", "none"]  # reason, then decide
    prompts = [prompt_text(r.body) for r in srv.requests]
    assert all(p.count("[ID: ") == 3 for p in prompts)  # k articles shown, each with its ID
    assert any("Question: how many sick days do I get" in p for p in prompts)
    assert "labeler (openai:gpt-4o-mini): 3 call(s), 0 cached, 0 error(s), $0.0" in text


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_labels_through_the_anthropic_and_google_sdks(kb, srv, monkeypatch, provider):
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    else:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.google_base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "x")
    out, _ = label(kb, f"{provider}:some-model", k=3)
    assert {s.question_id: s.suggested for s in out} == EXPECTED
    assert {r.api for r in srv.requests} == {provider}
    body = srv.requests[0].body
    if provider == "anthropic":
        assert body["output_config"]["format"]["schema"]["required"] == ["reason", "article_ids", "none"]
    else:
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert body["generationConfig"]["responseJsonSchema"]["title"] == "label"


def test_a_second_run_is_answered_from_the_cache(kb, srv):
    first, _ = label(kb)
    n = len(srv.requests)
    second, text = label(kb)
    assert len(srv.requests) == n == 3
    assert [s.to_row() for s in second] == [s.to_row() for s in first]
    assert "3 call(s)" not in text and "0 call(s), 3 cached, 0 error(s)" in text
    label(kb, read_cache=False)  # --no-cache asks again
    assert len(srv.requests) == 6


def test_dry_run_estimates_and_calls_nothing(kb, srv):
    out, text = label(kb, dry_run=True, prices=None)
    assert out is None and srv.requests == []
    assert "Dry run: no calls made" in text and "labelling" in text
    row = next(line for line in text.splitlines() if "labelling" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[2:4] == ["3", "0"]  # calls, cached
    assert int(cells[4].replace(",", "")) > 100  # input tokens: the prompt with its articles
    label(kb)
    _, text = label(kb, dry_run=True)
    row = next(line for line in text.splitlines() if "labelling" in line)
    assert [c.strip() for c in row.split("│") if c.strip()][2:4] == ["0", "3"]  # a re-run costs nothing


def test_unreadable_or_impossible_answers_are_flagged_not_guessed(kb, srv):
    def reply(body):
        q = prompt_text(body).rpartition("Question:")[2].strip()
        if q.startswith("how many sick"):
            return "I think it is article 1."  # no JSON at all
        if q.startswith("what is the meal"):
            return json.dumps({"reason": "the per diem article", "article_ids": ["99"], "none": False})
        return '```json\n{"reason": "dogs are not covered", "article_ids": [], "none": "true"}\n```'

    srv.responder = reply
    out, text = label(kb)
    by = {s.question_id: s for s in out}
    assert (by["q1"].flag, by["q1"].suggested, by["q1"].support, by["q1"].voters) == ("labeler_error", "", None, 0)
    assert "no JSON object" in by["q1"].reason and not by["q1"].usable
    assert by["q2"].flag == "labeler_error" and "not shown: 99" in by["q2"].reason
    assert (by["q3"].flag, by["q3"].suggested) == ("", "REFUSE")  # fenced, and "true" as a string
    assert "0 error(s)" in text  # the calls succeeded; the answers were unusable


def test_parse_label_is_lenient_about_form_and_strict_about_ids():
    shown = ["3", "17", "18"]
    assert parse_label('Sure! {"reason": "r", "article_ids": [17, "18"], "none": false} Hope it helps.', shown).suggested == "17;18"
    assert parse_label('{"reason": "r", "article_ids": ["[ID: 17]"], "none": false}', shown).suggested == "17"
    mixed = parse_label('{"reason": "r", "article_ids": ["17", "99"], "none": false}', shown)
    assert mixed.suggested == "17" and mixed.error is None and "not shown: 99" in mixed.reason
    assert parse_label('{"reason": "r", "article_ids": ["17"], "none": true}', shown).error == "said none and named article(s)"
    assert parse_label('{"reason": "r", "article_ids": [], "none": false}', shown).error
    assert parse_label('{"reason": "r", "article_ids": {"a": 1}, "none": false}', shown).error
    assert parse_label("", shown).error == "empty reply"


def test_rate_limits_and_server_errors_are_retried(kb, srv):
    srv.enqueue(Reply.rate_limit(retry_after=0), Reply.error(503, retry_after=0))
    out, text = label(kb, concurrency=1)
    assert {s.question_id: s.suggested for s in out} == EXPECTED
    assert len(srv.requests) == 5 and "0 error(s)" in text


def test_a_call_that_keeps_failing_is_flagged_and_asked_again_next_time(kb, srv):
    srv.enqueue(Reply.error(500, retry_after=0), Reply.error(500, retry_after=0))
    out, text = label(kb, concurrency=1, max_attempts=2)
    failed = [s for s in out if s.flag]
    assert len(failed) == 1 and failed[0].flag == "labeler_error" and "call failed" in failed[0].reason
    assert "1 error(s)" in text and len(srv.requests) == 2 + 2  # two attempts, then the other two questions
    again, _ = label(kb)
    assert {s.question_id: s.suggested for s in again} == EXPECTED
    assert len(srv.requests) == 4 + 1  # only the failed one is asked again: answers were cached, failures not


def test_baseline_top1_labels_offline(kb):
    out, text = label(kb, "baseline:top1")
    top = kb.retriever().search_many([q.question for q in QUESTIONS], 1)
    assert [s.suggested for s in out] == [hs[0].id for hs in top]
    assert all(s.source == "labeler:baseline:top1" and "top retrieved" in s.reason for s in out)
    assert "$0.0000" in text


def test_baseline_threshold_is_not_a_labeler(kb):
    from harness.core.errors import GraceError

    with pytest.raises(GraceError, match="baseline:top1 offline"):
        label(kb, "baseline:threshold")


def test_annotations_suggest_with_labeler_writes_the_suggestions_file(tmp_path, kb, srv):
    write(tmp_path / "q.csv", "question_id,question\n" + "".join(f"{q.question_id},{q.question}\n" for q in QUESTIONS))
    code, out = run_grace("annotations", "suggest", tmp_path / "q.csv", "--kb", kb.path, "--labeler", MODEL,
                          "--out", tmp_path / "s.csv", "-k", "3")
    assert code == 0, out
    rows = read_suggestions(tmp_path / "s.csv")
    assert {q: s.suggested for q, s in rows.items()} == EXPECTED
    assert all(s.source == f"labeler:{MODEL}" for s in rows.values())


def test_the_suggest_workflow_is_in_the_python_api(kb, tmp_path):
    import grace
    from harness.runner.calls import CallSettings

    assert (grace.ModelCalls.concurrency, grace.ModelCalls.max_attempts) == \
        (CallSettings.concurrency, CallSettings.max_attempts)  # one set of defaults for every model call
    qs = tmp_path / "q.csv"
    qs.write_text("question_id,question\n" + "".join(f"{q.question_id},{q.question}\n" for q in QUESTIONS),
                  encoding="utf-8")
    done = grace.suggest_labels(qs, kb, tmp_path / "s.csv", labeler="baseline:top1",
                                console=Console(file=io.StringIO()))
    assert list(read_suggestions(done.out)) == ["q1", "q2", "q3"]
    assert (done.asked, done.failed, done.failure(), done.models) == (3, 0, None, None)
