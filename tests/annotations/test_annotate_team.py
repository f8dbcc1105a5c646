"""grace annotate --team, server side: assignment, labels kept per person, live agreement, the reviewer's queue,
the adjudicated gold and its provenance, and the clear errors (an unknown person, an assignment too large)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotations.agreement import compare_files
from annotations.labels import read_labels
from annotations.team import PersonRejected, StaleDecision, TeamSession, assign
from annotations.team_app import TeamApp
from harness.cli.app import cli
from harness.core.errors import GraceError
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.annotations.as_people import AsPeople
from tests.annotations.test_annotations_server import ARTICLES, make_kb

PEOPLE = ["alice", "bob", "carol"]


def write_questions(path: Path, n: int = 60) -> Path:
    lines = ["question_id,question,category"]
    for i in range(1, n + 1):
        art = ARTICLES[i % len(ARTICLES)]
        lines.append(f"q{i},What does the {art[1].lower()} policy say (case {i})?,{'leave' if i % 2 else 'other'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def truth(qid: str) -> list[str]:
    i = int(qid[1:])
    return [ARTICLES[i % len(ARTICLES)][0]]


def label_as(who: str, qid: str) -> dict:
    """What each person answers: the right article, except where they slip (bob every 7th, carol every 5th)."""
    i = int(qid[1:])
    cites = truth(qid)
    if (who == "bob" and i % 7 == 0) or (who == "carol" and i % 5 == 0):
        cites = ["8" if cites != ["8"] else "1"]
    if who == "alice" and i % 11 == 0:
        return {"who": who, "question_id": qid, "status": "labelled", "expected_citations": [], "must_refuse": True}
    return {"who": who, "question_id": qid, "status": "labelled", "expected_citations": cites, "must_refuse": False}


@pytest.fixture
def team(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv")
    t = TeamSession.open(kb, tmp_path / "team", questions=q, people="alice,bob,carol", reviewers="dana",
                         rule="overlap:2")
    yield AsPeople(TeamApp(t, kb.retriever(), k=5), t.new_keys), t, tmp_path
    t.close()


def test_overlap_gives_each_question_to_n_people_evenly():
    qids = [f"q{i}" for i in range(60)]
    got = assign(qids, PEOPLE, "overlap:2")
    assert [len(got[p]) for p in PEOPLE] == [40, 40, 40]
    assert all(sum(q in got[p] for p in PEOPLE) == 2 for q in qids)
    pairs = {(a, b): len(set(got[a]) & set(got[b])) for a in PEOPLE for b in PEOPLE if a < b}
    assert set(pairs.values()) == {20}  # every pair shares a third: agreement per pair is measured on 20
    assert [len(v) for v in assign(qids, PEOPLE, "share").values()] == [20, 20, 20]
    assert assign(qids, PEOPLE, "all") == {}
    with pytest.raises(GraceError, match="gives each question to 4 people, but the team has 3"):
        assign(qids, PEOPLE, "overlap:4")
    with pytest.raises(GraceError, match="--assign must be one of"):
        assign(qids, PEOPLE, "half")


def test_three_people_label_and_the_live_agreement_is_the_commands(team):
    app, t, tmp = team
    with pytest.raises(PersonRejected, match="'dave' is not on this session's team"):
        app.get("/api/state", {"who": ["dave"]})
    with pytest.raises(PersonRejected, match="name yourself"):
        app.post("/api/label", {"question_id": "q1", "status": "labelled", "expected_citations": ["1"]})
    assert app.get("/api/state", {})["need_person"] is True
    state = app.get("/api/state", {"who": ["alice"]})
    assert state["progress"]["total"] == 40 and state["annotator"] == "alice"
    assert state["team"]["people"][1] == {"name": "bob", "assigned": 40, "labelled": 0, "skipped": 0}
    not_mine = next(q for q in t.plan.questions if q not in t.assigned("alice"))
    with pytest.raises(PersonRejected, match="not one of alice's"):
        app.post("/api/label", label_as("alice", not_mine))

    order = [(p, q) for p in PEOPLE for q in t.assigned(p)]
    random.Random(4).shuffle(order)  # the three interleave, as people do
    for who, qid in order:
        done = app.post("/api/label", label_as(who, qid))
    live = done["team"]["agreement"]
    assert done["team"]["people"] == [{"name": p, "assigned": 40, "labelled": 40, "skipped": 0} for p in PEOPLE]

    files = sorted((tmp / "team" / "labels").glob("*.csv"))
    assert [f.stem for f in files] == sorted(PEOPLE)
    for f in files:  # every label kept, in its person's own file
        recs = [r for r in read_labels(f)[0] if r.status == "labelled"]
        assert len(recs) == 40 and {r.annotator for r in recs} == {f.stem}
        assert all(r.label == ("REFUSE" if label_as(f.stem, r.question_id)["must_refuse"] else
                                ";".join(label_as(f.stem, r.question_id)["expected_citations"])) for r in recs)
    cmd = compare_files(files)
    assert live["kappa"] == pytest.approx(round(cmd.kappa, 4)) and live["name"] == cmd.kappa_name
    assert {(p["a"], p["b"]): p["kappa"] for p in live["pairwise"]} == pytest.approx(
        {(a, b): round(k, 4) for a, b, k in cmd.pairwise})
    res = CliRunner().invoke(cli, ["annotations", "agree", *map(str, files)])
    assert res.exit_code == 0 and f"{cmd.kappa_name}: {cmd.kappa:.3f}" in res.output

    # the disagreements are the reviewer's queue, side by side
    queue = app.get("/api/queue", {"who": ["dana"]})
    expected = sorted(cmd.compared[i] for i in cmd.disagreements)
    assert sorted(it["question_id"] for it in queue["items"]) == expected and queue["to_decide"] == len(expected)
    item = queue["items"][0]
    assert len(item["labels"]) == 2 and len({lab["label"] for lab in item["labels"]}) == 2
    assert all(a["title"] and a["text"] for a in item["articles"])
    with pytest.raises(PersonRejected, match="not a reviewer"):
        app.get("/api/queue", {"who": ["alice"]})

    # a decision on labels that changed since the page showed them is refused
    seen = item["seen"]  # what the page was shown: each label, and the decision so far (none)
    assert seen == {**{lab["person"]: lab["label"] for lab in item["labels"]}, "@decision": ""}
    stale = dict(seen, **{item["labels"][0]["person"]: "REFUSE" if seen[item["labels"][0]["person"]] != "REFUSE" else "1"})
    with pytest.raises(StaleDecision, match="changed since you opened it"):
        app.post("/api/adjudicate", {"who": "dana", "question_id": item["question_id"], "expected_citations":
                                     truth(item["question_id"]), "reason": "the policy says so", "seen": stale})
    with pytest.raises(PersonRejected, match="say why"):
        app.post("/api/adjudicate", {"who": "dana", "question_id": item["question_id"],
                                     "expected_citations": truth(item["question_id"]), "seen": seen})
    for it in queue["items"]:
        app.post("/api/adjudicate", {"who": "dana", "question_id": it["question_id"], "reason": "the article says it",
                                     "expected_citations": truth(it["question_id"]),
                                     "seen": it["seen"]})
    summary = app.get("/api/team", {})
    assert summary["disagree"] == 0 and summary["gold"] == 60 and summary["adjudicated"] == len(expected)

    gold = read_gold(t.gold_file)  # the gold file validates, every question resolved
    assert len(gold) == 60
    rows = {r.question_id: r for r in read_labels(t.gold_file)[0]}
    decided = rows[expected[0]]
    assert (decided.adjudicated_by, decided.adjudication_reason) == ("dana", "the article says it")
    assert len(decided.labelled_by.split(";")) == 2 and decided.expected_citations == truth(expected[0])
    agreed = rows[next(q for q in t.plan.questions if q not in expected)]
    assert len(agreed.labelled_by.split(";")) == 2 and not agreed.adjudicated_by
    assert agreed.extra["category"] in ("leave", "other")


def test_a_restart_keeps_the_plan_and_refuses_another(team):
    app, t, tmp = team
    app.post("/api/label", label_as("bob", t.assigned("bob")[0]))
    plan = json.loads((tmp / "team" / "team.json").read_text())
    t.close()
    kb = load_kb(tmp / "kb")
    with pytest.raises(GraceError, match="was started with --assign overlap:2, not share"):
        TeamSession.open(kb, tmp / "team", people="alice,bob,carol", rule="share")
    again = TeamSession.open(kb, tmp / "team")
    try:
        assert again.plan.model_dump() == plan
        assert again.person("bob").progress()["labelled"] == 1
    finally:
        again.close()


def test_the_command_line_says_what_is_wrong(tmp_path):
    kb = make_kb(tmp_path)
    q = write_questions(tmp_path / "q.csv", 6)
    runner = CliRunner()
    res = runner.invoke(cli, ["annotate", str(kb), "--questions", str(q), "--out", str(tmp_path / "t"), "--no-browser",
                              "--team", "alice,bob", "--assign", "overlap:3"])
    assert isinstance(res.exception, GraceError)  # the entry point prints it as one line and exits 1
    assert "gives each question to 3 people, but the team has 2" in str(res.exception)
    assert not (tmp_path / "t").exists()
    res = runner.invoke(cli, ["annotate", str(kb), "--questions", str(q), "--out", str(tmp_path / "t"), "--no-browser",
                              "--team", "any", "--assign", "share"])
    assert isinstance(res.exception, GraceError) and "list them in --team" in str(res.exception)
    res = runner.invoke(cli, ["annotate", str(kb), "--questions", str(q), "--out", str(tmp_path / "t"), "--no-browser",
                              "--team", "alice,bob/x"])
    assert isinstance(res.exception, GraceError) and "is not a usable name" in str(res.exception)


def test_a_killed_team_server_loses_no_acknowledged_label_of_anyone(tmp_path):
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time
    import urllib.error
    import urllib.request

    from tests.conftest import ROOT

    kb = make_kb(tmp_path)
    q = write_questions(tmp_path / "q.csv", 200)
    out = tmp_path / "team"

    keys: dict[str, str] = {}

    def start(*team):
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli.app import main; main()", "annotate", str(kb), "-q", str(q),
             "-o", str(out), "--no-browser", "--port", "0", *team],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        for line in proc.stdout:
            link = re.search(r"^  (\w+): http://\S+cred=(\S+)", line)  # each person's link, printed once
            if link:
                assert link.group(1) not in keys, "a key printed twice"
                keys[link.group(1)] = link.group(2)
            m = re.search(r"open (http://\S+)", line)
            if m:
                return proc, m.group(1)
        raise AssertionError(f"server did not start (exit {proc.wait()})")

    proc, url = start("--team", "alice,bob", "--assign", "all")
    assert sorted(keys) == ["alice", "bob"]
    acked: dict[str, list[str]] = {"alice": [], "bob": []}

    def hammer(who):
        for i in range(1, 201):
            body = json.dumps(label_as(who, f"q{i}")).encode()
            req = urllib.request.Request(url + f"api/label?cred={keys[who]}", body, {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 200:
                        acked[who].append(f"q{i}")
            except (urllib.error.URLError, ConnectionError, OSError):
                return

    threads = [threading.Thread(target=hammer, args=(w,)) for w in acked]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while min(len(v) for v in acked.values()) < 20 and time.time() < deadline:
        time.sleep(0.005)
    assert min(len(v) for v in acked.values()) >= 20, "the server stopped acknowledging saves"
    proc.send_signal(signal.SIGKILL)  # mid-stream of both people's writes
    proc.wait()
    for t in threads:
        t.join()
    proc.stdout.close()

    for who, ids in acked.items():  # each person's file parses and holds every label acknowledged to them
        labelled = {r.question_id for r in read_labels(out / "labels" / f"{who}.csv")[0] if r.status == "labelled"}
        assert set(ids) <= labelled
    read_labels(out / "gold.csv")  # never half-written

    proc, url = start()  # the folder's plan resumes it: no --team needed; the keys issued at the first start hold
    try:
        with urllib.request.urlopen(url + f"api/state?who=bob&cred={keys['bob']}", timeout=10) as r:
            state = json.loads(r.read())
        assert state["progress"]["labelled"] >= len(acked["bob"]) and state["team"]["assign"] == "all"
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=20)[0]
    assert proc.returncode == 0 and "stopped;" in output, output


def test_an_open_team_takes_anyone_named_and_reviewers_decide(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 6)
    t = TeamSession.open(kb, tmp_path / "open", questions=q, people="any")
    try:
        app = TeamApp(t, kb.retriever(), k=5)
        with pytest.raises(PersonRejected, match="not a usable name"):
            app.get("/api/state", {"who": ["../x"]})
        assert app.get("/api/state", {"who": ["zoe"]})["progress"]["total"] == 6
        for who in ("zoe", "yan"):
            for i in range(1, 7):
                app.post("/api/label", label_as("bob" if who == "yan" else "carol", f"q{i}") | {"who": who})
        summary = app.get("/api/team", {})
        cmp_ = compare_files(sorted((tmp_path / "open" / "labels").glob("*.csv")))
        assert summary["agreement"]["kappa"] == pytest.approx(round(cmp_.kappa, 4))
        queue = app.get("/api/queue", {"who": ["anyone"]})  # no reviewers named: anyone named decides
        assert [it["question_id"] for it in queue["items"]] == ["q5"]  # carol slips on 5, bob on 7 (not asked)
        assert summary["gold"] == 5 and summary["disagree"] == 1
    finally:
        t.close()


def test_names_that_differ_only_in_case_are_refused(tmp_path):
    """alice and ALICE would write labels/alice.csv and labels/ALICE.csv: one file on macOS or Windows."""
    kb = make_kb(tmp_path)
    q = write_questions(tmp_path / "q.csv", 6)
    runner = CliRunner()
    for team, reviewers in (("alice,ALICE", None), ("alice,bob", "Alice"), ("alice,bob", "dana,DANA")):
        args = ["annotate", str(kb), "--questions", str(q), "--out", str(tmp_path / "t"), "--no-browser", "--team", team]
        res = runner.invoke(cli, args + (["--reviewers", reviewers] if reviewers else []))
        assert isinstance(res.exception, GraceError), (team, reviewers, res.output)
        assert "differ only in case" in str(res.exception) and "spell each name one way" in str(res.exception)
        assert not (tmp_path / "t").exists()
    # the same spelling as team member and reviewer is one person
    TeamSession.open(load_kb(kb), tmp_path / "same", questions=q, people="alice,bob", reviewers="alice").close()

    # a team open to anyone: whoever names themself as someone already there, in another case, is refused
    t = TeamSession.open(load_kb(kb), tmp_path / "open", questions=q, people="any")
    try:
        app = TeamApp(t, load_kb(kb).retriever(), k=5)
        app.post("/api/label", label_as("carol", "q1") | {"who": "zoe"})
        with pytest.raises(PersonRejected, match=r"'Zoe' differs from 'zoe'.*name yourself 'zoe'"):
            app.post("/api/label", label_as("bob", "q1") | {"who": "Zoe"})
    finally:
        t.close()
    again = TeamSession.open(load_kb(kb), tmp_path / "open")  # after a restart: known from the label files
    try:
        with pytest.raises(PersonRejected, match="differs from 'zoe'"):
            TeamApp(again, load_kb(kb).retriever(), k=5).get("/api/state", {"who": ["ZOE"]})
        assert [p.name for p in (tmp_path / "open" / "labels").glob("*.csv")] == ["zoe.csv"]
    finally:
        again.close()


def test_carol_added_and_bob_removed_mid_project_keep_every_label_and_the_agreement(tmp_path):
    """The roster changes at a restart: the plan records each change, every label given stays its person's (bob's
    too, after he leaves), the questions not yet labelled are given out evenly again, and the agreement is still
    scikit-learn's and statsmodels' on the files."""
    from sklearn.metrics import cohen_kappa_score

    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 30)
    folder = tmp_path / "team"

    def label_all(t, who, upto=None):
        app = AsPeople(TeamApp(t, kb.retriever(), k=5), t.new_keys | keys)
        for qid in t.assigned(who)[:upto]:
            app.post("/api/label", label_as(who, qid))

    def snapshot():
        return {p.stem: p.read_bytes() for p in (folder / "labels").glob("*.csv")}

    t = TeamSession.open(kb, folder, questions=q, people="alice,bob", reviewers="dana", rule="overlap:2")
    keys = dict(t.new_keys)
    label_all(t, "alice", 10)
    label_all(t, "bob", 10)
    t.close()
    before = snapshot()

    t = TeamSession.open(kb, folder, people="alice,bob,carol")  # carol joins
    try:
        keys |= t.new_keys
        assert list(t.new_keys) == ["carol"]  # only the new person gets a key; the others' links still hold
        (change,) = t.plan.changes
        assert (change.people_before, change.people) == (["alice", "bob"], ["alice", "bob", "carol"])
        assert {p: b for p, b in snapshot().items() if p != "carol"} == before  # every label kept, untouched
        loads = [len(t.assigned(p)) for p in ("alice", "bob", "carol")]
        assert sum(loads) == 60 and max(loads) - min(loads) <= 1  # rebalanced: 20 each
        assert all(len(t.given_to(qid)) == 2 for qid in t.plan.questions)
        assert {qid for qid in t.plan.questions[:10] if set(t.given_to(qid)) == {"alice", "bob"}} == set(
            t.plan.questions[:10])  # what they labelled stays theirs
        label_all(t, "carol")
        label_all(t, "bob", 15)
    finally:
        t.close()
    bob_before = (folder / "labels" / "bob.csv").read_bytes()

    t = TeamSession.open(kb, folder, people="alice,carol")  # bob leaves
    try:
        assert [c.people for c in t.plan.changes] == [["alice", "bob", "carol"], ["alice", "carol"]]
        assert (folder / "labels" / "bob.csv").read_bytes() == bob_before
        bobs = {r.question_id for r in read_labels(folder / "labels" / "bob.csv")[0] if r.status == "labelled"}
        assert set(t.assigned("bob")) == bobs  # he keeps exactly what he labelled
        assert all(len(t.given_to(qid)) == 2 for qid in t.plan.questions)
        app = AsPeople(TeamApp(t, kb.retriever(), k=5), keys)
        with pytest.raises(PersonRejected, match="'bob' is not on this session's team"):
            app.post("/api/label", label_as("bob", t.plan.questions[-1]))
        label_all(t, "alice")
        label_all(t, "carol")
        summary = t.summary()
        assert summary["open"] == 0 and summary["agreed"] + summary["disagree"] == 30
    finally:
        t.close()

    files = sorted((folder / "labels").glob("*.csv"))
    labels = {f.stem: {r.question_id: r.label for r in read_labels(f)[0] if r.status == "labelled"} for f in files}
    per_question = [[labels[p][qid] for p in sorted(labels) if qid in labels[p]] for qid in t.plan.questions]
    assert all(len(given) == 2 for given in per_question)  # two labels for every question, whoever gave them
    cats = sorted({lab for given in per_question for lab in given})
    table, _ = inter_rater.aggregate_raters([[cats.index(lab) for lab in given] for given in per_question])
    cmp_ = compare_files(files)
    assert cmp_.kappa == pytest.approx(inter_rater.fleiss_kappa(table, method="fleiss"))
    assert summary["agreement"]["kappa"] == pytest.approx(round(cmp_.kappa, 4))
    for a, b, k in cmp_.pairwise:
        both = [qid for qid in t.plan.questions if qid in labels[a] and qid in labels[b]]
        assert k == pytest.approx(cohen_kappa_score([labels[a][x] for x in both], [labels[b][x] for x in both]))


def test_a_majority_of_three_agrees_without_the_reviewer(tmp_path):
    kb = load_kb(make_kb(tmp_path))
    q = write_questions(tmp_path / "q.csv", 10)
    t = TeamSession.open(kb, tmp_path / "team", questions=q, people="alice,bob,carol", rule="all", agree="majority")
    try:
        app = AsPeople(TeamApp(t, kb.retriever(), k=5), t.new_keys)
        for who in PEOPLE:
            for i in range(1, 11):
                app.post("/api/label", label_as(who, f"q{i}"))
        # q5: carol slips, q7: bob slips (2 of 3 agree); q10: carol slips too; alice refuses nothing below 11
        summary = t.summary()
        assert summary["disagree"] == 0 and summary["agreed"] == 10 and summary["agree"] == "majority"
        gold = {r.question_id: r for r in read_labels(t.gold_file)[0]}
        assert gold["q5"].expected_citations == truth("q5") and gold["q5"].labelled_by == "alice;bob"
        assert gold["q7"].labelled_by == "alice;carol"
    finally:
        t.close()
    t = TeamSession.open(kb, tmp_path / "team", agree="all")  # unanimity again: the three wait for the reviewer
    try:
        assert t.summary()["disagree"] == 3 and t.plan.changes[-1].agree_before == "majority"
    finally:
        t.close()


def test_a_team_is_its_peoples_one_person_sessions_suggestions_a_run_and_only(tmp_path):
    """--run and --suggestions (and --only, --order) work for a team as for one person: each person's page shows
    the suggestions for the questions given to them, and an accepted one is recorded as accepted, in their file."""
    from annotations.suggestions import Suggestion, write_suggestions
    from harness.workflows.annotate import open_labelling

    kb = make_kb(tmp_path)
    q = write_questions(tmp_path / "q.csv", 8)
    responses = tmp_path / "responses.jsonl"
    rows = [{"question_id": qid, "model": m, "repeat": 0, "response": f"[ID: {truth(qid)[0]}]"}
            for qid in ("q1", "q2", "q3", "q4") for m in ("a", "b", "c")]
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with open_labelling(kb, tmp_path / "team", questions=q, team="alice,bob", assign="share", run=responses,
                        order="informative") as opened:
        assert opened.notes == [f"consensus of 3 model(s) in {responses}: a suggestion for 4 of 8 questions"]
        t = opened.session
        app = AsPeople(opened.app, t.new_keys)
        for who in ("alice", "bob"):
            ids = app.get("/api/state", {"who": [who]})["question_ids"]
            assert sorted(ids) == sorted(t.assigned(who))  # their questions only, in the informative order
            assert [i for i in ids if i in ("q1", "q2", "q3", "q4")] == ids[len(ids) - 2:]  # the suggested last
        qid = "q1"
        who = next(p for p in ("alice", "bob") if qid in t.assigned(p))
        ids = app.get("/api/state", {"who": [who]})["question_ids"]
        shown = app.get(f"/api/question/{ids.index(qid)}", {"who": [who]})
        assert shown["suggestion"]["suggested"] == truth(qid)[0] and shown["suggestion"]["source"] == f"run:{responses}"
        done = app.post("/api/label", label_as(who, qid) | {"who": who})
        assert done["record"]["provenance"] == "accepted_suggestion"
    saved = {r.question_id: r for r in read_labels(tmp_path / "team" / "labels" / f"{who}.csv")[0]}
    assert saved[qid].provenance == "accepted_suggestion" and saved[qid].annotator == who

    sugg = write_suggestions(tmp_path / "s.csv", [Suggestion("q5", suggested="3", source="file", voters=1)])
    with open_labelling(kb, tmp_path / "team", suggestions=sugg) as opened:  # a resumed team, suggestions given
        t = opened.session
        who = next(p for p in ("alice", "bob") if "q5" in t.assigned(p))
        s = t.person(who)
        assert s.suggestions["q5"].suggested == "3" and opened.notes == [f"suggestions from {sugg} for 1 of 8 questions"]
    from tests.annotations.test_annotate_suggestions import write_suspects

    suspects = write_suspects(tmp_path / "suspects.csv", [
        ["q2", "", "2", "3", "2", "0", "3", "other_article", "", "why"],
        ["q3", "", "3", "4", "2", "0", "3", "other_article", "", "why"]])
    with open_labelling(kb, tmp_path / "team", only=suspects) as opened:  # --only: the listed, of each one's own
        t = opened.session
        for who in ("alice", "bob"):
            assert t.person(who).view_ids() == [q for q in ("q2", "q3") if q in t.assigned(who)]
    with pytest.raises(GraceError, match="--annotator is for one person's session"):
        open_labelling(kb, tmp_path / "team", annotator="mallory")

    # --from-gold: a gold file checked again by a team, its labels suggested to each person
    gold = tmp_path / "team" / "gold.csv"
    with open_labelling(kb, tmp_path / "again", from_gold=gold, team="alice,bob", assign="share") as opened:
        t = opened.session
        assert t.plan.questions == [f"q{i}" for i in range(1, 9)]
        assert opened.notes == [f"the labels of {gold} suggested for 1 of 8 questions"]  # q1, accepted above
        s = t.person(next(p for p in ("alice", "bob") if "q1" in t.assigned(p)))
        assert (s.suggestions["q1"].suggested, s.suggestions["q1"].source) == (truth("q1")[0], "gold:gold.csv")
