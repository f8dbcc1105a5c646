"""grace annotate, server side: the gold file it writes, its JSON API, its guards, and crashes."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotations.labels import LabelRecord, read_labels
from annotations.server import AnnotationApp
from annotations.state import AnnotationSession, LabelRejected
from harness.cli.app import cli
from harness.core.errors import GraceError
from harness.web import make_server
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.conftest import ROOT

ARTICLES = [
    ("1", "Annual leave", "You earn annual leave every pay period. Carry over up to 240 hours into the next leave year."),
    ("2", "Sick leave", "Sick leave covers illness, medical appointments and caring for a family member."),
    ("3", "Laptops and equipment", "Your laptop is shipped to your home address before your first day."),
    ("4", "Travel approval", "Your supervisor approves conference travel in the travel system before you book."),
    ("5", "Expense claims", "Submit receipts for expense claims within 30 days of the trip ending."),
    ("6", "Remote work abroad", "Working remotely from another country needs approval from security and HR."),
    ("7", "Slack etiquette", "Use threads in Slack channels and set your status when you are away."),
    ("8", "Security training", "Complete annual security awareness training by the end of October."),
]


def make_kb(root: Path, extra: list[tuple[str, str, str]] = ()) -> Path:
    kb = root / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "title": t, "text": x, "heading_path": ["Handbook", t]} for i, t, x in [*ARTICLES, *extra]]
    (kb / "articles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return kb


def write_questions(path: Path) -> Path:
    path.write_text(
        "question_id,question,category\n"
        "q1,How many hours of annual leave can I carry over?,leave\n"
        "q2,Who approves my conference travel?,travel\n"
        "q3,What is the capital of France?,out-of-scope\n"
        "q4,Can I use sick leave to care for my child?,leave\n",
        encoding="utf-8",
    )
    return path


def gold_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def labelled_only(path: Path, dest: Path) -> Path:
    """What read_gold will see once it ignores skipped/unlabelled rows (the lead's change)."""
    rows = [r for r in gold_rows(path) if r["status"] == "labelled"]
    with dest.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return dest


@pytest.fixture
def kb(tmp_path):
    return load_kb(make_kb(tmp_path))


@pytest.fixture
def session(kb, tmp_path):
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=write_questions(tmp_path / "q.csv"), annotator="ann")
    yield s
    s.close()


class Server:
    def __init__(self, session, host="127.0.0.1", token=None):
        self.app = AnnotationApp(session, session.kb.retriever(), k=5)
        self.httpd = make_server(self.app, host, 0, token)
        self.host, self.port, self.token = host, self.httpd.server_address[1], token
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def request(self, path, body=None, headers=None, method=None):
        url = f"http://{self.host}:{self.port}{path}"
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def json(self, path, body=None, **kw):
        status, raw, _ = self.request(path, body, **kw)
        return status, json.loads(raw)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(session):
    srv = Server(session)
    yield srv
    srv.close()


# -- the file -------------------------------------------------------------------------------------


