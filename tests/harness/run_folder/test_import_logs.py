"""grace import-logs: a production audit log into a run folder that score, report, view, compare and spotcheck read.

The logs are generated here with what each answer did (right article, wrong one, refusal, invalid or unshown ID,
failed call) known in advance, so the outcome counts are checked against the generator, not against grace.
"""

from __future__ import annotations

import json
import random
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.run_folder.audit_log import GoldMatcher, field_map, normalise_question, read_audit_log
from kb_builder.gold import load_gold
from tests.conftest import SAMPLE, run_grace, write

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

GOLD = SAMPLE / "gold.csv"
REFUSAL = "I don't have enough information to answer this question."
MODELS = ("bot-a", "bot-b", "bot-c")


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    kb = tmp_path_factory.mktemp("import-kb") / "kb"
    code, out = run_grace("kb", "build", SAMPLE / "handbook", "--out", kb)
    assert code == 0, out
    return kb


@pytest.fixture(scope="module")
def kb_ids(kb) -> list[str]:
    return [json.loads(line)["id"] for line in (kb / "articles.jsonl").read_text(encoding="utf-8").splitlines()]


@dataclass
class Log:
    """A generated log and what grace should make of it."""

    path: Path
    malformed: dict[int, str] = field(default_factory=dict)  # line -> a word the problem must name
    unmatched: list[int] = field(default_factory=list)
    matched: dict[int, str] = field(default_factory=dict)  # line -> gold question ID
    by_id: int = 0
    outcomes: dict[str, Counter] = field(default_factory=dict)  # model -> outcome -> count (with gold)
    unlabelled: dict[str, Counter] = field(default_factory=dict)  # the same, as judged without labels
    latency: dict[str, list[float]] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    records: dict[int, dict] = field(default_factory=dict)  # line -> the record written


def variant(text: str, rnd: random.Random) -> str:
    """The same question as another user typed it: case, spacing, punctuation, full-width letters."""
    kind = rnd.randrange(5)
    if kind == 0:
        return text.upper()
    if kind == 1:
        return "  " + text.replace(" ", "   ") + " "
    if kind == 2:
        return text.rstrip("?.!") + " ?!"
    if kind == 3:  # full-width Latin letters, as a phone keyboard in Japanese mode types them (NFKC folds them)
        head, _, tail = text.partition(" ")
        return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalpha() else c for c in head) + " " + tail
    return text


