"""A scored run with permissions and categories, made as a user makes it: ``grace kb build --articles`` on a file
whose restricted articles carry an ``audience``, a gold file with the askers' ``groups`` and a ``category`` per
question, a responses file (two systems' answers, one row saying its asker's ``user_groups``), and ``grace score``.

What each row should score (the asker's groups: the row's user_groups, else the gold question's groups):

- acme/leaky: q1 cites the public answer and an HR-only article to a staff member (forbidden_citation, though
  several citations would otherwise be multiple_citations), q2 the managers' article to a manager (correct), q3
  the managers' article to staff on a must-refuse question (forbidden_citation), q4 with no groups known (not
  checked: correct), q5 the HR article to HR (correct). 2 of 5 forbidden.
- acme/careful: q3 refused (correct_refusal); q5's row says its asker is staff (user_groups), overriding the gold's
  hr;managers, so its HR citation is forbidden_citation. 1 of 5 forbidden.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_grace, write

LEAKY, CAREFUL = "acme/leaky", "acme/careful"
ARTICLES = [
    {"id": "1", "title": "Holidays", "text": "Everyone gets 25 days of paid holiday per year, plus public holidays."},
    {"id": "2", "title": "Manager salary bands", "text": "Manager salary bands run from A to F, reviewed each spring.",
     "audience": ["managers", "hr"]},
    {"id": "3", "title": "Parking", "text": "Parking permits are issued by Facilities at the front desk."},
    {"id": "4", "title": "HR investigations", "text": "Misconduct investigations are run by HR under strict secrecy.",
     "audience": ["hr"]},
]
GOLD = """question_id,question,expected_answer,expected_citations,must_refuse,notes,groups,category
q1,How many days of holiday do I get?,,1,false,,staff,leave
q2,What are the manager salary bands?,,2,false,,managers,pay & bands
q3,What do managers earn?,,,true,,staff,pay & bands
q4,Who issues parking permits?,,3,false,,,facilities
q5,Who runs misconduct investigations?,,4,false,,hr;managers,hr
"""
REFUSE = "I don't have enough information to answer this question."
ANSWERS = {
    LEAKY: {"q1": "25 days [ID: 1]. See also [ID: 4].", "q2": "Bands A to F [ID: 2]", "q3": "A to F [ID: 2]",
            "q4": "Facilities [ID: 3]", "q5": "HR runs them [ID: 4]"},
    CAREFUL: {"q1": "25 days [ID: 1]", "q2": "Bands A to F [ID: 2]", "q3": REFUSE, "q4": "Facilities [ID: 3]",
              "q5": "HR runs them [ID: 4]"},
}


def build_permission_run(root: Path, *, audiences: bool = True, groups: bool = True) -> Path:
    """``root/kb``, ``root/gold.csv`` and the scored run folder ``root/run`` (returned). ``audiences=False``
    builds the KB without them, ``groups=False`` the gold file and responses without the askers' groups."""
    articles = [a if audiences else {k: v for k, v in a.items() if k != "audience"} for a in ARTICLES]
    write(root / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in articles))
    code, out = run_grace("kb", "build", "--articles", root / "articles.jsonl", "--out", root / "kb")
    assert code == 0, out
    gold = GOLD
    if not groups:
        lines = gold.splitlines()
        gold = "\n".join(",".join(line.split(",")[:6] + line.split(",")[7:]) for line in lines) + "\n"
    write(root / "gold.csv", gold)
    rows = []
    for model, answers in ANSWERS.items():
        for qid, text in answers.items():
            row = {"question_id": qid, "model": model, "response": text, "retrieved_ids": ["1", "2", "3", "4"],
                   "latency_ms": 100.0}
            if groups and model == CAREFUL and qid == "q5":
                row["user_groups"] = ["staff"]
            rows.append(row)
    run = root / "run"
    write(run / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    code, out = run_grace("score", run / "responses.jsonl", "--gold", root / "gold.csv", "--kb", root / "kb",
                          "--out", run)
    assert code == 0, out
    return run
