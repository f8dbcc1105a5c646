"""Scoring the citations real systems make (issue 39): their own references, footnotes, several per answer.

Each case is a response row over the sample KB (benchmarks/sample) scored for real by ``score_responses`` with the
model's :class:`CitationSettings`; a GRACE run is scored byte for byte as before (a stored run, tests/citation_runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run_folder.report import read_report
from harness.run_folder.run_records import CitationSettings
from harness.run_folder.scores import CITATION_FIELDS, SCORE_FIELDS, ScoreLine
from harness.scoring import score_responses
from tests.citation_runs import STORED, grace_rows, masked, sample_bench, write_rows

BOT = CitationSettings(scoring="multi", reads="references")
Q001_SOURCE = "payroll/pay-and-compensation.html#Annual performance bonus"  # article 33, the gold of q001


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("citations"))


def _score(bench, tmp_path: Path, rows: list[dict], citations=None, name: str = "run", **kw):
    kb, gold = bench
    run = tmp_path / name
    write_rows(run / "responses.jsonl", rows)
    report = score_responses(run / "responses.jsonl", gold, kb, run, bootstrap=kw.pop("bootstrap", 50), seed=1,
                             citations=citations, **kw)
    lines = [json.loads(x) for x in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    return report, lines


def _row(qid: str, model: str, text: str, citations=None, **extra) -> dict:
    row = {"question_id": qid, "model": model, "response": text, **extra}
    if citations is not None:
        row["citations"] = citations
    return row


def test_a_source_reference_is_the_article_it_names(bench, tmp_path):
    """Issue 39, system 1: its own file#heading reference is article 33, correct on q001 (GRACE read it as an ID)."""
    rows = [_row("q001", "bot", "The L4 target is 10% of base salary.", [Q001_SOURCE])]
    before, old = _score(bench, tmp_path, rows, name="grace")
    assert old[0]["outcome"] == "invalid_citation" and before.models["bot"].accuracy == 0
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    line = lines[0]
    assert line["outcome"] == "correct" and line["cited_ids"] == ["33"]
    assert line["citations"] == [{"reference": Q001_SOURCE, "articles": ["33"], "how": "source+heading", "note": "",
                                  "quote": None, "quote_found": None}]
    assert (line["cit_precision"], line["cit_recall"], line["cit_f1"], line["cit_correct"]) == (1.0, 1.0, 1.0, 1.0)
    assert tuple(line) == SCORE_FIELDS + CITATION_FIELDS and ScoreLine.model_validate(line).citations[0].how
    m = report.models["bot"]
    assert m.accuracy == 1.0 and m.citations is not None and m.citations.hit_rate == 1.0
    assert m.citations.by_how == {"source+heading": 1} and m.citations.n_unmapped == 0


def test_footnotes_with_a_source_list_are_never_articles_1_and_2(bench, tmp_path):
    """Issue 39, system 2: "[1][2]" points into the answer's own list; read as GRACE IDs they were articles 1 and 2."""
    text = ("The L4 bonus target is 10% of base [1][2].\n\nSources:\n"
            "[1] payroll/pay-and-compensation.html#annual-performance-bonus\n"
            "[2] https://intranet.example.com/wiki/bonus-faq")
    rows = [_row("q001", "bot", text, retrieved_ids=["33", "1", "2"])]
    _, old = _score(bench, tmp_path, rows, name="grace")
    assert set(old[0]["cited_ids"]) == {"1", "2"}  # the silent wrong reading of today
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    line = lines[0]
    assert "1" not in line["cited_ids"] and "2" not in line["cited_ids"] and line["cited_ids"] == ["33"]
    assert [c["how"] for c in line["citations"]] == ["source+heading", None]
    assert line["citations"][1]["articles"] == [] and line["citations"][1]["note"]
    assert line["outcome"] == "correct"  # it cites the gold article
    assert line["cit_precision"] == 0.5 and line["cit_recall"] == 1.0  # the unmapped reference counts as a miss
    assert report.models["bot"].citations.n_unmapped == 1
    assert report.models["bot"].citations.by_how == {"source+heading": 1, "unmapped": 1}


