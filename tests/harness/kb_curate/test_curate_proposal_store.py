"""grace kb curate: a model's proposal asked for but not yet accepted outlives a restart and a kill of the server
(KB/curation_proposals.jsonl); a line torn by a kill never happened; one made stale by a later edit is shown stale and
accepting it is refused, never applied."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

from harness.kb_curate.change_requests import StaleChange
from harness.kb_curate.proposal_store import ProposalStore
from harness.workflows.curate_app import open_curating
from kb_builder.curation_records import read_edits
from kb_builder.kb_dir import KbDir
from kb_builder.loader import load_kb
from tests.conftest import ROOT
from tests.curate_kb import write_kb


def ask(app, kind="rewrite", ids=("2",), finding="not_self_contained:2"):
    return app.post("/api/curate/propose", {"kind": kind, "articles": list(ids), "finding": finding})["proposal"]


def test_open_proposals_are_back_after_a_restart_and_decided_ones_stay_decided(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with open_curating(kb, author="tester") as o:
        rewrite = ask(o.app)
        split = ask(o.app, "split", ["7"], "not_self_contained:7")
        merge = ask(o.app, "merge", ["3", "4"], "confusable:3+4")
        o.app.post("/api/curate/reject", {"proposal": merge["id"]})
    assert KbDir(kb).proposals.is_file()
    with open_curating(kb, author="tester") as o:
        shown = o.app.finding("not_self_contained:2")["proposals"]
        assert [(p["id"], p["text"], p["stale"]) for p in shown] == [(rewrite["id"], rewrite["text"], False)]
        assert shown[0]["blocks"] == rewrite["blocks"]  # the same diff as when it was asked for
        parts = o.app.finding("not_self_contained:7")["proposals"]
        assert [p["blocks"] for p in parts] == [split["blocks"]]  # a split keeps the paragraphs it was made on
        assert o.app.finding("confusable:3+4")["proposals"] == []  # rejected stays rejected
        nxt = ask(o.app, "merge", ["3", "4"], "confusable:3+4")
        assert nxt["id"] == merge["id"] + 1  # numbers are not reused
        o.app.post("/api/curate/accept", {"proposal": rewrite["id"]})
        assert "proposal 1" in read_edits(kb)[-1].reason
    with open_curating(kb, author="tester") as o:
        assert o.app.finding("confusable:3+4")["proposals"][0]["id"] == nxt["id"]
        with pytest.raises(Exception, match="already accepted"):
            o.app.post("/api/curate/accept", {"proposal": rewrite["id"]})


def test_a_proposal_made_stale_by_a_later_edit_is_shown_stale_and_never_applied(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with open_curating(kb, author="tester") as o:
        p = ask(o.app)
        o.app.post("/api/curate/title", {"id": "2", "title": "Carry-over of annual leave"})  # edited by hand since
    with open_curating(kb, author="tester") as o:
        shown = o.app.finding("not_self_contained:2")["proposals"]
        assert shown[0]["stale"] and "article 2 was edited" in shown[0]["stale_reason"] and shown[0]["blocks"] == []
        with pytest.raises(StaleChange, match="proposal 1 is stale"):
            o.app.post("/api/curate/accept", {"proposal": p["id"]})
        assert load_kb(kb).by_id["2"].title == "Carry-over of annual leave"  # the later edit stands
        o.app.post("/api/curate/reject", {"proposal": p["id"]})  # a stale one is rejected as any other
        assert o.app.finding("not_self_contained:2")["proposals"] == []


def test_a_team_proposal_accepted_for_review_is_not_open_again_after_a_restart(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with open_curating(kb, reviewers="dana", curators="ann") as o:
        ann = o.new_keys["ann"]  # her own link's key
        p = o.app.post("/api/curate/propose", {"who": "ann", "kind": "rewrite", "articles": ["2"],
                                               "finding": "not_self_contained:2"}, ann)["proposal"]
        o.app.post("/api/curate/accept", {"who": "ann", "proposal": p["id"]}, ann)
    with open_curating(kb, reviewers="dana", curators="ann") as o:
        assert o.app.finding("not_self_contained:2")["proposals"] == []
        assert o.app.state()["team"]["pending"] == 1


def test_a_line_torn_by_a_kill_never_happened_and_a_bad_line_is_a_clear_error(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with open_curating(kb, author="tester") as o:
        ask(o.app)
    path = KbDir(kb).proposals
    whole = path.read_text(encoding="utf-8")
    path.write_text(whole + whole[:50], encoding="utf-8")  # killed mid-append
    store = ProposalStore(kb)
    assert [p.id for p in store.open()] == [1] and path.read_text(encoding="utf-8") == whole
    path.write_text(whole + '{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"curation_proposals.jsonl:2: not a stored proposal"):
        ProposalStore(kb)


def test_a_killed_curate_server_loses_no_pending_proposal(tmp_path):
    kb = write_kb(tmp_path / "kb")

    def start():
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli.app import main; main()", "kb", "curate", str(kb), "--no-browser",
             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        for line in proc.stdout:
            m = re.search(r"open (http://\S+)", line)
            if m:
                return proc, m.group(1)
        raise AssertionError(f"server did not start (exit {proc.wait()})")

    def call(url, path, body=None):
        req = urllib.request.Request(url + path, None if body is None else json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    proc, url = start()
    try:
        asked = [call(url, "api/curate/propose", {"kind": k, "articles": ids, "finding": f})["proposal"]
                 for k, ids, f in (("rewrite", ["2"], "not_self_contained:2"), ("merge", ["3", "4"], "confusable:3+4"))]
    finally:
        proc.send_signal(signal.SIGKILL)  # no clean shutdown: what is on disk is all there is
        proc.wait()
        proc.stdout.close()
    proc, url = start()
    try:
        for p, key in zip(asked, ("not_self_contained:2", "confusable:3+4"), strict=True):
            back = call(url, f"api/curate/finding?key={urllib.parse.quote(key)}")["proposals"]
            assert [(b["id"], b["text"]) for b in back] == [(p["id"], p["text"])]
        done = call(url, "api/curate/accept", {"proposal": asked[1]["id"]})
        assert "merged 4 into 3" in done["done"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def test_a_proposal_too_long_to_keep_is_rejected_never_written_unreadable(tmp_path, monkeypatch):
    from harness.kb_curate import proposal_store

    kb = write_kb(tmp_path / "kb")
    monkeypatch.setattr(proposal_store, "MAX_LINE", 700)  # a small limit stands in for a runaway model reply
    with open_curating(kb, author="tester") as o:
        p = ask(o.app)
        assert p["error"].startswith("the proposal is too long to keep") and p["text"] is None
    back = ProposalStore(kb).get(p["id"])  # the file reads back whole
    assert back is not None and back.error == p["error"]
