"""A run folder with a multi-citation bot beside a GRACE prompt model, for the views' tests (issue 39).

Until the scorer reads references (issue 39's CORE part), this builds what it will write: the run is made as a user's
is (``grace kb build``, a responses file, ``grace score``: the GRACE model's lines and figures are the real scorer's),
then the bot's lines in ``scores.jsonl`` get the citation keys of the design (``citations``, ``cit_precision``,
``cit_recall``, ``cit_f1``, ``cit_correct``, ``coverage``, ``marker_problems``, after today's keys) and its
``report.json`` block a :class:`~harness.run_folder.report.CitationScores`, computed here from the planned
citations by the design's formulas (means over questions, bootstrap CIs as the report's). Once the scorer lands,
the tests that use :func:`build_citation_run` should score the bot for real (``[models.citations]``) instead.

The bot (:data:`BOT`) answers with numbered markers and a source list, one answer in four of each kind:

- the gold article and a wrong one (precision 0.5, recall 1: the design's test case);
- the gold article alone, with a quote found in it;
- the gold article and a reference that resolves to nothing (:data:`HOSTILE_REF`, markup: unmapped);
- a wrong article alone, with a quote not found in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from harness.core.bootstrap import bootstrap_cis
from harness.run_folder import RunDir
from harness.run_folder.report import CitationScores, write_report
from tests.conftest import run_grace, write

GRACE_MODEL, BOT = "acme/grace-prompt", "acme/bot"
HOSTILE_REF = '<img src=x onerror="window.__pwned=1">'
ARTICLES = {"1": "Sick leave", "2": "Parental leave", "3": "Booking travel", "4": "Per diem", "5": "Expense claims",
            "6": "Receipts"}
QUESTIONS = [(f"q{i:02d}", str(1 + i % 6)) for i in range(16)]  # answerable, one gold article each
REFUSE = [("r01", "What is the CEO's favourite colour?"), ("r02", "Who won the 1998 office chess cup?")]
CITATION_KEYS = ("citations", "cit_precision", "cit_recall", "cit_f1", "cit_correct", "coverage", "marker_problems")


def other(gold: str) -> str:
    return str(1 + int(gold) % 6)


def source(aid: str) -> str:
    return f"handbook/{ARTICLES[aid].lower().replace(' ', '-')}.html"


def plan(i: int, gold: str, shift: int = 0) -> list[dict]:
    """The bot's citations for question ``i``, as the scorer will record them (``shift``: another week's bot, each
    question answered as the one ``shift`` places on was)."""
    wrong = other(gold)
    kind = (i + shift) % 4

    def cite(aid: str, quote: str | None = None, found: bool | None = None) -> dict:
        return {"reference": source(aid), "articles": [aid], "how": "source", "note": "", "quote": quote,
                "quote_found": found}

    if kind == 0:
        return [cite(gold), cite(wrong)]
    if kind == 1:
        return [cite(gold, f"{ARTICLES[gold]}: the rules", True)]
    if kind == 2:
        return [cite(gold), {"reference": HOSTILE_REF, "articles": [], "how": None,
                             "note": "no KB article has this source, title or text", "quote": None,
                             "quote_found": None}]
    return [cite(wrong, "a sentence the article does not hold", False)]


def answer_text(cites: list[dict]) -> str:
    marks = "".join(f"[{k}]" for k in range(1, len(cites) + 1))
    listed = "\n".join(f"[{k}] {c['reference']}" for k, c in enumerate(cites, 1))
    return f"The handbook covers this {marks}.\n\nSources:\n{listed}"


def as_read(cites: list[dict]) -> list[dict]:
    """The citations with each reference as the scorer's marker reading gives it (the answer's list entry, cleaned:
    ``<url>`` loses its angle brackets), the string the scorer resolves and records."""
    from harness.scoring.markers import read_markers

    read = read_markers(answer_text(cites)).cited_references
    assert len(read) == len(cites), read
    return [{**c, "reference": ref} for c, ref in zip(cites, read, strict=True)]


def figures(cites: list[dict], gold: str, retrieved: list[str]) -> dict:
    """The design's per-answer figures: precision = |C∩E| / (|C|+|U|), recall = |C∩E| / |E|, F1, cit_correct (exists
    and supported: a quote not found is not), coverage = |C∩R| / |R|."""
    cited = {a for c in cites for a in c["articles"]}
    unmapped = sum(1 for c in cites if not c["articles"])
    right = len(cited & {gold})
    precision = right / (len(cited) + unmapped)
    recall = float(right)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    correct = sum(1 for c in cites if c["articles"] and c["quote_found"] is not False) / len(cites)
    return {"cit_precision": precision, "cit_recall": recall, "cit_f1": f1, "cit_correct": correct,
            "coverage": len(cited & set(retrieved)) / len(retrieved)}


def build_citation_run(root: Path, *, bot: bool = True, shift: int = 0) -> Path:
    """``root/kb``, ``root/gold.csv`` and the scored run ``root/run`` (with ``bot=False``: the GRACE model alone;
    ``shift``: the bot's answers moved on, see :func:`plan`)."""
    rows = [{"id": i, "title": t, "text": f"{t}: the rules, in detail, so an employee can act on them."}
            for i, t in ARTICLES.items()]
    write(root / "articles.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")
    assert code == 0, out
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse,notes"]
    lines += [f"{q},What does the handbook say about {ARTICLES[a].lower()}?,,{a},false," for q, a in QUESTIONS]
    lines += [f"{q},{text},,,true," for q, text in REFUSE]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    responses = []
    for i, (q, a) in enumerate(QUESTIONS):
        retrieved = [a, other(a)]
        cited = a if i % 5 else other(a)  # the GRACE model is wrong on one question in five
        responses.append({"question_id": q, "model": GRACE_MODEL, "response": f"It is in the handbook. [ID: {cited}]",
                          "retrieved_ids": retrieved, "latency_ms": 100.0})
        if bot:
            responses.append({"question_id": q, "model": BOT, "response": answer_text(plan(i, a, shift)),
                              "retrieved_ids": retrieved, "latency_ms": 250.0})
    for q, _ in REFUSE:
        for model in (GRACE_MODEL, BOT) if bot else (GRACE_MODEL,):
            responses.append({"question_id": q, "model": model,
                              "response": "I don't have enough information to answer this question.",
                              "retrieved_ids": ["1", "2"], "latency_ms": 100.0})
    run = root / "run"
    write(run / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in responses))
    code, out = run_grace("score", run / "responses.jsonl", "--gold", root / "gold.csv", "--kb", root / "kb",
                          "--out", run, "--bootstrap", "200")
    assert code == 0, out
    if bot:
        add_bot_citations(run, shift)
    return run


