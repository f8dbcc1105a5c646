"""Reports from a hand-built scored run: files, tables, plots, and escaping of untrusted text."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli.app import main
from harness.core.errors import GraceError
from harness.reports import write_reports
from harness.reports.failures import sample_failures
from harness.reports.heatmap import top_labels
from harness.reports.inputs import load_inputs
from harness.reports.plots import pareto_front
from kb_builder.kb_records import Article, kb_content_hash

XSS_SCRIPT = "<script>window.__pwned = 1</script>"
XSS_IMG = '<img src=x onerror="window.__pwned = 1">'
OUTCOMES = ["correct", "correct_refusal", "false_refusal", "invalid_citation", "unshown_citation",
            "answered_unanswerable", "no_citation", "multiple_citations", "wrong_citation", "error"]

ARTICLES = {
    "1": "Opening hours", "2": "Refund policy", "3": "Shipping times", "4": "Password reset",
    "5": "Account deletion", "6": f"Gift cards {XSS_IMG}", "7": "Student discount", "8": "Warranty",
}
# question_id -> (question, expected article or None for must_refuse)
GOLD = {
    "q1": ("When do you open?", "1"), "q2": ("Can I get my money back?", "2"), "q3": ("How long is delivery?", "3"),
    "q4": ("I forgot my password", "4"), "q5": ("Delete my account", "5"), "q6": ("Do gift cards expire?", "6"),
    "q7": ("Is there a student price?", "7"), "q8": ("How long is the warranty?", "8"),
    "q9": ("Refund after 60 days? <b>bold</b>", "2"), "q10": ("Who is the CEO?", None),
    "q11": ("What is the weather?", None),
}


def _answer(qid: str, label: str) -> tuple[str, list[str], bool]:
    """A response text for the predicted label: an article ID, REFUSE, none, or an invalid ID."""
    if label == "REFUSE":
        return "I don't have enough information to answer this question.", [], True
    if label == "none":
        return "The answer is probably yes.", [], False
    return f"Per the policy, see [ID: {label}].", [label], False


# model -> (repeats, {question_id: predicted label}); unlisted questions are answered correctly
PLAN = {
    "acme/large": (1, {"q9": "3", "q6": "99"}),
    "cheap-mini": (2, {"q2": "3", "q9": "3", "q10": "1", "q4": "REFUSE", "q7": "none"}),
    "local-llama": (1, {"q2": "REFUSE", "q3": "2", "q9": "REFUSE", "q6": "6", "q8": "ERROR", "q11": "7"}),
}
MALICIOUS = ("local-llama", "q3")


def _outcome(expected: str | None, label: str, valid: set[str]) -> str:
    if label == "ERROR":
        return "error"
    if expected is None:
        return "correct_refusal" if label == "REFUSE" else (
            "no_citation" if label == "none" else "answered_unanswerable")
    if label == "REFUSE":
        return "false_refusal"
    if label == "none":
        return "no_citation"
    if label not in valid:
        return "invalid_citation"
    return "correct" if label == expected else "wrong_citation"


def _score_rows(kb_ids: set[str]) -> tuple[list[dict], list[dict]]:
    scores, responses = [], []
    for model, (repeats, wrong) in PLAN.items():
        for repeat in range(repeats):
            for qid, (_, expected) in GOLD.items():
                gold_label = expected or "REFUSE"
                label = wrong.get(qid, gold_label) if repeat == 0 or qid != "q9" else gold_label
                text, cited, refused = _answer(qid, "none" if label == "ERROR" else label)
                if (model, qid) == MALICIOUS:
                    text = f"Delivery takes 3 days {XSS_SCRIPT} {XSS_IMG} \ud800 [ID: {label}]"  # + a lone surrogate
                outcome = _outcome(expected, label, kb_ids)
                retrieved = ["1", "2", "3"] if qid in ("q1", "q2", "q3", "q9") else ["4", "5", "6"]
                cost = None if model == "local-llama" else (0.002 if model == "acme/large" else 0.0001)
                scores.append({
                    "schema_version": 1, "question_id": qid, "model": model, "repeat": repeat,
                    "cited_ids": cited, "refused": refused, "outcome": outcome, "extraction": "inline",
                    "strict_cited_ids": cited, "strict_refused": refused, "strict_outcome": outcome,
                    "must_refuse": expected is None, "expected_citations": [expected] if expected else [],
                    "retrieved_ids": retrieved,
                    "expected_retrieved": None if expected is None else expected in retrieved,
                    "cost_usd": cost, "latency_ms": None if model == "local-llama" else 900.0 + 10 * repeat,
                    "input_tokens": 500, "output_tokens": 40,
                    "_label": label,
                })
                responses.append({
                    "schema_version": 1, "question_id": qid, "model": model, "repeat": repeat,
                    "response": None if label == "ERROR" else text, "retrieved_ids": retrieved,
                    "error": ({"kind": "timeout", "message": "no answer in 60 s", "attempts": 3}
                              if label == "ERROR" else None),
                })
    return scores, responses


def _model_metrics(rows: list[dict], labels: list[str], seen: list[str]) -> dict:
    n = len(rows)
    correct = sum(r["outcome"] in ("correct", "correct_refusal") for r in rows)
    acc = correct / n
    outcomes = {o: sum(r["outcome"] == o for r in rows) for o in OUTCOMES}
    index = {lab: i for i, lab in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for r in rows:
        true = r["expected_citations"][0] if r["expected_citations"] else "REFUSE"
        pred = r["_label"] if r["_label"] in index and r["_label"] != "ERROR" else "none"
        matrix[index[true]][index[pred]] += 1
    per_class = {}
    for lab in labels[:-1]:
        i = index[lab]
        support, tp = sum(matrix[i]), matrix[i][i]
        predicted = sum(matrix[k][i] for k in range(len(labels)))
        per_class[lab] = {"precision": tp / predicted if predicted else 0.0, "recall": tp / support if support else 0.0,
                          "f1": 0.0, "support": support}
    retrieved = [r for r in rows if r["expected_retrieved"] is True]
    missed = [r for r in rows if r["expected_retrieved"] is False]
    ok = lambda rs: sum(r["outcome"] == "correct" for r in rs) / len(rs) if rs else None  # noqa: E731
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    repeats = max(r["repeat"] for r in rows) + 1
    return {
        "n": n, "n_questions": len(GOLD), "repeats": repeats,
        "accuracy": acc, "accuracy_ci95": [max(0.0, acc - 0.12), min(1.0, acc + 0.1)],
        "strict_accuracy": acc - 0.05, "strict_accuracy_ci95": [max(0.0, acc - 0.17), min(1.0, acc + 0.05)],
        "outcomes": outcomes, "strict_outcomes": outcomes,
        "invalid_citation_rate": outcomes["invalid_citation"] / n, "error_count": outcomes["error"],
        "extraction_rules": {"json": 0, "inline": n, "lenient": 0, "none": 0}, "per_class": per_class,
        "macro_precision": 0.8, "macro_recall": 0.8, "macro_f1": 0.79, "weighted_precision": 0.8,
        "weighted_recall": 0.8, "weighted_f1": 0.8,
        "refusal": {"should_refuse_did": 0.5, "should_answer_did": 0.9, "calibration": 0.7},
        "confusion": {"labels": labels, "matrix": matrix},
        "retrieval": {"k": 3, "recall_at_k": len(retrieved) / (len(retrieved) + len(missed)),
                      "n_retrieved": len(retrieved), "n_missed": len(missed),
                      "accuracy_when_retrieved": ok(retrieved), "accuracy_when_missed": ok(missed)},
        "repeat_stats": {"n_repeats": repeats, "question_agreement": 0.9, "accuracy_per_repeat": [acc] * repeats,
                         "accuracy_std": 0.0} if repeats > 1 else None,
        "cost": {"total_usd": sum(costs) if costs else None,
                 "per_1k_questions_usd": 1000 * sum(costs) / n if costs else None,
                 "input_tokens": 500 * n, "output_tokens": 40 * n},
        "latency": {"p50_ms": 900.0, "p95_ms": 1400.0} if costs else {"p50_ms": None, "p95_ms": None},
    }


def build_run(root: Path, *, responses: bool = True) -> tuple[Path, Path]:
    """A scored run of three models over an 8-article KB, written by hand to the report schema."""
    kb_dir, out = root / "kb", root / "out"
    kb_dir.mkdir(parents=True)
    out.mkdir()
    articles = [Article(id=i, title=t, text=f"{t}. Details.") for i, t in ARTICLES.items()]
    (kb_dir / "articles.jsonl").write_text("".join(a.model_dump_json(include={"id", "title", "text"}) + "\n"
                                                   for a in articles))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["question_id", "question", "expected_answer", "expected_citations", "must_refuse", "notes"])
    for qid, (question, expected) in GOLD.items():
        w.writerow([qid, question, "", expected or "", "true" if expected is None else "false", ""])
    (root / "gold.csv").write_text(buf.getvalue())
    scores, resp = _score_rows(set(ARTICLES))
    labels = list(ARTICLES) + ["REFUSE", "none"]
    seen = [str(x) for x in ARTICLES]
    models = {m: _model_metrics([r for r in scores if r["model"] == m], labels, seen) for m in PLAN}
    order = sorted(models, key=lambda m: -models[m]["accuracy"])
    for rank, m in enumerate(order, 1):
        models[m]["rank"] = rank
        models[m]["significance_group"] = "a" if rank < 3 else "b"
    report = {
        "schema_version": 1, "created_at": "2025-01-02T03:04:05Z", "grace_version": "0.1.0",
        "gold": {"path": str(root / "gold.csv"), "hash": "ab" * 32, "n_questions": len(GOLD), "n_must_refuse": 2},
        "kb": {"path": str(kb_dir), "hash": kb_content_hash(articles), "n_articles": len(ARTICLES)},
        "responses": {"path": str(out / "responses.jsonl"), "n": len(resp)},
        "seed": 7, "bootstrap_samples": 1000, "leaderboard": order, "models": models,
        "pairwise": [{"a": order[0], "b": order[2], "n": 11, "a_only": 4, "b_only": 0, "p_value": 0.0625,
                      "p_adjusted": 0.1875, "significant": False},
                     {"a": order[0], "b": order[1], "n": 11, "a_only": 2, "b_only": 1, "p_value": 1.0,
                      "p_adjusted": 1.0, "significant": False}],
        "spotcheck": None,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    (out / "scores.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "_label"}) + "\n"
                                              for r in scores))
    if responses:
        (out / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in resp))
    return out, kb_dir


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path]:
    return build_run(tmp_path)


def _table_rows(md: str, section: int = 0) -> list[list[str]]:
    """The rows of the leaderboard table (section 0) or of the Details table (section 1)."""
    part = md.split("## Details")[section]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in part.splitlines() if line.startswith("| ")]


def test_writes_markdown_and_html_with_every_model(run):
    out, kb = run
    written = write_reports(out, kb=kb)
    assert written == {"markdown": out / "leaderboard.md", "html": out / "report.html"}
    md = written["markdown"].read_text()
    rows = _table_rows(md)
    assert rows[0][:3] == ["Rank", "Model", "Accuracy ± 95% CI"]
    body = rows[2:]
    assert [r[1].split(" (")[0] for r in body] == ["acme/large", "cheap-mini", "local-llama"]
    assert body[0][0] == "1" and body[0][2].startswith("81.8% [")
    assert body[2][7] == "–" and body[2][8] == "–"  # local model: no cost, no latency
    assert "(1 error)" in body[2][1] and "Warning" in md
    assert "McNemar" in md and "`abababababab`" in md  # the gold hash, shortened


def test_html_has_plots_tables_titles_and_no_script(run):
    out, kb = run
    html = write_reports(out, kb=kb)["html"].read_text()
    plots = re.findall(r'data-plot="(\w+)"', html)
    assert {"accuracy", "pareto", "outcomes", "retrieval", "confusion"} <= set(plots)
    assert plots.count("confusion") == 3
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"<script", html, re.I)  # the page needs no JavaScript at all
    assert not re.search(r"<img", html, re.I)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html)  # no external resource
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&quot;window.__pwned = 1&quot;&gt;" in html
    assert "Refund after 60 days? &lt;b&gt;bold&lt;/b&gt;" in html  # question text, escaped
    assert "Shipping times" in html and "Password reset" in html  # KB titles
    assert "no answer in 60 s" in html  # the failed call's error
    assert "judge" in html and "No spot-check yet" in html


def test_article_table_lists_weakest_first(run):
    out, kb = run
    html = write_reports(out, kb=kb)["html"].read_text()
    section = html.split('id="articles"')[1].split("</section>")[0]
    first = re.findall(r"<tr><td><code>([^<]+)</code>", section)
    assert first[0] == "2"  # article 2 is missed by two of the three models
    assert set(first) == set(ARTICLES) | {"REFUSE"}


def test_failures_are_sampled_per_model_and_deterministic(run):
    out, kb = run
    a = write_reports(out, kb=kb)["html"].read_text()
    b = write_reports(out, kb=kb)["html"].read_text()
    assert a == b
    section = a.split('id="failures"')[1]
    assert "acme/large: 2 of 2 wrong responses" in section
    assert "local-llama: 5 of 5 wrong responses" in section
    assert "false refusal" in section and "invalid citation" in section
    inputs = load_inputs(out, kb)
    sample = sample_failures(inputs, "cheap-mini")  # 9 wrong responses over 2 repeats, 5 distinct questions
    assert len(sample) == 6 and len({r["question_id"] for r in sample}) == 5
    assert len({r["outcome"] for r in sample}) == 4  # every kind of failure it made shows up


def test_spotcheck_block_shows_uncalibrated_judge(run):
    out, kb = run
    report = json.loads((out / "report.json").read_text())
    report["spotcheck"] = {"judge": {"model": "judge-1", "calibrated": False, "kappa": None},
                           "models": {"acme/large": {"n": 30, "groundedness": 0.9, "groundedness_ci95": [0.8, 0.97],
                                                     "hallucination_rate": 0.1, "hallucination_rate_ci95": [0.03, 0.2],
                                                     "hallucination_risk": 0.08,
                                                     "hallucination_risk_ci95": [0.02, 0.16]}}}
    (out / "report.json").write_text(json.dumps(report))
    html = write_reports(out, kb=kb)["html"].read_text()
    assert "judge not calibrated" in html and "90.0% [80.0, 97.0]" in html
    report["spotcheck"]["judge"] = {"model": "judge-1", "calibrated": True, "kappa": 0.81}
    (out / "report.json").write_text(json.dumps(report))
    html = write_reports(out, kb=kb)["html"].read_text()
    assert "judge not calibrated" not in html and "kappa vs human labels 0.81" in html


def test_edge_cases_single_model_no_cost_no_retrieval_errors_only(tmp_path):
    out, _ = build_run(tmp_path, responses=False)
    report = json.loads((out / "report.json").read_text())
    solo = report["models"]["local-llama"]
    solo.update(retrieval=None, repeat_stats=None, refusal={"should_refuse_did": None, "should_answer_did": 1.0,
                                                            "calibration": None})
    # a model with nothing but errors, no cost, no latency and no CI, and no matrix (not in the leaderboard list)
    errors = {**solo, "n": 11, "accuracy": 0.0, "accuracy_ci95": None, "strict_accuracy": 0.0, "error_count": 11,
              "strict_accuracy_ci95": None, "outcomes": {"error": 11}, "per_class": {},
              "confusion": {"labels": [], "matrix": []},
              "cost": {"total_usd": None, "per_1k_questions_usd": None, "input_tokens": 0, "output_tokens": 0}}
    report.update(leaderboard=["local-llama"], models={"local-llama": solo, "down": errors}, pairwise=[],
                  failed_models={"dead": {"n": 11, "error_count": 11, "reason": "all 11 calls failed"}})
    report["kb"]["path"] = str(tmp_path / "moved")
    (out / "report.json").write_text(json.dumps(report))
    console = Console(file=io.StringIO(), width=200, record=True)
    written = write_reports(out, console=console)
    html = written["html"].read_text()
    assert "No model has a known cost" in html and "No retrieval information" in html
    assert "KB not found" in html and "responses file not found" in html
    text = console.export_text()
    assert "local-llama" in text and "(11 errors)" in text and "report.html" in text
    assert "not ranked: dead: all 11 calls failed" in text
    assert [r[1] for r in _table_rows(written["markdown"].read_text())[2:]] == ["local-llama (1 error)",
                                                                                 "down (11 errors)"]


def test_a_labelled_report_with_a_null_accuracy_is_refused(tmp_path):
    """Null accuracy is an unlabelled run's (report.json["unlabelled"] says so); in a labelled run it is damage."""
    out, _ = build_run(tmp_path, responses=False)
    report = json.loads((out / "report.json").read_text())
    report["models"]["cheap-mini"]["accuracy"] = None
    (out / "report.json").write_text(json.dumps(report))
    with pytest.raises(GraceError) as err:
        write_reports(out)
    assert str(err.value) == (f"{out / 'report.json'}: models['cheap-mini'].accuracy: null in a report of labelled "
                              "questions; re-run 'grace score'")
    assert "Traceback" not in str(err.value)