def make_log(path: Path, n: int, kb_ids: list[str], seed: int = 0, *, nested: bool = False) -> Log:
    """``n`` lines: about 1% malformed (four kinds), 2% asking no gold question, the rest gold questions (a third
    by ID, the others by their text spelled differently), answered right, wrongly, by a refusal, with an invalid or
    unshown ID, or not at all (a failed call)."""
    rnd = random.Random(seed)
    gold = load_gold(GOLD).questions
    log = Log(path, outcomes={m: Counter() for m in MODELS}, unlabelled={m: Counter() for m in MODELS},
              latency={m: [] for m in MODELS}, cost={m: 0.0 for m in MODELS})
    lines = []
    for line in range(1, n + 1):
        if line % 97 == 0:
            kind = (line // 97) % 4
            text, word = [("{not json", "JSON"), (json.dumps({"answer": "no question here"}), "question"),
                          (json.dumps({"question": "how long is parental leave", "answer": "x",
                                       "latency_ms": "fast"}), "latency_ms"),
                          (json.dumps({"question": ["a", "list"], "answer": "x"}), "question")][kind]
            lines.append(text)
            log.malformed[line] = word
            continue
        model = MODELS[rnd.randrange(3)]
        if line % 50 == 0:
            q, qtext = None, f"something no gold question asks, number {line}"
            log.unmatched.append(line)
        else:
            q = rnd.choice(gold)
            qtext = variant(q.question, rnd)
            log.matched[line] = q.question_id
        rec: dict = {"question": qtext, "model": model, "user": f"user{line % 13}", "user_groups": "staff; emea",
                     "prompt_hash": f"p{line % 5}", "timestamp": f"2026-03-01T10:{line % 60:02d}:00Z",
                     "latency_ms": float(100 + line % 900), "input_tokens": 800 + line % 50, "output_tokens": 60,
                     "cost_usd": 0.001}
        if q is not None and rnd.random() < 1 / 3:
            rec["question_id"] = q.question_id
            log.by_id += 1
        others = [a for a in kb_ids if q is None or a not in q.expected_citations]
        roll = rnd.random()
        if q is not None and q.must_refuse:
            kind = "refuse" if roll < 0.7 else "answer_anyway"
        else:
            kind = ("right" if roll < 0.55 else "wrong" if roll < 0.7 else "refuse" if roll < 0.8 else
                    "invalid" if roll < 0.87 else "unshown" if roll < 0.94 else "error")
        right = q.expected_citations[0] if q is not None and q.expected_citations else others[0]
        shown = [right, *rnd.sample(others, 2)] if kind == "right" else rnd.sample(others, 3)
        cite = {"right": right, "wrong": shown[0], "answer_anyway": shown[0], "invalid": "no-such-article",
                "unshown": next(a for a in others if a not in shown)}.get(kind)
        rec["retrieved_ids"] = shown
        if kind == "error":
            rec["error"] = "upstream timeout after 30 s"
        elif kind == "refuse":
            rec["answer"], rec["citations"] = REFUSAL, []
        else:
            rec["answer"], rec["citations"] = f"Here is what the handbook says. [ID: {cite}]", [cite]
        with_gold = {"right": "correct", "wrong": "wrong_citation", "answer_anyway": "answered_unanswerable",
                     "invalid": "invalid_citation", "unshown": "unshown_citation", "error": "error",
                     "refuse": "correct_refusal" if q is not None and q.must_refuse else "false_refusal"}[kind]
        without = {"right": "unjudged_citation", "wrong": "unjudged_citation", "answer_anyway": "unjudged_citation",
                   "invalid": "invalid_citation", "unshown": "unshown_citation", "error": "error",
                   "refuse": "refusal"}[kind]
        if q is not None:
            log.outcomes[model][with_gold] += 1
        log.unlabelled[model][without] += 1
        log.latency[model].append(rec["latency_ms"])
        log.cost[model] += rec["cost_usd"]
        log.records[line] = rec
        lines.append(json.dumps(_nest(rec) if nested else rec, ensure_ascii=False))
    write(path, "\n".join(lines) + "\n")
    return log


def _nest(rec: dict) -> dict:
    """The record as another team's logger writes it: other names, nested objects, citations as objects."""
    out = {"ts": rec["timestamp"], "request": {"query": rec["question"], "user": {"id": rec["user"]}},
           "response": {"text": rec.get("answer"), "sources": [{"doc": c} for c in rec.get("citations") or []]},
           "llm": rec["model"], "retrieval": {"hits": rec["retrieved_ids"]}, "ms": str(rec["latency_ms"])}
    if "error" in rec:
        out["failure"] = rec["error"]
    return out


# The generated logs cite KB article IDs ("[ID: 17]", citations ["17"]): read as GRACE reads them, one per answer
# (import-logs' default reads a system's own references, several per answer: tests/harness/runner/test_citation_settings)
AS_IDS = ("--citations", "single", "--reads", "ids")


def responses(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "responses.jsonl").read_text(encoding="utf-8").splitlines()]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- the acceptance test -------------------------------------------------------------------------------------------
def test_ten_thousand_records_import_score_and_report(kb, kb_ids, tmp_path):
    log = make_log(tmp_path / "logs.jsonl", 10_000, kb_ids)
    run = tmp_path / "run"
    start = time.perf_counter()
    code, out = run_grace("import-logs", log.path, "--kb", kb, "--gold", GOLD, "--out", run, *AS_IDS)
    took = time.perf_counter() - start
    assert code == 0, out
    assert took < 20, took  # a few seconds on a laptop core

    # every line is imported, malformed or unmatched: nothing else is lost
    n_malformed, n_unmatched = len(log.malformed), len(log.unmatched)
    assert len(log.matched) + n_malformed + n_unmatched == 10_000
    assert f"imported {len(log.matched):,} of 10,000 records" in out
    assert f"{n_malformed} malformed line(s)" in out and f"{n_unmatched} record(s) match no gold question" in out
    malformed = jsonl(run / "malformed.jsonl")
    assert [m["line"] for m in malformed] == sorted(log.malformed)
    for m in malformed:
        assert log.malformed[m["line"]] in m["problem"], m
    for line in sorted(log.malformed)[:20]:  # the first ones are printed with file and line
        assert f"{log.path}:{line}: " in out
    assert [u["line"] for u in jsonl(run / "unmatched.jsonl")] == log.unmatched
    assert jsonl(run / "unmatched.jsonl")[0]["record"]["question"].startswith("something no gold question asks")
    rows = responses(run)
    assert sorted(r["log_line"] for r in rows) == sorted(log.matched)
    assert all(r["question_id"] == log.matched[r["log_line"]] for r in rows)

    # a row keeps what the log said, in the run folder's own fields
    row = next(r for r in rows if "error" not in log.records[r["log_line"]])
    rec = log.records[row["log_line"]]
    assert row["system_retrieved"] == row["retrieved_ids"] == rec["retrieved_ids"]
    assert row["citations"] == rec["citations"] and row["response"] == rec["answer"]
    assert (row["user"], row["user_groups"], row["prompt_hash"]) == (rec["user"], ["staff", "emea"], rec["prompt_hash"])
    assert (row["latency_ms"], row["input_tokens"], row["cost_usd"], row["created_at"]) == (
        rec["latency_ms"], rec["input_tokens"], rec["cost_usd"], rec["timestamp"])
    failed = next(r for r in rows if "error" in log.records[r["log_line"]])
    assert failed["error"]["message"] == "upstream timeout after 30 s" and failed["response"] is None
    # several answers to one question by one model are its repeats, numbered in log order
    seen = Counter((r["model"], r["question_id"]) for r in rows)
    assert max(seen.values()) > 1
    for (model, qid), k in list(seen.items())[:50]:
        mine = sorted((r["log_line"], r["repeat"]) for r in rows if r["model"] == model and r["question_id"] == qid)
        assert [rep for _, rep in mine] == list(range(k))

    # scored as usual: each model's outcomes are the generator's
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert set(report["models"]) == set(MODELS)
    for model in MODELS:
        m = report["models"][model]
        assert m["n"] == sum(log.outcomes[model].values())
        assert {k: v for k, v in m["outcomes"].items() if v} == dict(log.outcomes[model]), model
        hits = log.outcomes[model]["correct"] + log.outcomes[model]["correct_refusal"]
        assert m["accuracy"] == round(hits / m["n"], 6)
        assert m["cost"]["total_usd"] == pytest.approx(sum(log.records[r["log_line"]]["cost_usd"] for r in rows
                                                           if r["model"] == model))
        assert "refusal_rate" not in m and "refusal" not in m["outcomes"]  # a gold run's report is as it was
    assert "unlabelled" not in report
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert info["imported"]["records"] == 10_000 and info["imported"]["malformed"] == n_malformed
    assert info["imported"]["unmatched"] == n_unmatched and info["imported"]["matched_by_id"] == log.by_id
    assert info["imported"]["matched_by_text"] == len(log.matched) - log.by_id
    assert [m["name"] for m in info["models"]] == sorted(MODELS)
    assert {name: r["rows"] for name, r in info["rows"].items()} == {m: report["models"][m]["n"] for m in MODELS}

    # the reports exist and hold the counts
    md = (run / "leaderboard.md").read_text(encoding="utf-8")
    html = (run / "report.html").read_text(encoding="utf-8")
    for model in MODELS:
        n = report["models"][model]["n"]
        assert model in md and model in html
        assert f"| {n:,} |" in md and f"{n:,}" in html