def test_text_questions_get_ids_and_every_row_is_written_at_once(kb, tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("How do I book travel?\n\n  Where is my laptop?  \n", encoding="utf-8")
    s = AnnotationSession.open(kb, tmp_path / "out.csv", questions=q)
    s.close()
    rows = gold_rows(tmp_path / "out.csv")
    assert [(r["question_id"], r["question"], r["status"]) for r in rows] == [
        ("q1", "How do I book travel?", "unlabelled"),
        ("q3", "Where is my laptop?", "unlabelled"),
    ]
    assert list(rows[0])[:8] == [
        "question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes", "status", "annotator",
    ]


def test_labels_are_saved_and_resumed(session, kb, tmp_path):
    session.save("q1", status="labelled", expected_citations=["1"], expected_answer="240 hours", notes="easy")
    session.save("q3", status="labelled", must_refuse=True)
    session.save("q4", status="labelled", expected_citations=["2", "1"])
    session.save("q2", status="skipped", notes="unclear: which travel?")
    session.save("q2", status="skipped", question="Who approves travel to a conference?")
    session.close()
    rows = {r["question_id"]: r for r in gold_rows(tmp_path / "gold.csv")}
    assert rows["q1"]["expected_citations"] == "1" and rows["q1"]["expected_titles"] == "Annual leave"
    assert rows["q1"]["annotator"] == "ann" and re.match(r"\d{4}-\d\d-\d\dT", rows["q1"]["labelled_at"])
    assert rows["q3"]["must_refuse"] == "true" and rows["q3"]["expected_citations"] == ""
    assert rows["q4"]["expected_citations"] == "2;1"
    assert rows["q2"]["status"] == "skipped" and rows["q2"]["original_question"] == "Who approves my conference travel?"
    assert rows["q1"]["category"] == "leave"  # extra question columns travel along

    gold = read_gold(labelled_only(tmp_path / "gold.csv", tmp_path / "only.csv"))
    assert [(g.question_id, g.label) for g in gold] == [("q1", "1"), ("q3", "REFUSE"), ("q4", "2")]

    again = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.csv", annotator="ann")
    try:
        by_id = {r.question_id: r for r in again.records}
        assert by_id["q1"].expected_answer == "240 hours"
        assert by_id["q2"].question == "Who approves travel to a conference?"
        assert again.progress()["labelled"] == 3 and again.progress()["first_unlabelled"] is None
    finally:
        again.close()


def test_resume_with_a_changed_questions_file_keeps_saved_work(session, kb, tmp_path):
    session.save("q3", status="labelled", must_refuse=True)
    session.close()
    q = tmp_path / "q2.csv"
    q.write_text("question_id,question\nq1,How many hours of annual leave can I carry over?\nq9,Where is my laptop?\n")
    s = AnnotationSession.open(kb, tmp_path / "gold.csv", questions=q)
    try:  # the new question joins; q3, labelled earlier but gone from the file, is kept at the end
        assert [r.question_id for r in s.records] == ["q1", "q9", "q2", "q3", "q4"]
        assert s.records[s.index["q3"]].must_refuse
    finally:
        s.close()


def test_rejected_saves_change_nothing(session, tmp_path):
    before = (tmp_path / "gold.csv").read_text()

    for kwargs in (
        dict(status="labelled", expected_citations=["99"]),
        dict(status="labelled", expected_citations=["1"], must_refuse=True),
        dict(status="labelled"),
        dict(status="done"),
        dict(status="skipped", question="  "),
    ):
        with pytest.raises(LabelRejected):
            session.save("q1", **kwargs)
    assert (tmp_path / "gold.csv").read_text() == before


def test_from_gold_shows_labels_and_rejects_unknown_ids(kb, tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text(
        "question_id,question,expected_citations,must_refuse\n"
        "a,How much leave?,1,false\nb,Capital of France?,,true\n",
        encoding="utf-8",
    )
    s = AnnotationSession.open(kb, gold, from_gold=gold)
    try:
        assert [r.label for r in s.records] == ["1", "REFUSE"]
    finally:
        s.close()
    gold.write_text("question_id,question,expected_citations,must_refuse\na,How much leave?,1;77,false\n")
    with pytest.raises(GraceError, match=r"g\.csv:2: question 'a' cites article\(s\) 77 not in the KB"):
        AnnotationSession.open(kb, tmp_path / "out.csv", from_gold=gold)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("id,text\n1,hello\n", r"missing column\(s\) question_id, question"),
        ("question_id,question,must_refuse\nq1,Hi?,maybe\n", r":2: column 'must_refuse' must be true or false"),
        ("question_id,question\nq1,Hi, there?\n", r":2: more fields than header"),
        ("question_id,question\nq1,Hi?\nq1,Again?\n", r":3: duplicate question_id 'q1'"),
        ("", "the file is empty"),
    ],
)
def test_malformed_gold_csvs_say_where(kb, tmp_path, content, message):
    bad = tmp_path / "bad.csv"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(GraceError, match=message):
        AnnotationSession.open(kb, tmp_path / "out.csv", from_gold=bad)


def test_cli_errors_are_clear(tmp_path):
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    q = write_questions(tmp_path / "q.csv")
    res = runner.invoke(cli, ["annotate", str(tmp_path / "empty"), "-q", str(q), "-o", str(tmp_path / "o.csv")])
    assert isinstance(res.exception, GraceError) and "articles.jsonl" in str(res.exception)
    kb = make_kb(tmp_path)
    res = runner.invoke(cli, ["annotate", str(kb), "-q", str(q)])
    assert isinstance(res.exception, GraceError) and "--out" in str(res.exception)


def test_a_kb_whose_index_cannot_be_built_says_how_to_go_on(tmp_path, monkeypatch):
    kb = make_kb(tmp_path)
    load_kb(kb)
    manifest = json.loads((kb / "manifest.json").read_text())
    (kb / "manifest.json").write_text(json.dumps({**manifest, "embedder": "openai"}))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    q = write_questions(tmp_path / "q.csv")
    res = CliRunner().invoke(cli, ["annotate", str(kb), "-q", str(q), "-o", str(tmp_path / "o.csv"), "--no-browser"])
    assert isinstance(res.exception, GraceError)
    assert "OPENAI_API_KEY" in str(res.exception) and "--embedder bm25" in str(res.exception)


