"""``grace spotcheck run``: sample the answers in scope, judge their claims (or segments), measure, write, publish.

Writes into the run folder: ``spotcheck/claims.jsonl`` (every claim with its
verdict and evidence) and ``spotcheck_claims_review.csv`` in claims mode, or
``spotcheck/judgements.jsonl`` and ``spotcheck_review.csv`` in segments mode
(for human labels); ``spotcheck/quality.jsonl`` with ``--quality``;
``spotcheck.json`` (the summary) and the ``spotcheck`` block of
``report.json``, then re-renders the report.

Nothing is dropped silently: answers cut off by max_tokens are skipped and
counted, verdicts the judge gave in no readable form are counted ("9 of 10
verdicts unreadable"), and every rate carries its n, with no interval below
:data:`~harness.spotcheck.metrics.MIN_ANSWERS_FOR_CI` checked answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.core.version import __version__
from harness.run_folder.file_names import (
    CITATION_SUPPORT,
    CLAIMS,
    CLAIMS_REVIEW_CSV,
    JUDGEMENTS,
    QUALITY,
    REVIEW_CSV,
)
from harness.run_folder.run_dir import RunDir
from harness.run_folder.spotcheck import CitationCheck
from harness.spotcheck.claims import ClaimsJudged, ClaimsTemplate, check_claims, load_claims_template
from harness.spotcheck.inputs import RunInputs, load_run
from harness.spotcheck.judge_calls import Judge, JudgeSettings
from harness.spotcheck.metrics import (
    MIN_ANSWERS_FOR_CI,
    RISK_FORMULA,
    AnswerResult,
    claim_figures,
    coverage,
    displayed,
    model_differences,
    model_metrics,
)
from harness.spotcheck.passes import Judged, judge_hits
from harness.spotcheck.publish import notes_for, update_report
from harness.spotcheck.quality import QualityTemplate, load_quality_template
from harness.spotcheck.review import write_review_csv
from harness.spotcheck.sampling import sample_hits
from harness.spotcheck.spotcheck_records import JudgeBlock, SpotcheckFile, write_spotcheck
from kb_builder.loader import load_kb

LABELS = {"lexical": "offline word-overlap judge (lower quality than an LLM judge)",
          "scripted": "scripted judge (tests and rehearsals only)", "llm": "LLM judge"}


MODES = ("claims", "segments")


@dataclass
class SpotcheckOptions:
    sample: int | None = 50  # answers per model; None = all
    seed: int = 0
    repeats: int = 1
    bootstrap: int = 2000
    models: tuple[str, ...] = ()
    mode: str = "claims"  # claims: atomic claims, 3 verdicts (2 calls per answer); segments: 1 call per segment
    scope: str = "hits"  # hits | answered | all (harness.spotcheck.inputs.in_scope)
    quality: bool = False  # GroUSE-style answer quality: one more call per answer (harness.spotcheck.quality)
    gold: Path | None = None  # the gold CSV, for the questions' text (default: the one report.json names)


def _questions(inputs: RunInputs, gold: Path | None) -> dict[str, str]:
    """Question text by ID: the quality judge reads the question the answer was given."""
    from kb_builder.gold import load_gold

    recorded = inputs.report.gold.path if inputs.report is not None else None
    path = gold or (Path(recorded) if recorded and Path(recorded).exists() else None)
    if path is None:
        raise GraceError(f"{inputs.run_dir}: --quality needs the questions: give --gold GOLD.csv (report.json names "
                         f"{recorded or 'no gold file'} that exists)")
    return {q.question_id: q.question for q in load_gold(path).questions}


def grade_quality(judge: Judge, template: QualityTemplate, chosen: list[Any], kb: Any, opts: SpotcheckOptions,
                  settings: JudgeSettings, inputs: RunInputs, stats: Any) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The answer-quality grades of every checked answer, against its gold article(s) and what it was shown."""
    from harness.providers.base import RetrievedArticle
    from harness.spotcheck.quality import QualityItem, grade_answers
    from harness.spotcheck.segmentation import answer_body

    questions = _questions(inputs, opts.gold)

    def arts(ids: tuple[str, ...]) -> tuple[RetrievedArticle, ...]:
        return tuple(RetrievedArticle(i, kb.by_id[i].title, kb.by_id[i].text, 0.0) for i in ids if i in kb.by_id)

    items = [QualityItem(h.key, questions.get(h.question_id, ""), arts(h.expected), arts(h.retrieved),
                         answer_body(h.text, set(kb.by_id))[0] or h.text) for h in chosen]
    return grade_answers(judge, template, items, settings, stats)


