"""``grace gold generate``: a draft gold set, written by an LLM from the KB and checked before a person sees it.

Writing questions is the slow part of a gold set; reviewing a proposed one is
fast. For each article the model writes ``N`` questions an employee would ask
that the article answers, and ``M`` questions on workplace topics no article
covers (it sees every title). Three filters then keep the review short:

1. **Copying.** A question that lifts its wording from the article measures
   word matching, not understanding (and BM25 finds it trivially). A question
   is rejected when at least ``COPY_SHARE`` of its word trigrams, and at least
   ``COPY_MIN_GRAMS`` of them, occur verbatim in the article (stop words kept:
   copying keeps them too). The threshold was set on data: of 73 human-written
   questions of the sample handbook (``benchmarks/sample/gold.csv``) against
   their gold articles, none exceeds 0.25 (p95 0.18); of 300 CLAPNQ search
   questions against their passages, 17 reach 0.5 (mostly quoted book or song
   titles); 549 questions made from handbook sentences ("Is it true that
   <sentence>?", "What does it mean that <first ten words>?", "Why <nine words
   from the middle>?") all score 0.58 or more. 0.5 rejects every one of those
   copies and no human HR question.
2. **Duplicates.** The same question (case and punctuation aside) twice is kept once.
3. **Ambiguity.** The labeler (:mod:`annotations.labeler`) reads each question
   with its top-``k`` retrieved articles, the source article always among
   them. The source alone answers it: kept, citing the source. The source and
   others: kept, citing all of them. Others but not the source, or none: dropped
   as ambiguous (a question its own article does not clearly answer is a bad
   gold question). A refusal question that the labeler answers from an article
   is dropped: the KB covers it after all.

Every kept question is written with ``status=draft``: ``read_gold`` ignores it
until a person accepts it in ``grace annotate``. All calls go through the
engine of ``grace run`` (cache, retries, cost), so running again is free.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotations.generator_prompt import (
    KIND,
    QUESTIONS_SCHEMA,
    REFUSALS_SCHEMA,
    TOKENS_PER_QUESTION,
    load_generator_template,
    parse_questions,
)
from annotations.labeler import OUTPUT_TOKENS_EST, Label, make_labeler, retrieve, run_labeler
from annotations.labels import LabelRecord, read_labels, render_csv
from annotations.suggestions import label_of
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.providers.base import RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats, estimate_prompts, progress, run_prompts
from harness.runner.model_options import ModelOptions, call_settings, call_summary, print_estimates, ready_model
from kb_builder.language import surface_words

COPY_NGRAM = 3
COPY_SHARE = 0.5
COPY_MIN_GRAMS = 2
TITLES_MAX = 400  # titles shown to the refusal prompt; a bigger KB shows a seeded sample (the labeler catches the rest)
EXTRA_COLUMNS = ["source_article"]


def _words(text: str) -> list[str]:
    """Words of any script (a character at a time in Chinese, Japanese, Thai...): the rule once read a-z and 0-9
    only, so a Greek or Chinese question copied from its article had no trigrams and always passed."""
    return surface_words(text)


def copy_overlap(question: str, article: str, n: int = COPY_NGRAM) -> tuple[float, int]:
    """(share of the question's word ``n``-grams found verbatim in the article, how many were found)."""
    q = _words(question)
    grams = [tuple(q[i : i + n]) for i in range(len(q) - n + 1)]
    if not grams:
        return 0.0, 0
    a = _words(article)
    have = {tuple(a[i : i + n]) for i in range(len(a) - n + 1)}
    found = sum(g in have for g in grams)
    return found / len(grams), found


def copies_article(question: str, article: str) -> float | None:
    """The overlap share when ``question`` copies ``article`` (see the module docstring), else ``None``."""
    share, found = copy_overlap(question, article)
    return share if share >= COPY_SHARE and found >= COPY_MIN_GRAMS else None


@dataclass
class Candidate:
    question_id: str
    question: str
    source: str | None  # the article it was written from; None for a refusal question
    answer: str = ""
    topic: str = ""
    retrieved_source: bool = True


@dataclass
class GenerateResult:
    out: Path
    model: str
    labeler: str
    template: str = ""  # the generator's prompt template (generator.v1.fr: the KB's language's unless --template)
    labeler_template: str = ""  # the labeler's (labeler.v1.fr: always the KB's language's)
    articles: int = 0
    generated: int = 0
    copied: list[tuple[str, str, float]] = field(default_factory=list)  # (question_id, question, overlap)
    duplicates: int = 0
    unreadable: int = 0  # generator replies with no question list (articles left without questions)
    ambiguous: list[tuple[str, str, str]] = field(default_factory=list)  # (question_id, question, why)
    candidates: int = 0  # questions past the copy and duplicate filters, sent to the labeler
    unchecked: int = 0  # the labeler failed on them: left out, asked again next time
    kept_single: int = 0
    kept_multi: int = 0
    refusals_generated: int = 0
    refusals_kept: int = 0
    refusals_answerable: list[tuple[str, str, str]] = field(default_factory=list)
    source_not_retrieved: int = 0
    records: list[LabelRecord] = field(default_factory=list)
    stats: dict[str, PromptStats] = field(default_factory=dict)

    def failure(self) -> str | None:
        """Why the generator or the labeler gave nothing usable at all (the command exits 1), else ``None``."""
        asked = self.stats.get("generator")
        if self.generated + self.refusals_generated == 0 and asked is not None and (asked.calls or asked.errors):
            return (f"the generator {self.model} gave no usable question ({asked.errors} call(s) failed, "
                    f"{self.unreadable} repl(ies) without questions)")
        if self.candidates and self.unchecked == self.candidates:
            return f"the labeler {self.labeler} could not check any of the {self.unchecked} question(s)"
        return None

    def lines(self, limit: int = 5) -> list[str]:
        out = [f"generated {self.generated} question(s) from {self.articles} article(s) and "
               f"{self.refusals_generated} refusal question(s); prompts {self.template} and {self.labeler_template}"]
        out.append(f"rejected for copying the article: {len(self.copied)} (>= {COPY_SHARE:.0%} of the question's word "
                   f"trigrams verbatim in the article); duplicates: {self.duplicates}")
        out += [f"  - {qid} ({share:.0%} copied): {q}" for qid, q, share in self.copied[:limit]]
        out.append(f"dropped as ambiguous: {len(self.ambiguous)} (the labeler did not pick their own article)")
        out += [f"  - {qid}: {q} ({why})" for qid, q, why in self.ambiguous[:limit]]
        out.append(f"kept: {self.kept_single + self.kept_multi} ({self.kept_single} single-article, "
                   f"{self.kept_multi} multi-article)")
        out.append(f"refusals: {self.refusals_kept} kept, {len(self.refusals_answerable)} dropped (an article answers them)")
        out += [f"  - {qid}: {q} ({why})" for qid, q, why in self.refusals_answerable[:limit]]
        if self.unreadable or self.unchecked:
            out.append(f"not usable this time: {self.unreadable} generator repl(ies) without questions, {self.unchecked} "
                       "question(s) the labeler could not check (a failed call is asked again by the next run; an "
                       "unreadable answer is cached, so only --no-cache asks it again)")
        if self.source_not_retrieved:
            out.append(f"note: {self.source_not_retrieved} kept question(s) do not retrieve their source article in "
                       "the top k; it was shown to the labeler anyway ('grace annotations validate' lists them)")
        return out


def _check_out(out: Path, kb, force: bool) -> None:
    """Never overwrite an input, nor a file a person has started reviewing unless forced (then kept as a .bak)."""
    from harness.core.outputs import check_output_file, keep_backup
    from kb_builder.store import kb_files

    check_output_file(out, {"KB": kb_files(kb.path)}, owned=True)
    if not out.exists():
        return
    try:
        records, _ = read_labels(out)
    except GraceError:
        records = None
    if (records is None or any(r.status != "draft" for r in records)) and not force:
        raise GraceError(f"{out} exists and is not an untouched draft (rows were reviewed, or it is another file); "
                         "give another --out (the generated questions are cached, so nothing is paid twice), "
                         "or --force to replace it (the old one is kept as a .bak)")
    keep_backup(out)


def _titles(kb, seed: int) -> list[str]:
    titles = list(dict.fromkeys(a.title for a in kb.articles))
    if len(titles) > TITLES_MAX:
        keep = set(random.Random(seed).sample(range(len(titles)), TITLES_MAX))
        titles = [t for i, t in enumerate(titles) if i in keep]
    return titles


def _shown(kb, cands: list[Candidate], k: int) -> list[list[RetrievedArticle]]:
    """Top-``k`` retrieval for each question, the source article put in place of the last hit when missing."""
    shown = retrieve(kb, [c.question for c in cands], k)
    for c, arts in zip(cands, shown, strict=True):
        if c.source is not None and c.source not in {a.id for a in arts}:
            c.retrieved_source = False
            src = kb.by_id[c.source]
            arts[-1:] = [RetrievedArticle(src.id, src.title, src.text, 0.0)]
    return shown


def _norm(question: str) -> str:
    return " ".join(_words(question))


def generate_draft(kb, model: str, out: str | Path, *, per_article: int = 3, refusals: int = 0, k: int = 10,
                   labeler: str | None = None, dry_run: bool = False,
                   concurrency: int = CallSettings.concurrency, max_attempts: int = CallSettings.max_attempts,
                   timeout: float | None = None, prices: Path | None = None, read_cache: bool = True, seed: int = 0,
                   template: str | None = None, console: Any = None, options: ModelOptions | None = None,
                   force: bool = False, redactor: Any = None) -> GenerateResult | None:
    """Write a draft gold CSV to ``out``; with ``dry_run``, print the estimate and return ``None``.

    ``options`` (the model options of ``grace run``) apply to the generator and the labeler alike, and so does a
    ``redactor`` (``--redact-pii``, :mod:`harness.privacy`).
    """
    if per_article < 1 or refusals < 0 or k < 1:
        raise GraceError("--per-article and --k must be 1 or more, --refusals 0 or more")
    out = Path(out)
    if not dry_run:
        _check_out(out, kb, force)
    language = kb.manifest.language  # questions are written, and checked, in the KB's language
    tmpl = load_generator_template(template, language)
    opts = (options or ModelOptions()).with_default_timeout(timeout)
    # a dry run estimates without a key, as every dry run does: a missing key or SDK is a warning then
    spec, provider = ready_model(model, role="generator", options=opts, prices=prices, ready=not dry_run)
    lab = make_labeler(labeler or model, timeout=timeout, prices=prices, options=options, language=language,
                       ready=not dry_run)
    settings = call_settings(concurrency, max_attempts, read_cache)
    settings.redactor = redactor
    articles = list(kb.articles)
    gen = Prompted(spec, provider, kind=KIND, template_hash=tmpl.sha256, json_schema=QUESTIONS_SCHEMA)
    ref = Prompted(spec, provider, kind=KIND, template_hash=tmpl.sha256, json_schema=REFUSALS_SCHEMA)
    gen_jobs = [PromptJob(f"generate:{a.id}", a.title, tmpl.article(per_article, a),
                          [RetrievedArticle(a.id, a.title, a.text, 1.0)], repeat=seed, payload=a) for a in articles]
    ref_jobs = [PromptJob("generate:refusals", "refusals", tmpl.refusals(refusals, _titles(kb, seed)), repeat=seed)] \
        if refusals else []
    if dry_run:
        _print_estimate(kb, gen, gen_jobs, ref, ref_jobs, lab, settings, per_article, refusals, k, console)
        return None

    res = GenerateResult(out, spec.name, lab.spec.name, tmpl.name, lab.template.name, articles=len(articles))
    with progress(settings, console) as s:
        res.stats["generator"] = PromptStats()
        rows = run_prompts(gen, gen_jobs, _reply, s, res.stats["generator"], label="writing questions")
        if ref_jobs:
            rows += run_prompts(ref, ref_jobs, _reply, s, res.stats["generator"], label="writing refusals")
        cands = _candidates(kb, rows, per_article, refusals, res)
        res.candidates = len(cands)
        res.stats["labeler"] = PromptStats()
        shown = _shown(kb, cands, k)
        jobs = [lab.job(c.question_id, c.question, arts) for c, arts in zip(cands, shown, strict=True)]
        labels = run_labeler(lab, jobs, s, res.stats["labeler"], label="checking questions")
    for c in cands:
        _decide(kb, c, labels[c.question_id].label, res, spec.name)
    atomic_write_text(out, render_csv(res.records, EXTRA_COLUMNS))
    for line in res.lines():
        _say(console, line)
    _say(console, call_summary("generator", spec.name, res.stats["generator"]))
    _say(console, call_summary("labeler", lab.spec.name, res.stats["labeler"]))
    return res


def _say(console: Any, line: str) -> None:
    if console is not None:
        console.print(line, highlight=False)
    else:
        print(line)


def _reply(job: PromptJob, request: Any, result: Any) -> dict[str, Any]:
    text = result.completion.text if result.completion is not None else None
    return {"id": job.context_id, "text": text, "error": result.error.message if result.error else None}


def _candidates(kb, rows: list[dict[str, Any]], per_article: int, refusals: int, res: GenerateResult) -> list[Candidate]:
    """The generated questions that pass the copy and duplicate filters, in KB order, then the refusals."""
    by_id = {r["id"]: r for r in rows}
    seen: set[str] = set()
    cands: list[Candidate] = []
    for art in kb.articles:
        row = by_id.get(f"generate:{art.id}")
        items = parse_questions(row["text"], "answer") if row and row["text"] is not None else None
        if items is None:
            res.unreadable += 1
            continue
        for n, (q, answer) in enumerate(items[:per_article], 1):
            qid = f"gen-{art.id}-{n}"
            res.generated += 1
            share = copies_article(q, f"{art.title}\n{art.text}")
            if share is not None:
                res.copied.append((qid, q, round(share, 3)))
            elif _norm(q) in seen:
                res.duplicates += 1
            else:
                seen.add(_norm(q))
                cands.append(Candidate(qid, q, art.id, answer=answer))
    row = by_id.get("generate:refusals")
    if row is not None:
        items = parse_questions(row["text"], "topic") if row["text"] is not None else None
        if items is None:
            res.unreadable += 1
        for n, (q, topic) in enumerate((items or [])[:refusals], 1):
            res.refusals_generated += 1
            if _norm(q) in seen:
                res.duplicates += 1
                continue
            seen.add(_norm(q))
            cands.append(Candidate(f"gen-refuse-{n}", q, None, topic=topic))
    return cands


def _decide(kb, c: Candidate, lab: Label, res: GenerateResult, generator: str) -> None:
    """Keep, widen or drop one candidate by what the labeler said (rules in the module docstring)."""
    if lab.error:
        res.unchecked += 1
        return
    said = "none" if lab.none else ";".join(lab.article_ids)
    if c.source is None:
        if not lab.none:
            res.refusals_answerable.append((c.question_id, c.question, f"the labeler cites {said}: {lab.reason}"))
            return
        res.refusals_kept += 1
        cites, refuse = [], True
        notes = "; ".join(x for x in (f"topic: {c.topic}" if c.topic else "", f"labeler: {lab.reason}") if x)
    else:
        if c.source not in lab.article_ids:
            res.ambiguous.append((c.question_id, c.question, f"source {c.source}, the labeler says {said}"))
            return
        cites, refuse = [c.source] + [i for i in lab.article_ids if i != c.source], False
        if len(cites) == 1:
            res.kept_single += 1
        else:
            res.kept_multi += 1
        if not c.retrieved_source:
            res.source_not_retrieved += 1
        notes = f"labeler: {lab.reason}" + ("" if c.retrieved_source else "; source article not in the top k")
    res.records.append(LabelRecord(
        question_id=c.question_id, question=c.question, expected_citations=cites, must_refuse=refuse,
        expected_answer=c.answer, notes=notes, status="draft",
        expected_titles=[kb.by_id[i].title for i in cites], suggested=label_of(cites, refuse),
        suggestion_source=f"generated:{generator}", extra={"source_article": c.source or ""},
    ))


def _print_estimate(kb, gen: Prompted, gen_jobs: list[PromptJob], ref: Prompted, ref_jobs: list[PromptJob], lab,
                    settings, per_article: int, refusals: int, k: int, console: Any) -> None:
    """Generation calls are known exactly; the checks depend on questions not written yet, so a sample is scaled."""
    if console is None:
        from rich.console import Console

        console = Console(stderr=True)
    rows = [estimate_prompts(gen, gen_jobs, settings, "writing questions", TOKENS_PER_QUESTION * per_article)]
    if ref_jobs:
        rows.append(estimate_prompts(ref, ref_jobs, settings, "writing refusals", TOKENS_PER_QUESTION * refusals))
    sample = list(kb.articles)[:20]
    expected = per_article * len(gen_jobs) + refusals
    if sample and expected:
        cands = [Candidate(f"sample-{a.id}", a.title, a.id) for a in sample]
        shown = _shown(kb, cands, k)
        jobs = [lab.job(c.question_id, c.question, arts) for c, arts in zip(cands, shown, strict=True)]
        rows.append(estimate_prompts(lab.prompted(), jobs, settings, "checking questions", OUTPUT_TOKENS_EST,
                             scale=expected / len(jobs)))
    print_estimates(console, rows)

