"""``baseline:lexical``: an offline judge, so the spot-check pipeline runs without keys.

A segment is "supported" when every content word (stemmed) and every number in
it appears in the source. It is a deliberately cheap, clearly lower-quality
judge: it catches changed numbers, new names and claims from world knowledge,
but not a swapped pair of words that both occur in the source, a dropped
condition, or a negation moved within the sentence, and it fails correct
paraphrases that use other words. ``grace spotcheck meta-eval`` measures all of
that. Words are read in the source's language (its stop words and Snowball
stemmer; English exactly as before). Words that can flip a claim's truth (not, never, all, only, ...) count as
content words, never as stop words.

It answers in the same JSON an LLM judge does and goes through the same parser
and records, so nothing downstream knows it is not a model. It plays every
judge role of the spot-check, told apart by the request's context ID:

* a segment (``--mode segments``): supported or not, as above;
* ``claims:extract``: the answer's segments cut into sentences and clauses
  (at ";" and at ", and"/", but"), each one claim;
* ``claims:verify``: each claim ``supported`` when all its content words and
  numbers are in the source, ``partial`` when its numbers are and at least half
  its content words, else ``unsupported``; the evidence is the source sentence
  sharing most content words with it;
* ``quality:`` (GroUSE-style answer quality, :mod:`harness.spotcheck.quality`):
  word-overlap proxies of relevancy, completeness, faithfulness and usefulness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from harness.core.citation_text import ANY_ID_MARKER
from harness.providers.base import Completion, Provider, Request, RetrievedArticle

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
STOP = frozenset("""
a an the of to in on at by for from with into onto about as than then and or but if so because while
is are was were be been being am do does did done has have had having will would shall should can could
may might must it its it's this that these those there here their they them he she his her him we us
our you your i me my mine yours who whom whose which what when where why how also just very too
up out over under again further once both each other such own same more most some per via etc
s t re ve ll d st nd rd th get gets got
""".split())


def _stemmer():
    try:
        import Stemmer

        return Stemmer.Stemmer("english").stemWord
    except ImportError:  # PyStemmer is installed with grace; a crude fallback keeps the judge usable without it
        return lambda w: re.sub(r"(ing|ed|es|s)$", "", w) if len(w) > 4 else w


_STEM = _stemmer()


@lru_cache(maxsize=32)
def _reading(language: str):
    """(stop words, stem of one word) for ``language``: English's own list and stemmer above; another language's
    stop list (less the words that flip a claim, which only English lists here) and Snowball stemmer, so "les
    congés sont payés" is checked on "congé" and "pai", not on "les" and "sont"."""
    if language == "en":
        return STOP, _STEM
    from kb_builder import language as lang

    many = lang.stemmer(language)
    return STOP | lang.stop_words(language), (lambda w: many([w])[0]) if many else (lambda w: w)


def source_language(source: str) -> str:
    """The language a source is read in: detected from its text (English when too short to tell)."""
    from kb_builder import language as lang

    return lang.detect(source) or "en"


def _numbers(text: str) -> set[str]:
    out = set()
    for n in _NUMBER.findall(text):
        plain = n.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", n) else n
        out.add(plain.rstrip("0").rstrip(".") if "." in plain else plain)
    return out


def _words(text: str, language: str = "en") -> dict[str, str]:
    """stem -> first surface form, for content words only."""
    stop, stem = _reading(language)
    out: dict[str, str] = {}
    for w in _WORD.findall(text.lower().replace("\u2019", "'")):
        base = w.split("'")[0] if w.endswith("'s") else w
        if language != "en" and "'" in base:  # French and Italian elision: "l'employeur" is "employeur"
            base = base.split("'", 1)[1]
        if base in stop or len(base) < 2:
            continue
        out.setdefault(stem(base), w)
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def lexical_verdict(claim: str, source: str, language: str = "en") -> dict[str, object]:
    words, numbers = _words(claim, language), _numbers(claim)
    src_words, src_numbers = set(_words(source, language)), _numbers(source)
    missing_w = [w for stem, w in words.items() if stem not in src_words]
    missing_n = sorted(numbers - src_numbers)
    if not words and not numbers:
        return {"explanation": "No content words or numbers: nothing to check.", "supported": True}
    if not missing_w and not missing_n:
        return {"explanation": f"All {_plural(len(words), 'content word')} and {_plural(len(numbers), 'number')} "
                               "appear in the source.",
                "supported": True}
    parts = []
    if missing_n:
        parts.append("numbers not in the source: " + ", ".join(missing_n))
    if missing_w:
        parts.append(f"{len(missing_w)} of {len(words)} content words not in the source: " + ", ".join(missing_w[:12]))
    return {"explanation": "; ".join(parts).capitalize() + ".", "supported": False}


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_CLAUSE = re.compile(r"\s*;\s*|,\s+(?:and|but)\s+(?=\w)")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def lexical_claims(segments: list[list]) -> dict[str, object]:
    """``claims:extract``: sentences and clauses of each segment, each one claim (no pronoun resolution)."""
    out = []
    for n, (_, text) in enumerate(segments, 1):
        for sentence in sentences(text):
            for clause in _CLAUSE.split(sentence):
                if len(_words(clause)) + len(_numbers(clause)) > 0:
                    out.append({"segment": n, "claim": clause.strip().rstrip(".") + "."})
    return {"claims": out}


