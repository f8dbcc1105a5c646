"""Citation test runs over small KBs: one helper module for every test of issue 39's scoring and views.

``grace_rows`` (over the sample KB, benchmarks/sample) is a GRACE run of three models in every form the GRACE reader
takes (canonical ``[ID: x]``, bare ``[x]``, JSON, refusals, invalid and several citations, structured citations, a
system's own retrieval, a failed call); its scores.jsonl and report.json as scored before issue 39 are stored in
tests/data/grace_scores_before_39, and scoring it again must give them byte for byte (timestamps and paths masked).

``build_citation_run`` makes a run with ``grace run`` of a ``python:`` bot that cites by footnotes and a source list,
read with ``[models.citations] scoring = "multi"``, beside ``baseline:top1`` (the views' tests).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from tests.conftest import SAMPLE

N_QUESTIONS = 12  # the first of the sample gold set (q005 must be refused)
STORED = Path(__file__).resolve().parent / "data" / "grace_scores_before_39"


def sample_bench(root: Path) -> tuple[Path, Path]:
    """The sample KB built into ``root/kb`` and its first questions as ``root/gold.csv``."""
    import grace

    if not (root / "kb").exists():
        grace.build_kb(SAMPLE / "handbook", root / "kb")
    lines = (SAMPLE / "gold.csv").read_text(encoding="utf-8").splitlines()
    (root / "gold.csv").write_text("\n".join(lines[:N_QUESTIONS + 1]) + "\n", encoding="utf-8")
    return root / "kb", root / "gold.csv"


def _gold(gold: Path) -> list[tuple[str, bool, list[str]]]:
    import csv

    with gold.open(encoding="utf-8", newline="") as fh:
        return [(r["question_id"], r["must_refuse"] == "true", [x for x in r["expected_citations"].split(";") if x])
                for r in csv.DictReader(fh)]


def grace_rows(gold: Path) -> list[dict]:
    """A GRACE run: what the scorer has always read, in every form, seeded."""
    rng = random.Random(39)
    rows = []
    for qid, must, expected in _gold(gold):
        for model, repeat in ((m, r) for m in ("gpt-a", "gpt-b", "sys") for r in range(3)):
            right = expected[0] if expected else "12"
            cite = right if rng.random() < 0.6 else str(rng.randint(1, 61))
            form = rng.random()
            row: dict = {"question_id": qid, "model": model, "repeat": repeat, "retrieved_ids": [cite, "3", "17"],
                         "cost_usd": 0.0004, "latency_ms": round(rng.uniform(300, 3000), 3), "input_tokens": 1800,
                         "output_tokens": 90}
            if model == "sys":  # a system that returns its citations as data and retrieves for itself
                row.update(response="The answer, from our handbook.", citations=[cite] if form < 0.8 else [cite, "9"],
                           retrieved_ids=[], system_retrieved=[cite, "4"])
            elif must and form < 0.5:
                row["response"] = "I don't have enough information to answer this question."
            elif form < 0.4:
                row["response"] = f"It is 10% of base salary [ID: {cite}]"
            elif form < 0.55:
                row["response"] = f"It is 10% of base salary [{cite}]."
            elif form < 0.7:
                row["response"] = json.dumps({"answer": "It is 10%.", "citation": cite})
            elif form < 0.8:
                row["response"] = f"It is 10% [ID: {cite}, 9]"
            elif form < 0.9:
                row["response"] = "It is 10% [ID: uid-nope-7]"
            elif form < 0.95:
                row["response"] = "It is 10% of base salary."
            else:
                row.update(response=None, error={"kind": "timeout", "message": "timed out", "attempts": 3})
            rows.append(row)
    return rows


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


_VOLATILE = re.compile(r'"(created_at|grace_version|path)": ("[^"]*"|null)')


def masked(text: str) -> str:
    """report.json without what changes from one scoring to the next (when, which grace, where the files are)."""
    return _VOLATILE.sub(lambda m: f'"{m.group(1)}": "*"', text)


# -- a scored run of a multi-citation bot beside a GRACE prompt model, for the views' tests ---------------------------
#
# A six-article handbook (each article its own source page) and 16 answerable questions plus two to refuse. The bot
# (BOT, a ``python:`` system read with ``[models.citations] scoring = "multi"``) answers with numbered markers and a
# source list, one answer in four of each kind (:func:`bot_answer`); the GRACE model is ``baseline:top1``. Both are run
# and scored by ``grace run``, as a user's are: every figure the views show is the real scorer's.

GRACE_MODEL, BOT, OTHER_BOT = "baseline:top1", "acme/bot", "acme/<b>other</b>"
HOSTILE_REF = '<img src=x onerror="window.__pwned=1">'
ARTICLES = {"1": "Sick leave", "2": "Parental leave", "3": "Booking travel", "4": "Per diem", "5": "Expense claims",
            "6": "Receipts"}
QUESTIONS = [(f"q{i:02d}", str(1 + i % 6)) for i in range(16)]  # answerable, one gold article each
REFUSE = [("r01", "What is the CEO's favourite colour?"), ("r02", "Who won the 1998 office chess cup?")]
REFUSAL = "I don't have enough information to answer this question."
MISSING_QUOTE = "a sentence the article does not hold"


def other(gold: str) -> str:
    return str(1 + int(gold) % 6)


def source(aid: str) -> str:
    """The article's source page: what the bot cites it by."""
    return f"handbook/{ARTICLES[aid].lower().replace(' ', '-')}.html"