def test_a_second_server_on_the_same_file_is_refused(session, kb, tmp_path):
    with pytest.raises(GraceError, match="already writing"):
        AnnotationSession.open(kb, tmp_path / "gold.csv", questions=tmp_path / "q.csv")


# -- the API --------------------------------------------------------------------------------------


def test_api_question_search_article_and_label(server, tmp_path):
    status, state = server.json("/api/state")
    assert status == 200 and state["progress"]["total"] == 4 and state["question_ids"][0] == "q1"

    _, q = server.json("/api/question/0")
    assert q["record"]["question_id"] == "q1" and q["candidates"][0]["id"] == "1"
    top = q["candidates"][0]
    matched = [t for t, m in [(s[0], s[1]) for s in top["snippet"]["segments"]] if m]
    assert {"annual", "leave", "hours", "carry"} <= {w.lower() for w in matched}
    assert top["breadcrumb"] == ["Handbook"]

    _, q3 = server.json("/api/question/2")  # "capital of France": no word in the KB, so no fake candidates
    assert q3["candidates"] == []

    _, res = server.json("/api/search?q=slack%20threads")
    assert res["results"][0]["id"] == "7"
    _, res = server.json("/api/search?q=5")  # an article ID jumps to that article
    assert res["results"][0]["id"] == "5"
    _, art = server.json("/api/article/6?q=remote%20country")
    assert art["title"] == "Remote work abroad" and "".join(s[0] for s in art["segments"]) == ARTICLES[5][2]
    assert any(s[2] for s in art["segments"])  # the matching passage is flagged

    status, out = server.json("/api/label", {"question_id": "q2", "status": "labelled", "expected_citations": ["4"]})
    assert status == 200 and out["progress"]["labelled"] == 1
    rows = {r["question_id"]: r for r in gold_rows(tmp_path / "gold.csv")}
    assert rows["q2"]["expected_citations"] == "4" and rows["q2"]["status"] == "labelled"

    status, err = server.json("/api/label", {"question_id": "q2", "status": "labelled", "expected_citations": ["404"]})
    assert status == 400 and "unknown article" in err["error"]
    status, _, _ = server.request("/api/label", None, headers={"Content-Type": "text/plain"}, method="POST")
    assert status == 415
    assert server.json("/api/question/99")[0] == 404
    assert server.json("/api/article/nope")[0] == 404