def _evidence(claim: str, source: str, language: str = "en") -> str:
    words = set(_words(claim, language))
    best, score = "", 0
    for s in sentences(source):
        shared = len(words & set(_words(s, language)))
        if shared > score:
            best, score = s, shared
    return best


def lexical_claim_verdict(claim: str, source: str, language: str = "en") -> dict[str, object]:
    words, numbers = _words(claim, language), _numbers(claim)
    src_words, src_numbers = set(_words(source, language)), _numbers(source)
    found = sum(1 for stem in words if stem in src_words)
    verdict = lexical_verdict(claim, source, language)
    if verdict["supported"]:
        label = "supported"
    elif numbers <= src_numbers and words and found * 2 >= len(words):
        label = "partial"
    else:
        label = "unsupported"
    return {"explanation": verdict["explanation"], "evidence": _evidence(claim, source, language), "verdict": label}


def lexical_quality(item: dict[str, Any], shown: Sequence[RetrievedArticle], language: str = "en") -> dict[str, Any]:
    """Word-overlap stand-ins for the four grades, so the pipeline and the meta-eval run offline; the meta-eval
    shows how far they are from a judge's."""
    from harness.scoring.refusal import is_refusal

    def content(text: str) -> dict[str, str]:
        return _words(text, language)

    question, answer, gold_ids = item["question"], item["answer"], set(item.get("gold") or [])
    gold = [a for a in shown if a.id in gold_ids]
    qwords = set(content(question))
    parts = sentences(ANY_ID_MARKER.sub("", answer))
    refuses = is_refusal(answer)
    extra = [s for s in parts if not is_refusal(s) and content(s)]
    scale = lambda share: max(1, min(5, round(1 + 4 * share)))  # noqa: E731
    relevancy = None if refuses else scale(sum(bool(qwords & set(content(s))) for s in parts) / max(1, len(parts)))
    completeness = None
    if gold:
        key = [s for a in gold for s in sentences(a.text) if len(qwords & set(content(s))) >= 1] or \
              [s for a in gold for s in sentences(a.text)][:1]
        needed = set().union(*(set(content(s)) for s in key)) - qwords
        have = set(content(answer))
        completeness = 1 if refuses and not extra else scale(len(needed & have) / max(1, len(needed)))
    faithfulness = None
    if extra:
        source = "\n".join(a.text for a in shown)
        words, src = set(content(" ".join(extra))), set(content(source))
        faithfulness = scale(len(words & src) / max(1, len(words)))
        if _numbers(" ".join(extra)) - _numbers(source):
            faithfulness = min(faithfulness, 2)
    usefulness = (any(qwords & set(content(s)) for s in extra) if refuses and extra else None)
    return {"answer_refuses": refuses, "relevancy_justification": "share of sentences sharing a word with the question",
            "relevancy": relevancy, "completeness_justification": "share of the gold sentences' words in the answer",
            "completeness": completeness, "faithfulness_justification": "share of the answer's words in the articles",
            "faithfulness": faithfulness, "usefulness_justification": "the extra information shares a word with the "
            "question", "usefulness": usefulness}


class LexicalJudgeProvider(Provider):
    """Reads what to check and its source from the request context, never from the prompt text."""

    provider_name = "baseline"
    needs_network = False

    async def complete(self, request: Request) -> Completion:
        ctx = request.context
        what = ctx.question_id if ctx else ""
        source = "\n\n".join(a.text for a in ctx.articles) if ctx else ""
        language = source_language(source)
        if what.startswith("claims:extract"):
            reply: object = lexical_claims(json.loads(ctx.question))
        elif what.startswith("claims:verify"):
            reply = {"verdicts": [{"claim": i, **lexical_claim_verdict(c, source, language)}
                                  for i, c in enumerate(json.loads(ctx.question), 1)]}
        elif what.startswith("quality:"):
            reply = lexical_quality(json.loads(ctx.question), ctx.articles, language)
        else:
            reply = lexical_verdict(ctx.question if ctx else "", source, language)
        return Completion(json.dumps(reply, ensure_ascii=False), finish_reason="stop")