def test_the_viewer_and_compare_read_two_imports(kb, kb_ids, tmp_path):
    from harness.viewer import open_viewer
    from harness.workflows.compare import compare_runs

    runs = []
    for seed in (1, 2):
        log = make_log(tmp_path / f"logs{seed}.jsonl", 600, kb_ids, seed)
        runs.append(tmp_path / f"run{seed}")
        code, out = run_grace("import-logs", log.path, "--kb", kb, "--gold", GOLD, "--out", runs[-1])
        assert code == 0, out

    code, out = run_grace("compare", *runs)
    assert code == 0, out
    assert all(m in out for m in MODELS)
    comparison = compare_runs(*runs)
    assert comparison.gold_hash == load_gold(GOLD).hash
    for model in MODELS:
        both = set.intersection(*({r["question_id"] for r in responses(run) if r["model"] == model} for run in runs))
        assert comparison[model].n_questions == len(both)
        assert set(comparison[model].improved) | set(comparison[model].regressed) <= both

    app, indexer = open_viewer(runs, tmp_path / "view-cache", child=False)
    try:
        assert indexer.wait(60)
        listed = app.get("/api/runs", {})["runs"]
        assert [r["state"] for r in listed] == ["ready", "ready"]
        assert {m["model"] for m in listed[0]["models"]} == set(MODELS)
        board = app.get("/api/leaderboard", {"run": [listed[0]["id"]]})
        assert {r["model"] for r in board["rows"]} == set(MODELS)
        grid = app.get("/api/questions", {"runs": [listed[0]["id"]]})
        assert grid["rows"]
        qid = grid["rows"][0]["id"]
        page = app.get("/api/question", {"runs": [listed[0]["id"]], "id": [qid]})
        assert page["question"] == next(q.question for q in load_gold(GOLD).questions if q.question_id == qid)
        compared = app.get("/api/compare", {"a": [listed[0]["id"]], "b": [listed[1]["id"]], "ma": [""], "mb": [""]})
        assert compared
    finally:
        indexer.stop()


