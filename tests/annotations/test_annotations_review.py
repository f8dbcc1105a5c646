"""grace annotations review, server side: a real spot-check's review CSV, marked, saved, resumed, guarded.

The fixture is the real chain, offline: ``grace kb build``, ``grace run`` (baseline:top1 and a
scripted model whose answers have several segments), ``grace spotcheck run`` with the lexical judge.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from annotations.review_app import ReviewApp
from annotations.review_session import ReviewSession, SaveConflict
from annotations.review_sources import RunSources, answer_pieces, locate
from annotations.state import LabelRejected
from harness.core.errors import GraceError
from harness.web import make_server
from kb_builder.loader import load_kb
from tests.conftest import ROOT, run_grace, write

FILL = "This policy explains the rules in detail so that an employee can act on it without asking anyone. " * 3
ANSWERS = {
    "q1": "You get ten days of paid sick leave per year [ID: {top_id}].\n\n"
          "Unused sick days are paid out in cash <img src=x onerror=window.__xss=1> [ID: {top_id}].\n\nI hope this helps!",
    "q2": "Parental leave lasts sixteen weeks [ID: {top_id}].",
    "q3": "Book flights in the travel portal [ID: {top_id}]. Business class is allowed on every flight [ID: {top_id}].",
}
WRITER = "scripted:writer"


def build_run(root: Path) -> Path:
    """KB, gold, a two-model run and a lexical spot-check of it, all through the real CLI."""
    write(root / "src" / "leave.md", f"# Leave\n\n## Sick leave\n\nTen days of paid sick leave per year. Unused sick "
          f"days lapse at the end of the year <script>window.__xss=2</script>. {FILL}\n\n"
          f"## Parental leave\n\nSixteen weeks of parental leave, paid in full. {FILL}\n")
    write(root / "src" / "travel.md", f"# Travel\n\n## Booking\n\nBook flights in the travel portal. Economy class only. "
          f"{FILL}\n\n## Per diem\n\nThe meal per diem is 45 EUR a day. {FILL}\n")
    code, out = run_grace("kb", "build", root / "src", "--out", root / "kb")
    assert code == 0, out
    write(root / "gold.csv", "question_id,question,expected_answer,expected_citations,must_refuse,notes\n"
          "q1,How many sick days do I get?,,1,false,\nq2,How long is parental leave?,,2,false,\n"
          "q3,Where do I book flights?,,3,false,\nr1,What is the capital of France?,,,true,\n")
    responses = "\n".join(f"{qid} = {json.dumps(text)}" for qid, text in ANSWERS.items())
    write(root / "models.toml", f'[[models]]\nspec = "baseline:top1"\n\n[[models]]\nspec = "{WRITER}"\n'
          f"[models.options.responses]\n{responses}\n")
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "models.toml",
                          "--out", root / "run")
    assert code == 0, out
    code, out = run_grace("spotcheck", "run", "--mode", "segments", root / "run", "--kb", root / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    return root / "run"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    build_run(root)
    return root


@pytest.fixture
def run(built, tmp_path):
    """A private copy of the run, so each test writes its own review CSV."""
    shutil.copytree(built / "run", tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture
def app(run, built):
    sources = RunSources.find(run, kb_dir=built / "kb")
    session = ReviewSession.open(sources.review_csv, reviewer="rita")
    yield ReviewApp(session, sources, load_kb(built / "kb"))
    session.close()


def csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def find_item(app: ReviewApp, model: str, qid: str) -> dict:
    for i in range(len(app.session.answers)):
        if app.session.answers[i][0].key[:2] == (model, qid):
            return app.item(i)
    raise AssertionError(f"no item {model}/{qid}")


def key(item: dict, seg: int) -> dict:
    return {"model": item["model"], "question_id": item["question_id"], "repeat": item["repeat"],
            "segment_index": item["segments"][seg]["segment_index"]}


# -- what the page is shown -------------------------------------------------------------------------


def test_item_shows_question_whole_answer_and_segments_but_not_the_judge(app, run):
    state = app.state()
    header, rows = csv_rows(run / "spotcheck_review.csv")
    p = state["progress"]
    assert p["segments"] == len(rows) and p["reviewed"] == 0 and p["first_unreviewed"] == 0
    assert p["answers"] == len({(r["model"], r["question_id"], r["repeat"]) for r in rows}) == len(p["statuses"])
    assert state["warnings"] == [] and state["reviewer"] == "rita"

    item = find_item(app, WRITER, "q1")
    assert item["question"] == "How many sick days do I get?"
    answer = ANSWERS["q1"].replace("{top_id}", "1")
    assert "".join(text for text, _ in item["answer"]) == answer  # the whole answer, nothing dropped or doubled
    marked = [(text, n) for text, n in item["answer"] if n >= 0]
    assert [n for _, n in marked] == [0, 1, 2]
    assert [t for t, _ in marked] == [s["text"] for s in item["segments"]]
    assert all(s["located"] and s["supported"] is None for s in item["segments"])
    assert [s["citations"] for s in item["segments"]] == [["1"], ["1"], []]  # "I hope this helps!" cites nothing
    assert [a["id"] for a in item["articles"]] == ["1"] and item["articles"][0]["title"] == "Leave > Sick leave"
    # the judge's verdict and reasons never reach the page (they live only in spotcheck/judgements.jsonl)
    text = json.dumps([app.state(), *(app.item(i) for i in range(p["answers"]))])
    assert "explanation" not in text and "judge" not in text and "lexical" not in text


def test_article_flags_the_passage_matching_the_selected_segment(app):
    item = find_item(app, WRITER, "q3")
    assert len(item["segments"]) == 2
    art = app.article(item["index"], 0, "3")
    passage = "".join(t for t, _, in_passage in art["segments"] if in_passage)
    assert "Book flights in the travel portal" in passage
    assert [t for t, m, _ in art["segments"] if m][:3] == ["Book", "flights", "travel"]
    assert art["title"] == "Travel > Booking"
    q1 = find_item(app, WRITER, "q1")
    uncited = app.article(q1["index"], 2, "1")  # "I hope this helps!" shares no word: no passage flagged
    assert not any(in_passage for _, _, in_passage in uncited["segments"])
    assert "<script>window.__xss=2</script>" in "".join(t for t, _, _ in uncited["segments"])  # data, never markup
    with pytest.raises(LookupError, match="not in the KB"):
        app.article(item["index"], 0, "99")
    with pytest.raises(LookupError, match="out of range"):
        app.article(item["index"], 5, "3")


def test_segments_are_located_in_order_and_missing_ones_fall_back():
    answer = "A is true [ID: 1].\n\nB is  also\ntrue [ID: 2]. A is true [ID: 1]."
    spans = locate(answer, ["A is true [ID: 1].", "B is also true [ID: 2].", "A is true [ID: 1].", "Never said."])
    assert spans[0] == (0, 18) and spans[2][0] > spans[1][1] and spans[3] is None
    pieces = answer_pieces(answer, spans)
    assert "".join(t for t, _ in pieces) == answer and [n for _, n in pieces if n >= 0] == [0, 1, 2]


# -- saving -----------------------------------------------------------------------------------------


def test_marks_rewrite_the_file_keeping_every_row_and_column_and_resume(run, built):
    csv_path = run / "spotcheck_review.csv"
    header, rows = csv_rows(csv_path)
    # a column someone added in a spreadsheet, and a label typed there, are kept
    rows[0]["supported"], rows[0]["reviewer"] = "yes", "sheet"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=[*header, "priority"], lineterminator="\n")
        w.writeheader()
        w.writerows({**r, "priority": str(i)} for i, r in enumerate(rows))
    before_header, before = csv_rows(csv_path)

    sources = RunSources.find(run, kb_dir=built / "kb")
    session = ReviewSession.open(sources.review_csv, reviewer="rita")
    app = ReviewApp(session, sources, load_kb(built / "kb"))
    item = find_item(app, WRITER, "q1")
    app.label({**key(item, 0), "supported": True})
    app.label({**key(item, 1), "supported": False, "note": "  the article says unused days lapse  "})
    res = app.label({**key(item, 2), "supported": None, "note": "pleasantry"})
    assert res["segment"]["supported"] is None and res["segment"]["reviewer"] == "rita"
    assert res["progress"]["reviewed"] == 3 and res["progress"]["unsupported"] == 1  # the spreadsheet's label counts

    after_header, after = csv_rows(csv_path)
    assert after_header == before_header == [*header, "priority"]
    assert len(after) == len(before)
    changed = {(r["model"], r["question_id"], r["segment_index"]): r for r, b in zip(after, before, strict=True) if r != b}
    assert set(changed) == {(WRITER, "q1", "0"), (WRITER, "q1", "1"), (WRITER, "q1", "2")}
    assert changed[(WRITER, "q1", "0")]["supported"] == "true"
    assert changed[(WRITER, "q1", "1")]["supported"] == "false"
    assert changed[(WRITER, "q1", "1")]["note"] == "the article says unused days lapse"
    assert changed[(WRITER, "q1", "2")]["supported"] == "" and changed[(WRITER, "q1", "2")]["note"] == "pleasantry"
    assert all(r["reviewer"] == "rita" for r in changed.values())
    assert all(a["segment_text"] == b["segment_text"] and a["priority"] == b["priority"] for a, b in zip(after, before, strict=True))
    assert after[0]["supported"] == "yes" and after[0]["reviewer"] == "sheet"
    assert not [p for p in run.iterdir() if p.name.startswith(".spotcheck_review.csv.") and p.suffix != ".lock"]
    session.close()

    # reopening resumes: the marks are shown, progress counts them
    session = ReviewSession.open(csv_path, reviewer="sam")
    try:
        app = ReviewApp(session, RunSources.find(run, kb_dir=built / "kb"), load_kb(built / "kb"))
        again = find_item(app, WRITER, "q1")
        assert [s["supported"] for s in again["segments"]] == [True, False, None]
        assert again["segments"][1]["note"] == "the article says unused days lapse" and again["status"] == "partial"
        app.label({**key(again, 1), "supported": None, "note": ""})  # clearing both clears the reviewer too
        row = next(r for r in csv_rows(csv_path)[1] if (r["model"], r["question_id"], r["segment_index"]) == (WRITER, "q1", "1"))
        assert row["supported"] == row["note"] == row["reviewer"] == ""
    finally:
        session.close()


def test_a_separate_out_file_resumes_and_leaves_the_run_file_alone(run, built, tmp_path):
    src = run / "spotcheck_review.csv"
    original = src.read_bytes()
    out = tmp_path / "second-reviewer.csv"
    sources = RunSources.find(run, kb_dir=built / "kb")
    session = ReviewSession.open(src, out, reviewer="sam")
    app = ReviewApp(session, sources, load_kb(built / "kb"))
    item = find_item(app, "baseline:top1", "q2")
    app.label({**key(item, 0), "supported": False, "note": "second opinion"})
    session.close()
    assert src.read_bytes() == original
    session = ReviewSession.open(src, out, reviewer="sam")
    try:
        app = ReviewApp(session, sources, load_kb(built / "kb"))
        assert find_item(app, "baseline:top1", "q2")["segments"][0]["supported"] is False
        assert app.state()["progress"]["reviewed"] == 1
    finally:
        session.close()
    assert len(csv_rows(out)[1]) == len(csv_rows(src)[1])


def test_a_file_changed_on_disk_is_not_overwritten(app, run, built):
    item = find_item(app, WRITER, "q2")
    app.label({**key(item, 0), "supported": True})
    # the spot-check is run again while the app is open: its rewrite (labels merged in) must survive
    code, out = run_grace("spotcheck", "run", "--mode", "segments", run, "--kb", built / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    on_disk = (run / "spotcheck_review.csv").read_bytes()
    with pytest.raises(SaveConflict, match="changed on disk"):
        app.label({**key(item, 0), "supported": False})
    assert (run / "spotcheck_review.csv").read_bytes() == on_disk
    assert b"true" in on_disk  # write_review_csv kept the mark made before


def test_rejected_labels_change_nothing(app, run):
    before = (run / "spotcheck_review.csv").read_bytes()
    item = find_item(app, WRITER, "q1")
    bad = [
        {**key(item, 0), "segment_index": 99, "supported": True},
        {**key(item, 0), "supported": "yes"},
        {**key(item, 0), "note": 5},
        {**key(item, 0), "note": "x" * 5001},
        {"model": WRITER, "question_id": "q1", "supported": True},
        {**key(item, 0), "repeat": "zero"},
        ["not", "an", "object"],
    ]
    for body in bad:
        with pytest.raises(LabelRejected):
            app.label(body)
    assert (run / "spotcheck_review.csv").read_bytes() == before


# -- bad inputs -------------------------------------------------------------------------------------


def test_a_run_without_a_spot_check_says_to_run_it_first(built, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("scores.jsonl", "responses.jsonl", "report.json"):
        shutil.copy(built / "run" / name, bare / name)
    code, out = run_grace("annotations", "review", bare, "--kb", built / "kb", "--no-browser")
    assert code == 2 and "spotcheck_review.csv: not found" in out and "grace spotcheck run" in out
    code, out = run_grace("annotations", "review", tmp_path / "nowhere", "--no-browser")
    assert code == 2 and "run folder not found" in out


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("segment_index", "segment"), ":1: missing column(s) segment_index"),
    (lambda t: t.replace(",0,0,", ",0,x,", 1), ":2: repeat and segment_index must be whole numbers"),
    (lambda t: t.replace("\n", ",,,,maybe\n", 2).replace("supported,note,reviewer,,,,maybe", "supported,note,reviewer"),
     "more fields than header"),
    (lambda t: t + t.splitlines()[1] + "\n", "is listed twice (first on line 2)"),
])
def test_malformed_review_csvs_say_where(run, edit, message):
    path = run / "spotcheck_review.csv"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(GraceError, match=re.escape(message)):
        ReviewSession.open(path)


def test_a_bad_supported_value_names_its_line(run):
    path = run / "spotcheck_review.csv"
    header, rows = csv_rows(path)
    rows[2]["supported"] = "maybe"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(GraceError, match=r"spotcheck_review.csv:4: supported must be true or false"):
        ReviewSession.open(path)


def test_a_second_server_on_the_same_file_is_refused(app, run):
    with pytest.raises(GraceError, match="another review app is already writing"):
        ReviewSession.open(run / "spotcheck_review.csv")


def test_without_gold_or_responses_the_page_degrades_with_warnings(run, built):
    for name in ("report.json", "run.json"):
        data = json.loads((run / name).read_text())
        data["gold"]["path"] = str(run / "moved-away.csv")
        if "responses" in data:
            data["responses"]["path"] = str(run / "gone.jsonl")
        (run / name).write_text(json.dumps(data))
    (run / "responses.jsonl").unlink()
    sources = RunSources.find(run, kb_dir=built / "kb")
    session = ReviewSession.open(sources.review_csv)
    try:
        app = ReviewApp(session, sources, load_kb(built / "kb"))
        warnings = " ".join(app.state()["warnings"])
        assert "pass --gold GOLD.csv" in warnings and "segments only" in warnings
        item = find_item(app, WRITER, "q1")
        assert item["question"] is None and item["answer"] is None and len(item["segments"]) == 3
    finally:
        session.close()
    with_gold = RunSources.find(run, kb_dir=built / "kb", gold=built / "gold.csv")
    assert with_gold.questions["q2"] == "How long is parental leave?"
    with pytest.raises(GraceError, match="gold file not found"):
        RunSources.find(run, kb_dir=built / "kb", gold=run / "nope.csv")


# -- HTTP -------------------------------------------------------------------------------------------


def request(port: int, path: str, body=None, headers=None, ctype="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    hdrs = {"Content-Type": ctype} if body is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def test_http_routes_and_guards(app, run, built):
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    port = httpd.server_address[1]
    try:
        status, body, headers = request(port, "/")
        assert status == 200 and b"grace review" in body and b"__TOKEN_QUERY__" not in body
        assert "script-src 'self'" in headers["Content-Security-Policy"] and headers["Cache-Control"] == "no-store"
        assert request(port, "/static/review.js")[0] == 200 and request(port, "/static/review.css")[0] == 200
        state = json.loads(request(port, "/api/review/state")[1])
        assert state["progress"]["reviewed"] == 0
        item = json.loads(request(port, "/api/review/item/0")[1])
        assert request(port, "/api/review/item/999")[0] == 404
        cited = item["segments"][0]["citations"][0]
        art = request(port, f"/api/review/article?item=0&seg=0&id={cited}")
        assert art[0] == 200 and json.loads(art[1])["id"] == cited
        assert request(port, "/api/review/article?item=0&seg=0&id=nope")[0] == 404
        status, raw, _ = request(port, "/api/review/label", {**key(item, 0), "supported": False})
        assert status == 200 and json.loads(raw)["progress"]["unsupported"] == 1
        assert request(port, "/api/review/label", {**key(item, 0), "supported": "no"})[0] == 400
        assert request(port, "/api/review/label", {**key(item, 0)}, ctype="text/plain")[0] == 415
        assert request(port, "/api/label", {"question_id": "q1"})[0] == 404  # the gold labeller's route is not here
        assert request(port, "/api/review/state", headers={"Host": f"evil.example:{port}"})[0] == 403
        # the same guards as grace annotate: another site's page cannot post, nor a malformed length
        foreign = request(port, "/api/review/label", {**key(item, 0), "supported": True},
                          headers={"Origin": "http://evil.example"})
        assert foreign[0] == 403 and "origin" in json.loads(foreign[1])["error"]
        assert request(port, "/api/review/label", {**key(item, 0), "supported": False},
                       headers={"Origin": f"http://127.0.0.1:{port}"})[0] == 200
        assert request(port, "/api/review/label", {**key(item, 0)}, headers={"Content-Length": "-1"})[0] == 400
        # the file changed under the server: 409, and the page is told why
        run_grace("spotcheck", "run", "--mode", "segments", run, "--kb", built / "kb", "--judge", "baseline:lexical", "--all")
        status, raw, _ = request(port, "/api/review/label", {**key(item, 0), "supported": True})
        assert status == 409 and "changed on disk" in json.loads(raw)["error"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_other_hosts_need_the_token(app):
    httpd = make_server(app, "127.0.0.2", 0, "s3cret")
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    port = httpd.server_address[1]

    def get(path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.2:{port}{path}", timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    try:
        assert get("/api/review/state")[0] == 403 and get("/api/review/state?token=wrong")[0] == 403
        status, body = get("/?token=s3cret")
        assert status == 200 and b'src="static/review.js?token=s3cret"' in body
        assert get("/api/review/item/0?token=s3cret")[0] == 200
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_cli_server_killed_loses_nothing_resumes_and_calibrate_reads_the_file(run, built):
    def start():
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli.app import main; main()", "annotations", "review", str(run),
             "--kb", str(built / "kb"), "--no-browser", "--port", "0", "--reviewer", "kim"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        )
        for line in proc.stdout:
            m = re.search(r"open http://127\.0\.0\.1:(\d+)/", line)
            if m:
                return proc, int(m.group(1))
        raise AssertionError(f"server did not start (exit {proc.wait()})")

    proc, port = start()
    state = json.loads(request(port, "/api/review/state")[1])
    n = state["progress"]["answers"]
    marked = 0
    for i in range(n):
        item = json.loads(request(port, f"/api/review/item/{i}")[1])
        for s in range(len(item["segments"])):
            verdict = not (item["model"] == WRITER and s == 1)  # the invented claims are unsupported
            assert request(port, "/api/review/label", {**key(item, s), "supported": verdict})[0] == 200
            marked += 1
    proc.send_signal(signal.SIGKILL)  # no cleanup at all
    proc.wait()
    proc.stdout.close()
    _, rows = csv_rows(run / "spotcheck_review.csv")
    assert sum(r["supported"] in ("true", "false") for r in rows) == marked == len(rows)
    assert {r["reviewer"] for r in rows} == {"kim"}

    proc, port = start()  # the lock died with the process: reopening resumes
    try:
        assert json.loads(request(port, "/api/review/state")[1])["progress"]["reviewed"] == marked
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=10)[0]
    assert proc.returncode == 0 and f"{marked}/{marked} segments reviewed" in output
    assert "next: grace spotcheck calibrate" in output

    code, out = run_grace("spotcheck", "calibrate", run / "spotcheck_review.csv", run / "spotcheck.json")
    assert code == 0, out
    calib = json.loads((run / "calibration.json").read_text())
    assert calib["n"] == marked and calib["n_unmatched"] == 0 and calib["human_csv"]["reviewers"] == ["kim"]