def test_the_gold_article_and_a_wrong_one_score_precision_half_recall_one(bench, tmp_path):
    """Issue 39, system 3: citations=["33", "34"] (the right article and another) is a hit, precision 0.5."""
    rows = [_row("q001", "bot", "It is 10% of base salary.", ["33", "34"])]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    line = lines[0]
    assert line["outcome"] == "correct" and line["cited_ids"] == ["33", "34"]
    assert [c["how"] for c in line["citations"]] == ["id", "id"]
    assert (line["cit_precision"], line["cit_recall"]) == (0.5, 1.0)
    assert line["cit_f1"] == pytest.approx(2 / 3, abs=1e-6)
    c = report.models["bot"].citations
    assert (c.precision, c.recall, c.hit_rate) == (0.5, 1.0, 1.0) and c.f1 == pytest.approx(2 / 3, abs=1e-6)
    assert c.scoring == "multi" and c.reads == "references" and c.n_citations == 2


def test_the_hit_rate_interval_is_wilsons_and_the_means_keep_the_bootstrap(bench, tmp_path):
    """Issue 47: the hit rate is a share of questions: 3 of 3 is Wilson's [43.9%, 100%] (scipy's, computed apart),
    never [100%, 100%]; recall and F1, means of per-answer figures, keep a bootstrap interval."""
    from scipy.stats import binomtest

    rows = [_row(q, "bot", "It is in the handbook.", [cited, "34"]) for q, cited in (("q001", "33"), ("q002", "27"),
                                                                                      ("q003", "38"))]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT}, bootstrap=200)
    c = report.models["bot"].citations
    assert [line["cit_recall"] for line in lines] == [1.0, 1.0, 1.0] and c.hit_rate == 1.0
    truth = binomtest(3, 3).proportion_ci(method="wilson")
    assert c.hit_rate_ci95 == pytest.approx([truth.low, truth.high], abs=1.1e-6) and c.hit_rate_ci95[0] < 0.5
    assert c.recall_ci95 == [1.0, 1.0]  # every answer's recall is 1: a bootstrap of a mean, as before
    assert report.models["bot"].accuracy_ci95 == c.hit_rate_ci95  # its accuracy is the same share


def test_unmapped_references_are_counted_never_read_as_ids(bench, tmp_path):
    rows = [_row("q001", "bot", "See our wiki.", ["chunk-9912"]),
            _row("q002", "bot", "EUR 65 a day [1].\n\nSources:\n[1] 27"),  # a bare number in the list: not article 27
            _row("q003", "bot", "Ship it back within 10 working days.", [])]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    assert [x["outcome"] for x in lines] == ["unmapped_citation", "unmapped_citation", "no_citation"]
    assert lines[1]["cited_ids"] == [] and lines[1]["citations"][0]["reference"] == "27"
    m = report.models["bot"]
    assert m.outcomes["unmapped_citation"] == 2 and m.citations.n_unmapped == 2 and m.citations.n_citations == 2
    assert any("resolved to no KB article" in w for w in report.warnings)


def test_a_mapping_file_and_rewrites_resolve_a_systems_own_ids(bench, tmp_path):
    mapping = tmp_path / "map.csv"
    mapping.write_text("their_id,article_id\nchunk-9912,33\n", encoding="utf-8")
    settings = CitationSettings(scoring="multi", reads="references", map=str(mapping),
                                rewrite={"https://intranet.example.com/hb/": "payroll/"})
    rows = [_row("q001", "bot", "10%.", ["chunk-9912"]), _row("q001", "bot", "10%.", [
        "https://intranet.example.com/hb/pay-and-compensation.html#annual-performance-bonus"], repeat=1)]
    report, lines = _score(bench, tmp_path, rows, {"bot": settings})
    assert [x["citations"][0]["how"] for x in lines] == ["mapping", "rewrite"]
    assert [x["outcome"] for x in lines] == ["correct", "correct"]


def test_a_bad_mapping_file_is_a_clear_error(bench, tmp_path):
    from harness.core.errors import GraceError

    mapping = tmp_path / "map.csv"
    mapping.write_text("chunk-1,33\nchunk-1,34\n", encoding="utf-8")
    with pytest.raises(GraceError, match=r"map.csv:2.*conflicting"):
        _score(bench, tmp_path, [_row("q001", "bot", "x", ["chunk-1"])],
               {"bot": CitationSettings(scoring="multi", reads="references", map=str(mapping))})