def test_a_malformed_model_block_is_refused_with_where_it_is(tmp_path):
    """The readers trust the typed report, so a block they could not render is refused when read, by name."""
    out, _ = build_run(tmp_path, responses=False)
    report = json.loads((out / "report.json").read_text())
    report["models"]["cheap-mini"]["n"] = None  # (a null accuracy is allowed: an unlabelled run has none)
    del report["models"]["local-llama"]["refusal"]
    (out / "report.json").write_text(json.dumps(report))
    with pytest.raises(GraceError) as err:
        write_reports(out)
    assert "models['cheap-mini'].n: Input should be a valid integer" in str(err.value)
    assert "(and 1 more problem); re-run 'grace score'" in str(err.value)


def test_unshown_citations_and_cut_off_answers_are_shown_escaped(run):
    out, kb = run
    report = json.loads((out / "report.json").read_text())
    hostile = f"local {XSS_IMG}"
    models = report["models"]
    models[hostile] = models.pop("local-llama")
    report["leaderboard"] = [hostile if m == "local-llama" else m for m in report["leaderboard"]]
    m = models[hostile]
    m["outcomes"]["unshown_citation"] = 2
    m.update(unshown_citation_rate=2 / 11, truncated={"n": 4, "share": 4 / 11, "no_citation": 3, "max_tokens": 400})
    models["acme/large"].update(unshown_citation_rate=0.0,
                                truncated={"n": 0, "share": 0.0, "no_citation": 0, "max_tokens": 1024})
    (out / "report.json").write_text(json.dumps(report))
    console = Console(file=io.StringIO(), width=100, record=True)
    written = write_reports(out, kb=kb, console=console)
    note = "4 of 11 answers (36%) were cut off by max_tokens (400) before finishing, 3 of them before any citation"
    printed = console.export_text()
    assert f"warning: local {XSS_IMG}: {note}" in " ".join(printed.split())  # printed as written, not as markup
    md = written["markdown"].read_text()
    assert note.replace("max_tokens", "max\\_tokens") in md
    board = {r[1].split(" (")[0]: r for r in _table_rows(md)[2:]}
    assert board["acme/large"][6] == "0.0%" and board["cheap-mini"][6] == "–"  # an older report: no figure
    details = {r[0]: r for r in _table_rows(md, 1)[2:]}
    # no JSON-mode fallback, no language told, no queue recorded, no serving figures (no run.json)
    assert details["acme/large"][5:] == ["–", "0.0% (0)", "0", "1,024", "–", "–", "–", "–", "–"]
    assert details["cheap-mini"][5:] == ["–"] * 9
    assert [c for c in details.values() if c[0].startswith("local")][0][4:10] == ["18.2%", "–", "36.4% (4)", "3", "400", "–"]
    html = written["html"].read_text()
    assert not re.search(r"<img", html, re.I)
    assert f"local {escape_html(XSS_IMG)}: {note}" in html
    section = html.split('id="details"')[1].split("</section>")[0]
    assert "Answer format" in section and "36.4% (4)" in section and "18.2%" in section
    assert "unshown citation" in html.split('id="outcomes"')[1].split("</section>")[0]


