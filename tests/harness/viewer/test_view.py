"""grace view over HTTP and its Python side: runs found, grid filters, a question, a comparison, the guards,
the index kept outside the run folders and rebuilt when a run changes, bad input, and the static export."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import grace
from harness.viewer import open_viewer
from harness.web import make_server
from tests.conftest import ROOT, run_grace
from tests.view_runs import ANSWER_XSS, MODEL, TITLE_XSS, build_view_runs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_view_runs(tmp_path_factory.mktemp("view"))


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".grace.lock"}


@pytest.fixture(scope="module")
def served(built, tmp_path_factory):
    cache = tmp_path_factory.mktemp("view-cache")
    before = {name: listing(built / name) for name in ("a", "b")}
    app, indexer = open_viewer([built / "a", built / "b"], cache, child=True)  # the index built as grace view does
    assert indexer.wait(120)
    httpd = make_server(app, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield {"app": app, "port": httpd.server_address[1], "cache": cache, "before": before, "root": built}
    httpd.shutdown()
    httpd.server_close()
    indexer.stop()


def get(port: int, path: str, headers: dict | None = None, method: str = "GET", body: bytes | None = None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def api(served, path: str) -> dict:
    status, body, _ = get(served["port"], path)
    assert status == 200, body
    return json.loads(body)


def ids(page: dict) -> list[str]:
    return [r["id"] for r in page["rows"]]


def test_runs_are_found_summarised_and_indexed_outside_the_run_folders(served):
    data = api(served, "/api/runs")
    assert [r["id"] for r in data["runs"]] == ["a", "b"]
    a = data["runs"][0]
    assert a["state"] == "ready" and a["gold"]["questions"] == 14 and {m["model"] for m in a["models"]} == {
        MODEL, "baseline:top1", "baseline:threshold"}
    # read-only: the run folders are as they were; the indexes are in the cache folder
    for name in ("a", "b"):
        assert listing(served["root"] / name) == served["before"][name]
    indexes = sorted(p.name for p in (served["cache"] / "view").iterdir())
    assert len(indexes) == 2 and all(n.endswith("view-index.sqlite") for n in indexes)


def test_grid_filters_match_the_scores(served):
    page = api(served, "/api/questions?runs=a,b")
    assert page["total"] == 14 and [c["run"] for c in page["columns"]] == ["a"] * 3 + ["b"] * 3
    assert page["columns"][0]["model"] == "baseline:threshold"  # each run's leaderboard order
    regressed = api(served, f"/api/questions?runs=a,b&model={MODEL}&flip=regressed")
    improved = api(served, f"/api/questions?runs=a,b&model={MODEL}&flip=improved")
    cmp = grace.compare_runs(served["root"] / "a", served["root"] / "b", [MODEL])
    assert set(ids(regressed)) == set(cmp[MODEL].regressed) == {"q3", "q6", "q9"}
    assert set(ids(improved)) == set(cmp[MODEL].improved) == {"r1", "r2"}
    assert ids(api(served, "/api/questions?runs=a&suspect=1")) == ["q2", "r1", "r2"]
    assert set(ids(api(served, f"/api/questions?runs=b&model={MODEL}&outcome=wrong_citation"))) == {"q2", "q3", "q6", "q9"}
    assert set(ids(api(served, "/api/questions?runs=b&disagree=1"))) >= {"q3", "q6", "q9"}
    assert ids(api(served, "/api/questions?runs=b&q=claim%20it")) == ["q7"]  # words of an answer
    assert ids(api(served, "/api/questions?runs=a&q=capital")) == ["r1"]  # words of a question
    assert set(ids(api(served, "/api/questions?runs=a&article=6"))) == {"q11", "q12"}
    assert ids(api(served, "/api/questions?runs=a&sort=id"))[:3] == ["q1", "q10", "q11"]
    hardest = api(served, "/api/questions?runs=a&sort=hardest")
    assert ids(hardest)[0] == "q2"  # every model misses the mislabelled question
    cell = next(c for r in page["rows"] if r["id"] == "q2" for c in r["cells"])
    assert cell == {"outcome": "wrong_citation", "hits": 0, "n": 1, "hit": False, "cited": "1", "truncated": False}


def test_bad_filters_and_runs_say_why(served):
    for path, words in [("/api/questions?runs=a&sort=sideways", "sort must be one of"),
                        ("/api/questions?runs=a&flip=any", "needs two runs"),
                        ("/api/questions?runs=nope", "no run 'nope'"),
                        ("/api/questions?runs=a&model=gpt-9", "no model 'gpt-9'"),
                        ("/api/questions?runs=a&page=0", "page must be"),
                        ("/api/question?runs=a&id=zzz", "no question 'zzz'"),
                        ("/api/compare?a=a&b=a", "pick the two models")]:
        status, body, _ = get(served["port"], path)
        assert status in (400, 404) and words in json.loads(body)["error"], (path, body)


def test_question_page_has_gold_retrieval_readings_spotcheck_and_audit(served):
    q = api(served, "/api/question?runs=a,b&id=q7")
    assert q["gold"] == "4" and q["articles"]["4"]["title"] == TITLE_XSS
    assert "<script>" in q["articles"]["4"]["text"]  # data, as written: the page shows it as text
    run_b = q["runs"][1]
    assert run_b["retrieved"][0] == {"id": "4", "score": run_b["retrieved"][0]["score"], "gold": True}
    fake = next(m for m in run_b["models"] if m["model"] == MODEL)
    answer = fake["answers"][0]
    assert "".join(p["text"] for p in answer["pieces"]).startswith(ANSWER_XSS)
    assert [p["cites"] for p in answer["pieces"] if "cites" in p] == [["4"]]
    assert answer["lenient"]["outcome"] == "correct" and answer["lenient"]["why"] == "cited 4, the gold article"
    assert answer["strict"]["outcome"] == "correct"
    assert answer["spotcheck"] and answer["spotcheck"][0]["supported"] is False  # the lexical judge: markup is not in the article
    wrong = api(served, "/api/question?runs=b&id=q3")
    fake = next(m for m in wrong["runs"][0]["models"] if m["model"] == MODEL)
    assert fake["answers"][0]["lenient"]["why"] == "cited 1, not the gold article 2"
    suspect = api(served, "/api/question?runs=a&id=q2")
    assert suspect["runs"][0]["suspects"][0]["kind"] == "other_article"
    argv = suspect["annotate"]["argv"]
    assert argv[:2] == ["grace", "annotate"] and argv[argv.index("--question") + 1] == "q2"


def test_the_annotate_command_offered_opens_that_question(served, tmp_path):
    """The Question page's command, run as given (another port, a copy of the gold file), opens q2 alone."""
    argv = api(served, "/api/question?runs=a&id=q2")["annotate"]["argv"]
    gold = tmp_path / "gold.csv"
    shutil.copyfile(argv[argv.index("--from-gold") + 1], gold)
    argv[argv.index("--from-gold") + 1] = str(gold)
    argv[argv.index("--port") + 1] = "0"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "from harness.cli.app import main; main()", *argv[1:],
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("open http") or not line:
                break
        text = "".join(lines)
        assert "opening 1 question(s): q2" in text and "suggestion" in text, text
    finally:
        proc.terminate()
        proc.wait(10)