def test_a_quote_is_checked_in_the_article_it_cites(bench, tmp_path):
    text = ('Levels L4 and L5 get "10% of base salary" as the target [1], but "every employee gets a free car" [1].'
            "\n\nSources:\n[1] payroll/pay-and-compensation.html#annual-performance-bonus")
    right = 'The policy says "levels L4 and L5: 10%" [1].\n\nSources:\n[1] payroll/pay-and-compensation.html#annual-performance-bonus'
    report, lines = _score(bench, tmp_path, [_row("q001", "bot", right), _row("q001", "bot", text, repeat=1)],
                           {"bot": BOT})
    found = lines[0]["citations"][0]
    assert found["quote"] == "levels L4 and L5: 10%" and found["quote_found"] is True
    assert lines[0]["cit_correct"] == 1.0
    made_up = lines[1]["citations"][0]
    assert made_up["quote_found"] is False and lines[1]["cit_correct"] == 0.0  # the quote is not in article 33
    c = report.models["bot"].citations
    assert (c.quotes_checked, c.quotes_missing) == (2, 1)


def test_marker_problems_are_named_counts(bench, tmp_path):
    text = ("10% of base [1].\n\nSources:\n[1] payroll/pay-and-compensation.html#annual-performance-bonus\n"
            "[2] remote-work/remote-work.md#who-can-work-remotely\n[3] nowhere.html")
    report, lines = _score(bench, tmp_path, [_row("q001", "bot", text), _row("q002", "bot", "EUR 65 [4].")],
                           {"bot": BOT})
    assert "list_longer_than_markers" in lines[0]["marker_problems"]
    assert lines[1]["marker_problems"] == ["unlisted_marker"] and lines[1]["outcome"] == "no_citation"
    problems = report.models["bot"].citations.marker_problems
    assert problems["list_longer_than_markers"] == 1 and problems["unlisted_marker"] == 1
    assert lines[0]["outcome"] == "correct"


REMOTE = "remote-work/remote-work.md#who-can-work-remotely"  # an article that does not answer q001


def test_a_list_without_markers_is_cited_whole_and_said_so_one_way(bench, tmp_path):
    """The figures, the row's marker_problems and the run's warning agree: an answer with no marker cites its whole
    list; beside citations returned as data, a listed entry outside them is named uncited and is not counted."""
    text = f"The L4 target is 10% of base salary.\n\nSources:\n- {Q001_SOURCE}\n- {REMOTE}"
    rows = [_row("q001", "bot", text), _row("q001", "bot", text, [Q001_SOURCE], repeat=1)]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    whole, returned = lines
    # no marker, nothing returned as data: both entries are cited, and nothing says otherwise
    assert [c["reference"] for c in whole["citations"]] == [Q001_SOURCE, REMOTE]
    assert whole["cit_precision"] == 0.5 and whole["marker_problems"] == []
    # returned as data: that one is cited; the other listed entry is named uncited, and not counted
    assert [c["reference"] for c in returned["citations"]] == [Q001_SOURCE]
    assert returned["cit_precision"] == 1.0 and returned["marker_problems"] == ["uncited_entry"]
    c = report.models["bot"].citations
    assert c.n_citations == 3 and c.marker_problems == {"uncited_entry": 1}
    (warning,) = [w for w in report.warnings if "does not match" in w]
    assert "uncited_entry 1" in warning and "not counted as cited" in warning
    assert "no marker cites its whole list" in warning


def test_a_1500_entry_list_is_read_whole_and_a_longer_one_is_named(bench, tmp_path):
    """"[1500]" cites the 1,500th entry (read up to 999 before); past 2,000 entries the list is too_many_sources."""
    def listed(n: int, at: int) -> str:
        return "\n".join(f"[{k}] {Q001_SOURCE if k == at else f'elsewhere/doc-{k}.html'}" for k in range(1, n + 1))

    rows = [_row("q001", "bot", f"The L4 target is 10% of base salary [1500].\n\nSources:\n{listed(1500, 1500)}"),
            _row("q001", "bot", f"The L4 target is 10% [2500].\n\nSources:\n{listed(2500, 2500)}", repeat=1)]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    long, too_long = lines
    assert [c["reference"] for c in long["citations"]] == [Q001_SOURCE] and long["outcome"] == "correct"
    assert set(long["marker_problems"]) == {"uncited_entry", "list_longer_than_markers"}
    assert too_long["citations"] == [] and too_long["outcome"] == "no_citation"
    assert too_long["marker_problems"][:2] == ["too_many_sources", "unlisted_marker"]
    assert report.models["bot"].citations.marker_problems["too_many_sources"] == 1
    (warning,) = [w for w in report.warnings if "could not all be read" in w]
    assert "too_many_sources 1" in warning and "unlisted_marker 1" in warning