def test_review_shows_a_label_retrieval_missed(kb, tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("question_id,question,expected_citations,must_refuse\na,How many hours of annual leave?,7,false\n")
    s = AnnotationSession.open(kb, gold, from_gold=gold)
    try:
        q = AnnotationApp(s, kb.retriever(), k=2).question(0)
        assert [c["id"] for c in q["chosen_elsewhere"]] == ["7"]
    finally:
        s.close()


def test_static_files_and_guards(server):
    status, body, headers = server.request("/")
    assert status == 200 and b"grace annotate" in body and b"__TOKEN_QUERY__" not in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert server.request("/static/app.js")[0] == 200
    assert server.request("/static/../state.py")[0] == 404
    assert server.request("/static/%2e%2e/state.py")[0] == 404
    # DNS rebinding: a page on another name that resolves to 127.0.0.1 is refused
    assert server.request("/api/state", headers={"Host": f"evil.example:{server.port}"})[0] == 403


def raw_post(port: int, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
    """A POST with headers exactly as given (urllib would fix the Content-Length): status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"127.0.0.1:{port}", **headers}.items())
        sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    status = int(reply.split(b" ", 2)[1])
    return status, reply.partition(b"\r\n\r\n")[2]


def test_a_bad_content_length_is_refused_without_a_traceback(server, capfd):
    json_type = {"Content-Type": "application/json"}
    for bad in ("-5", "abc", "1e3", "+7", "0x10"):
        status, body = raw_post(server.port, "/api/label", {**json_type, "Content-Length": bad})
        assert status == 400 and b"Content-Length" in body, (bad, status, body)
    for huge in (str(10 * 1024 * 1024 + 1), "9" * 40):
        assert raw_post(server.port, "/api/label", {**json_type, "Content-Length": huge})[0] == 413
    assert server.json("/api/state")[1]["progress"]["labelled"] == 0
    assert "Traceback" not in capfd.readouterr().err


def test_a_state_changing_request_from_another_origin_is_refused(server, session):
    label = {"question_id": "q1", "status": "labelled", "must_refuse": True}
    own = f"http://127.0.0.1:{server.port}"
    for origin in ("http://evil.example", "null", f"http://localhost:{server.port}", "http://127.0.0.1:1",
                   f"https://127.0.0.1:{server.port}", f"{own}.evil.example"):
        status, err = server.json("/api/label", label, headers={"Origin": origin})
        assert status == 403 and "origin" in err["error"], origin
        for method in ("PUT", "DELETE"):
            assert server.request("/api/label", label, headers={"Origin": origin}, method=method)[0] == 403
    assert session.progress()["labelled"] == 0
    assert server.request("/api/state", headers={"Origin": "http://evil.example"})[0] == 200  # reading changes nothing
    assert server.json("/api/label", label, headers={"Origin": own})[0] == 200  # the page itself
    assert server.json("/api/label", label)[0] == 200  # no Origin (curl, scripts): the Host check guards it


def test_other_hosts_need_the_token(session):
    srv = Server(session, host="127.0.0.2", token="s3cret-token")
    try:
        assert srv.request("/api/state")[0] == 403
        assert srv.request("/api/state?token=wrong")[0] == 403
        assert srv.request("/api/state?token=s3cret-token")[0] == 200
        status, body, _ = srv.request("/?token=s3cret-token")
        assert status == 200 and b'src="static/app.js?token=s3cret-token"' in body
        assert srv.request("/static/app.css?token=s3cret-token")[0] == 200
        status, _, _ = srv.request(
            "/api/label", {"question_id": "q1", "status": "labelled", "must_refuse": True}, method="POST"
        )
        assert status == 403
    finally:
        srv.close()


def test_concurrent_saves_all_land(server, session, tmp_path):
    extra = [f"Question number {i} about leave?" for i in range(40)]
    # more questions so many threads write different rows at once
    with session._lock:
        for i, text in enumerate(extra):
            session.records.append(LabelRecord(f"x{i}", text))
            session.index[f"x{i}"] = len(session.records) - 1
    errors: list[str] = []

    def worker(ids):
        for qid in ids:
            n = int(qid[1:])
            status, _ = server.json(
                "/api/label",
                {"question_id": qid, "status": "labelled", "expected_citations": [str(n % 8 + 1)], "notes": f"n{n}"},
            )
            if status != 200:
                errors.append(qid)

    ids = [f"x{i}" for i in range(40)]
    threads = [threading.Thread(target=worker, args=(ids[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    recs, _ = read_labels(tmp_path / "gold.csv")
    by_id = {r.question_id: r for r in recs}
    for i in range(40):
        assert by_id[f"x{i}"].expected_citations == [str(i % 8 + 1)] and by_id[f"x{i}"].notes == f"n{i}"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gold.csv.") and p.suffix != ".lock"]


def test_killed_server_loses_no_acknowledged_label(tmp_path):
    kb = make_kb(tmp_path)
    q = tmp_path / "q.txt"
    q.write_text("".join(f"Question {i} about annual leave and travel?\n" for i in range(300)), encoding="utf-8")
    out = tmp_path / "gold.csv"
    stale = tmp_path / ".gold.csv.leftover"
    stale.write_text("half a wri")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))

    def start():
        proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli.app import main; main()", "annotate", str(kb), "-q", str(q),
             "-o", str(out), "--no-browser", "--port", "0", "--annotator", "crash-test"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        )
        for line in proc.stdout:
            m = re.search(r"open (http://\S+)", line)
            if m:
                return proc, m.group(1)
        raise AssertionError(f"server did not start (exit {proc.wait()})")

    proc, url = start()
    assert not stale.exists()  # a temp file left by an earlier crash is cleaned up
    acked: list[int] = []
    stop = threading.Event()

    def hammer():
        i = 0
        while not stop.is_set() and i < 300:
            body = json.dumps({"question_id": f"q{i + 1}", "status": "labelled", "expected_citations": [str(i % 8 + 1)]})
            req = urllib.request.Request(url + "api/label", body.encode(), {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 200:
                        acked.append(i)
            except (urllib.error.URLError, ConnectionError, OSError):
                return
            i += 1

    t = threading.Thread(target=hammer)
    t.start()
    deadline = time.time() + 30
    while len(acked) < 40 and t.is_alive() and time.time() < deadline:
        time.sleep(0.005)
    assert len(acked) >= 40, "the server stopped acknowledging saves"
    proc.send_signal(signal.SIGKILL)  # no cleanup at all, mid-stream of writes
    proc.wait()
    stop.set()
    t.join()
    proc.stdout.close()

    recs, _ = read_labels(out)  # parseable: never a half-written file
    assert len(recs) == 300
    labelled = {r.question_id for r in recs if r.status == "labelled"}
    assert {f"q{i + 1}" for i in acked} <= labelled

    proc, url = start()  # the lock died with the process: reopening resumes
    try:
        with urllib.request.urlopen(url + "api/state", timeout=5) as r:
            assert json.loads(r.read())["progress"]["labelled"] == len(labelled)
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=10)[0]
    assert proc.returncode == 0 and "stopped;" in output