def bot_answer(i: int, gold: str, shift: int = 0) -> str:
    """The bot's answer to question ``i`` (``shift``: another week's bot, each question answered as the one ``shift``
    places on was), one of four kinds:

    0. the gold article and a wrong one (precision 0.5, recall 1: the design's test case);
    1. the gold article alone, with a quote found in it;
    2. the gold article and a reference that resolves to nothing (:data:`HOSTILE_REF`, markup: unmapped);
    3. a wrong article alone, with a quote not found in it.
    """
    wrong = other(gold)
    kind = (i + shift) % 4
    if kind == 0:
        return f"The handbook covers this [1][2].\n\nSources:\n[1] {source(gold)}\n[2] {source(wrong)}"
    if kind == 1:
        return f'The handbook says "{ARTICLES[gold]}: the rules, in detail" [1].\n\nSources:\n[1] {source(gold)}'
    if kind == 2:
        return f"The handbook covers this [1][2].\n\nSources:\n[1] {source(gold)}\n[2] {HOSTILE_REF}"
    return f'The handbook says "{MISSING_QUOTE}" [1].\n\nSources:\n[1] {source(wrong)}'


_BOT = '''
"""A team's bot: its answers, written beforehand per question (answers.json beside this file)."""
import json
from pathlib import Path

ANSWERS = json.loads((Path(__file__).parent / "{name}.json").read_text(encoding="utf-8"))


def answer(request):
    return ANSWERS[request.question_id]
'''


def _bot(root: Path, name: str, shift: int) -> str:
    """The bot's file and answers in ``root``; its ``python:`` spec."""
    answers = {q: bot_answer(i, a, shift) for i, (q, a) in enumerate(QUESTIONS)}
    answers.update({q: REFUSAL for q, _ in REFUSE})
    (root / f"{name}.json").write_text(json.dumps(answers), encoding="utf-8")
    (root / f"{name}.py").write_text(_BOT.replace("{name}", name), encoding="utf-8")
    return f"python:{root / name}.py:answer"


def build_citation_run(root: Path, *, bot: bool = True, shift: int = 0, other_bot: bool = False) -> Path:
    """``root/kb``, ``root/gold.csv`` and the run ``root/run`` made by ``grace run``: the bot (``shift``: its answers
    moved on, see :func:`bot_answer`) beside the GRACE model; ``bot=False``: the GRACE model alone; ``other_bot``: a
    second multi-citation bot (:data:`OTHER_BOT`, the answers of ``shift + 1``), so the run has citation F1 pairs."""
    from tests.conftest import run_grace, write

    root.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "title": t, "text": f"{t}: the rules, in detail, so an employee can act on them.",
             "source": source(i)} for i, t in ARTICLES.items()]
    write(root / "articles.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")
    assert code == 0, out
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse,notes"]
    # each question's text its own: two gold questions of one text share a call (grace's cache keys on what is asked),
    # and this bot answers by question ID, so it would be scored on another question's answer
    lines += [f"{q},What does the handbook say about {ARTICLES[a].lower()} (case {q})?,,{a},false," for q, a in QUESTIONS]
    lines += [f"{q},{text},,,true," for q, text in REFUSE]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    multi = '[models.citations]\nscoring = "multi"\nreads = "references"\n'
    toml = ""
    if bot:
        toml += f'[[models]]\nspec = "{_bot(root, "bot", shift)}"\nname = "{BOT}"\n\n{multi}\n'
    if other_bot:
        toml += f'[[models]]\nspec = "{_bot(root, "other_bot", shift + 1)}"\nname = "{OTHER_BOT}"\n\n{multi}\n'
    toml += f'[[models]]\nspec = "{GRACE_MODEL}"\n'
    write(root / "board.toml", toml)
    run = root / "run"
    code, out = run_grace("run", "--kb", root / "kb", "--gold", root / "gold.csv", "--config", root / "board.toml",
                          "--out", run)
    assert code == 0, out
    return run
