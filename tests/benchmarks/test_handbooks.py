"""The French, German and English handbooks in benchmarks/external: data with a source and licence, labels that
join the KB built from them, a split fixed before tuning, and held-out recall with intervals from `grace kb eval`."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys

import pytest

from harness.core.errors import GraceError
from tests.conftest import ROOT, run_grace, shared

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

EXTERNAL = ROOT / "benchmarks" / "external"
IN_REPO = {"etalab-fr": "fr", "berlin-opendata-de": "de", "clef-en": "en"}


def _handbooks():
    spec = importlib.util.spec_from_file_location("handbooks", EXTERNAL / "handbooks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(IN_REPO))
def test_each_handbook_has_its_source_licence_and_only_data(name):
    folder = EXTERNAL / name
    source = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    assert "https://github.com/" in source and "commit" in source.lower() and "licen" in source.lower()
    kept = [p for p in (folder / "pages").rglob("*") if p.is_file()]
    assert kept and all(p.suffix == ".md" for p in kept)  # Markdown pages only: no code came along
    assert sum(p.stat().st_size for p in kept) < 1_000_000


@pytest.mark.parametrize("name", sorted(IN_REPO))
def test_gold_split_was_dealt_by_question_id_hash(name):
    mod = _handbooks()
    rows = mod.read_labels(EXTERNAL / name / "gold.csv")
    assert len(rows) >= 35
    for r in rows:
        odd = int(hashlib.sha256(r["question_id"].encode()).hexdigest()[:8], 16) % 2
        assert r["split"] == ("heldout" if odd else "tuning"), r["question_id"]
    assert sum(r["split"] == "heldout" and r["must_refuse"] == "false" for r in rows) >= 15


@pytest.mark.slow  # builds and evaluates a handbook KB: 8 to 14 s
@pytest.mark.parametrize("name, code", sorted(IN_REPO.items()))
def test_labels_join_the_kb_built_from_the_pages_and_held_out_recall_has_intervals(tmp_path, name, code):
    mod = _handbooks()
    kb = tmp_path / "kb"
    c, out = run_grace("kb", "build", EXTERNAL / name / "pages", "--out", kb)
    assert c == 0 and f"language: {code}" in out, out
    gold = EXTERNAL / name / "gold.csv"
    rows = mod.read_labels(gold)
    mod.check_labels(gold, rows, kb / "articles.jsonl")
    n = mod.write_part(rows, "heldout", tmp_path / "heldout.csv")
    c, out = run_grace("kb", "eval", kb, "--gold", tmp_path / "heldout.csv", "--embedder", "bm25", "--embedder",
                       "bm25f", "--json", tmp_path / "r.json", "--bootstrap", "200")
    assert c == 0 and f"on {n} answerable questions" in out, out
    result = {r["retriever"]: r for r in json.loads((tmp_path / "r.json").read_text())["retrievers"]}
    for row in result.values():
        lo, hi = row["recall_ci"]["3"]
        assert 0 <= lo <= row["recall"]["3"] <= hi <= 1


@pytest.mark.slow  # two retrievers on a handbook: 3 to 11 s
@pytest.mark.parametrize("name", ["etalab-fr", "berlin-opendata-de"])
def test_the_french_and_german_default_beats_bm25f_on_both_parts(tmp_path, name):
    """The evidence LANGUAGE_DEFAULTS rests on (docs/how-to/languages.md): a new KB in the language gets the default, and
    it finds more questions than bm25f in the tuning part and in the held-out part."""
    mod = _handbooks()
    kb = tmp_path / "kb"
    c, out = run_grace("kb", "build", EXTERNAL / name / "pages", "--out", kb)
    assert c == 0, out
    assert json.loads((kb / "manifest.json").read_text(encoding="utf-8"))["embedder"] == "bm25f+char4"
    rows = mod.read_labels(EXTERNAL / name / "gold.csv")
    for split in ("tuning", "heldout"):
        part = tmp_path / f"{split}.csv"
        mod.write_part(rows, split, part)
        c, out = run_grace("kb", "eval", kb, "--gold", part, "--embedder", "bm25f", "--embedder", "bm25f+char4",
                           "--json", tmp_path / f"{split}.json", "--bootstrap", "0")
        assert c == 0, out
        got = {r["retriever"]: r["recall"]["3"] for r in json.loads((tmp_path / f"{split}.json").read_text())["retrievers"]}
        assert got["bm25f+char4"] > got["bm25f"], (split, got)


def test_a_label_whose_article_moved_is_refused(tmp_path):
    mod = _handbooks()
    gold = EXTERNAL / "clef-en" / "gold.csv"
    rows = mod.read_labels(gold)
    c, out = run_grace("kb", "build", EXTERNAL / "clef-en" / "pages", "--out", tmp_path / "kb")
    assert c == 0, out
    moved = [dict(rows[0], expected_citations="1")] + rows[1:]
    with pytest.raises(GraceError, match=r"gold.csv:2: article\(s\) 1 are titled .* relabel the row"):
        mod.check_labels(gold, moved, tmp_path / "kb" / "articles.jsonl")


@pytest.mark.slow  # the shared handbook built: 31 s
def test_tts_labels_join_the_kb_built_from_the_shared_handbook(tmp_path):
    data = shared("tts-handbook")
    mod = _handbooks()
    c, out = run_grace("kb", "build", data, "--out", tmp_path / "kb")
    assert c == 0 and "language: en" in out, out
    gold = EXTERNAL / "tts-en" / "gold.csv"
    mod.check_labels(gold, mod.read_labels(gold), tmp_path / "kb" / "articles.jsonl")