def test_compare_page_matches_grace_compare(served):
    data = api(served, "/api/compare?a=a&b=b")
    fake = next(m for m in data["models"] if m["model"] == MODEL)
    cmp = grace.compare_runs(served["root"] / "a", served["root"] / "b", [MODEL])[MODEL]
    for key in ("accuracy_a", "accuracy_b", "delta", "delta_ci", "mcnemar_p", "improved", "regressed"):
        assert fake[key] == getattr(cmp, key), key
    # every setting the runs differ in, as grace compare names them (issue 47): b was run with --no-cache against
    # another server
    every = grace.compare_runs(served["root"] / "a", served["root"] / "b")
    assert [d["text"] for d in data["differences"]] == [d.text() for d in every.differences]
    assert "cache: read → not read (--no-cache)" in [d["text"] for d in data["differences"]]
    two = api(served, f"/api/compare?a=b&b=b&ma=baseline:top1&mb={MODEL}")
    assert two["models"][0]["model"] == f"baseline:top1 vs {MODEL}"
    assert f"baseline:top1 vs {MODEL} model: baseline:top1 → {MODEL}" in [d["text"] for d in two["differences"]]
    assert any(row["article"] == "REFUSE" for row in fake["articles"])


def test_http_headers_and_guards(served):
    port = served["port"]
    status, body, headers = get(port, "/")
    assert status == 200 and b"grace view" in body and b"__TOKEN_QUERY__" not in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert get(port, "/static/view.js")[0] == 200 and get(port, "/static/common.js")[0] == 200
    for sneaky in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py", "/api/../../etc/passwd"):
        assert get(port, sneaky)[0] == 404, sneaky
    assert get(port, "/api/runs", headers={"Host": f"evil.example:{port}"})[0] == 403
    status, _, headers = get(port, "/api/plot?run=a&name=accuracy")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    # read-only: nothing to post; another origin cannot even try; a bad length never reaches the app
    assert get(port, "/api/runs", method="POST", body=b"{}", headers={"Content-Type": "application/json"})[0] == 404
    assert get(port, "/api/runs", method="POST", body=b"{}",
               headers={"Content-Type": "application/json", "Origin": "http://evil.example"})[0] == 403
    assert get(port, "/api/runs", method="DELETE")[0] == 405


