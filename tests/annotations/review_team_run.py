"""A spot-checked run for the team review tests (``grace annotations review --team``), and two simulated people.

Run ``b`` of the viewer's test runs (three models, a planted hostile answer) spot-checked by claims with the offline
lexical judge: about thirty claims, the judge saying supported, partial and unsupported. The people's verdicts follow
a fixed rule per claim, so tests know what each gave without reading the page, and they disagree on some claims."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from annotations.agreement import cohen_kappa
from tests.conftest import run_grace
from tests.view_runs import build_view_runs


def build(root: Path) -> Path:
    """KB, gold, runs ``a`` and ``b`` under ``root``; ``b`` spot-checked by claims. Returns run ``b``."""
    build_view_runs(root)
    code, out = run_grace("spotcheck", "run", root / "b", "--kb", root / "kb", "--judge", "baseline:lexical", "--all")
    assert code == 0, out
    return root / "b"


def claims(run: Path) -> list[tuple[str, str, int, int]]:
    with (run / "spotcheck_claims_review.csv").open(newline="", encoding="utf-8") as fh:
        return [(r["model"], r["question_id"], int(r["repeat"]), int(r["segment_index"])) for r in csv.DictReader(fh)]


def verdict_of(who: str, key: tuple[str, str, int, int], n: int) -> str:
    """What ``who`` says of the ``n``-th claim: alice one in three unsupported; bob as alice but on every fourth
    claim the next verdict round (so they disagree, and some disagreements are partial)."""
    base = "unsupported" if n % 3 == 0 else "supported"
    if who == "bob" and n % 4 == 1:
        return {"supported": "partial", "partial": "unsupported", "unsupported": "supported"}[base]
    return base


def judge_verdicts(run: Path) -> dict[tuple[str, str, int, int], str]:
    """The judge's verdict per claim, read straight from the claims file spotcheck.json names."""
    spot = json.loads((run / "spotcheck.json").read_text(encoding="utf-8"))
    out = {}
    for line in (run / spot["judgements"]["path"]).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r.get("kind") == "claim" and r.get("judge_repeat") == 0 and r.get("verdict"):
            out[(r["model"], r["question_id"], int(r["repeat"]), int(r["claim_index"]))] = r["verdict"]
    return out


def kappa(a: list[str], b: list[str], binary: bool) -> float | None:
    """Cohen's kappa straight from annotations.agreement (binary: unsupported against the rest)."""
    if binary:
        a, b = [str(x == "unsupported") for x in a], [str(x == "unsupported") for x in b]
    k = cohen_kappa(a, b)
    return None if math.isnan(k) else round(k, 6)
