"""grace kb curate --reviewers: two curators propose, a reviewer approves and rejects; only the approved reach
KB/curation.jsonl (and a rebuild replays them); the requests survive a restart and a kill mid-write; a stale approval,
an unknown person or a curator approving are clear errors; the worklist filters by kind and section."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

import grace
from harness.kb_curate.change_requests import FILE, ChangeRejected, ReviewQueue, StaleChange
from harness.web import make_server, url_for
from harness.workflows.curate_app import open_curating
from kb_builder.curation_records import read_edits
from kb_builder.kb_dir import CURATION
from kb_builder.loader import load_kb
from tests.annotations.as_people import AsPeople
from tests.curate_kb import write_kb
from tests.kb_builder.test_curation import ids_by_title, snapshot, write_handbook

KEYS: dict[str, dict[str, str]] = {}  # each KB's keys, as printed at its first start


def team(kb_dir):
    """The team's app, each call made through its person's own link (the keys a restart keeps)."""
    opened = open_curating(kb_dir, reviewers="dana", curators="ann,ben")
    keys = KEYS.setdefault(str(kb_dir), {})
    keys.update(opened.new_keys)
    opened.app = AsPeople(opened.app, keys)
    return opened


def test_only_approved_changes_reach_the_curation_log_and_a_rebuild_replays_them(tmp_path):
    src = write_handbook(tmp_path / "src")
    kb = tmp_path / "kb"
    grace.build_kb(src, kb, min_tokens=1)
    t = ids_by_title(kb)
    before = snapshot(kb)
    with team(kb) as opened:
        app = opened.app
        res = app.post("/api/curate/title", {"who": "ann", "id": t["Taxis"], "title": "Taxi fares"})
        assert res["done"].startswith("proposed change 1 for review")
        app.post("/api/curate/title", {"who": "ben", "id": t["Sick leave"], "title": "Calling in sick"})
        p = app.post("/api/curate/propose", {"who": "ben", "kind": "merge",
                                             "articles": [t["Annual leave"], t["Parental leave"]]})
        app.post("/api/curate/accept", {"who": "ben", "proposal": p["proposal"]["id"], "title": "Annual leave days"})
        assert snapshot(kb) == before and not (kb / CURATION).exists()  # nothing live yet
        changes = app.state(you="dana")["team"]["changes"]
        assert [(c["id"], c["author"], c["status"]) for c in changes] == [
            (1, "ann", "pending"), (2, "ben", "pending"), (3, "ben", "pending")]

        with pytest.raises(ChangeRejected, match="'ann' is not a reviewer"):
            app.post("/api/curate/approve", {"who": "ann", "change": 1})
        with pytest.raises(ChangeRejected, match="'zoe' is not on this session's team"):
            app.post("/api/curate/title", {"who": "zoe", "id": t["Taxis"], "title": "x"})
        with pytest.raises(ChangeRejected, match="name yourself"):
            app.post("/api/curate/title", {"id": t["Taxis"], "title": "x"})
        app.post("/api/curate/approve", {"who": "dana", "change": 1})
        app.post("/api/curate/approve", {"who": "dana", "change": 3})
        with pytest.raises(ChangeRejected, match="say why"):
            app.post("/api/curate/decline", {"who": "dana", "change": 2})
        app.post("/api/curate/decline", {"who": "dana", "change": 2, "reason": "the title says less"})
        with pytest.raises(StaleChange, match="already rejected by dana"):
            app.post("/api/curate/approve", {"who": "dana", "change": 2})

    edits = read_edits(kb)
    assert [(e.action, e.author) for e in edits] == [("title", "ann"), ("merge", "ben")]
    assert all("approved by dana" in e.reason for e in edits)
    titles = {a.id: a.title for a in load_kb(kb).articles}
    assert titles[t["Taxis"]].endswith("Taxi fares") and titles[t["Annual leave"]] == "Annual leave days"
    assert t["Parental leave"] not in titles  # merged into annual leave
    assert not titles[t["Sick leave"]].endswith("Calling in sick")
    curated = snapshot(kb)
    grace.build_kb(src, kb, min_tokens=1)  # a rebuild from the sources replays the approved, nothing else
    assert snapshot(kb) == curated

    kept = {r.id: r for r in ReviewQueue(kb).requests.values()}  # the rejected one is kept, with the reason
    assert (kept[2].status, kept[2].reviewer, kept[2].reason) == ("rejected", "dana", "the title says less")


def test_proposals_survive_a_restart_and_a_stale_approval_is_refused(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        opened.app.post("/api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over of leave"})
        opened.app.post("/api/curate/text", {"who": "ben", "id": "2", "text": "Up to 240 hours carry over."})
    with team(kb) as opened:  # a restart: both still wait
        app = opened.app
        assert [c["status"] for c in app.state()["team"]["changes"]] == ["pending", "pending"]
        app.post("/api/curate/approve", {"who": "dana", "change": 2})
        with pytest.raises(StaleChange, match="change 1 is stale: article 2 changed since ann proposed it"):
            app.post("/api/curate/approve", {"who": "dana", "change": 1})
        app.post("/api/curate/decline", {"who": "dana", "change": 1, "reason": "stale"})
    assert [e.action for e in read_edits(kb)] == ["text"]


def test_a_line_cut_off_by_a_kill_never_happened_and_the_next_one_is_whole(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        opened.app.post("/api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over of leave"})
    path = kb / FILE
    whole = path.read_text(encoding="utf-8")
    path.write_text(whole + whole.splitlines()[0][:40], encoding="utf-8")  # killed mid-append
    with team(kb) as opened:
        assert len(opened.app.review.requests) == 1
        opened.app.post("/api/curate/title", {"who": "ben", "id": "3", "title": "Laptop shipping"})
    assert sorted(ReviewQueue(kb).requests) == [1, 2]


def test_the_worklist_filters_by_kind_and_section_and_bad_input_is_a_clear_error(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        st = opened.app.get("/api/curate/state", {"kind": ["confusable"]})
        assert [f["key"] for f in st["findings"]] == ["confusable:3+4", "confusable:5+6"]
        st = opened.app.get("/api/curate/state", {"section": ["Travel"]})
        assert [f["key"] for f in st["findings"]] == ["confusable:5+6"]
        assert st["sections"]["Equipment"] == 1 and st["filter"] == {"kind": None, "section": "Travel"}
        with pytest.raises(Exception, match="no article 99"):
            opened.app.post("/api/curate/title", {"who": "ann", "id": "99", "title": "x"})
    with open_curating(kb) as opened, pytest.raises(Exception, match="nothing waits for review"):
        opened.app.post("/api/curate/approve", {"change": 1})


def test_over_http_a_stale_approval_is_a_409_with_the_reason(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        httpd = make_server(opened.app.app, "127.0.0.1", 0, None)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        url = url_for("127.0.0.1", httpd.server_address[1], None)
        keys = opened.app.keys

        def post(action, body):
            cred = f"?cred={keys[body['who']]}" if body.get("who") in keys else ""
            req = urllib.request.Request(f"{url}api/curate/{action}{cred}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=20) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        try:
            post("title", {"who": "ann", "id": "2", "title": "A"})
            post("title", {"who": "ben", "id": "2", "title": "B"})
            assert post("approve", {"who": "dana", "change": 2})[0] == 200
            code, body = post("approve", {"who": "dana", "change": 1})
            assert code == 409 and "is stale" in body["error"]
            code, body = post("approve", {"who": "zoe", "change": 1})
            assert code == 403 and "not a reviewer" in body["error"]
        finally:
            httpd.shutdown()
            httpd.server_close()


def test_a_change_applied_just_before_a_kill_is_recorded_approved_at_the_next_start(tmp_path):
    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        app = opened.app
        app.post("/api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over of leave",
                                       "reason": "approved by ann (change 2)"})
        app.post("/api/curate/title", {"who": "ben", "id": "3", "title": "Laptop shipping"})
        app.review._append = lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt())  # killed before the record
        with pytest.raises(KeyboardInterrupt):
            app.post("/api/curate/approve", {"who": "dana", "change": 1})
    assert [e.action for e in read_edits(kb)] == ["title"]  # applied
    with team(kb) as opened:
        changes = {c["id"]: c for c in opened.app.state()["team"]["changes"]}
        assert (changes[1]["status"], changes[1]["reviewer"]) == ("approved", "dana")
        assert changes[2]["status"] == "pending"  # a curator's words cannot approve another change


def test_a_killed_team_server_loses_no_acknowledged_change(tmp_path):
    import re
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    kb = write_kb(tmp_path / "kb")

    keys: dict[str, str] = {}

    def start():
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli.app import main; main()", "kb", "curate", str(kb), "--no-browser",
             "--port", "0", "--reviewers", "dana"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        for line in proc.stdout:
            link = re.search(r"^  (\w+): http://\S+cred=(\S+)", line)
            if link:
                keys[link.group(1)] = link.group(2)
            m = re.search(r"open (http://\S+)", line)
            if m:
                return proc, m.group(1)
        raise AssertionError(f"server did not start (exit {proc.wait()})")

    proc, url = start()
    acked: list[int] = []
    stop = threading.Event()

    def hammer():
        i = 0
        while not stop.is_set():
            body = json.dumps({"who": "ann", "id": str(i % 8 + 1), "title": f"Title {i}"}).encode()
            req = urllib.request.Request(url + "api/curate/title", body, {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    acked.append(int(re.search(r"change (\d+)", json.loads(r.read())["done"]).group(1)))
            except (urllib.error.URLError, ConnectionError, OSError):
                return
            i += 1

    t = threading.Thread(target=hammer)
    t.start()
    deadline = time.time() + 60
    while len(acked) < 15 and t.is_alive() and time.time() < deadline:
        time.sleep(0.01)
    assert len(acked) >= 15, "the server stopped acknowledging changes"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stop.set()
    t.join()
    proc.stdout.close()
    assert set(acked) <= set(ReviewQueue(kb).requests)  # every change the page was told of is kept

    proc, url = start()  # the lock died with the process; the changes wait
    try:
        with urllib.request.urlopen(url + f"api/curate/state?who=dana&cred={keys['dana']}", timeout=10) as r:
            assert json.loads(r.read())["team"]["pending"] >= len(acked)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def test_the_reviewer_sees_each_change_as_a_diff_duplicates_are_refused_and_names_are_shown(tmp_path):
    from kb_builder.curation import part_titles

    kb = write_kb(tmp_path / "kb")
    with team(kb) as opened:
        app = opened.app
        art = load_kb(kb).by_id["2"]
        app.post("/api/curate/title", {"who": "ann", "id": "2", "title": "Carry-over of leave"})
        with pytest.raises(ChangeRejected, match="change 1 \\(ann\\) already proposes this"):
            app.post("/api/curate/title", {"who": "ben", "id": "2", "title": "Carry-over of leave", "reason": "same"})
        new_text = art.text.replace(art.text.split()[0], "Every", 1)
        app.post("/api/curate/text", {"who": "ben", "id": "2", "text": new_text})
        state = app.get("/api/curate/state", {"who": ["dana"]})
        assert state["author"] == "dana" and state["team"]["you"] == "dana"  # the person, not the server's author
        changes = {c["id"]: c for c in state["team"]["changes"]}
        (title,) = changes[1]["blocks"]
        assert title["label"] == "title of 2"
        assert "".join(t for t, op in title["diff"] if op <= 0) == art.title
        assert "".join(t for t, op in title["diff"] if op >= 0) == "Carry-over of leave"
        (text,) = changes[2]["blocks"]
        assert "".join(t for t, op in text["diff"] if op <= 0) == art.text  # the diff is the whole change
        assert "".join(t for t, op in text["diff"] if op >= 0) == new_text
        assert [t for t, op in text["diff"] if op > 0] == ["Every"]
        for n in range(3, 28):  # many changes: every one is listed (the page shows them a page at a time)
            app.post("/api/curate/title", {"who": "ann", "id": str(n % 8 + 1), "title": f"Title {n}"})
        assert len(app.get("/api/curate/state", {"who": ["dana"]})["team"]["changes"]) == 27
    assert part_titles("Leave") == ["Leave (part 1 of 2)", "Leave (part 2 of 2)"]
    assert part_titles("Leave (part 1 of 2)") == ["Leave (part 1.1 of 2)", "Leave (part 1.2 of 2)"]