def test_system_retrieved_references_are_resolved_for_coverage(bench, tmp_path):
    rows = [_row("q001", "bot", "10%.", [Q001_SOURCE],
                 system_retrieved=[Q001_SOURCE, "remote-work/remote-work.md#who-can-work-remotely"])]
    report, lines = _score(bench, tmp_path, rows, {"bot": BOT})
    assert lines[0]["retrieved_ids"] == ["33", "34"] and lines[0]["coverage"] == 0.5
    assert report.models["bot"].citations.coverage == 0.5 and report.models["bot"].retrieval_source == "system"


def test_single_scoring_of_references_keeps_one_citation_per_answer(bench, tmp_path):
    single = CitationSettings(scoring="single", reads="references")
    rows = [_row("q001", "bot", "10%.", [Q001_SOURCE]), _row("q001", "bot", "10%.", ["33", "34"], repeat=1)]
    report, lines = _score(bench, tmp_path, rows, {"bot": single})
    assert [x["outcome"] for x in lines] == ["correct", "multiple_citations"]
    assert report.models["bot"].citations.scoring == "single"


def test_multi_scoring_of_ids_keeps_the_grace_reading(bench, tmp_path):
    """reads = ids: the citations are what GRACE's extraction reads, several scored per answer."""
    ids = CitationSettings(scoring="multi", reads="ids")
    rows = [_row("q001", "m", "It is 10% [ID: 33] [ID: 34]."), _row("q001", "m", "It is 10% [ID: nope-1]", repeat=1)]
    report, lines = _score(bench, tmp_path, rows, {"m": ids})
    assert lines[0]["outcome"] == "correct" and lines[0]["cit_precision"] == 0.5
    assert lines[1]["outcome"] == "invalid_citation" and "unmapped_citation" not in report.models["m"].outcomes


def test_a_grace_run_is_scored_byte_for_byte_as_before(bench, tmp_path):
    """The stored run (scored before issue 39) scores to the same bytes, with and without settings for others."""
    kb, gold = bench
    assert (STORED / "responses.jsonl").read_text(encoding="utf-8") == "".join(
        json.dumps(r) + "\n" for r in grace_rows(gold))
    for citations in (None, {"some-other-bot": BOT}):
        run = tmp_path / f"run{citations is None}"
        write_rows(run / "responses.jsonl", grace_rows(gold))
        score_responses(run / "responses.jsonl", gold, kb, run, bootstrap=200, seed=3, citations=citations)
        assert (run / "scores.jsonl").read_bytes() == (STORED / "scores.jsonl").read_bytes()
        assert masked((run / "report.json").read_text(encoding="utf-8")) == (STORED / "report.json").read_text(
            encoding="utf-8")


