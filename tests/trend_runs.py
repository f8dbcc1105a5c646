"""Twelve weekly runs over one gold set, for the trend tests, made as a user's runs are: ``grace kb build``, a
responses file per run, ``grace score``, and a ``run.json`` (written through grace's own typed record) saying when
each run started. The folders' names are not in time order (``run-00`` is week 1, ``run-05`` week 2, ...): only
``started_at`` orders them.

Three models, each answering every question once per run:

- ``acme/steady``: right on all but a few questions; each week one question flips (noise: two runs in a row
  differ on at most two questions, which McNemar's test never calls significant);
- ``acme/slipping``: the same noise, and from week 8 on (:data:`REGRESSION_WEEK`) wrong on every ``travel``
  question: the planted regression, significant on every question and on the travel category, absent from the
  others;
- :data:`HOSTILE`: a model whose name is markup.

A thirteenth run (``other-gold``) is scored against another gold file: it is left out of the trend, named.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import ModelEntry, RunConfig, RunGold, RunInfo, RunKb
from tests.conftest import run_grace, write

STEADY, SLIPPING = "acme/steady", "acme/slipping"
HOSTILE = 'acme/<img src=x onerror="window.__pwned=1">'
MODELS = (STEADY, SLIPPING, HOSTILE)
WEEKS = 12
REGRESSION_WEEK = 8  # 1-based: acme/slipping is wrong on travel from this week on
ARTICLES = {"1": ("Sick leave", "leave"), "2": ("Parental leave", "leave"), "3": ("Booking travel", "travel"),
            "4": ("Per diem", "travel"), "5": ("Expense claims", "expenses"), "6": ("Receipts", "expenses")}
CATEGORIES = ("leave", "travel", "expenses")
QUESTIONS = [(f"q{i:02d}", str(1 + i % 6)) for i in range(36)]  # 12 per category
TRAVEL = [q for q, a in QUESTIONS if ARTICLES[a][1] == "travel"]
HARD = {STEADY: {"q05", "q17"}, SLIPPING: {"q11"}, HOSTILE: {"q00", "q01", "q02", "q09", "q13", "q16"}}
OTHERS = [q for q, a in QUESTIONS if ARTICLES[a][1] != "travel"]


def run_name(week: int) -> str:
    return f"run-{(week - 1) * 5 % WEEKS:02d}"


def started(week: int) -> str:
    return f"2025-03-{week:02d}T09:00:00+00:00"


def correct(model: str, week: int, qid: str) -> bool:
    right = qid not in HARD[model]
    if qid == OTHERS[(week * 7 + len(model)) % len(OTHERS)]:  # this week's noise: one question flips
        right = not right
    if model == SLIPPING and week >= REGRESSION_WEEK and qid in TRAVEL:
        right = False
    return right


def answer(model: str, week: int, qid: str, gold: str) -> str:
    cited = gold if correct(model, week, qid) else str(1 + int(gold) % 6)
    return f"The handbook covers this. [ID: {cited}]"


def build_trend_runs(root: Path) -> Path:
    """``root/kb``, ``root/gold.csv``, ``root/runs/run-NN`` (12 weeks) and ``root/runs/other-gold``; returns
    ``root/runs``."""
    rows = [{"id": i, "title": t, "text": f"{t}: the rules, in detail, so an employee can act on them."}
            for i, (t, _) in ARTICLES.items()]
    write(root / "articles.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")
    assert code == 0, out
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse,notes,category"]
    lines += [f"{q},Question {q} about {ARTICLES[a][0].lower()}?,,{a},false,,{ARTICLES[a][1]}" for q, a in QUESTIONS]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    write(root / "gold-other.csv", "\n".join(lines[:13]) + "\n")
    runs = root / "runs"
    for week in range(1, WEEKS + 1):
        _run(root, runs / run_name(week), root / "gold.csv", QUESTIONS, week)
    _run(root, runs / "other-gold", root / "gold-other.csv", QUESTIONS[:12], WEEKS + 1)
    return runs


def _run(root: Path, folder: Path, gold: Path, questions: list[tuple[str, str]], week: int) -> None:
    rows = [{"question_id": q, "model": m, "response": answer(m, week, q, a), "retrieved_ids": [a, str(1 + int(a) % 6)],
             "latency_ms": 100.0} for m in MODELS for q, a in questions]
    write(folder / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("score", folder / "responses.jsonl", "--gold", gold, "--kb", root / "kb", "--out", folder,
                          "--bootstrap", "200")
    assert code == 0, out
    report = RunDir(folder).read_report()
    info = RunInfo(grace_version=report.grace_version, started_at=started(week), finished_at=started(week),
                   status="finished",
                   kb=RunKb(path=str(root / "kb"), kb_hash=report.kb.hash, articles=report.kb.n_articles),
                   gold=RunGold(path=str(gold), hash=hashlib.sha256(gold.read_bytes()).hexdigest()[:16],
                                questions=len(questions), must_refuse=0),
                   templates={}, config=RunConfig(k=2, repeats=1, concurrency=1, cache=False, read_cache=False,
                                                  max_attempts=1, seed=0, output_mode="inline"),
                   models=[ModelEntry(name=m, provider="scripted", model=m) for m in MODELS])
    RunDir(folder).write_run_info(info)