def add_bot_citations(run: Path, shift: int = 0) -> None:
    """The bot's citation keys on its scores lines and its ``citations`` block in report.json; the reports again."""
    folder = RunDir(run)
    gold = dict(QUESTIONS)
    order = {q: i for i, (q, _) in enumerate(QUESTIONS)}
    out, per_q = [], {}
    for raw in folder.scores.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        if row["model"] == BOT:
            q = row["question_id"]
            if q in gold:
                cites = as_read(plan(order[q], gold[q], shift))
                row["citations"] = cites
                row.update(figures(cites, gold[q], row.get("retrieved_ids") or []))
                row["marker_problems"] = []
                per_q[q] = (row, cites)
            else:  # a refusal: no citation, nothing to score
                row.update({"citations": [], "cit_precision": None, "cit_recall": None, "cit_f1": None,
                            "cit_correct": None, "coverage": None, "marker_problems": []})
        out.append(json.dumps(row))
    folder.scores.write_text("\n".join(out) + "\n", encoding="utf-8")

    report = folder.read_report()
    rows = [per_q[q] for q, _ in QUESTIONS]
    series = {k: np.array([r[k] for r, _ in rows], dtype=float) for k in ("cit_precision", "cit_recall", "cit_f1",
                                                                          "cit_correct", "coverage")}
    hit = np.array([r["cit_recall"] > 0 for r, _ in rows], dtype=float)
    keys = ("cit_precision", "cit_recall", "cit_f1")
    cis = bootstrap_cis([*(series[k] for k in keys), hit], report.bootstrap_samples, report.seed)
    every = [c for _, cites in rows for c in cites]
    by_how: dict[str, int] = {}
    for c in every:
        by_how[c["how"] or "unmapped"] = by_how.get(c["how"] or "unmapped", 0) + 1
    quotes = [c for c in every if c["quote"] is not None]
    report.models[BOT].citations = CitationScores(
        scoring="multi", reads="references", n_answers=len(rows), n_citing=len(rows), n_citations=len(every),
        n_unmapped=by_how.get("unmapped", 0), by_how=by_how,
        precision=round(float(series["cit_precision"].mean()), 6), precision_ci95=cis[0],
        recall=round(float(series["cit_recall"].mean()), 6), recall_ci95=cis[1],
        f1=round(float(series["cit_f1"].mean()), 6), f1_ci95=cis[2],
        hit_rate=round(float(hit.mean()), 6), hit_rate_ci95=cis[3],
        cit_correct=round(float(series["cit_correct"].mean()), 6), coverage=round(float(series["coverage"].mean()), 6),
        quotes_checked=len(quotes), quotes_missing=sum(1 for c in quotes if c["quote_found"] is False),
        marker_problems={})
    write_report(folder.report, report)
    from harness.reports import write_reports

    write_reports(run)
