"""The support check on sentences as written (issue 46): a bot whose every sentence is copied from what it cites.

The bot (:mod:`tests.copied_bot`, run by ``grace run``) chunks a handbook itself and copies 1 to 3 sentences per
answer, citing them by GRACE's ``[ID: n]`` (before or after the full stop, closing the answer), by footnotes with
a source list, or by a link after the sentence. The offline lexical judge must call its sentences supported (before
this issue it called a third of them unsupported: markers left in the claim, a link given to the next sentence, a
closing ``[ID: n].`` judged as a claim of its own). Truth is computed apart from grace: a sentence is copied when its
words, in order, are words of the article it cites.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_grace, shared
from tests.copied_bot import MODELS, build_copied_run, words

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

FLOOR = 0.95  # the share of copied sentences the judge must call supported


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module", params=["sample", "tts"])
def copied(request, tmp_path_factory):
    handbook = SAMPLE / "handbook" if request.param == "sample" else shared("tts-handbook") / "pages"
    root = tmp_path_factory.mktemp(f"copied-{request.param}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        run, kb, made = build_copied_run(root, handbook, 40 if request.param == "sample" else 60)
        out = {}
        for mode in ("claims", "segments"):
            code, text = run_grace("spotcheck", "run", run, "--kb", kb, "--judge", "baseline:lexical", "--all",
                                   "--scope", "answered", "--mode", mode, "--bootstrap", "100")
            assert code == 0, text
            files = ("claims.jsonl", "citation_support.jsonl") if mode == "claims" else ("judgements.jsonl",)
            out.update({name: _rows(run / "spotcheck" / name) for name in files})
    texts = {json.loads(line)["id"]: words(json.loads(line)["text"])
             for line in (kb / "articles.jsonl").read_text(encoding="utf-8").splitlines()}
    return made, out, texts


def _copied(made: dict) -> set[str]:
    """Every sentence the bot wrote, as the truth compares them."""
    return {words(s.sentence) for picked in (*made["sentences"]["grace"].values(), *made["sentences"]["chunks"].values())
            for s in picked}


def test_the_lexical_judge_calls_copied_sentences_supported_in_claims_mode(copied):
    made, out, texts = copied
    claims = [r for r in out["claims.jsonl"] if r["kind"] == "claim"]
    sentences = _copied(made)
    for model in MODELS:
        mine = [r for r in claims if r["model"] == model]
        assert len(mine) >= 40
        # truth: each claim is (a clause of) a sentence the bot copied, found in an article it cites
        assert all(any(words(r["claim"]) in s for s in sentences) for r in mine), model
        assert all(any(words(r["claim"]) in texts[a] for a in r["checked_against"]) for r in mine), model
        supported = sum(r["verdict"] == "supported" for r in mine) / len(mine)
        assert supported >= FLOOR, (model, supported, [r["claim"] for r in mine if r["verdict"] != "supported"][:5])


def test_the_lexical_judge_calls_copied_sentences_supported_in_segments_mode(copied):
    made, out, texts = copied
    sentences = _copied(made)
    for model in MODELS:
        mine = [r for r in out["judgements.jsonl"] if r["model"] == model]
        assert len(mine) >= 40
        # each segment is one sentence the bot wrote, cited to an article that holds it
        assert all(words(r["claim"]) in sentences for r in mine), model
        assert all(any(words(r["claim"]) in texts[a] for a in r["citations"]) for r in mine), model
        supported = sum(r["supported"] is True for r in mine) / len(mine)
        assert supported >= FLOOR, (model, supported)


def test_each_copied_sentence_is_its_own_citations_in_the_citation_support_check(copied):
    made, out, texts = copied
    sentences = _copied(made)
    for model in ("grace-refs", "footnotes", "links"):
        mine = [r for r in out["citation_support.jsonl"] if r["model"] == model]
        assert len(mine) >= 40
        assert all(words(r["sentence"]) in sentences for r in mine), model
        own = sum(r["label"] == "own" for r in mine) / len(mine)
        assert own >= FLOOR, (model, own, [r["sentence"] for r in mine if r["label"] != "own"][:5])


def test_a_closing_citation_is_never_a_claim(copied):
    made, out, _ = copied
    closing = [q for q, text in made["answers"]["grace"].items() if "\n\n[ID: " in text]
    assert len(closing) >= 10  # the grounded prompt's own format, and inline markers with one closing the answer
    judged = ([r["claim"] for r in out["claims.jsonl"] if r["kind"] == "claim"]
              + [r["claim"] for r in out["judgements.jsonl"]] + [r["sentence"] for r in out["citation_support.jsonl"]])
    assert judged and all(words(text).strip() and "ID" not in text for text in judged)