# -- the field mapping ---------------------------------------------------------------------------------------------
def test_a_log_with_other_names_is_read_through_the_mapping(kb, kb_ids, tmp_path):
    log = make_log(tmp_path / "nested.jsonl", 300, kb_ids, 3, nested=True)
    toml = write(tmp_path / "mapping.toml", 'question = "request.query"\nanswer = "response.text"\n'
                                            '[fields]\nmodel = "llm"\nuser = "request.user.id"\n')
    run = tmp_path / "run"
    code, out = run_grace("import-logs", log.path, "--kb", kb, "--gold", GOLD, "--out", run, *AS_IDS, "--mapping", toml,
                          "--map", "citations=response.sources[*].doc", "--map", "retrieved_ids=retrieval.hits",
                          "--map", "latency_ms=ms", "--map", "timestamp=ts", "--map", "error=failure")
    assert code == 0, out
    rows = {r["log_line"]: r for r in responses(run)}
    assert set(rows) == set(log.matched)
    for line, row in rows.items():
        rec = log.records[line]
        assert row["model"] == rec["model"] and row["user"] == rec["user"]
        assert row["retrieved_ids"] == rec["retrieved_ids"] and row["latency_ms"] == rec["latency_ms"]
        assert row.get("citations") == (None if "error" in rec else rec["citations"])  # absent unless set
        assert row["created_at"] == rec["timestamp"]
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert info["imported"]["fields"]["citations"] == "response.sources[*].doc"
    assert info["imported"]["fields"]["user"] == "request.user.id"  # from the TOML's [fields] table
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    for model in MODELS:
        assert {k: v for k, v in report["models"][model]["outcomes"].items() if v} == dict(log.outcomes[model])


def test_mapping_mistakes_are_named_before_anything_is_written(kb, tmp_path):
    logs = write(tmp_path / "l.jsonl", json.dumps({"q": "hi", "a": "x"}) + "\n")
    code, out = run_grace("import-logs", logs, "--kb", kb, "--out", tmp_path / "r1", "--map", "questoin=q")
    assert code == 2 and "'questoin' is not a field of a log record" in out and "question_id" in out
    code, out = run_grace("import-logs", logs, "--kb", kb, "--out", tmp_path / "r2", "--map", "answer=a[")
    assert code == 2 and "not a JMESPath expression" in out
    code, out = run_grace("import-logs", logs, "--kb", kb, "--out", tmp_path / "r3", "--map", "answer")
    assert code == 2 and "FIELD=PATH" in out
    bad = write(tmp_path / "m.toml", "question = 3\n")
    code, out = run_grace("import-logs", logs, "--kb", kb, "--out", tmp_path / "r4", "--mapping", bad)
    assert code == 2 and "question must be a path" in out
    assert not any((tmp_path / f"r{i}").exists() for i in range(1, 5))
    # unmapped, every line lacks its question: nothing imported, exit 2, and the lines are listed
    code, out = run_grace("import-logs", logs, "--kb", kb, "--out", tmp_path / "r5")
    assert code == 2 and "nothing imported: 1 malformed line(s)" in out and "Traceback" not in out
    assert jsonl(tmp_path / "r5" / "malformed.jsonl")[0]["problem"].startswith("no question at 'question'")


