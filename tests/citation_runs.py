"""Response rows over the sample KB (benchmarks/sample) for the citation-scoring tests and the stored GRACE run.

``grace_rows`` is a GRACE run of three models in every form the GRACE reader takes (canonical ``[ID: x]``, bare
``[x]``, JSON, refusals, invalid and several citations, structured citations, a system's own retrieval, a failed
call); its scores.jsonl and report.json as scored before issue 39 are stored in tests/data/grace_scores_before_39,
and scoring it again must give them byte for byte (timestamps and paths masked).
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
