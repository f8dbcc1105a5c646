"""Claim-level citation support for answers that cite several sources (issue 39): own, other or none.

A shipped bot writes "The bonus is 10% of base [1]. Lisbon staff get 25 days [2]." with a source list. Its
answer can be right and still cite badly: a sentence backed by the article its *other* marker points to
(misattributed), or by none of the articles it cites. ALCE's citation recall and precision and TREC RAG's
support labels measure exactly this; so does this pass, for every model whose ``run.json`` says it cites
several sources or cites by its own references (``models[].citations``: scoring "multi" or reads "references").

* **Reading**: each cited sentence and the articles its markers cite come from :func:`cited_sentences`, the
  one place the reading is done: for a references reading the scorer's own
  :class:`~harness.scoring.citation_reading.CitationReader` (markers, source list, GRACE's ``[ID: x]``, the
  model's mapping and rewrites), so the citations judged are the ones scored; the segmentation's ``[ID: x]``
  reading for a system citing KB IDs. A reference that resolves to no article is an *unresolved* citation: kept,
  counted, and never supporting anything; it never stops the check.
* **Judging**: per answer and per distinct article it cites, one call asks whether that article supports each
  of the answer's cited sentences: the claims template's verification prompt (the sentences as the claims),
  so the judge and the prompt are the claims mode's, in the KB's language. Only ``supported`` supports: a
  ``partial`` sentence is not backed by the article, as in ALCE's entailment. Judged once (``--repeats``
  repeats the claims or segments pass, not this one).
* **Labels**: per sentence, ``own`` (one of its own citations supports it), ``other`` (none of its own does,
  another article the answer cites does: misattributed) or ``none``; per citation, whether it supports its
  sentence (``supports``, ``does_not_support`` or ``unresolved``).
* **Figures** (per model, pooled over the checked answers, bootstrap CIs over answers as every spot-check rate):
  citation support recall (own / cited sentences), citation precision (supporting citations / citations),
  misattributed rate (other / sentences), unsupported rate (none / sentences).
* **Trust**: the judge is measured on hand-built cases with known labels (``citation_cases.jsonl``, built from
  the sample handbook by ``benchmarks/sample/make_citation_cases.py``) by :func:`run_citation_meta_eval`, the
  same procedure on answers whose labels are known; each spot-check runs it with its own judge (cached after the
  first time) so its figures carry the judge's kappa. Some cases are answers as written (footnotes, links after
  the sentence, ``[ID: x]`` closing the answer): they are read first, and a reading that does not give their
  sentences and citations is a failure of the check (``misread``), as a wrong label is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.citation_text import CANONICAL
from harness.providers.base import RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats
from harness.spotcheck.claims import (
    STRICT_VERIFY,
    VERIFY_SCHEMA,
    ClaimsJudged,
    ClaimsTemplate,
    _ask,
    _has_list,
    parse_verdicts,
)
from harness.spotcheck.judge_prompt import SourceArticle
from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI, _ci, _r, figure

LABELS = ("own", "other", "none")
STATUSES = ("supports", "does_not_support", "unresolved")
KIND = "grace-spotcheck-citation-support"  # the calls' kind in the cache key
CASES = Path(__file__).parent / "citation_cases.jsonl"
FIGURES = ("support_recall", "citation_precision", "misattributed_rate", "unsupported_rate")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?])")  # "base salary [1]." read without its marker: "base salary."
METHOD = ("Each cited sentence is judged against every article its answer cites (the claims template's verification "
          "prompt; only 'supported' counts). A sentence is 'own' when one of its own citations supports it, 'other' "
          "when only another article the answer cites does (misattributed), 'none' otherwise. support_recall = own / "
          "sentences; citation_precision = citations supporting their sentence / citations (an unresolved reference "
          "never supports); misattributed_rate = other / sentences; unsupported_rate = none / sentences. judge_kappa "
          "is the judge's Cohen's kappa over own / other / none on the multi-citation meta-eval cases.")


def reads_several(settings: Any) -> bool:
    """Whether a model's ``run.json`` citation settings call for this pass: several citations per answer, or
    citations read as the system's own references. Absent settings are GRACE's one-ID reading: no pass."""
    return settings is not None and (settings.scoring == "multi" or settings.reads == "references")


# --- reading: the one place an answer's cited sentences are found ----------------------------------------------

@dataclass(frozen=True)
class CitedRef:
    """One citation of a sentence: the reference as the answer gave it, and the KB articles it resolves to."""

    reference: str
    articles: tuple[str, ...] = ()  # () : unresolved
    how: str | None = None  # kb_builder.references.HOW, or "id" for a cited KB ID; None: unresolved
    note: str = ""  # why it is unresolved, or which rule resolved it


@dataclass(frozen=True)
class CitedSentence:
    index: int  # its place among the answer's cited sentences, from 0
    text: str  # the sentence without its markers: what the judge checks
    citations: tuple[CitedRef, ...]

    @property
    def articles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a for c in self.citations for a in c.articles))


class SentenceReader:
    """Reads the cited sentences of one model's answers: by reference with the scorer's own reader
    (:class:`~harness.scoring.citation_reading.CitationReader`: markers, source list, GRACE's ``[ID: x]``, the
    resolver, its resolutions cached per reference string), so the spot-check judges the citations the score
    counted; or by KB ID (GRACE's ``[ID: x]`` markers, several per answer)."""

    def __init__(self, articles: Sequence[Any], reads: str = "references", settings: Any = None) -> None:
        from harness.run_folder.run_records import CitationSettings
        from harness.scoring.citation_reading import CitationReader

        self.articles = articles
        self.reads = reads  # references | ids (run.json models[].citations.reads)
        self.kb_ids = {a.id for a in articles}
        settings = settings if settings is not None else CitationSettings(scoring="multi", reads=reads)
        self.reader = CitationReader(articles, settings, self.kb_ids)  # a bad map or rule: GraceError, here

    @classmethod
    def for_settings(cls, articles: Sequence[Any], settings: Any) -> SentenceReader:
        """The reader for one model's ``CitationSettings``; a bad mapping file or rule is a GraceError naming it."""
        return cls(articles, settings.reads, settings)

    def sentences(self, text: str, citations: Sequence[str] | None = None) -> list[CitedSentence]:
        return cited_sentences(self, text, citations)

    def segments(self, text: str, citations: Sequence[str] | None = None) -> list[Any]:
        return answer_segments(self, text, citations)


def _claim(sentence: str, one_line: bool = True) -> str:
    """A sentence as the judge reads it: its citation units (footnotes, links, ``[ID: x]``, with the words and
    brackets around them: "(see [About PPL](url))") cut out; "" when nothing else is left (a bare citation)."""
    from harness.scoring.markers import citation_units, read_markers
    from harness.spotcheck.segmentation import clean_claim

    spans = sorted([(m.start, m.end) for m in read_markers(sentence).markers]
                   + [m.span() for m in CANONICAL.finditer(sentence)])
    parts, pos = [], 0
    for a, b in citation_units(sentence, spans):
        parts.append(sentence[pos:max(a, pos)])
        pos = max(pos, b)
    parts.append(sentence[pos:])
    claim = clean_claim("".join(parts)).lstrip(" .,;:!?)")  # ". Requests ..." after "days. [ID: 4]" was cut
    if not any(ch.isalnum() for ch in claim):
        return ""
    return _SPACE_BEFORE_STOP.sub(r"\1", " ".join(claim.split()) if one_line else claim)


def _read(reader: SentenceReader, text: str,
          citations: Sequence[str] | None) -> tuple[str, list[tuple[int, int, CitedSentence]], bool]:
    """By reference: the answer's body (its source list taken out), each cited sentence with its span in it, and
    whether the citations are placed by markers (False: they cite the whole answer).

    The scorer's reading (:meth:`CitationReader.read`), so a citation the score counted is the one judged: each
    citation's sentence spans (the sentences its markers, or GRACE's ``[ID: x]``, end) group it with the others
    citing the same sentence; an answer whose citations carry no marker is its whole body citing them all. A
    marker with nothing in the list behind it is no citation (the score counts it as a marker problem).
    """
    from harness.spotcheck.segmentation import clean_claim

    reading = reader.reader.read(text or "", list(citations) if citations else None)  # () in hits: none given
    body = reading.body
    groups: dict[tuple[int, int], list[CitedRef]] = {}
    for c in reading.citations:
        ref = CitedRef(c.reference, c.articles, c.how, c.note)
        for span in c.sentences:
            groups.setdefault(span, []).append(ref)
    out: list[tuple[int, int, CitedSentence]] = []
    if not groups and reading.citations:  # no marker: its citations cover the whole answer
        claim = " ".join(clean_claim(body).split())
        if claim:
            refs = tuple(dict.fromkeys(CitedRef(c.reference, c.articles, c.how, c.note) for c in reading.citations))
            out.append((0, len(body), CitedSentence(0, claim, refs)))
        return body, out, False
    for (start, end), refs in sorted(groups.items()):
        claim = _claim(body[start:end])
        if claim:
            out.append((start, end, CitedSentence(len(out), claim, tuple(dict.fromkeys(refs)))))
        elif out:  # a bare citation ("… days. [ID: 4]\n\n[ID: 6]."): no claim, it cites the sentence before it
            a, b, last = out[-1]
            out[-1] = (a, max(b, end), CitedSentence(last.index, last.text, tuple(dict.fromkeys(last.citations + tuple(refs)))))
    return body, out, True


def cited_sentences(reader: SentenceReader, text: str, citations: Sequence[str] | None = None) -> list[CitedSentence]:
    """The answer's cited sentences, each with the articles its own markers cite: by reference (:func:`_read`), or
    by KB ID (the spot-check's segmentation of ``[ID: 4]`` markers, several per answer; an ID not in the KB is
    unresolved)."""
    if reader.reads == "references":
        return [s for _, _, s in _read(reader, text, citations)[1]]
    from harness.spotcheck.segmentation import segment_answer

    out = []
    for seg in segment_answer(text, reader.kb_ids):
        if seg.cited:
            refs = tuple(CitedRef(i, (i,), "id") if i in reader.kb_ids else
                         CitedRef(i, note="not an article of the KB") for i in seg.citations)
            out.append(CitedSentence(len(out), seg.claim, refs))
    return out


def answer_segments(reader: SentenceReader, text: str, citations: Sequence[str] | None = None) -> list[Any]:
    """The answer as the claims and segments passes check it, for a system citing by its own references: each
    cited sentence a segment citing the KB articles its markers resolve to, the text between them uncited
    segments (a paragraph each; a bare citation left between them, such as a marker after the sentence it cites,
    is no claim). The segmentation's own reading would take a footnote ``[1]`` for article 1."""
    from harness.spotcheck.segmentation import Segment, clean_claim, paragraphs, segment_answer

    if reader.reads != "references":
        return segment_answer(text, reader.kb_ids)
    body, cited, placed = _read(reader, text, citations)
    out: list[Segment] = []

    def uncited(gap: str, at: int) -> None:
        for para in paragraphs(gap):
            claim = _claim(para, one_line=False)
            if claim:
                out.append(Segment(len(out), body.count("\n\n", 0, at), para, claim, ()))

    if cited and not placed:  # no marker: every paragraph cites all
        for para in paragraphs(body):
            claim = clean_claim(para)
            if any(ch.isalnum() for ch in claim):
                out.append(Segment(len(out), len(out), para, claim, cited[0][2].articles))
        return out
    pos = 0
    for start, end, s in cited:
        uncited(body[pos:start], pos)
        out.append(Segment(len(out), body.count("\n\n", 0, start), body[start:end].strip(), s.text, s.articles))
        pos = max(pos, end)
    uncited(body[pos:], pos)
    return out


# --- judging ---------------------------------------------------------------------------------------------------

@dataclass
class AnswerSupport:
    """One answer's cited sentences and, per article it cites, which of them that article supports."""

    key: Any  # (model, question_id, repeat), or a meta-eval case's id
    sentences: list[CitedSentence]
    verdicts: dict[str, list[Any] | None] = field(default_factory=dict)  # article -> ClaimVerdict per sentence
    errors: dict[str, str] = field(default_factory=dict)  # article -> why it has no verdicts

    @property
    def cited(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a for s in self.sentences for a in s.articles))

    @property
    def complete(self) -> bool:
        return all(self.verdicts.get(a) is not None for a in self.cited)

    def supports(self, article: str, sentence: int) -> bool:
        got = self.verdicts.get(article)
        return bool(got) and got[sentence].verdict == "supported"  # type: ignore[index]

    def label(self, s: CitedSentence) -> str:
        """own | other | none: by its own citations, by another article the answer cites, by none."""
        if any(self.supports(a, s.index) for a in s.articles):
            return "own"
        if any(self.supports(a, s.index) for a in self.cited if a not in s.articles):
            return "other"
        return "none"

    def status(self, s: CitedSentence, c: CitedRef) -> str:
        if not c.articles:
            return "unresolved"
        return "supports" if any(self.supports(a, s.index) for a in c.articles) else "does_not_support"