def test_record_types_are_read_leniently_where_safe_and_refused_where_not(tmp_path):
    logs = write(tmp_path / "l.jsonl", "\n".join(json.dumps(r) for r in [
        {"question": "q1", "answer": "a", "retrieved_ids": [12, "13"], "citations": "12; 13", "input_tokens": "40"},
        {"question": "q2", "answer": "a", "input_tokens": -1},
        {"question": "q3"},
        {"question": "q4", "error": "boom"},
        {"question": "   ", "answer": "a"},
        {"question": "q6", "answer": "a", "latency_ms": True},
    ]) + "\n\n")
    lines = list(read_audit_log(logs, field_map()))
    assert [x.line for x in lines] == [1, 2, 3, 4, 5, 6]  # the blank line is no record
    first = lines[0].record
    assert (first.retrieved_ids, first.citations, first.input_tokens) == (["12", "13"], ["12", "13"], 40)
    assert "input_tokens" in lines[1].problem.problem and "greater than or equal to 0" in lines[1].problem.problem
    assert lines[2].problem.problem == "no answer, and no error saying why"
    assert lines[3].record.error == "boom" and lines[3].record.answer is None
    assert "empty" in lines[4].problem.problem
    assert "latency_ms" in lines[5].problem.problem


# -- matching questions by text ------------------------------------------------------------------------------------
def test_questions_match_by_id_first_then_by_normalised_text():
    assert normalise_question("  What's the PER-DIEM?? ") == normalise_question("what s the per diem")
    assert normalise_question("ｈｏｗ many ﬁles") == "how many files"  # full-width letters, the fi ligature (NFKC)
    composed, decomposed = "café", unicodedata.normalize("NFD", "café")
    assert composed != decomposed and normalise_question(composed) == normalise_question(decomposed)
    assert normalise_question("Straße") == normalise_question("STRASSE")  # case folding, not lower()

    from harness.run_folder.audit_log import AuditRecord
    from kb_builder.gold import GoldQuestion

    gold = [GoldQuestion("a", "How long is parental leave?", ["2"]), GoldQuestion("b", "Where do I book flights?", ["3"]),
            GoldQuestion("c", "Where do I book flights", ["4"])]
    match = GoldMatcher(gold).match
    assert match(AuditRecord(question="HOW LONG is  parental leave", answer="x")) == ("a", "text")
    assert match(AuditRecord(question="something else", question_id="b", answer="x")) == ("b", "id")
    qid, why = match(AuditRecord(question="where do i book flights!", answer="x"))
    assert qid is None and "matches 2 gold questions (b, c)" in why
    qid, why = match(AuditRecord(question="who are you", question_id="zz", answer="x"))
    assert qid is None and "'zz'" in why