def escape_html(text: str) -> str:
    from html import escape

    return escape(text)


def test_titles_from_a_different_kb_are_flagged(run):
    out, kb = run
    html = write_reports(out, kb=kb)["html"].read_text()
    assert "not the one scored" not in html
    with (kb / "articles.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "9", "title": "New article", "text": "Added after scoring."}) + "\n")
    html = write_reports(out, kb=kb)["html"].read_text()
    assert "is not the one scored" in html


def test_pareto_front_and_top_labels():
    assert pareto_front([("a", 1.0, 0.5), ("b", 2.0, 0.4), ("c", 3.0, 0.9), ("d", 0.0, 0.2)]) == ["d", "a", "c"]
    labels = [str(i) for i in range(50)]
    matrix = [[0] * 50 for _ in range(50)]
    for i in range(50):
        matrix[i][i] = 5
    matrix[3][7] = 2
    assert top_labels(labels, matrix, limit=4) == [3, 7]  # only labels involved in a confusion
    matrix[10][11], matrix[12][13], matrix[14][15] = 3, 2, 1
    assert top_labels(labels, matrix, limit=4) == [3, 7, 10, 11]  # the most confused first
    assert top_labels(labels[:4], [row[:4] for row in matrix[:4]], limit=40) == [0, 1, 2, 3]  # small KB: all


def test_cli_report_prints_leaderboard_and_rejects_missing_report(run, tmp_path, capsys):
    out, kb = run
    main(["report", str(out), "--kb", str(kb)])
    printed = capsys.readouterr().out
    assert "acme/large" in printed and "report.html" in printed
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nowhere'}: no such folder" in err and "report.json: not found" not in err
    assert not (tmp_path / "nowhere").exists()  # not created by the command that says it is missing
    (tmp_path / "unscored").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "unscored")])
    assert exit_info.value.code == 2
    assert "report.json: not found; run 'grace score'" in capsys.readouterr().err