def judge_block(judge: Judge, repeats: int, run_dir: Path) -> JudgeBlock:
    block = JudgeBlock(name=judge.spec.name, model=judge.spec.name, provider=judge.spec.provider, kind=judge.kind,
                       label=LABELS[judge.kind], template=judge.template.name, template_hash=judge.template.sha256,
                       params=dict(judge.spec.params), max_tokens=judge.spec.params.get("max_tokens"),
                       options=dict(judge.spec.options), timeout_s=judge.spec.timeout_s, base_url=judge.spec.base_url,
                       repeats=repeats)
    calib = RunDir(run_dir).calibration
    if calib.exists():  # a calibration of this very judge and template still holds
        try:
            data = json.loads(calib.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            data = {}
        if data.get("judge") == judge.spec.name and data.get("template_hash") == judge.template.sha256:
            block.calibrated, block.n = True, data.get("n")
            block.kappa = data.get("kappa")
            block.kappa_multiclass = data.get("kappa_multiclass")
            if data.get("kappa_per_class"):
                block.kappa_per_class = {c: v.get("kappa") for c, v in data["kappa_per_class"].items()}
            block.precision_unsupported = data.get("precision_unsupported")
            block.recall_unsupported = data.get("recall_unsupported")
    return block


def claim_results(judged: ClaimsJudged, keys: list[tuple[str, str, int]], repeats: int) -> tuple[list[AnswerResult], int]:
    """Complete answers (claims extracted, every claim with a verdict in every repeat) and how many were not."""
    done, incomplete = [], 0
    for key in keys:
        a = judged.answers[key]
        if a.claims is None:
            incomplete += 1
            continue
        rows = [[a.verdicts.get((r, c.index), {}).get("verdict") for c in a.claims] for r in range(repeats)]
        if any(v is None for vs in rows for v in vs):
            incomplete += 1
            continue
        h = a.hit
        done.append(AnswerResult(key, len(a.claims), [vs.count("supported") for vs in rows],
                                 ["unsupported" in vs for vs in rows], [vs.count("partial") for vs in rows],
                                 coverage(h.cited_ids, h.expected, h.retrieved)))
    return done, incomplete


def claim_counts(judged: ClaimsJudged, keys: set[tuple[str, str, int]]) -> dict[str, int]:
    """The verdict counts of :func:`verdict_counts`, for claims: replies, unreadable ones, failed calls."""
    rows = [r for k in keys for r in judged.answers[k].verdicts.values() if r.get("source") == "judge"]
    failed = [judged.answers[k] for k in keys if judged.answers[k].claims is None]
    return {"n_verdicts": sum(1 for r in rows if not r.get("error")),
            "n_unreadable": sum(1 for r in rows if not r.get("error") and r.get("verdict") is None),
            "n_failed_calls": sum(1 for r in rows if r.get("error")) + sum(1 for a in failed if a.extraction_failed_call),
            "n_retried": 0, "n_retry_recovered": 0, "n_extraction_failed": len(failed)}


def answer_results(judged: Judged, keys: list[tuple[str, str, int]], repeats: int,
                   hits: dict[tuple[str, str, int], Any] | None = None) -> tuple[list[AnswerResult], int]:
    """Complete answers (every segment judged in every repeat) and how many were not complete."""
    done, incomplete = [], 0
    for key in keys:
        segs = judged.segments[key]
        sup, hal, ok = [], [], True
        for r in range(repeats):
            verdicts = [judged.rows.get((key, r, s.index), {}).get("supported") for s in segs]
            if any(v is None for v in verdicts):
                ok = False
                break
            sup.append(sum(verdicts))
            hal.append(not all(verdicts))
        if ok:
            h = (hits or {}).get(key)
            done.append(AnswerResult(key, len(segs), sup, hal,
                                     coverage=coverage(h.cited_ids, h.expected, h.retrieved) if h else None))
        else:
            incomplete += 1
    return done, incomplete


def verdict_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """What the judge was asked about one model's segments, as it stands: replies, unreadable ones, failures, retries."""
    judged = [r for r in rows if r.get("source") == "judge"]
    replies = [r for r in judged if not r.get("error")]
    retried = [r for r in replies if r.get("retry")]
    return {"n_verdicts": len(replies), "n_unreadable": sum(r.get("supported") is None for r in replies),
            "n_failed_calls": len(judged) - len(replies), "n_retried": len(retried),
            "n_retry_recovered": sum(r.get("supported") is not None for r in retried)}


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def model_warnings(m: str, v: dict[str, Any]) -> list[str]:
    """What a reader of one model's figures must know: skipped, unreadable, failed."""
    out = []
    if v["truncated_skipped"]:
        out.append(f"{m}: {_plural(v['truncated_skipped'], 'truncated answer')} skipped (cut off by max_tokens)")
    if v["n_unreadable"]:
        out.append(f"{m}: {v['n_unreadable']} of {_plural(v['n_verdicts'], 'verdict')} unreadable, even asked again "
                   "with a stricter instruction; not cached, so running the same command again asks them again "
                   "(a stronger judge, or --json-mode, may help)")
    if v["n_incomplete"]:
        why = [x for x in (_plural(v["n_failed_calls"], "failed call") if v["n_failed_calls"] else "",
                           _plural(v["n_unreadable"], "unreadable verdict") if v["n_unreadable"] else "") if x]
        out.append(f"{m}: {_plural(v['n_incomplete'], 'sampled answer')} not fully judged"
                   + (f" ({', '.join(why)})" if why else "") + " left out of the figures; run the same command "
                   "again to ask those again")
    return out


def claim_review_rows(judged: ClaimsJudged, keys: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """The review CSV in claims mode: one row per claim (``segment_index`` holds the claim's index, and
    ``segment_text`` the claim), labelled supported, partial or unsupported."""
    rows = []
    for model, qid, rep in keys:
        for c in judged.answers[(model, qid, rep)].claims or []:
            rows.append({"model": model, "question_id": qid, "repeat": rep, "segment_index": c.index,
                         "citation": ", ".join(c.citations), "segment_text": c.text})
    return rows


def review_rows(judged: Judged, keys: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    rows = []
    for model, qid, rep in keys:
        for s in judged.segments[(model, qid, rep)]:
            rows.append({"model": model, "question_id": qid, "repeat": rep, "segment_index": s.index,
                         "citation": ", ".join(s.citations), "segment_text": s.text})
    return rows


def _kb_dir(kb_dir: Path | None, inputs: RunInputs) -> Path:
    if kb_dir is not None:
        return kb_dir
    recorded = inputs.report.kb.path if inputs.report is not None else None
    if recorded and Path(recorded).exists():
        return Path(recorded)
    raise GraceError(f"{inputs.run_dir}: give --kb KB_DIR (the articles the answers cite); report.json names none that exists")


def citation_readers(inputs: RunInputs, kb: Any) -> dict[str, Any]:
    """The citation reader of each model whose run.json says it cites several sources or its own references
    (``models[].citations``); none for GRACE prompts. A bad mapping file or rewrite rule is a GraceError naming it."""
    from harness.spotcheck.citation_support import SentenceReader, reads_several

    info = RunDir(inputs.run_dir).read_run_info()
    return {e.name: SentenceReader.for_settings(kb.articles, e.citations)
            for e in (info.models if info is not None else [])
            if e.name in inputs.counts and reads_several(e.citations)}


def citation_pass(judge: Judge, chosen: list[Any], kb: Any, inputs: RunInputs, readers: dict[str, Any],
                  opts: SpotcheckOptions, settings: JudgeSettings,
                  stats: Any) -> tuple[dict[str, dict[str, Any]], CitationCheck | None]:
    """Claim-level citation support of the models :func:`citation_readers` reads
    (:mod:`harness.spotcheck.citation_support`): per model its figures, and how it was checked; the per-sentence
    records go to ``spotcheck/citation_support.jsonl``. Nothing (no call, no file, no key) for a run of GRACE
    prompts only, so their spot-check is what it always was."""
    from harness.spotcheck import citation_support as cs

    files = RunDir(inputs.run_dir)
    if not readers:
        if files.citation_support.exists():  # an earlier spot-check's records, of models no longer read so
            files.citation_support.unlink()
        return {}, None
    template = (judge.template if isinstance(judge.template, ClaimsTemplate)
                else load_claims_template(None, kb.manifest.language))
    hits = [h for h in chosen if h.model in readers]
    answers = {h.key: cs.AnswerSupport(h.key, readers[h.model].sentences(h.text, h.citations)) for h in hits}
    cs.judge_support(judge, template, list(answers.values()), lambda a, aid: kb.by_id[aid], settings, stats)
    meta = cs.run_citation_meta_eval(judge, template, cs.load_citation_cases(), settings, stats)
    rows = []
    for h in hits:
        rows += cs.sentence_rows(answers[h.key], {"model": h.model, "question_id": h.question_id, "repeat": h.repeat,
                                                  "answer_hash": h.answer_hash, "judge": judge.spec.name,
                                                  "template_hash": template.sha256})
    files.citation_support.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(files.citation_support, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    figures = {}
    for i, m in enumerate(m for m in inputs.models if m in readers):
        mine = [answers[h.key] for h in hits if h.model == m]
        done = [a for a in mine if a.complete]
        figures[m] = cs.support_figures(done, len(mine) - len(done), meta["kappa"], meta["n"], opts.bootstrap,
                                        opts.seed + i)
    check = CitationCheck(models=list(figures), template=template.name, template_hash=template.sha256,
                          path=CITATION_SUPPORT, n_rows=len(rows), meta_eval=meta, method=cs.METHOD)
    return figures, check


def run_spotcheck(run_path: Path, kb_dir: Path | None, judge: Judge, opts: SpotcheckOptions,
                  settings: JudgeSettings | None = None, console: Any = None) -> dict[str, Any]:
    settings = settings or JudgeSettings()
    if opts.repeats < 1 or (opts.sample is not None and opts.sample < 1):
        raise GraceError("--sample and --repeats must be 1 or more")
    if opts.mode not in MODES:
        raise GraceError(f"--mode must be one of {', '.join(MODES)}, got {opts.mode!r}")
    inputs = load_run(run_path, opts.models, opts.scope)
    with RunDir(inputs.run_dir).lock():
        return _run_spotcheck(inputs, kb_dir, judge, opts, settings, console)


def _run_spotcheck(inputs: RunInputs, kb_dir: Path | None, judge: Judge, opts: SpotcheckOptions,
                   settings: JudgeSettings, console: Any) -> dict[str, Any]:
    kb = load_kb(_kb_dir(kb_dir, inputs), write_missing=False)
    judge = judge.in_language(opts.mode, kb.manifest.language)
    warnings = []
    run_kb = inputs.report.kb.hash if inputs.report is not None else None
    if run_kb and run_kb != kb.kb_hash:
        warnings.append(f"KB {kb.path} (hash {kb.kb_hash}) is not the one the run was scored on ({run_kb}); "
                        "segments are judged against the articles as they are now")
    samples = sample_hits(inputs.hits, opts.sample, opts.seed)
    chosen = [h for m in inputs.models if m in samples for h in samples[m].chosen]
    run_dir, files = inputs.run_dir, RunDir(inputs.run_dir)
    by_key = {h.key: h for h in chosen}
    claims = opts.mode == "claims"
    readers = citation_readers(inputs, kb)
    segments = {h.key: readers[h.model].segments(h.text, h.citations) for h in chosen if h.model in readers}
    if claims:
        cj = check_claims(judge, judge.template, chosen, kb, opts.repeats, settings, segments)
        files.claims.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(files.claims, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in cj.rows))
        stats, rows = cj.stats, cj.rows
    else:
        judged = judge_hits(judge, chosen, kb, opts.repeats, files.judgements, settings, segments=segments)
        stats, rows = judged.stats, list(judged.rows.values())

    qtemplate = load_quality_template(None, kb.manifest.language) if opts.quality else None  # the KB's language's
    quality = grade_quality(judge, qtemplate, chosen, kb, opts, settings, inputs, stats) if qtemplate else {}
    if quality:
        rows = rows + [{"kind": "quality", "model": k[0], "question_id": k[1], "repeat": k[2], "source": "judge", **v}
                       for k, v in quality.items()]
        files.quality.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(files.quality, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows
                                                 if r.get("kind") == "quality"))

    support, check = citation_pass(judge, chosen, kb, inputs, readers, opts, settings, stats)

    models: dict[str, Any] = {}
    for i, m in enumerate(inputs.models):
        keys = [h.key for h in (samples[m].chosen if m in samples else [])]
        keyset = set(keys)
        if claims:
            answers, incomplete = claim_results(cj, keys, opts.repeats)
            counts, quote_fails = claim_counts(cj, keyset), 0
        else:
            answers, incomplete = answer_results(judged, keys, opts.repeats, by_key)
            counts = verdict_counts([row for (k, _, _), row in judged.rows.items() if k in keyset])
            quote_fails = sum(1 for (k, r, _), row in judged.rows.items()
                              if r == 0 and k in keyset and row.get("source") == "quote")
        c = inputs.counts[m]
        block = model_metrics(answers, c.n, c.correct, c.correct_refusal, opts.bootstrap, opts.seed + i)
        block.update(claim_figures(answers, opts.bootstrap, opts.seed + i))
        if claims:
            block.update(faithfulness=block["groundedness"], faithfulness_ci95=block["groundedness_ci95"],
                         faithfulness_n=block["groundedness_n"])
        if opts.scope != "hits":  # the risk formula holds for correct-citation answers only
            block.update(hallucination_risk=None, hallucination_risk_ci95=None)
        block["display"] = displayed(block)
        if opts.quality:
            from harness.spotcheck.quality import quality_figures

            block["quality"] = quality_figures([quality[k] for k in keys if k in quality], opts.bootstrap,
                                               opts.seed + i)
        cut = inputs.truncated.get(m, 0)
        models[m] = {"hits": (samples[m].hits if m in samples else 0) + cut, "n_incomplete": incomplete,
                     "quote_failures": quote_fails, "truncated_skipped": cut, **counts, **block}
        warnings += model_warnings(m, models[m])
        if m in support:
            models[m]["citation_support"] = support[m]
            if support[m]["n_incomplete"]:
                warnings.append(f"{m}: {_plural(support[m]['n_incomplete'], 'sampled answer')} left out of the "
                                "citation support figures (a judge call failed or stayed unreadable); run the same "
                                "command again to ask those again")
    spreads = {m: v["groundedness_spread"] for m, v in models.items()}
    variance = {
        "repeats": opts.repeats,
        "per_model": {m: {"groundedness_per_repeat": v["groundedness_per_repeat"], "spread": v["groundedness_spread"]}
                      for m, v in models.items()},
        "max_spread": max((s for s in spreads.values() if s is not None), default=None) if opts.repeats > 1 else None,
        "model_differences": model_differences({m: v["groundedness"] for m, v in models.items()},
                                               spreads if opts.repeats > 1 else {}),
    }
    costs = [r.get("cost_usd") for r in rows if r.get("source") == "judge"]
    spot = SpotcheckFile(
        created_at=now(),
        grace_version=__version__,
        run={"path": str(run_dir), "scores": str(inputs.scores_path), "responses": str(inputs.responses_path),
             "kb": {"path": str(kb.path), "hash": kb.kb_hash}},
        judge=judge_block(judge, opts.repeats, run_dir),
        sample={"per_model": opts.sample, "all": opts.sample is None, "seed": opts.seed,
                "strategy": "per model, proportional to hits per cited article (seeded)",
                "models": {m: s.summary() for m, s in samples.items()}},
        seed=opts.seed, bootstrap_samples=opts.bootstrap, models=models, variance=variance,
        judge_calls={**stats.as_dict(), "reused_from_file": 0 if claims else judged.reused,
                     "decided_without_judge": (sum(r.get("source") in ("missing_article", "no_source") for r in rows)
                                               if claims
                                               else judged.decided_without_judge),
                     "retried": sum(v["n_retried"] for v in models.values()),
                     "unreadable": sum(v["n_unreadable"] for v in models.values())},
        mode=opts.mode, scope=opts.scope,
        quality={"template": qtemplate.name, "template_hash": qtemplate.sha256, "path": QUALITY} if qtemplate else None,
        judgements={"path": CLAIMS if claims else JUDGEMENTS, "n": len(rows),
                    "judge_pass_cost_usd": None if any(c is None for c in costs) else round(sum(costs), 6)},
        review_csv=CLAIMS_REVIEW_CSV if claims else REVIEW_CSV, min_answers_for_ci=MIN_ANSWERS_FOR_CI,
        redaction=settings.redactor.record() if settings.redactor is not None else None, risk_formula=RISK_FORMULA, notes="", warnings=warnings,
        citation_support=check,
    )
    spot.notes = notes_for(spot)
    if claims:
        write_review_csv(files.claims_review_csv, claim_review_rows(cj, [h.key for h in chosen]))
    else:
        write_review_csv(files.review_csv, review_rows(judged, [h.key for h in chosen]))
    write_spotcheck(files.spotcheck, spot)
    report_html = update_report(run_dir, spot, console)
    return {**spot.model_dump(mode="json"), "_report_html": report_html}


def estimate_spotcheck(run_path: Path, kb_dir: Path | None, judge: Judge, opts: SpotcheckOptions,
                       settings: JudgeSettings | None = None) -> list[Any]:
    """``--dry-run``: the judge calls the spot-check would make, cached ones apart, with tokens and cost; none is made.

    Exact for what does not depend on a reply (claims: the extractions; segments: pass 1); the claim
    verifications are estimated from the segments (one call per answer and cited source, the segments standing
    in for the claims not yet extracted), and pass 2 from the uncited segments, so those rows are marked ``~``.
    """
    from harness.providers.base import RetrievedArticle
    from harness.runner.calls import Prompted, PromptJob, estimate_prompts
    from harness.spotcheck.claims import EXTRACT_KIND, EXTRACT_SCHEMA, VERIFY_KIND, VERIFY_SCHEMA
    from harness.spotcheck.judge_prompt import JUDGE_SCHEMA, SourceArticle
    from harness.spotcheck.segmentation import segment_answer

    settings = settings or JudgeSettings()
    inputs = load_run(run_path, opts.models, opts.scope)
    kb = load_kb(_kb_dir(kb_dir, inputs), write_missing=False)
    judge = judge.in_language(opts.mode, kb.manifest.language)
    samples = sample_hits(inputs.hits, opts.sample, opts.seed)
    chosen = [h for m in inputs.models if m in samples for h in samples[m].chosen]
    t, kb_ids = judge.template, set(kb.by_id)
    readers = citation_readers(inputs, kb)
    first, second = [], []
    for h in chosen:
        segs = readers[h.model].segments(h.text, h.citations) if h.model in readers else segment_answer(h.text, kb_ids)
        if not segs:
            continue
        if opts.mode == "claims":
            first.append(PromptJob(f"claims:extract:{h.model}|{h.question_id}|{h.repeat}",
                                   json.dumps([[s.index, s.claim] for s in segs], ensure_ascii=False), t.extract(segs)))
        groups: dict[tuple[str, ...], list[str]] = {}
        cited_any = tuple(dict.fromkeys(i for s in segs for i in s.citations)) or h.cited_ids or h.retrieved
        for s in segs:
            ids = tuple(i for i in (s.citations or (cited_any if opts.mode == "claims" else ())) if i in kb.by_id)
            if opts.mode == "segments" and not s.citations:
                second.append(PromptJob(f"{h.key}|{s.index}", s.claim, t.uncited(s.claim, [s.claim])))
            elif ids:
                groups.setdefault(ids, []).append(s.claim)
        for ids, texts in groups.items():
            sources = [SourceArticle(i, kb.by_id[i].title, kb.by_id[i].text) for i in ids]
            arts = [RetrievedArticle(a.id, a.title, a.text, 0.0) for a in sources]
            for r in range(opts.repeats):
                if opts.mode == "claims":
                    second.append(PromptJob(f"claims:verify:{h.key}|{ids}|{r}", json.dumps(texts), t.verify(texts, sources),
                                            arts, repeat=r))
                else:
                    first += [PromptJob(f"{h.key}|{c}", c, t.cited(c, sources), arts, repeat=r) for c in texts]
    if opts.mode == "claims":
        ask1 = Prompted(judge.spec, judge.provider, EXTRACT_KIND, t.sha256, EXTRACT_SCHEMA)
        ask2 = Prompted(judge.spec, judge.provider, VERIFY_KIND, t.sha256, VERIFY_SCHEMA)
        rows = [estimate_prompts(ask1, first, settings, "claims: extracting", 60 * 4),
                _approx(estimate_prompts(ask2, second, settings, "claims: verifying", 80 * 3))]
    else:
        ask = Prompted(judge.spec, judge.provider, "grace-spotcheck-judge", t.sha256, JUDGE_SCHEMA)
        rows = [estimate_prompts(ask, first, settings, "pass 1: cited segments", 80),
                _approx(estimate_prompts(ask, second, settings, "pass 2: uncited segments", 80))]
    return rows + _estimate_support(judge, chosen, kb, readers, settings)


def _estimate_support(judge: Judge, chosen: list[Any], kb: Any, readers: dict[str, Any],
                      settings: JudgeSettings) -> list[Any]:
    """The citation support calls (exact: they depend on no reply) and its meta-eval's, when a model reads several
    citations; none otherwise."""
    if not readers:
        return []
    from harness.runner.calls import estimate_prompts
    from harness.spotcheck import citation_support as cs

    template = (judge.template if isinstance(judge.template, ClaimsTemplate)
                else load_claims_template(None, kb.manifest.language))
    answers = [cs.AnswerSupport(h.key, readers[h.model].sentences(h.text, h.citations)) for h in chosen
               if h.model in readers]
    cases = cs.load_citation_cases()
    by_case = {("meta", c.id): {a.id: a for a in c.articles} for c in cases}
    meta = [cs.AnswerSupport(("meta", c.id), list(c.sentences)) for c in cases]
    who = cs.who_judges(judge, template)
    return [estimate_prompts(who, cs.support_jobs(template, answers, lambda a, aid: kb.by_id[aid]), settings,
                             "citations: checking support", 80 * 3),
            estimate_prompts(who, cs.support_jobs(template, meta, lambda a, aid: by_case[a.key][aid]), settings,
                             "citations: meta-eval cases", 80 * 4)]


def _approx(est: Any) -> Any:
    est.approximate = True
    return est