# -- without gold --------------------------------------------------------------------------------------------------
def test_without_gold_the_figures_that_need_no_label_are_reported(kb, kb_ids, tmp_path):
    log = make_log(tmp_path / "logs.jsonl", 1_000, kb_ids, 5)
    run = tmp_path / "run"
    code, out = run_grace("import-logs", log.path, "--kb", kb, "--out", run, *AS_IDS)
    assert code == 0, out
    assert "No labels, so no accuracy" in out
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert report["unlabelled"]["absent"][:3] == ["rank", "significance_group", "accuracy"]
    assert report["pairwise"] == [] and report["leaderboard"] == sorted(MODELS)
    for model in MODELS:
        m, want = report["models"][model], log.unlabelled[model]
        assert m["accuracy"] is None and m["rank"] is None and m["macro_f1"] is None and m["retrieval"] is None
        assert m["refusal"] == {"should_refuse_did": None, "should_answer_did": None, "calibration": None}
        assert {k: v for k, v in m["outcomes"].items() if v} == +want
        assert {"refusal", "unjudged_citation", "invalid_citation", "unshown_citation"} <= set(m["outcomes"])
        assert not set(m["outcomes"]) & {"correct", "correct_refusal", "false_refusal", "wrong_citation",
                                         "answered_unanswerable"}  # outcomes that need a label are not listed
        n = sum(want.values())
        assert m["invalid_citation_rate"] == round(want["invalid_citation"] / n, 6)
        assert m["unshown_citation_rate"] == round(want["unshown_citation"] / n, 6)
        assert m["refusal_rate"] == round(want["refusal"] / (n - want["error"]), 6)
        latencies = sorted(log.latency[model])
        assert m["latency"]["p50_ms"] == pytest.approx(float(__import__("numpy").percentile(latencies, 50)))
        assert m["cost"]["total_usd"] == pytest.approx(log.cost[model])
        assert m["cost"]["input_tokens"] > 0
    md = (run / "leaderboard.md").read_text(encoding="utf-8")
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "No labels, so no accuracy" in md and "No labels, so no accuracy" in html
    rates = ", ".join(f"{m} {report['models'][m]['refusal_rate']:.1%}" for m in MODELS)
    assert f"Refusal rate (refused of the answered calls): {rates}" in md
    # the questions the logs asked, ready to label; the viewer shows their text
    questions = (run / "questions.csv").read_text(encoding="utf-8").splitlines()
    assert questions[0] == "question_id,question,expected_answer,expected_citations,must_refuse,notes"
    assert len(questions) - 1 == report["gold"]["n_questions"]
    # the spot-check runs on them (the answers citing one shown article), with the offline judge
    code, out = run_grace("spotcheck", "run", run, "--kb", kb, "--judge", "baseline:lexical", "--sample", "4")
    assert code == 0, out
    spot = json.loads((run / "spotcheck.json").read_text(encoding="utf-8"))
    assert all(spot["models"][m]["n"] == 4 for m in MODELS), spot["models"]


def test_reimporting_into_a_run_folder_needs_force(kb, kb_ids, tmp_path):
    first = make_log(tmp_path / "first.jsonl", 200, kb_ids, 7)
    second = make_log(tmp_path / "second.jsonl", 150, kb_ids, 8)
    run = tmp_path / "run"
    assert run_grace("import-logs", first.path, "--kb", kb, "--gold", GOLD, "--out", run)[0] == 0
    before = (run / "responses.jsonl").read_bytes()
    code, out = run_grace("import-logs", second.path, "--kb", kb, "--gold", GOLD, "--out", run)
    assert code == 2 and "already holds a run (responses.jsonl)" in out and "--force" in out
    assert (run / "responses.jsonl").read_bytes() == before
    code, out = run_grace("import-logs", second.path, "--kb", kb, "--gold", GOLD, "--out", run, "--force")
    assert code == 0, out
    assert (run / "responses.jsonl.bak").read_bytes() == before
    assert sorted(r["log_line"] for r in responses(run)) == sorted(second.matched)
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert info["imported"]["records"] == 150 and info["imported"]["path"] == str(second.path)
    # without gold into the same folder: the gold run's unmatched.jsonl goes, questions.csv comes
    code, out = run_grace("import-logs", second.path, "--kb", kb, "--out", run, "--force")
    assert code == 0, out
    assert not (run / "unmatched.jsonl").exists() and (run / "questions.csv").exists()
    # the log is never written over: --out may not be the folder it sits in under a name the import writes
    inside = write(run / "malformed.jsonl", (tmp_path / "first.jsonl").read_text(encoding="utf-8"))
    code, out = run_grace("import-logs", inside, "--kb", kb, "--out", run, "--force")
    assert code == 2 and "where this command writes" in out


def test_force_replacing_a_run_drops_what_was_derived_from_the_old_one(kb, kb_ids, tmp_path):
    """Issue 37.13: a spot-check (and every other file made from the old run's answers) goes with the run it
    checked; the new run's report names only its own models."""
    first = make_log(tmp_path / "first.jsonl", 120, kb_ids, 7)
    run = tmp_path / "run"
    assert run_grace("import-logs", first.path, "--kb", kb, "--gold", GOLD, "--out", run)[0] == 0
    code, out = run_grace("spotcheck", "run", run, "--kb", kb, "--judge", "baseline:lexical", "--sample", "4")
    assert code == 0, out
    assert (run / "spotcheck.json").exists() and (run / "spotcheck" / "claims.jsonl").exists()
    gold = load_gold(GOLD).questions
    second = tmp_path / "second.jsonl"
    write(second, "".join(json.dumps({"question": q.question, "question_id": q.question_id, "model": "new-bot",
                                      "answer": REFUSAL, "citations": []}) + "\n" for q in gold[:10]))
    code, out = run_grace("import-logs", second, "--kb", kb, "--gold", GOLD, "--out", run, "--force")
    assert code == 0, out
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert list(report["models"]) == ["new-bot"]
    assert report.get("spotcheck") is None, report["spotcheck"]
    for name in ("spotcheck.json", "spotcheck/claims.jsonl", "spotcheck_claims_review.csv"):
        assert not (run / name).exists(), name
    assert "bot-a" not in (run / "report.html").read_text(encoding="utf-8")
    code, out = run_grace("report", run)
    assert code == 0 and "bot-a" not in out, out