def test_content_length_checks_are_the_shared_cores(served):
    import socket

    def raw(length: str) -> int:
        with socket.create_connection(("127.0.0.1", served["port"]), timeout=10) as s:
            s.sendall(f"POST /api/x HTTP/1.1\r\nHost: 127.0.0.1:{served['port']}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {length}\r\n\r\n".encode())
            return int(s.recv(200).split()[1])

    class Posting:  # an app with a POST route: the core checks the body before the app sees it
        name, page, static, post_paths = "t", "view.html", ROOT / "harness" / "viewer" / "static", ("/api/x",)
        seen: list = []

        def get(self, path, query):
            return None

        def post(self, path, body):
            self.seen.append(body)
            return {"ok": True}

    httpd = make_server(Posting(), "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    served_port, served["port"] = served["port"], httpd.server_address[1]
    try:
        assert raw("-1") == 400 and raw("12abc") == 400 and raw(str(10 * 1024 * 1024)) == 413
        assert Posting.seen == []
    finally:
        served["port"] = served_port
        httpd.shutdown()
        httpd.server_close()


def test_an_index_is_rebuilt_when_the_run_changes_and_a_writer_is_shown(built, tmp_path):
    run = tmp_path / "runs" / "today"
    shutil.copytree(built / "b", run)
    app, indexer = open_viewer([tmp_path / "runs"], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60) and app.questions({"runs": ["today"]})["total"] == 14
        first = app.runs["today"].index
        # a writer holds the folder (grace run resuming it): the pages say so and show what is on file
        (run / ".grace.lock").write_text(f"pid {os.getpid()}, 'grace run --out today', since now\n")
        assert app.runs_page()["runs"][0]["in_progress"].startswith(f"pid {os.getpid()}")
        assert any("being written now" in n for n in app.questions({"runs": ["today"]})["notices"])
        (run / ".grace.lock").write_text("")
        # re-scored with one question fewer: the index notices and is built again
        lines = (run / "scores.jsonl").read_text().splitlines()
        (run / "scores.jsonl").write_text("\n".join(x for x in lines if '"question_id": "q12"' not in x) + "\n")
        app.runs["today"].checked = 0
        app.questions({"runs": ["today"]})
        deadline = time.monotonic() + 30
        while app.runs["today"].index is first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.questions({"runs": ["today"]})["total"] == 13
    finally:
        indexer.stop()


def test_bad_input_gets_a_clear_message(built, tmp_path):
    code, out = run_grace("view", tmp_path / "missing", "--no-open")
    assert code == 2 and "no such folder" in out and "Traceback" not in out
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run_grace("view", empty, "--no-open")
    assert code == 2 and "no run folder inside" in out
    code, out = run_grace("view", built / "gold.csv", "--no-open")
    assert code == 2 and "a file, not a run folder" in out
    # a run with responses but no scores yet (grace run still going): listed, with what is on file and why
    unscored = tmp_path / "runs" / "fresh"
    unscored.mkdir(parents=True)
    shutil.copyfile(built / "a" / "responses.jsonl", unscored / "responses.jsonl")
    app, indexer = open_viewer([tmp_path / "runs"], tmp_path / "cache", child=False)
    try:
        indexer.wait(30)
        summary = app.runs_page()["runs"][0]
        assert summary["state"] == "unscored" and "no scores yet: 42 response(s) on file" in summary["problem"]
        waiting = app.questions({"runs": ["fresh"]})["waiting"]
        assert "grace score" in waiting["problem"]
    finally:
        indexer.stop()
    # two runs on different gold sets cannot share a grid or be compared
    other = on_other_gold(built / "b", tmp_path / "other")
    app, indexer = open_viewer([built / "a", other], tmp_path / "cache2", child=False)
    try:
        indexer.wait(60)
        for call in (lambda: app.questions({"runs": ["a,other"]}), lambda: app.compare("a", "other", "", "")):
            with pytest.raises(Exception, match="different gold sets"):
                call()
    finally:
        indexer.stop()


def test_export_writes_a_self_contained_folder(built, tmp_path):
    out = tmp_path / "site"
    code, text = run_grace("view", built / "b", "--export", out)
    assert code == 0, text
    page = (out / "index.html").read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page and "://" not in page
    assert (out / "data" / "export.js").exists() and (out / "data" / "questions-0.js").exists()
    assert {p.name for p in (out / "assets").iterdir()} >= {"view.js", "common.js", "base.css", "view.css",
                                                            "plot-accuracy.svg"}
    assert (out / "data" / "export.js").read_text().isascii()  # JSON with \\u escapes: no line separator ends a string
    code, text = run_grace("view", built / "b", "--export", out)
    assert code == 2 and "not empty" in text
    assert run_grace("view", built / "b", "--export", out, "--force")[0] == 0
    code, text = run_grace("view", built / "b", "--export", built / "b" / "site")
    assert code == 2 and "inside the run folder" in text
    code, text = run_grace("view", built / "a", built / "b", "--export", out)
    assert code == 2 and "exactly one run folder" in text


def test_view_and_compare_are_commands_and_api_names():
    assert {"view", "export_view", "compare_runs", "compare_models", "Comparison"} <= set(grace.__all__)
    code, out = run_grace("--help")
    assert code == 0 and "view" in out and "compare" in out


def test_export_force_replaces_only_its_own_files_and_keeps_edited_ones_as_bak(built, tmp_path):
    """--force into an earlier export: the user's files stay, an export file the user edited is kept as NAME.bak,
    an untouched one is replaced without a backup; the manifest lists exactly what was written, with hashes."""
    import hashlib

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    out = tmp_path / "site"
    assert run_grace("view", built / "b", "--export", out)[0] == 0
    manifest = json.loads((out / ".grace-export.json").read_text())
    files = manifest["files"]
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != ".grace-export.json"}
    assert set(files) == written and {"index.html", "data/export.js", "assets/view.js"} <= written
    assert all(files[name] == sha(out / name) for name in files)
    original_page = (out / "index.html").read_text()
    # the user's own files beside the export, and an edit to the export's page
    (out / "data" / "notes.csv").write_text("mine\n")
    (out / "assets" / "logo.txt").write_text("mine too\n")
    (out / "README.txt").write_text("read me\n")
    (out / "index.html").write_text(original_page + "<!-- my edit -->\n")
    # an earlier export of a bigger run left a data file this one does not write: its own, untouched, removed;
    # another it wrote that the user since edited is kept as .bak
    (out / "data" / "questions-9.js").write_text("old chunk\n")
    (out / "data" / "questions-8.js").write_text("old chunk, edited\n")
    manifest["files"]["data/questions-9.js"] = sha(out / "data" / "questions-9.js")
    manifest["files"]["data/questions-8.js"] = hashlib.sha256(b"old chunk\n").hexdigest()
    (out / ".grace-export.json").write_text(json.dumps(manifest))
    code, text = run_grace("view", built / "b", "--export", out, "--force")
    assert code == 0, text
    assert (out / "data" / "notes.csv").read_text() == "mine\n"
    assert (out / "assets" / "logo.txt").read_text() == "mine too\n" and (out / "README.txt").exists()
    assert (out / "index.html.bak").read_text().endswith("<!-- my edit -->\n")
    assert (out / "index.html").read_text() == original_page and "index.html.bak" in text
    assert not (out / "data" / "questions-9.js").exists() and not (out / "data" / "questions-9.js.bak").exists()
    assert not (out / "data" / "questions-8.js").exists()
    assert (out / "data" / "questions-8.js.bak").read_text() == "old chunk, edited\n"
    backups = sorted(str(p.relative_to(out)) for p in out.rglob("*.bak"))
    assert backups == ["data/questions-8.js.bak", "index.html.bak"]  # untouched export files: no backup
    files = json.loads((out / ".grace-export.json").read_text())["files"]
    assert "data/notes.csv" not in files and "data/questions-9.js" not in files
    assert all(files[name] == sha(out / name) for name in files)


