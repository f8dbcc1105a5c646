"""grace annotations review --team through its API: two people's verdicts kept apart, their disagreements in the
reviewer's queue, the team's labels in human.csv; the calibration's kappas (judge vs each person, person vs person,
judge vs team) equal a direct computation with annotations.agreement and `grace spotcheck calibrate human.csv`; the
calibration writes nothing; bad input is a clear error."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from annotations.review_sources import RunSources
from annotations.review_team import StaleVerdicts, TeamReview
from annotations.review_team_app import TeamReviewApp
from annotations.team import PersonRejected
from harness.core.errors import GraceError
from harness.spotcheck.review import read_labels
from kb_builder.loader import load_kb
from tests.annotations.as_people import AsPeople
from tests.annotations.review_team_run import build, claims, judge_verdicts, kappa, verdict_of
from tests.conftest import run_grace

VIEWER = "http://127.0.0.1:8765/"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return build(tmp_path_factory.mktemp("review-team"))


@pytest.fixture()
def opened(run, tmp_path):
    sources = RunSources.find(run)
    team = TeamReview.open(sources, tmp_path / "team", people="alice,bob", reviewers="dana", viewer=VIEWER)
    app = TeamReviewApp(team, load_kb(sources.kb_dir, write_missing=False))
    yield AsPeople(app, team.new_keys)  # each person through their own link
    team.close()


def give_all(app, run):
    keys = claims(run)
    for who in ("alice", "bob"):
        for n, key in enumerate(keys):
            v = verdict_of(who, key, n)
            app.post("/api/review/label", {"who": who, "model": key[0], "question_id": key[1], "repeat": key[2],
                                           "segment_index": key[3], "supported": v == "supported" if v != "partial"
                                           else "partial"})
    return keys


def test_kappas_equal_a_direct_computation_and_calibrate_on_human_csv(opened, run, tmp_path):
    keys = give_all(opened, run)
    judged = judge_verdicts(run)
    said = {who: [verdict_of(who, k, n) for n, k in enumerate(keys)] for who in ("alice", "bob")}
    before = {p: p.stat().st_mtime_ns for p in run.iterdir() if p.is_file()}
    cal = opened.get("/api/review/calibration", {"who": ["dana"]})
    assert {p: p.stat().st_mtime_ns for p in run.iterdir() if p.is_file()} == before  # read only
    assert len(keys) >= 20 and len(judged) == len(keys)
    for p in cal["judge_vs_people"]:
        people, judge = said[p["name"]], [judged[k] for k in keys]
        assert p["n"] == len(keys)
        assert p["kappa"] == pytest.approx(kappa(people, judge, True), abs=1e-6)
        assert p["kappa_multiclass"] == pytest.approx(kappa(people, judge, False), abs=1e-6)
    [pair] = cal["people_pairs"]
    assert (pair["a"], pair["b"], pair["n"]) == ("alice", "bob", len(keys))
    assert pair["kappa"] == pytest.approx(kappa(said["alice"], said["bob"], True), abs=1e-6)
    assert pair["kappa_multiclass"] == pytest.approx(kappa(said["alice"], said["bob"], False), abs=1e-6)
    # the team's labels: the claims both gave one verdict (the disagreements wait for the reviewer)
    agreed = [n for n in range(len(keys)) if said["alice"][n] == said["bob"][n]]
    team = cal["judge_vs_team"]
    assert team["n"] == len(agreed) < len(keys)
    assert team["kappa"] == pytest.approx(kappa([said["alice"][n] for n in agreed], [judged[keys[n]] for n in agreed], True), abs=1e-6)
    fp = [keys[n] for n in agreed if judged[keys[n]] == "unsupported" and said["alice"][n] != "unsupported"]
    fn = [keys[n] for n in agreed if said["alice"][n] == "unsupported" and judged[keys[n]] != "unsupported"]
    assert [(e["model"], e["question_id"], e["repeat"], e["segment_index"]) for e in cal["false_positives"]] == fp
    assert [(e["model"], e["question_id"], e["repeat"], e["segment_index"]) for e in cal["false_negatives"]] == fn
    assert fp and fn and team["confusion"] == {"tp": team["confusion"]["tp"], "fp": len(fp), "fn": len(fn),
                                                "tn": team["confusion"]["tn"]}
    for e in cal["false_positives"] + cal["false_negatives"]:  # the viewer's page of that question in this run
        u = urlsplit(e["question_page"])
        assert e["question_page"].startswith(VIEWER) and u.fragment.startswith("/question?")
        assert parse_qs(u.fragment.split("?", 1)[1]) == {"runs": ["b"], "id": [e["question_id"]]}
    # grace spotcheck calibrate on the team's labels gives the page's figures
    human = opened.team.human_file
    assert len(read_labels(human)) == len(agreed)
    code, out = run_grace("spotcheck", "calibrate", human, run / "spotcheck.json")
    assert code == 0, out
    written = json.loads((run / "calibration.json").read_text(encoding="utf-8"))
    assert (written["n"], written["kappa"], written["confusion"]) == (team["n"], team["kappa"], team["confusion"])
    assert written["kappa_multiclass"] == team["kappa_multiclass"]


def test_verdicts_are_kept_per_person_and_the_reviewer_decides_disagreements(opened, run):
    keys = give_all(opened, run)
    labels = opened.team.folder / "labels"
    for who in ("alice", "bob"):  # each person's file holds their verdicts only, with their name
        rows = read_labels(labels / f"{who}.csv")
        assert [r.verdict for r in rows] == [verdict_of(who, k, n) for n, k in enumerate(keys)]
        assert {r.reviewer for r in rows} == {who}
    q = opened.get("/api/review/queue", {"who": ["dana"]})
    differ = [k for n, k in enumerate(keys) if verdict_of("alice", k, n) != verdict_of("bob", k, n)]
    assert q["to_decide"] == len(differ) == len(q["items"])
    it = q["items"][0]
    key = (it["model"], it["question_id"], it["repeat"], it["segment_index"])
    assert [v["person"] for v in it["verdicts"]] == ["alice", "bob"] and it["articles"]
    seen = it["seen"]
    assert seen == {**{v["person"]: v["verdict"] for v in it["verdicts"]}, "@decision": ""}
    body = {"who": "dana", "model": key[0], "question_id": key[1], "repeat": key[2], "segment_index": key[3],
            "verdict": "unsupported", "reason": "the article says otherwise", "seen": seen}
    with pytest.raises(StaleVerdicts, match="changed since you opened it"):
        opened.post("/api/review/adjudicate", {**body, "seen": {**seen, "bob": "x"}})
    res = opened.post("/api/review/adjudicate", body)
    assert res["queue"]["to_decide"] == len(differ) - 1
    human = {(r.model, r.question_id, r.repeat, r.segment_index): r for r in read_labels(opened.team.human_file)}
    assert (human[key].verdict, human[key].reviewer, human[key].note) == ("unsupported", "dana",
                                                                        "the article says otherwise")
    # alice's and bob's own verdicts are untouched by the decision
    assert read_labels(labels / "alice.csv")[keys.index(key)].verdict == seen["alice"]


def test_a_resumed_team_keeps_everything(run, tmp_path):
    sources = RunSources.find(run)
    team = TeamReview.open(sources, tmp_path / "team", people="alice,bob")
    key = claims(run)[0]
    team.label("alice", key, False)
    team.close()
    with pytest.raises(GraceError, match="was started with --team alice,bob"):
        TeamReview.open(RunSources.find(run), tmp_path / "team", people="alice,carol")
    team = TeamReview.open(RunSources.find(run), tmp_path / "team")
    try:
        assert team.verdicts()["alice"][key][0] == "unsupported"
    finally:
        team.close()


@pytest.mark.parametrize("who, body, message", [
    ("eve", {}, "'eve' is not on this review team"),
    ("", {}, "name yourself"),
    ("alice", {"question_id": "nope"}, "no claim 0 of .*/nope/repeat 0 in spotcheck_claims_review.csv"),
    ("alice", {"segment_index": 999}, "no claim 999"),
    ("alice", {"supported": "maybe"}, 'supported must be true, false or null or "partial"'),
    ("dana", {}, "decides disagreements but gives no verdicts"),
])
def test_bad_input_is_a_clear_error(opened, run, who, body, message):
    key = claims(run)[0]
    base = {"who": who, "model": key[0], "question_id": key[1], "repeat": key[2], "segment_index": key[3],
            "supported": True}
    with pytest.raises(PersonRejected, match=message):
        opened.post("/api/review/label", {**base, **body})


def test_bad_input_over_http_is_a_400_with_the_reason(opened, run):
    import threading
    import urllib.error
    import urllib.request

    from harness.web import make_server, url_for

    httpd = make_server(opened.app, "127.0.0.1", 0)
    alice = opened.keys["alice"]
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    url = url_for("127.0.0.1", httpd.server_address[1], None)
    try:
        for path, body, message in (
                ("api/review/label", {"who": "mallory", "model": "m", "question_id": "q1", "repeat": 0,
                                      "segment_index": 0, "supported": True}, "not on this review team"),
                ("api/review/label", {"who": "alice", "model": "m", "question_id": "q99", "repeat": 0,
                                      "segment_index": 0, "supported": True}, "no claim 0 of m/q99/repeat 0")):
            cred = f"?cred={alice}" if body["who"] == "alice" else ""
            req = urllib.request.Request(url + path + cred, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(req, timeout=10)
            assert exc.value.code == 400 and message in json.loads(exc.value.read())["error"]
        with pytest.raises(urllib.error.HTTPError) as exc:  # the calibration shows the judge: reviewers only
            urllib.request.urlopen(url + f"api/review/calibration?who=alice&cred={alice}", timeout=10)
        assert exc.value.code == 403 and "not a reviewer" in json.loads(exc.value.read())["error"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_command_line_refuses_bad_team_options(run):
    code, out = run_grace("annotations", "review", run, "--team", "alice", "--no-browser")
    assert code != 0 and "two or more" in out and "Traceback" not in out
    code, out = run_grace("annotations", "review", run, "--viewer", "http://x/", "--no-browser")
    assert code != 0 and "go with --team" in out and "Traceback" not in out
    code, out = run_grace("annotations", "review", run, "--team", "alice,bob", "--viewer", "javascript:alert(1)",
                          "--no-browser", "--out", run.parent / "bad-team")
    assert code != 0 and "--viewer" in out and "Traceback" not in out


def test_labels_already_in_the_run_review_csv_are_nobodys_in_the_team(run, tmp_path):
    import shutil

    from tests.harness.spotcheck.test_spotcheck_calibration import label

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    key = claims(copy)[0]
    label(copy / "spotcheck_claims_review.csv", {(key[1], key[3]): "false"}, reviewer="someone")
    team = TeamReview.open(RunSources.find(copy, kb_dir=run.parent / "kb"), tmp_path / "team", people="alice,bob")
    try:
        assert team.verdicts() == {"alice": {}, "bob": {}}
        assert all(not r["supported"] for r in team.human_rows())
    finally:
        team.close()
