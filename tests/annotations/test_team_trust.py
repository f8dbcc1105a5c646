"""A team you can trust with the gold, from outside the browser: each person acts only through their own key (a name
in the body or URL is nobody), in their role; a decision is made once, on what the reviewer saw; a label changed
after a decision re-opens the question; gold review and curation decide through one implementation."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from unittest import mock

import pytest

import annotations.teamwork
import harness.kb_curate.change_requests
from annotations.labels import read_labels
from annotations.team import TeamSession
from annotations.team_app import TeamApp
from harness.web import make_server, url_for
from harness.web.credentials import Credentials, Forbidden
from harness.web.decisions import StaleDecision, Unseen, decide
from harness.workflows.curate_app import open_curating
from kb_builder.loader import load_kb
from tests.annotations.test_annotate_team import label_as, truth, write_questions
from tests.annotations.test_annotations_server import make_kb
from tests.conftest import run_grace
from tests.curate_kb import write_kb


@pytest.fixture
def served(tmp_path):
    """alice and bob label every question, dana reviews: one server on localhost."""
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 8)
    team = TeamSession.open(kb, tmp_path / "team", questions=q, people="alice,bob", reviewers="dana", rule="all")
    app = TeamApp(team, kb.retriever(), k=5)
    httpd = make_server(app, "127.0.0.1", 0, None)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield url_for("127.0.0.1", httpd.server_address[1], None), team, app
    httpd.shutdown()
    httpd.server_close()
    team.close()


def call(url: str, path: str, body: dict | None = None, key: str | None = None, header: bool = False):
    """A script's request: (status, answer)."""
    full = url + path + (f"{'&' if '?' in path else '?'}cred={key}" if key and not header else "")
    headers = {"Content-Type": "application/json"} | ({"X-Grace-Key": key} if key and header else {})
    req = urllib.request.Request(full, None if body is None else json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_keys_are_printed_once_and_stored_hashed(tmp_path):
    creds = Credentials(tmp_path / "keys.json")
    keys = creds.issue(["alice", "bob"])
    assert sorted(keys) == ["alice", "bob"] and len(keys["alice"]) >= 40 and keys["alice"] != keys["bob"]
    stored = (tmp_path / "keys.json").read_text()
    assert keys["alice"] not in stored and keys["bob"] not in stored  # a hash only
    again = Credentials(tmp_path / "keys.json")
    assert again.issue(["alice", "bob"]) == {}  # a restart issues nothing new: the links printed first still hold
    assert again.person("", keys["bob"]) == "bob"
    new = again.issue(["alice", "bob"], again=["bob"])  # a lost link replaced: the old one stops working
    with pytest.raises(Forbidden, match="no one's"):
        again.person("bob", keys["bob"])
    assert again.person("bob", new["bob"]) == "bob"


def test_a_name_is_nobody_only_a_key_is_someone(served):
    url, team, _ = served
    keys = team.new_keys
    assert sorted(keys) == ["alice", "bob", "dana"]
    q1 = label_as("alice", "q1")
    # a script without a key, naming alice or dana: refused, nothing written
    assert call(url, "api/label", q1)[0] == 403
    assert call(url, "api/label?who=alice", q1)[0] == 403
    assert call(url, "api/queue?who=dana")[0] == 403
    item = {"who": "dana", "question_id": "q1", "expected_citations": truth("q1"), "reason": "x", "seen": {}}
    assert call(url, "api/adjudicate", item)[0] == 403
    # bob with his own key naming alice: refused (403), not written as alice's
    code, body = call(url, "api/label", q1, keys["bob"])
    assert code == 403 and "bob's key" in body["error"]
    # bob cannot decide: his key is a labeller's
    code, body = call(url, "api/adjudicate", item | {"who": "bob"}, keys["bob"])
    assert code == 403 and "not a reviewer" in body["error"]
    assert call(url, "api/queue", None, keys["bob"])[0] == 403
    assert call(url, "api/kb?q=Slack", None, keys["bob"])[0] == 403  # the KB search of the queue: reviewers'
    code, found = call(url, "api/kb?q=Slack+threads", None, keys["dana"])
    assert code == 200 and found["results"][0]["id"] == "7" and found["results"][0]["title"] == "Slack etiquette"
    # a key that is nobody's
    assert call(url, "api/label", q1, "x" * 43)[0] == 403
    assert not (team.folder / "labels" / "alice.csv").exists() or not [
        r for r in read_labels(team.folder / "labels" / "alice.csv")[0] if r.status == "labelled"]

    # each through their own key (in the URL or the header): written as the key's person, whatever the body says
    assert call(url, "api/label", {k: v for k, v in q1.items() if k != "who"}, keys["alice"])[0] == 200
    assert call(url, "api/label", label_as("bob", "q1") | {"expected_citations": ["8"]}, keys["bob"], header=True)[0] == 200
    for who in ("alice", "bob"):
        recs = [r for r in read_labels(team.folder / "labels" / f"{who}.csv")[0] if r.status == "labelled"]
        assert [(r.question_id, r.annotator) for r in recs] == [("q1", who)]
    code, queue = call(url, "api/queue", None, keys["dana"])
    assert code == 200 and queue["reviewer"] == "dana" and queue["to_decide"] == 1
    it = queue["items"][0]
    code, done = call(url, "api/adjudicate", {"question_id": "q1", "expected_citations": truth("q1"),
                                              "reason": "the article says so", "seen": it["seen"]}, keys["dana"])
    assert code == 200 and done["record"]["adjudicated_by"] == "dana"
    (decided,) = read_labels(team.folder / "adjudications.csv")[0]
    assert decided.adjudicated_by == "dana" and decided.labelled_by == "alice;bob"


def test_two_decisions_at_once_one_is_recorded_the_other_refused_with_the_state(served):
    url, team, _ = served
    keys = team.new_keys
    call(url, "api/label", label_as("alice", "q2"), keys["alice"])
    call(url, "api/label", label_as("alice", "q2") | {"who": "bob", "expected_citations": ["8"]}, keys["bob"])
    it = call(url, "api/queue", None, keys["dana"])[1]["items"][0]
    answers: list[tuple[int, dict]] = []
    start = threading.Barrier(2)

    def decide_as(cites):
        start.wait()
        answers.append(call(url, "api/adjudicate", {"question_id": "q2", "expected_citations": cites,
                                                    "reason": f"cites {cites}", "seen": it["seen"]}, keys["dana"]))

    threads = [threading.Thread(target=decide_as, args=(c,)) for c in (truth("q2"), ["8"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(code for code, _ in answers)
    assert codes == [200, 409]
    won = next(body for code, body in answers if code == 200)["record"]
    lost = next(body for code, body in answers if code == 409)["error"]
    assert "changed since you opened it" in lost and f"decision {';'.join(won['expected_citations'])} by dana" in lost
    now = next(body for code, body in answers if code == 409)["now"]  # the state it lost to, for the page
    assert now == it["seen"] | {"@decision": f"{';'.join(won['expected_citations'])} by dana (#1)"}
    (decided,) = read_labels(team.folder / "adjudications.csv")[0]
    assert decided.expected_citations == won["expected_citations"] and decided.adjudication_reason == won[
        "adjudication_reason"]

    # without what it was made on, a decision is refused
    code, body = call(url, "api/adjudicate", {"question_id": "q2", "expected_citations": ["8"], "reason": "x"},
                      keys["dana"])
    assert code == 400 and "'seen'" in body["error"]


def test_a_label_changed_after_the_decision_reopens_the_question(served, tmp_path):
    url, team, _ = served
    keys = team.new_keys
    call(url, "api/label", label_as("alice", "q3"), keys["alice"])
    call(url, "api/label", label_as("bob", "q3") | {"expected_citations": ["8"]}, keys["bob"])
    it = call(url, "api/queue", None, keys["dana"])[1]["items"][0]
    call(url, "api/adjudicate", {"question_id": "q3", "expected_citations": truth("q3"), "reason": "alice is right",
                                 "seen": it["seen"]}, keys["dana"])
    gold = {r.question_id: r for r in read_labels(team.gold_file)[0]}
    assert gold["q3"].adjudicated_by == "dana"

    call(url, "api/label", label_as("bob", "q3") | {"expected_citations": ["7"]}, keys["bob"])  # bob changes his
    queue = call(url, "api/queue", None, keys["dana"])[1]
    (item,) = queue["items"]
    assert item["status"] == "reopened" and queue["to_decide"] == 1
    assert item["seen"]["bob"] == "7" and item["seen"]["@decision"].startswith(f"{truth('q3')[0]} by dana")
    assert call(url, "api/team", None, keys["alice"])[1]["reopened"] == 1
    assert {r.question_id: r for r in read_labels(team.gold_file)[0]}["q3"].status == "unlabelled"  # out of the gold
    code, out = run_grace("annotations", "validate", team.gold_file, "--kb", tmp_path / "kb")
    assert "question q3: decided by dana" in out and "alice " in out and "bob 8" in out and "label changed" in out

    # decided again, on the labels now: back in the gold
    code, done = call(url, "api/adjudicate", {"question_id": "q3", "expected_citations": truth("q3"),
                                              "reason": "still alice", "seen": item["seen"]}, keys["dana"])
    assert code == 200 and done["queue"]["to_decide"] == 0
    assert {r.question_id: r for r in read_labels(team.gold_file)[0]}["q3"].adjudication_reason == "still alice"


def test_curation_a_curator_cannot_approve_nobody_approves_their_own_change(tmp_path):
    kb = write_kb(tmp_path / "kb")
    opened = open_curating(kb, reviewers="dana,erin", curators="ann")
    httpd = make_server(opened.app, "127.0.0.1", 0, None)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    url = url_for("127.0.0.1", httpd.server_address[1], None)
    keys = opened.new_keys
    try:
        assert sorted(keys) == ["ann", "dana", "erin"]
        assert keys["dana"] not in (kb / "curation_keys.json").read_text()
        # no key: refused, whoever the body names
        assert call(url, "api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over"})[0] == 403
        code, body = call(url, "api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over"}, keys["ann"])
        assert code == 200 and "proposed change 1" in body["done"]
        assert call(url, "api/curate/approve", {"who": "dana", "change": 1})[0] == 403  # dana's name, no key
        code, body = call(url, "api/curate/approve", {"who": "dana", "change": 1}, keys["ann"])
        assert code == 403 and "ann's key" in body["error"]
        code, body = call(url, "api/curate/approve", {"change": 1}, keys["ann"])  # a curator approving
        assert code == 403 and "not a reviewer" in body["error"]
        code, body = call(url, "api/curate/title", {"id": "3", "title": "Laptops"}, keys["dana"])
        assert code == 200 and "proposed change 2" in body["done"]
        code, body = call(url, "api/curate/approve", {"change": 2}, keys["dana"])  # her own
        assert code == 403 and "your own" in body["error"]
        assert call(url, "api/curate/approve", {"change": 2}, keys["erin"])[0] == 200
        assert call(url, "api/curate/approve", {"change": 1}, keys["dana"])[0] == 200
        changes = {c["id"]: c for c in call(url, "api/curate/state", None, keys["erin"])[1]["team"]["changes"]}
        assert [(changes[n]["author"], changes[n]["reviewer"]) for n in (1, 2)] == [("ann", "dana"), ("dana", "erin")]
    finally:
        httpd.shutdown()
        httpd.server_close()
        opened.close()


def test_gold_review_and_curation_decide_through_one_implementation(served, tmp_path):
    """One decide-with-stale-check: the team's and the curation queue's decisions both go through it."""
    assert annotations.teamwork.decide is decide is harness.kb_curate.change_requests.decide
    url, team, app = served
    spy = mock.Mock(wraps=decide)
    with mock.patch.object(annotations.teamwork, "decide", spy), \
            mock.patch.object(harness.kb_curate.change_requests, "decide", spy):
        keys = team.new_keys
        app.post("/api/label", label_as("alice", "q4"), keys["alice"])
        app.post("/api/label", label_as("alice", "q4") | {"who": "bob", "expected_citations": ["8"]}, keys["bob"])
        it = app.get("/api/queue", {"cred": [keys["dana"]]})["items"][0]
        app.post("/api/adjudicate", {"question_id": "q4", "expected_citations": ["8"], "reason": "r",
                                     "seen": it["seen"]}, keys["dana"])
        assert spy.call_count == 1 and spy.call_args.args[1] == "the labels of q4"
        kb = write_kb(tmp_path / "kb2")
        with open_curating(kb, reviewers="dana", curators="ann") as opened:
            k = opened.new_keys
            opened.app.post("/api/curate/title", {"id": "2", "title": "Carry-over"}, k["ann"])
            opened.app.post("/api/curate/approve", {"change": 1}, k["dana"])
        assert spy.call_count == 2 and spy.call_args.args[1] == "change 1"
    with pytest.raises(Unseen):
        decide(threading.Lock(), "x", None, dict, dict)
    with pytest.raises(StaleDecision, match="x changed since you opened it"):
        decide(threading.Lock(), "x", {"a": "1"}, lambda: {"a": "2"}, dict)


def test_behind_host_the_token_and_the_key_both_hold(tmp_path):
    """Bound beyond localhost the server's token keeps strangers out and the key tells teammates apart; the printed
    link carries both."""
    from harness.web.credentials import personal_link

    kb = load_kb(make_kb(tmp_path))
    team = TeamSession.open(kb, tmp_path / "team", questions=write_questions(tmp_path / "q.csv", 4),
                            people="alice,bob", rule="all")
    httpd = make_server(TeamApp(team, kb.retriever(), k=5), "127.0.0.1", 0, "tok")
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    url = url_for("127.0.0.1", httpd.server_address[1], "tok")
    try:
        link = personal_link(url, "alice", team.new_keys["alice"])
        assert link.startswith(url.split("?")[0]) and "?token=tok&who=alice&cred=" in link
        with urllib.request.urlopen(link.replace("/?", "/api/state?"), timeout=20) as r:
            assert json.loads(r.read())["annotator"] == "alice"
        base = url.split("?")[0]
        assert call(base, "api/label", label_as("alice", "q1"), team.new_keys["alice"])[0] == 403  # no token
        assert call(base, "api/label?token=tok", label_as("alice", "q1"))[0] == 403  # no key
        assert call(base, "api/label?token=tok", label_as("alice", "q1"), team.new_keys["alice"])[0] == 200
    finally:
        httpd.shutdown()
        httpd.server_close()
        team.close()