# -- inputs of any size or shape (issue 37) --------------------------------------------------------------------------
def _traced_peak(*args) -> int:
    """The peak of memory Python allocated (tracemalloc: numpy's arrays too) while ``grace`` ran ``args``."""
    import tracemalloc

    tracemalloc.start()
    try:
        code, out = run_grace(*args)
        assert code == 0, out
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_records(kb, kb_ids, tmp_path):
    """A 200 MB log peaked at 1.71 GB, a 2 GB one died of MemoryError: every row was held, with the malformed and
    unmatched lines and a second copy read back for run.json. Read a line at a time, the import's memory is what it
    holds per question and model plus a few compact columns per row (the scorer's), however many records: four
    times the records cost under 3 KB per added record (1.3 KB measured, most of it the scorer's line buffer, which
    stops growing at 20,000 rows); holding every row cost 7.6 KB each."""
    small, large = make_log(tmp_path / "small.jsonl", 1_000, kb_ids, 1), make_log(tmp_path / "large.jsonl", 4_000, kb_ids, 2)
    peaks = [_traced_peak("import-logs", log.path, "--kb", kb, "--gold", GOLD, "--out", tmp_path / name,
                          "--bootstrap", "0") for log, name in ((small, "small"), (large, "large"))]
    per_record = (peaks[1] - peaks[0]) / 3_000
    assert per_record < 3_000, (peaks, per_record)


def test_rows_are_put_in_order_a_slice_of_the_order_at_a_time(kb, kb_ids, tmp_path, monkeypatch):
    """A 2 GB log's order was a sort of every row's keys in memory (28 bytes a row, and the sort's copies). The keys
    go to a file instead and the order is put in place a slice of whole (model, repeat) groups at a time: slices of
    50 rows give the file one slice gives, in grace run's order (models by name, then repeat, then the gold file's
    question order), each model's answers to a question numbered as the log has them."""
    import harness.workflows.import_logs as workflow

    log = make_log(tmp_path / "log.jsonl", 2_000, kb_ids, 4)
    files = []
    for name, rows in (("one", workflow.SLICE_ROWS), ("sliced", 50)):
        monkeypatch.setattr(workflow, "SLICE_ROWS", rows)
        code, out = run_grace("import-logs", log.path, "--kb", kb, "--gold", GOLD, "--out", tmp_path / name,
                              "--bootstrap", "0")
        assert code == 0, out
        files.append((tmp_path / name / "responses.jsonl").read_bytes())
    assert files[1] == files[0]
    rows = [json.loads(line) for line in files[0].splitlines()]
    order = {g.question_id: i for i, g in enumerate(load_gold(GOLD).questions)}
    keys = [(r["model"], r["repeat"], order[r["question_id"]]) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys) == len(log.matched)
    numbered: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in rows:
        numbered.setdefault((r["model"], r["question_id"]), []).append((r["log_line"], r["repeat"]))
    assert max(len(v) for v in numbered.values()) > 5
    for answers in numbered.values():
        assert [repeat for _, repeat in sorted(answers)] == list(range(len(answers)))