def test_grace_lines_in_a_mixed_run_are_unchanged_and_multi_models_are_compared(bench, tmp_path):
    kb, gold = bench
    grace = [r for r in grace_rows(gold) if r["model"] == "gpt-a"]
    bots = []
    for i, (qid, expected) in enumerate([("q001", "33"), ("q002", "27"), ("q003", "38"), ("q004", "43")] * 3):
        bots.append(_row(qid, "bot-a", "x", [expected, "34"], repeat=i // 4))
        bots.append(_row(qid, "bot-b", "x", ["12"], repeat=i // 4))
    report, lines = _score(bench, tmp_path, grace + bots, {"bot-a": BOT, "bot-b": BOT}, name="mixed")
    _, alone = _score(bench, tmp_path, grace, name="alone")
    assert [x for x in lines if x["model"] == "gpt-a"] == alone
    assert report.models["gpt-a"].citations is None and "unmapped_citation" not in report.models["gpt-a"].outcomes
    pairs = report.citation_pairwise
    assert [(p.a, p.b) for p in pairs] == [("bot-a", "bot-b")]
    assert pairs[0].n == 4 and pairs[0].f1_a == pytest.approx(2 / 3, abs=1e-6) and pairs[0].f1_b == 0
    assert pairs[0].p_adjusted >= pairs[0].p_value >= 0 and report.models["bot-a"].citations.f1_ci95 is not None
    again = read_report(tmp_path / "mixed" / "report.json")
    assert again.citation_pairwise == pairs and again.models["bot-a"].citations == report.models["bot-a"].citations


def test_workers_score_references_as_one_process_does(bench, tmp_path):
    kb, gold = bench
    rows = []
    for r in range(40):
        rows.append(_row("q001", "bot", f"10% [1].\n\nSources:\n[1] {Q001_SOURCE}", repeat=r))
        rows.append(_row("q002", "bot", "EUR 65.", ["money/expenses.md#meal-allowance-per-diem-on-business-trips", "x"],
                         repeat=r))
        rows.append(_row("q001", "gpt", "10% [ID: 33]", repeat=r))
    one, a = _score(bench, tmp_path, rows, {"bot": BOT}, name="one", workers=1)
    three, b = _score(bench, tmp_path, rows, {"bot": BOT}, name="three", workers=3)
    assert a == b and one.models["bot"].citations == three.models["bot"].citations
    assert a[1]["cited_ids"] == ["27"]
    import threading

    running = threading.Event()
    other = threading.Thread(target=running.wait)  # another thread: the workers are spawned, the readers pickled
    other.start()
    try:
        spawned, c = _score(bench, tmp_path, rows, {"bot": BOT}, name="spawned", workers=2)
    finally:
        running.set()
        other.join()
    assert c == a and spawned.models["bot"].citations == one.models["bot"].citations


def test_the_one_line_shortcut_reads_as_the_whole_reader(monkeypatch):
    """read_markers skips its work for one line with no marker character and no list heading: same reading."""
    import random
    import re

    from harness.scoring import markers

    rng = random.Random(39)
    parts = ["The bonus is 10%", " of base", ".", " Sources: a.html", "Sources", " see x", ": ", "Quellen: b.md; c.md",
             "References", " https://x.example/a#b", "  ", "ID: 33", "(1)", "1.", "- bullet", "**Sources:**", "¹",
             "[1]", "\n", "【1】", "<sup>1</sup>", "x\u2028y", "\r"]
    texts = ["".join(rng.choices(parts, k=rng.randint(0, 6))) for _ in range(3000)]
    citations = [None, [], ["a.html"], ["33", " ", "b.md#h"]]
    fast = [markers.read_markers(t, c) for t in texts for c in citations]
    monkeypatch.setattr(markers, "_MARK_CHAR", re.compile(r"(?s)."))  # every text takes the whole reading
    slow = [markers.read_markers(t, c) for t in texts for c in citations]
    assert fast == slow


def test_hostile_answers_never_raise(bench):
    """Model output is hostile: whatever the text and citations, the reader gives a reading."""
    import random

    from harness.scoring.citation_reading import CitationReader
    from kb_builder.loader import load_kb

    kb = load_kb(bench[0], write_missing=False)
    reader = CitationReader(kb.articles, BOT, {a.id for a in kb.articles})
    rng = random.Random(7)
    alphabet = ['[', ']', '(', ')', '^', '1', '2', '33', '"', '\u201c', '\u201d', '#', ':', '\n', 'Sources:', '【', '†',
                '】', '¹', '<sup>', '</sup>', 'payroll/pay-and-compensation.html', ' ', 'a', '```', '-', '[ID: 33]',
                '\u2028', '\x00', 'https://x.y/z']
    for _ in range(3000):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 60)))
        cites = rng.choice([None, [], ["33"], ["", "1", text[:30]]])
        reading = reader.read(text, cites)
        assert all(isinstance(c.reference, str) for c in reading.citations)
        reading.claims()
    huge = "[1]" * 5000 + "\n\nSources:\n" + "\n".join(f"[{i}] doc-{i}.html" for i in range(3000))
    assert "too_many_markers" in reader.read(huge).problems or "too_many_sources" in reader.read(huge).problems


def test_the_paired_sign_flip_test():
    import numpy as np

    from harness.scoring.significance import paired_sign_flips

    nan = np.nan
    diffs = np.array([[1.0, 0.0, 1.0, 0.5], [1.0, 0.0, 1.0, nan], [1.0, 0.0, 1.0, nan]] + [[nan, nan, 1.0, nan]] * 27)
    p = paired_sign_flips(diffs, 20000, 3)
    assert abs(p[0] - 0.25) < 0.015  # three questions all +1: 2 of the 8 sign patterns reach a mean of 1
    assert p[1] == 1.0  # never differ
    assert p[2] == 1 / 20001  # thirty questions all +1: no random flip reaches it
    assert abs(p[3] - 1.0) < 1e-9  # one question: its flip always reaches it
    assert paired_sign_flips(diffs, 20000, 3) == p and paired_sign_flips(diffs, 0, 3) == [1.0] * 4