def test_export_force_into_a_folder_it_never_wrote_keeps_every_file(built, tmp_path):
    """No manifest: every file at a name the export writes is the user's, kept as NAME.bak; the rest untouched."""
    out = tmp_path / "site"
    (out / "data").mkdir(parents=True)
    (out / "index.html").write_text("<p>my page</p>\n")
    (out / "data" / "export.js").write_text("my script\n")
    (out / "data" / "keep.json").write_text("{}\n")
    code, text = run_grace("view", built / "b", "--export", out)
    assert code == 2 and "not empty" in text
    code, text = run_grace("view", built / "b", "--export", out, "--force")
    assert code == 0, text
    assert (out / "index.html.bak").read_text() == "<p>my page</p>\n"
    assert (out / "data" / "export.js.bak").read_text() == "my script\n"
    assert (out / "data" / "keep.json").read_text() == "{}\n"
    assert "window.GRACE_EXPORT" in (out / "data" / "export.js").read_text()


@pytest.mark.parametrize("link", ["data", "assets", "index.html", "data/questions-0.js"])
def test_export_refuses_a_symbolic_link_out_of_the_folder(built, tmp_path, link):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "victim.txt").write_text("keep me\n")
    (elsewhere / "questions-0.js").write_text("keep me too\n")
    out = tmp_path / "site"
    out.mkdir()
    if link == "data/questions-0.js":
        (out / "data").mkdir()
    target = elsewhere / "questions-0.js" if link.endswith(".js") else elsewhere / "victim.txt" \
        if link == "index.html" else elsewhere
    (out / link).symlink_to(target)
    before = listing(elsewhere)
    code, text = run_grace("view", built / "b", "--export", out, "--force")
    assert code == 2, text
    assert "Traceback" not in text and str(out / link) in text and "outside" in text and "symbolic link" in text
    assert f"rm {out / link}" in text  # the fix
    assert listing(elsewhere) == before and sorted(p.name for p in elsewhere.iterdir()) == ["questions-0.js",
                                                                                            "victim.txt"]
    assert (out / link).is_symlink()
    # a link that stays inside the folder is followed: the export lands in it
    (out / link).unlink()
    if link in ("data", "assets"):
        (out / f"real-{link}").mkdir()
        (out / link).symlink_to(out / f"real-{link}")
        code, text = run_grace("view", built / "b", "--export", out, "--force")
        assert code == 0, text
        assert any((out / f"real-{link}").iterdir())


