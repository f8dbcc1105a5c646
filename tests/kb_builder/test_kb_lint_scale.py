"""Lint on big or uniform KBs: pairs found a block at a time within a budget, each article's few closest kept, and
what a budget leaves out said, never hidden; ``kb build --no-lint``; a KB of one short article.

Time and memory are measured in ``benchmarks/perf/bench_kb_scale.py``; here, the results are checked against the
brute-force product they replace."""

from __future__ import annotations

import json
import random

import numpy as np
from scipy import sparse

from kb_builder.retrieval.lexical import top_k
from kb_builder.similar_pairs import PER_ROW, similar_pairs
from tests.conftest import run_grace, write
from tests.kb_builder.test_kb_lint import build, lint_json

SMALL = "leave policy employee manager request approval days annual travel expense claim office laptop".split()


def normalised(m):
    m = sparse.csr_matrix(m, dtype=np.float64)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return (sparse.diags(1.0 / np.where(norms == 0, 1, norms)) @ m).tocsr()


def corpus(n=300, vocab=3000, dups=40, seed=0):
    """Rows of Zipf-drawn words (common words in every row, as real text has), some rows near copies of others."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocab + 1)
    weights /= weights.sum()
    rows = [np.bincount(rng.choice(vocab, 120, p=weights), minlength=vocab).astype(float) for _ in range(n)]
    for i in rng.choice(n, dups, replace=False):
        j = int(rng.integers(n))
        rows[j] = rows[i] + np.bincount(rng.choice(vocab, 10, p=weights), minlength=vocab)  # a near copy of i
    return normalised(np.log1p(np.vstack(rows)))


def brute(m, at, k):
    """Each row's k most alike partners at or above ``at`` (ties to the lower column), as a set of pairs."""
    s = (m @ m.T).toarray()
    np.fill_diagonal(s, -1)
    out = set()
    for i, row in enumerate(s):
        js = [j for j in np.lexsort((np.arange(len(row)), -row)) if row[j] >= at][:k]
        out |= {(min(i, j), max(i, j)) for j in js}
    return out


def test_the_pairs_are_exactly_the_brute_force_ones_when_the_budget_allows():
    m = corpus()
    for at in (0.32, 0.6):
        found = similar_pairs(m, at)
        assert found.notice is None
        got = set(zip(found.rows.tolist(), found.cols.tolist(), strict=True))
        assert got == brute(m, at, PER_ROW) and len(got) >= 30
        exact = (m @ m.T).toarray()
        assert np.allclose(found.sims, exact[found.rows, found.cols])


def test_a_tight_budget_still_finds_near_copies_by_their_rarer_words_and_says_what_it_left_out():
    m = corpus()
    want = brute(m, 0.6, PER_ROW)
    found = similar_pairs(m, 0.6, work_budget=2e5)
    got = set(zip(found.rows.tolist(), found.cols.tolist(), strict=True))
    assert len(got & want) >= 0.9 * len(want)  # near copies share rare words: the budget barely costs them
    assert got <= {(i, j) for i, j in zip(*np.nonzero(np.triu((m @ m.T).toarray() >= 0.6 - 1e-9, 1)), strict=True)}
    assert found.notice and "most common of" in found.notice and "may be missed" in found.notice


def test_articles_that_are_all_alike_list_their_closest_few_not_every_pair():
    m = normalised(np.random.default_rng(1).integers(1, 4, size=(200, 12)))  # 12 words, every row has them all
    found = similar_pairs(m, 0.32)
    per_article = np.bincount(np.r_[found.rows, found.cols], minlength=200)
    assert len(found.rows) <= 200 * PER_ROW and per_article.min() >= PER_ROW  # not 19,900 pairs
    assert found.capped == 200


def test_top_k_ranks_as_a_stable_sort_does():
    rng = np.random.default_rng(2)
    for _ in range(500):
        scores = rng.integers(0, 4, int(rng.integers(1, 1500))).astype(float)
        k = int(rng.integers(1, 10))
        assert top_k(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist()


def test_lint_of_a_uniform_kb_names_each_article_a_few_times_and_says_why(tmp_path):
    rng = random.Random(3)
    items = [(f"Topic {i}", " ".join(rng.choices(SMALL, k=120)) + ".") for i in range(60)]
    kb, out = build(tmp_path, items)
    report = lint_json(kb)
    pairs = [f["articles"] for f in report["findings"] if f["kind"] == "confusable"]
    assert pairs and len(pairs) <= 60 * PER_ROW < 60 * 59 // 2  # before: all 1,770 pairs
    assert any(f"more than {PER_ROW} others" in n for n in report["notices"])
    assert f"more than {PER_ROW} others" in out  # the build prints the notice too


def test_kb_build_no_lint_skips_it_and_says_how_to_run_it(tmp_path):
    source = write(tmp_path / "docs" / "leave.md", "# Leave\n\n" + "Ask your manager for leave two weeks ahead. " * 20)
    code, out = run_grace("kb", "build", source, "--out", tmp_path / "kb", "--no-lint")
    assert code == 0, out
    assert "lint: skipped (--no-lint)" in out and f"grace kb lint {tmp_path / 'kb'}" in out
    assert "no problems found" not in out


def test_a_kb_of_one_short_article_builds_and_lint_calls_it_short(tmp_path):
    source = write(tmp_path / "faq.md", "# Sick leave\n\nTell your manager before 10am.\n")
    code, out = run_grace("kb", "build", source, "--out", tmp_path / "kb")
    assert code == 0, out
    assert "1 articles from 1 document(s)" in out and "1 too short" in out
    arts = [json.loads(line) for line in (tmp_path / "kb" / "articles.jsonl").read_text().splitlines()]
    assert [a["title"] for a in arts] == ["Sick leave"] and "10am" in arts[0]["text"]
    # a short section among long ones is still a fragment, and a heading with no text still no KB
    write(tmp_path / "two.md", "# Handbook\n\n## Leave\n\n" + "Ask your manager for leave ahead. " * 30 + "\n\n## Note\n\nSee HR.\n")
    code, out = run_grace("kb", "build", tmp_path / "two.md", "--out", tmp_path / "kb2")
    assert code == 0 and "1 articles from" in out, out
    code, out = run_grace("kb", "build", write(tmp_path / "empty.md", "# Sick leave\n"), "--out", tmp_path / "kb3")
    assert code != 0 and "hold no text" in out