def who_judges(judge: Any, template: ClaimsTemplate) -> Prompted:
    """The support calls' caller: the judge with the claims template's verification schema, its own cache kind."""
    return Prompted(judge.spec, judge.provider, KIND, template.sha256, VERIFY_SCHEMA,
                    accept=lambda c: _has_list(c.text, "verdicts"))


def support_jobs(template: ClaimsTemplate, answers: list[AnswerSupport],
                 articles: Callable[[AnswerSupport, str], Any]) -> list[PromptJob]:
    """One call per answer and article it cites, with all its cited sentences (known before any reply, so a dry run
    counts them exactly)."""
    jobs = []
    for a in answers:
        texts = [s.text for s in a.sentences]
        for aid in a.cited:
            art = articles(a, aid)
            source = SourceArticle(aid, art.title, art.text)
            ident = "|".join(map(str, a.key if isinstance(a.key, tuple) else (a.key,)))
            jobs.append(PromptJob(f"claims:verify:citations:{ident}|{aid}", json.dumps(texts, ensure_ascii=False),
                                  template.verify(texts, [source]), [RetrievedArticle(aid, art.title, art.text, 0.0)],
                                  payload=(a, aid)))
    return jobs


def judge_support(judge: Any, template: ClaimsTemplate, answers: list[AnswerSupport],
                  articles: Callable[[AnswerSupport, str], Any],
                  settings: CallSettings, stats: PromptStats, label: str = "citations: checking support") -> int:
    """Ask, per answer and article it cites, which of its cited sentences that article supports; fills each
    answer's ``verdicts``. ``articles(answer, id)`` gives the article (id, title, text) an answer cites. Returns
    the replies that stayed unreadable after the stricter asking (their answers are incomplete)."""
    who = who_judges(judge, template)
    jobs = support_jobs(template, answers, articles)
    if not jobs:
        return 0
    tally = ClaimsJudged({}, stats)
    done = _ask(who, jobs, lambda j, c: parse_verdicts(c.text, len(j.payload[0].sentences)) is not None,
                STRICT_VERIFY, settings, stats, label, tally)
    for job, res in done.values():
        a, aid = job.payload
        comp = res.completion
        got = parse_verdicts(comp.text, len(a.sentences)) if comp is not None else None
        a.verdicts[aid] = got
        if got is None:
            a.errors[aid] = res.error.message if res.error else "no readable verdicts in the reply, asked twice"
    return tally.unreadable