def test_every_page_rereads_a_run_that_gained_a_model(built, tmp_path):
    """A run gains a model while the viewer is open: Runs, Leaderboard and Questions all show it, not the report
    read at start beside a grid indexed since."""
    run = tmp_path / "runs" / "growing"
    common = ["run", "--kb", built / "kb", "--gold", built / "gold.csv", "--out", run, "-m", "baseline:top1"]
    code, out = run_grace(*common)
    assert code == 0, out
    app, indexer = open_viewer([tmp_path / "runs"], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        assert [m["model"] for m in app.runs_page()["runs"][0]["models"]] == ["baseline:top1"]
        code, out = run_grace(*common, "-m", "baseline:threshold")
        assert code == 0, out
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            app.runs["growing"].checked = 0  # as if the next page came after the recheck interval
            page = app.questions({"runs": ["growing"]})
            if len(page.get("columns", [])) == 2 and not app.runs["growing"].stale:
                break
            time.sleep(0.05)
        grid = sorted(c["model"] for c in app.questions({"runs": ["growing"]})["columns"])
        assert grid == ["baseline:threshold", "baseline:top1"]
        assert sorted(m["model"] for m in app.runs_page()["runs"][0]["models"]) == grid
        board = app.leaderboard("growing")
        assert sorted(r["model"] for r in board["rows"]) == grid
        assert sorted(m["model"] for m in board["summary"]["models"]) == grid
    finally:
        indexer.stop()


def on_other_gold(run, to):
    """A copy of ``run`` whose report names another gold set."""
    shutil.copytree(run, to)
    report = json.loads((to / "report.json").read_text())
    report["gold"]["hash"] = "f" * 16
    (to / "report.json").write_text(json.dumps(report))
    return to


def test_the_question_page_refuses_runs_scored_on_different_gold(built, tmp_path):
    """The grid and Compare refuse two runs on different gold sets; the Question page did not, and showed run B's
    answers under run A's question and gold. It refuses them by the same rule, saying how to see each."""
    other = on_other_gold(built / "b", tmp_path / "other")
    app, indexer = open_viewer([built / "a", other], tmp_path / "cache", child=False)
    try:
        indexer.wait(60)
        with pytest.raises(Exception, match="different gold sets") as refused:
            app.question("a,other", "q1")
        assert "runs=a" in str(refused.value) and "runs=other" in str(refused.value)
        assert app.question("other", "q1")["runs"][0]["run"] == "other"  # each run alone still opens
        assert [r["run"] for r in app.question("a", "q1")["runs"]] == ["a"]
    finally:
        indexer.stop()
    # over HTTP: a 400 with the reason, not a page
    httpd_app, indexer = open_viewer([built / "a", other], tmp_path / "cache", child=False)
    try:
        indexer.wait(60)
        httpd = make_server(httpd_app, "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        try:
            status, body, _ = get(httpd.server_address[1], "/api/question?runs=a,other&id=q1")
            assert status == 400 and "different gold sets" in json.loads(body)["error"]
        finally:
            httpd.shutdown()
            httpd.server_close()
    finally:
        indexer.stop()


def test_compare_page_and_grid_note_a_run_in_progress(built, tmp_path):
    """The viewer's Compare page says what grace compare says of a run still being written or not yet scored."""
    run = tmp_path / "runs" / "today"
    shutil.copytree(built / "b", run)
    app, indexer = open_viewer([built / "a", run], tmp_path / "cache", child=False)
    try:
        assert indexer.wait(60)
        assert app.compare("a", "today", "", "")["notices"] == []
        (run / ".grace.lock").write_text(f"pid {os.getpid()}, 'grace run --out today', since now\n")
        notices = app.compare("a", "today", "", "")["notices"]
        assert len(notices) == 1 and notices[0].startswith("run B (today)") and "being written now" in notices[0]
        (run / ".grace.lock").write_text("")
        with (run / "responses.jsonl").open("a", encoding="utf-8") as fh:  # an answer the scores do not hold
            fh.write((run / "responses.jsonl").read_text(encoding="utf-8").splitlines()[-1] + "\n")
        notices = app.compare("a", "today", "", "")["notices"]
        assert len(notices) == 1 and "not scored yet" in notices[0] and "grace score" in notices[0]
        assert any("not scored yet" in n for n in app.questions({"runs": ["today"]})["notices"])
    finally:
        indexer.stop()
