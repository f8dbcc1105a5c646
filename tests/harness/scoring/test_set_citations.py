"""Issue 46: figures for citations that resolve to sets of articles, and gold that says "any of" or "all of".

A six-article KB over three pages; a bot whose references are mapped by a map file. Every expected figure is a hand
count written beside its case, never grace's own arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.errors import GraceError
from harness.run_folder.run_records import CitationSettings
from harness.scoring import score_responses
from harness.scoring.outcomes import Rules, decide_outcome
from kb_builder.gold import read_gold

PAGES = {"1": "benefits.md", "2": "benefits.md", "3": "benefits.md", "4": "leave.md", "5": "leave.md", "6": "travel.md"}
FOUR = "1;2;4;6"  # four acceptable articles on three pages


@pytest.fixture()
def bench(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "articles.jsonl").write_text("".join(
        json.dumps({"id": i, "title": f"Article {i}", "text": f"Rule number {i} says this and that.", "source": page})
        + "\n" for i, page in PAGES.items()))
    (tmp_path / "map.csv").write_text("their_id,article_id\nc1,1\nc1b,1\nc2,2\nc5,5\nc3,3\nc14,1;4\n")
    return tmp_path


def _gold(tmp_path: Path, rows: list[tuple[str, str, str]], needed_column: bool = True) -> Path:
    path = tmp_path / "gold.csv"
    head = "question_id,question,expected_citations,must_refuse" + (",citations_needed" if needed_column else "")
    path.write_text(head + "\n" + "".join(
        f"{q},Question {q}?,{ids},false" + (f",{needed}" if needed_column else "") + "\n" for q, ids, needed in rows))
    return path


def _answer(*refs: str) -> str:
    marks = " ".join(f"Claim {n} [{n}]." for n in range(1, len(refs) + 1))
    return marks + "\n\nSources:\n" + "\n".join(f"[{n}] {r}" for n, r in enumerate(refs, 1))


def _score(bench: Path, gold: Path, rows: list[dict], citations=None):
    run = bench / "run"
    run.mkdir(exist_ok=True)
    (run / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = score_responses(run / "responses.jsonl", gold, bench / "kb", run, bootstrap=0, seed=1,
                             citations=citations)
    lines = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    return report, {(x["model"], x["question_id"]): x for x in lines}




def _bot(bench: Path) -> dict[str, CitationSettings]:
    return {"bot": CitationSettings(scoring="multi", reads="references", map=str(bench / "map.csv"))}


def test_two_citations_of_the_right_article_and_a_wrong_one_are_two_thirds_precise(bench):
    """[1] and [2] resolve to article 1 (the gold), [3] to article 5: 2 of 3 citations answer, 67% (the docs'
    "share of its citations that answer the question"; it was 1 right of 2 distinct articles + 0 unmapped, 50%)."""
    gold = _gold(bench, [("q1", "1", "")])
    report, lines = _score(bench, gold, [{"question_id": "q1", "model": "bot", "response": _answer("c1", "c1b", "c5")}],
                           _bot(bench))
    line = lines[("bot", "q1")]
    assert [c["articles"] for c in line["citations"]] == [["1"], ["1"], ["5"]]
    assert line["cit_precision"] == pytest.approx(2 / 3, abs=1e-6) and line["cit_recall"] == 1.0
    c = report.models["bot"].citations
    assert c.precision == pytest.approx(2 / 3, abs=1e-6)
    # page level: [1] and [2] on benefits.md (the gold's page), [3] on leave.md: 2 of 3 again
    assert c.page_precision == pytest.approx(2 / 3, abs=1e-6) and c.page_recall == 1.0
    assert "per citation" in c.rule


def test_four_acceptable_articles_any_of_gives_recall_one_all_of_a_quarter(bench):
    """The same right one-article answer: recall 1 and correct when the four are alternatives (any), 0.25 and no
    hit when all four are required; page level (three pages): 1 under any, 1/3 under all."""
    gold = _gold(bench, [("qany", FOUR, "any"), ("qall", FOUR, "all"), ("qdefault", FOUR, "")])
    rows = [{"question_id": q, "model": "bot", "response": _answer("c1")} for q in ("qany", "qall", "qdefault")]
    report, lines = _score(bench, gold, rows, _bot(bench))
    figures = {q: (lines[("bot", q)]["cit_recall"], lines[("bot", q)]["outcome"]) for q in ("qany", "qall", "qdefault")}
    assert figures == {"qany": (1.0, "correct"), "qall": (0.25, "wrong_citation"), "qdefault": (1.0, "correct")}
    c = report.models["bot"].citations
    assert c.recall == pytest.approx((1 + 0.25 + 1) / 3, abs=1e-6)
    assert c.hit_rate == pytest.approx(2 / 3, abs=1e-6)
    assert c.page_recall == pytest.approx((1 + 1 / 3 + 1) / 3, abs=1e-6)
    assert c.precision == 1.0


def test_all_of_is_a_hit_when_every_listed_article_is_cited(bench):
    """All four cited (c14 names two articles: one citation of a chunk spanning 1 and 4): correct, recall 1; the
    chunk counts once in precision, right since it holds an answer."""
    gold = _gold(bench, [("qall", FOUR, "all")])
    report, lines = _score(bench, gold, [{"question_id": "qall", "model": "bot",
                                          "response": _answer("c14", "c2", "c3", "[ID: 6]")}], _bot(bench))
    line = lines[("bot", "qall")]
    assert line["outcome"] == "correct" and line["cit_recall"] == 1.0
    assert line["cit_precision"] == pytest.approx(3 / 4, abs=1e-6)  # c3 (article 3) answers nothing of the four


def test_a_grace_model_on_an_all_of_question_cannot_answer_with_one_citation(bench):
    """GRACE's single-citation scoring: one [ID: x] is correct under any of, wrong_citation when all four are needed;
    a one-article all-of question is the same as any of."""
    gold = _gold(bench, [("qany", FOUR, "any"), ("qall", FOUR, "all"), ("qone", "2", "all")])
    rows = [{"question_id": q, "model": "m", "response": f"It says so. [ID: {cited}]"}
            for q, cited in (("qany", "4"), ("qall", "4"), ("qone", "2"))]
    report, lines = _score(bench, gold, rows)
    assert [lines[("m", q)]["outcome"] for q in ("qany", "qall", "qone")] == ["correct", "wrong_citation", "correct"]
    assert report.models["m"].citations is None


def test_an_old_gold_file_reads_as_any_of_and_a_bad_cell_names_its_line(bench):
    old = read_gold(_gold(bench, [("q1", FOUR, "")], needed_column=False))
    assert [g.citations_needed for g in old] == ["any"]
    bad = _gold(bench, [("q1", FOUR, "any"), ("q2", FOUR, "both")])
    with pytest.raises(GraceError, match=r"gold.csv:3.*citations_needed.*'any'.*'all'.*'both'"):
        read_gold(bad)


# -- one order of outcome rules, the mode as data (issue 46) ---------------------------------------------------------

MULTI = Rules(multi=True, references=True)
KB = frozenset("123456")


@pytest.mark.parametrize(("cited", "unmapped", "must", "expected", "shown", "outcome"), [
    # a must-refuse question answered only with references that map to nothing: named as such, as GRACE names an
    # invalid ID before answered_unanswerable (was answered_unanswerable)
    ([], 2, True, [], None, "unmapped_citation"),
    # a must-refuse question answered without a citation: answered_unanswerable, as GRACE's (was no_citation)
    ([], 0, True, [], None, "answered_unanswerable"),
    # the gold among others, one of them not retrieved: a hit (the unshown one is a precision miss)
    (["1", "5"], 0, False, ["1"], ["1", "2"], "correct"),
    # every cited article unshown: unshown_citation before the hit, as GRACE's (was correct)
    (["1", "5"], 0, False, ["1"], ["2", "3"], "unshown_citation"),
    # no gold cited, one of two unshown: a wrong citation (was unshown_citation: one unshown among others)
    (["4", "5"], 0, False, ["1"], ["4"], "wrong_citation"),
    # one unmapped beside a mapped right one: a hit; several citations are no outcome of their own
    (["1"], 1, False, ["1"], None, "correct"),
])
def test_a_multi_citation_answer_is_judged_in_grace_order(cited, unmapped, must, expected, shown, outcome):
    got = decide_outcome(cited, False, must, frozenset(expected), KB, shown=shown, unmapped=unmapped, rules=MULTI)
    assert got == outcome


def test_grace_rules_are_the_default_and_read_as_ids_every_citation_unmapped_is_invalid():
    assert decide_outcome(["1", "9"], False, False, {"1"}, KB) == "invalid_citation"  # any invalid ID, GRACE
    assert decide_outcome(["1", "2"], False, False, {"1"}, KB) == "multiple_citations"
    assert decide_outcome([], False, False, {"1"}, KB, unmapped=2, rules=Rules(multi=True)) == "invalid_citation"
    assert decide_outcome(["1", "2"], False, False, {"1"}, KB, rules=Rules(multi=True)) == "correct"