def sentence_rows(a: AnswerSupport, base: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per cited sentence (``spotcheck/citation_support.jsonl``): its label, each citation's status,
    and every cited article's verdict on it."""
    from harness.spotcheck.spotcheck_records import CitationSentenceRecord

    rows = []
    for s in a.sentences:
        verdicts = {aid: ({"verdict": v[s.index].verdict, "explanation": v[s.index].explanation,
                           "evidence": v[s.index].evidence} if (v := a.verdicts.get(aid)) else None)
                    for aid in a.cited}
        rows.append(CitationSentenceRecord(
            **base, sentence_index=s.index, sentence=s.text,
            label=a.label(s) if a.complete else None,
            citations=[{"reference": c.reference, "articles": list(c.articles), "how": c.how, "note": c.note,
                        "status": a.status(s, c) if a.complete else None} for c in s.citations],
            supported_by=[aid for aid in a.cited if a.supports(aid, s.index)], verdicts=verdicts,
            error="; ".join(f"{k}: {v}" for k, v in a.errors.items()) or None,
        ).model_dump(mode="json"))
    return rows


# --- figures ---------------------------------------------------------------------------------------------------

def _counts(a: AnswerSupport) -> list[int]:
    """[sentences, own, other, none, citations, supporting citations, unresolved citations] of one answer."""
    labels = [a.label(s) for s in a.sentences]
    statuses = [a.status(s, c) for s in a.sentences for c in s.citations]
    return [len(labels), labels.count("own"), labels.count("other"), labels.count("none"), len(statuses),
            statuses.count("supports"), statuses.count("unresolved")]


def support_figures(answers: list[AnswerSupport], incomplete: int, kappa: float | None, kappa_n: int,
                    bootstrap: int = 2000, seed: int = 0) -> dict[str, Any]:
    """One model's citation support figures over its checked answers (every sentence judged against every
    article the answer cites), each pooled over sentences (precision: over citations) with its n and, from
    :data:`~harness.spotcheck.metrics.MIN_ANSWERS_FOR_CI` answers, a 95% bootstrap CI over answers."""
    import numpy as np

    done = [a for a in answers if a.sentences]
    k = len(done)
    c = np.array([_counts(a) for a in done], dtype=np.float64).reshape(k, 7)
    sums = c.sum(axis=0)
    ratios = {"support_recall": (1, 0), "citation_precision": (5, 4), "misattributed_rate": (2, 0),
              "unsupported_rate": (3, 0)}
    out: dict[str, Any] = {
        "n": k, "n_incomplete": incomplete, "n_sentences": int(sums[0]), "n_own": int(sums[1]),
        "n_other": int(sums[2]), "n_none": int(sums[3]), "n_citations": int(sums[4]),
        "n_supporting_citations": int(sums[5]), "n_unresolved_citations": int(sums[6]),
    }
    rng = np.random.default_rng(seed + 11)
    idx = rng.integers(0, k, size=(bootstrap, k)) if bootstrap > 0 and k >= MIN_ANSWERS_FOR_CI else None
    for name, (num, den) in ratios.items():
        out[name] = _r(sums[num] / sums[den]) if sums[den] else None
        ci = None
        if idx is not None and sums[den]:
            d = c[idx, den].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                ci = _ci(np.where(d > 0, c[idx, num].sum(axis=1) / np.where(d > 0, d, 1), np.nan))
        out[f"{name}_ci95"] = ci
    out["judge_kappa"] = kappa
    out["judge_kappa_n"] = kappa_n
    out["ci_note"] = (None if k >= MIN_ANSWERS_FOR_CI else
                      f"{k} checked answer{'' if k == 1 else 's'}: too few for an interval "
                      f"(at least {MIN_ANSWERS_FOR_CI} needed)")
    out["display"] = {name: figure(out[name], out[f"{name}_ci95"], k) for name in FIGURES}
    return out


# --- the meta-eval: answers whose labels are known -------------------------------------------------------------

@dataclass(frozen=True)
class CitationCase:
    id: str
    articles: tuple[SourceArticle, ...]
    sentences: tuple[CitedSentence, ...]  # of an answer as written: the sentences its reading must give
    expected: tuple[str, ...]  # per sentence: own | other | none
    note: str = ""
    answer: str | None = None  # the answer as written (markers, links, a source list), read before it is judged
    reads: str = "references"  # how the answer is read: references | ids (run.json models[].citations.reads)
    rewrite: tuple[tuple[str, str], ...] = ()  # its references' prefix rewrites ([models.citations] rewrite)

    def read(self) -> list[CitedSentence] | None:
        """The cited sentences its answer as written reads as (None: a case given as sentences)."""
        from harness.run_folder.run_records import CitationSettings

        if self.answer is None:
            return None
        settings = CitationSettings(scoring="multi", reads=self.reads, rewrite=dict(self.rewrite))
        return SentenceReader.for_settings(self.articles, settings).sentences(self.answer)


def load_citation_cases(path: Path | None = None) -> list[CitationCase]:
    """The multi-citation cases: per line an answer (its articles, and its sentences each with the article IDs
    it cites and its known label; or the answer as written, with the sentences its reading must give); a case
    whose sentence cites an article it does not carry is refused."""
    from harness.spotcheck.meta_eval import read_cases

    def build(d: dict[str, Any]) -> CitationCase:
        arts = tuple(SourceArticle(str(a["id"]), str(a.get("title") or ""), str(a["text"]), str(a.get("source") or ""))
                     for a in d["articles"])
        known = {a.id for a in arts}
        sentences, expected = [], []
        for i, s in enumerate(d["sentences"]):
            cites = [str(x) for x in s["cites"]]
            if s["expected"] not in LABELS or not set(cites) <= known:
                raise KeyError(s["expected"])
            refs = tuple(CitedRef(x, (x,), "id") if x in known else CitedRef(x) for x in cites)
            sentences.append(CitedSentence(i, str(s["text"]), refs))
            expected.append(s["expected"])
        answer, reads = d.get("answer"), d.get("reads", "references")
        if answer is not None and (not isinstance(answer, str) or reads not in ("references", "ids")):
            raise TypeError(reads)
        rewrite = tuple((str(k), str(v)) for k, v in (d.get("rewrite") or {}).items())
        return CitationCase(str(d["id"]), arts, tuple(sentences), tuple(expected), str(d.get("note") or ""), answer,
                            reads, rewrite)

    return read_cases(path or CASES, build, "a case needs id, articles (id, title, text) and sentences (text, cites: "
                                            "article IDs of its articles, expected: own, other or none); an answer "
                                            "as written also its text (answer) and reads: references or ids")


def _misread(case: CitationCase, got: list[CitedSentence]) -> str | None:
    """How the reading of a case's answer differs from the sentences it must give (None: it gives them)."""
    want = [(" ".join(s.text.split()), sorted(s.articles)) for s in case.sentences]
    read = [(" ".join(s.text.split()), sorted(s.articles)) for s in got]
    if read == want:
        return None
    return f"read as {read}, written as {want}"


def run_citation_meta_eval(judge: Any, template: ClaimsTemplate, cases: list[CitationCase], settings: CallSettings,
                           stats: PromptStats | None = None) -> dict[str, Any]:
    """The support check on answers with known labels: agreement, Cohen's kappa over own / other / none (and per
    label against the rest), the confusion, and every sentence the judge labelled otherwise."""
    from harness.spotcheck.calibration import class_stats

    stats = stats if stats is not None else PromptStats()
    by_case = {("meta", c.id): {a.id: a for a in c.articles} for c in cases}
    human, machine, failures = [], [], []
    answers, misread = [], set()
    for c in cases:
        got = c.read()
        why = _misread(c, got) if got is not None else None
        if why is not None:  # the check reads this answer wrong: every sentence of it is a miss, not judged
            misread.add(c.id)
            human += list(c.expected)
            machine += ["misread"] * len(c.expected)
            failures.append({"case": c.id, "sentence": c.answer, "cites": [], "expected": "its sentences",
                             "judge": "misread", "supported_by": [], "reading": why})
        answers.append(AnswerSupport(("meta", c.id), list(c.sentences) if got is None else got))
    unreadable = judge_support(judge, template, [a for c, a in zip(cases, answers, strict=True)
                                                 if c.id not in misread], lambda a, aid: by_case[a.key][aid],
                               settings, stats, "citations: meta-eval")
    incomplete = 0
    for case, a in zip(cases, answers, strict=True):
        if case.id in misread:
            continue
        if not a.complete:
            incomplete += 1
            continue
        for s, want in zip(a.sentences, case.expected, strict=True):
            got = a.label(s)
            human.append(want)
            machine.append(got)
            if got != want:
                failures.append({"case": case.id, "sentence": s.text, "cites": list(s.articles), "expected": want,
                                 "judge": got, "supported_by": [x for x in a.cited if a.supports(x, s.index)]})
    n = len(human)
    stats_ = class_stats(human, machine, LABELS) if n else {"kappa_multiclass": None, "kappa_per_class": {},
                                                            "confusion_classes": {}}
    return {
        "cases": len(cases), "sentences": sum(len(c.sentences) for c in cases), "n": n,
        "written_cases": sum(c.answer is not None for c in cases), "misread_cases": len(misread),
        "incomplete_cases": incomplete, "unreadable": unreadable,
        "agreement": round(sum(h == m for h, m in zip(human, machine, strict=True)) / n, 6) if n else None,
        "kappa": stats_["kappa_multiclass"], "kappa_per_label": {k: v["kappa"] for k, v in
                                                                 stats_["kappa_per_class"].items()},
        "per_label": {lab: {"expected": human.count(lab), "judge": machine.count(lab),
                            "passed": sum(h == m == lab for h, m in zip(human, machine, strict=True))}
                      for lab in LABELS},
        "confusion": stats_["confusion_classes"], "failures": failures,
    }
