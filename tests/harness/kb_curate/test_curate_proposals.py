"""Proposed fixes for lint findings (grace kb curate): offline baseline, a model on the fake OpenAI server (cached,
priced, dry-run, redacted), bad model output rejected with a reason, and bad requests refused with a clear error,
in the app's API and over HTTP."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from harness.core.errors import GraceError
from harness.kb_curate.proposals import Proposal, ProposalInput, largest_shift, make_input, parse_reply
from harness.testing.fake_api import Reply, prompt_text
from harness.web import make_server, url_for
from harness.workflows.calls import ModelCalls
from harness.workflows.curate_app import open_curating, propose_fixes
from kb_builder.curation_records import read_edits
from kb_builder.loader import load_kb
from tests.curate_kb import write_kb

MODEL = "openai:gpt-4o-mini"


@pytest.fixture()
def kb_dir(tmp_path):
    return write_kb(tmp_path / "kb")


@pytest.fixture()
def opened(kb_dir):
    with open_curating(kb_dir, author="tester") as o:
        yield o


def keys(app) -> set[str]:
    return {f["key"] for f in app.state()["findings"]}


def test_the_worklist_is_lint_worst_first(opened):
    rows = opened.app.state()["findings"]
    assert [r["key"] for r in rows] == ["confusable:3+4", "confusable:5+6", "not_self_contained:2",
                                        "not_self_contained:7", "not_self_contained:8", "title_markup:8"]
    f = opened.app.finding("not_self_contained:2")
    marked = [s[0] for p in f["articles"][0]["paragraphs"] for s in p if s[1]]
    assert marked == ["This policy"] and f["proposal_kind"] == "rewrite"
    pair = opened.app.finding("confusable:3+4")
    assert [a["id"] for a in pair["articles"]] == ["3", "4"]
    flagged = [bool(p[0][2]) for p in pair["articles"][1]["paragraphs"]]
    assert flagged == [True, False]  # the laptop paragraph makes them alike, not "return the laptop when you leave"


def test_baseline_rewrite_brings_in_the_section_lead_and_fixes_the_finding(opened, kb_dir):
    app = opened.app
    res = app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["2"], "finding": "not_self_contained:2"})
    p = res["proposal"]
    assert p["model"] == "baseline:heuristic" and p["error"] is None and p["cost_usd"] == 0.0
    assert p["text"].startswith("The carry-over policy lets you keep unused leave from one year to the next.\n\nThis policy")
    added = "".join(t for t, op in p["blocks"][1]["diff"] if op == 1)
    assert "The carry-over policy lets you keep" in added and not any(op == -1 for _, op in p["blocks"][1]["diff"])
    done = app.post("/api/curate/accept", {"proposal": p["id"]})
    assert (done["fixed"], done["new"]) == (1, 0) and "not_self_contained:2" not in keys(app)
    edit = read_edits(kb_dir)[-1]
    assert (edit.action, edit.articles, edit.author) == ("text", ["2"], "tester") and "proposal 1" in edit.reason
    assert load_kb(kb_dir).by_id["2"].text.startswith("The carry-over policy lets")  # the KB itself, for every other command


def test_baseline_merge_and_split(opened, kb_dir):
    app = opened.app
    merge = app.post("/api/curate/propose", {"kind": "merge", "articles": ["3", "4"]})["proposal"]
    assert merge["keep"] == "3" and merge["text"].count("Your laptop is shipped") == 1  # the near copy kept once
    assert merge["text"].endswith("Return the laptop to IT when you leave the company.")
    split = app.post("/api/curate/propose", {"kind": "split", "articles": ["7"]})["proposal"]
    assert split["at"] == 3 and len(split["titles"]) == 2 and split["titles"][1].startswith("Working here > Slack")
    assert [b["label"].split(":")[0] for b in split["blocks"]] == ["part 1", "part 2"]
    app.post("/api/curate/accept", {"proposal": merge["id"]})
    kb = load_kb(kb_dir)
    assert "4" not in kb.by_id and "confusable:3+4" not in keys(app)
    assert read_edits(kb_dir)[-1].merged_into == "3"
    app.post("/api/curate/accept", {"proposal": split["id"], "titles": ["Slack etiquette", "Security basics"]})
    kb = load_kb(kb_dir)
    assert "7" not in kb.by_id and {"Slack etiquette", "Security basics"} <= {a.title for a in kb.by_id.values()}


def test_largest_topic_shift():
    paras = ["Slack threads and Slack channels, status in Slack.", "Slack channels for announcements.",
             "Lock your screen; report phishing to security.", "Security hotline for stolen badges."]
    assert largest_shift(paras) == 3
    assert largest_shift(["one", "two"]) == 2


@pytest.fixture()
def fake(openai_server):
    return openai_server


def _reply(**obj) -> Reply:
    return Reply.ok(json.dumps(obj), input_tokens=900, output_tokens=200)


def test_a_model_proposal_through_the_fake_server_is_priced_then_cached(kb_dir, fake):
    fake.enqueue(_reply(reason="the policy is the carry-over policy of the Leave section", title="Leave > Carry over",
                        text="The carry-over policy allows you to carry over up to 240 hours of annual leave into the "
                             "next leave year. Hours above the limit are forfeited at the end of the year, unless your "
                             "manager asked you to postpone leave for operational reasons, in which case HR restores "
                             "them."))
    with open_curating(kb_dir, propose_with=MODEL, author="tester") as o:
        p = o.app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["2"],
                                                "finding": "not_self_contained:2"})["proposal"]
        assert p["error"] is None and p["model"] == MODEL and p["cost_usd"] > 0 and not p["cached"]
        body = fake.requests[0].body
        assert body["response_format"]["json_schema"]["name"] == "rewrite" and body["temperature"] == 0
        prompt = prompt_text(body)
        assert "This policy allows you" in prompt and "The carry-over policy lets you keep" in prompt  # article and context
        again = o.app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["2"],
                                                    "finding": "not_self_contained:2"})["proposal"]
        assert again["cached"] and again["text"] == p["text"] and len(fake.requests) == 1
        o.app.post("/api/curate/accept", {"proposal": p["id"]})
        assert "not_self_contained:2" not in keys(o.app)


@pytest.mark.parametrize(("reply", "why"), [
    (Reply.ok("I would rather not."), "no JSON object"),
    (Reply.ok(""), "empty"),
    (_reply(reason="r", title="T", text="Something else entirely about parking."), "keeps 0%"),
    (_reply(reason="r", title="Two\nlines", text="x"), "not one line"),
    (Reply.error(500, retry_after=0), "the call failed"),
])
def test_bad_model_output_is_a_rejected_proposal_never_a_crash(kb_dir, fake, reply, why):
    fake.enqueue(reply)
    calls = ModelCalls(max_attempts=1)
    with open_curating(kb_dir, propose_with=MODEL, calls=calls) as o:
        p = o.app.post("/api/curate/propose", {"kind": "rewrite", "articles": ["2"]})["proposal"]
        assert why in p["error"] and p["blocks"] == []
        with pytest.raises(GraceError, match="was rejected"):
            o.app.post("/api/curate/accept", {"proposal": p["id"]})


def test_bad_merge_and_split_replies_are_rejected():
    merge = ProposalInput("merge", [{"id": "3", "title": "A", "text": "laptop shipped home"},
                                    {"id": "4", "title": "B", "text": "laptop shipped home early"}])
    assert "'keep' must be 3 or 4" in parse_reply(merge, json.dumps(
        {"reason": "r", "keep": "99", "title": "T", "text": "laptop shipped home early"}), "m").error
    ok = parse_reply(merge, '```json\n{"reason": "r", "keep": "[ID: 4]", "title": "T", "text": "laptop shipped home '
                            'early"}\n```', "m")
    assert ok.error is None and ok.keep == "4"
    split = ProposalInput("split", [{"id": "7", "title": "A", "text": "a\n\nb\n\nc"}], paragraphs=["a", "b", "c"])
    assert "2 to 3, not 9" in parse_reply(split, '{"at": 9, "titles": ["x", "y"]}', "m").error
    assert "two non-empty titles" in parse_reply(split, '{"at": 2, "titles": ["x"]}', "m").error
    assert "paragraph number" in parse_reply(split, '{"at": true, "titles": ["x", "y"]}', "m").error
    assert isinstance(parse_reply(split, '{"at": "2", "titles": ["x", "y"]}', "m"), Proposal)


def test_dry_run_estimates_without_calling_and_redaction_hides_personal_data(kb_dir, fake):
    rows = propose_fixes(kb_dir, MODEL, dry_run=True)
    assert {r.what for r in rows} == {"rewrite proposals", "merge proposals"} and not fake.requests
    assert sum(r.calls for r in rows) == 6 and all(r.input_tokens > 0 for r in rows)
    offline = propose_fixes(kb_dir, "baseline:heuristic")
    assert [p.kind for p in offline] == ["merge", "merge", "rewrite", "rewrite", "rewrite", "rewrite"]
    # personal data in the source page never reaches the model with --redact-pii
    (kb_dir / "articles.jsonl").write_text((kb_dir / "articles.jsonl").read_text().replace(
        "The carry-over policy lets", "Write to jane.doe@example.com: the carry-over policy lets"))
    fake.enqueue(Reply.ok("not json"))
    propose_fixes(kb_dir, MODEL, kinds=["not_self_contained"], limit=1, calls=ModelCalls(redact_pii=True))
    assert "jane.doe@example.com" not in prompt_text(fake.requests[-1].body)
    assert "<EMAIL_1>: the carry-over policy lets" in prompt_text(fake.requests[-1].body)


def test_a_dry_run_needs_no_key(kb_dir, monkeypatch):
    """Like grace run --dry-run: the estimate is made offline, and a missing key is a warning about the real run."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = propose_fixes(kb_dir, "openai:gpt-4o-mini", dry_run=True)
    assert sum(r.calls for r in rows) == 6
    with pytest.raises(GraceError, match="no API key"):
        propose_fixes(kb_dir, "openai:gpt-4o-mini", limit=1)


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/api/curate/title", {"id": "nope", "title": "x"}, "no such article"),
    ("/api/curate/split", {"id": "7", "at": 9}, "must be 2 to 3"),
    ("/api/curate/merge", {"keep": "3", "other": "3"}, "with itself"),
    ("/api/curate/propose", {"kind": "merge", "articles": ["3", "3"]}, "with itself"),
    ("/api/curate/propose", {"kind": "rewrite", "articles": ["nope"]}, "no article 'nope'"),
    ("/api/curate/propose", {"kind": "split", "articles": ["2"]}, "nowhere to split"),
    ("/api/curate/distinct", {"a": "5", "b": "6", "why": ""}, "say why"),
    ("/api/curate/accept", {"proposal": 42}, "no proposal 42"),
    ("/api/curate/split", {"id": "7", "at": "two"}, "at must be a whole number"),
])
def test_bad_input_is_a_clear_error_in_the_api_and_over_http(opened, kb_dir, path, body, message):
    with pytest.raises(GraceError, match=message):
        opened.app.post(path, body)
    httpd = make_server(opened.app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        url = url_for("127.0.0.1", httpd.server_address[1], None).rstrip("/") + path
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 400 and message in json.loads(err.value.read())["error"]
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert read_edits(kb_dir) == []  # nothing was recorded


def test_make_input_checks_its_articles(kb_dir):
    kb = load_kb(kb_dir)
    with pytest.raises(GraceError, match="takes 2 article"):
        make_input(kb, "merge", ["3"])
    with pytest.raises(GraceError, match="proposal kind 'fix'"):
        make_input(kb, "fix", ["3"])