def test_hostile_lines_are_set_aside_with_their_line_never_a_crash(kb, tmp_path):
    """A 100,000-deep line aborted the import (RecursionError), input_tokens 10**30 crashed scoring (OverflowError),
    a line as long as the file was read whole. Each is now a malformed line with its number and what is wrong, and
    the rest is imported and scored."""
    good = {"question": "How many days of parental leave do I get?", "answer": "Twenty. [ID: x]", "model": "bot"}
    deep = 100_000
    lines = [
        json.dumps(good),                                                     # 1
        '{"question": "q", "answer": ' + "[" * deep + "]" * deep + "}",       # 2 deeper than any parser goes
        json.dumps({**good, "meta": _nested(300)}),                           # 3 readable, but deeper than 100
        json.dumps({**good, "input_tokens": 10**30}),                         # 4 no column holds it
        json.dumps({**good, "output_tokens": -5}),                            # 5
        json.dumps({**good, "latency_ms": float("nan")}),                     # 6 written as NaN
        json.dumps({**good, "cost_usd": float("inf")}),                       # 7 written as Infinity
        json.dumps({**good, "input_tokens": "812"}),                          # 8 a number as a string: read
        json.dumps({**good, "input_tokens": "lots"}),                         # 9
        json.dumps({**good, "answer": "x" * (5 << 20)}),                      # 10 over the 4 MB default
        json.dumps({**good, "model": "other", "meta": _nested(90)}),          # 11 deep, within the limit
    ]
    log = write(tmp_path / "hostile.jsonl", "\n".join(lines) + "\n")
    code, out = run_grace("import-logs", log, "--kb", kb, "--out", tmp_path / "run")
    assert code == 0, out
    assert "imported 3 of 11 records" in out and "Traceback" not in out
    problems = {m["line"]: m["problem"] for m in jsonl(tmp_path / "run" / "malformed.jsonl")}
    assert sorted(problems) == [2, 3, 4, 5, 6, 7, 9, 10]
    assert "nested too deeply" in problems[2] and "nested deeper than 100 levels" in problems[3]
    assert problems[4].startswith("input_tokens: Input should be less than or equal to 1000000000000")
    assert problems[5].startswith("output_tokens: Input should be greater than or equal to 0")
    assert problems[6].startswith("latency_ms: Input should be a finite number")
    assert problems[7].startswith("cost_usd: Input should be a finite number")
    assert problems[9].startswith("input_tokens: Input should be a valid integer")
    assert problems[10].startswith(f"the line is {len(lines[9]):,} bytes, longer than the limit of 4,194,304 (4 MB)")
    assert "--max-line-mb" in problems[10]
    for line in problems:  # each printed as FILE:LINE
        assert f"{log}:{line}: " in out
    kept = jsonl(tmp_path / "run" / "malformed.jsonl")
    assert all(len(m["text"]) <= 10_000 for m in kept)  # a long line is kept as its start, not whole
    rows = responses(tmp_path / "run")
    assert sorted(r["log_line"] for r in rows) == [1, 8, 11]
    assert next(r for r in rows if r["log_line"] == 8)["input_tokens"] == 812
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert report["responses"]["n"] == 3

    # the limit is the user's to raise: the long line is read
    code, out = run_grace("import-logs", log, "--kb", kb, "--out", tmp_path / "raised", "--max-line-mb", "6")
    assert code == 0, out
    assert 10 in {r["log_line"] for r in responses(tmp_path / "raised")}


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_a_responses_file_with_a_count_no_column_holds_is_a_clear_error(kb, tmp_path):
    """``grace score`` of a hand-made responses file: input_tokens 10**30 was an OverflowError traceback; it is an
    error naming the file, line and field. A NaN or infinite cost or latency (a pipeline that divided by zero) is
    read as not known."""
    from kb_builder.gold import load_gold

    q = load_gold(GOLD).questions[0].question_id
    row = {"question_id": q, "model": "m", "response": "I don't know."}
    path = write(tmp_path / "run" / "responses.jsonl",
                 json.dumps({**row, "cost_usd": float("nan"), "latency_ms": float("inf")}) + "\n"
                 + json.dumps({**row, "repeat": 1, "input_tokens": 10**30}) + "\n")
    code, out = run_grace("score", path, "--gold", GOLD, "--kb", kb)
    assert code != 0 and "Traceback" not in out
    assert f"{path}:2: 'input_tokens' must be a whole number from 0 to 1,000,000,000,000 or null" in out
    write(path, json.dumps({**row, "cost_usd": float("nan"), "latency_ms": float("inf")}) + "\n")
    code, out = run_grace("score", path, "--gold", GOLD, "--kb", kb)
    assert code == 0, out
    model = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))["models"]["m"]
    assert model["n"] == 1 and model["cost"]["total_usd"] in (None, 0)
