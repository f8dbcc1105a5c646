"""``grace annotations validate``: is a gold CSV right for its KB, and balanced enough to trust?

Errors make the gold set unusable (an unknown article ID, a must_refuse row that
cites, a duplicate question ID); warnings are judgement calls (near-duplicate
questions, a must_refuse share outside the 10-30% seen in production grounded QA,
questions whose gold article retrieval never surfaces). Every problem is collected,
not just the first, so one run gives the whole to-do list.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from annotations.labels import LabelRecord, read_labels, read_rows, row_to_record
from harness.core.errors import GraceError, where
from kb_builder.curation_records import Retirement, describe_retirement, where_ids_went
from kb_builder.gold import CITATIONS_NEEDED, LABEL_COLUMNS, MUST_REFUSE, QUESTION_ID, STATUS, check_unique, no_label
from kb_builder.kb_dir import KbDir
from kb_builder.loader import load_kb
from kb_builder.store import KB

REFUSE_SHARE_RANGE = (0.10, 0.30)
NEAR_DUPLICATE = 0.9


class Issue(BaseModel):
    kind: str
    message: str
    line: int | None = None
    question_id: str | None = None


class RetiredCitation(BaseModel):
    question_id: str
    line: int
    article_id: str
    old_title: str | None = None
    title_from: str | None = None


class Unsurfaced(BaseModel):
    question_id: str
    question: str
    gold: list[str]
    best_rank: int | None  # rank of the best gold article within ``depth``; None: beyond it


class ValidationReport(BaseModel):
    schema_version: int = 1
    gold: str
    kb: str
    kb_hash: str
    questions: int = 0
    labelled: int = 0
    skipped: int = 0
    unlabelled: int = 0
    drafts: int = 0  # proposed by `grace gold generate`: checked like labels, but not gold yet
    must_refuse: int = 0
    must_refuse_share: float = 0.0
    all_needed: int = 0  # labelled questions whose citations_needed is "all" (every listed article required)
    k: int = 10
    depth: int = 50
    retriever: str = ""
    errors: list[Issue] = Field(default_factory=list)
    warnings: list[Issue] = Field(default_factory=list)
    retired: list[RetiredCitation] = Field(default_factory=list)
    near_duplicates: list[tuple[str, str, float]] = Field(default_factory=list)
    unsurfaced: list[Unsurfaced] = Field(default_factory=list)


def _old_titles(kb: KB, old_kb: Path | None) -> tuple[dict[str, str], str]:
    if old_kb is not None:
        return {a.id: a.title for a in load_kb(old_kb, write_missing=False).articles}, f"old KB {old_kb}"
    folder = KbDir(kb.path)
    if not folder.retired.exists():
        return {}, ""
    return folder.retired_titles(), str(folder.retired)


def validate_gold(
    gold: str | Path, kb_dir: str | Path, *, old_kb: Path | None = None, k: int = 10, embedder: str | None = None
) -> ValidationReport:
    gold, kb = Path(gold), load_kb(kb_dir)
    header, rows = read_rows(gold)
    rep = ValidationReport(gold=str(gold), kb=str(kb.path), kb_hash=kb.kb_hash, k=k)

    def err(kind: str, msg: str, line: int | None = None, qid: str | None = None) -> None:
        rep.errors.append(Issue(kind=kind, message=msg, line=line, question_id=qid))

    def warn(kind: str, msg: str, line: int | None = None, qid: str | None = None) -> None:
        rep.warnings.append(Issue(kind=kind, message=msg, line=line, question_id=qid))

    missing = [c for c in LABEL_COLUMNS if c not in header]
    if missing:
        err("columns", f"{where(gold, 1)}: missing gold column(s) {', '.join(missing)}", 1)
    has_status = STATUS in header
    records: list[LabelRecord] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        try:
            rec = row_to_record(gold, line, row)
        except GraceError as exc:
            err("row", str(exc), line, row.get(QUESTION_ID, "").strip() or None)
            continue
        try:
            check_unique(gold, line, rec.question_id, seen)
        except GraceError as exc:
            err("duplicate_id", str(exc), line, rec.question_id)
            continue
        if rec.status == "unlabelled" and not has_status:  # a plain gold file: the row must be labelled
            err("row", no_label(gold, line, rec.question_id), line, rec.question_id)
        records.append(rec)
    labelled = [r for r in records if r.status == "labelled"]
    rep.questions, rep.labelled = len(records), len(labelled)
    rep.skipped = sum(r.status == "skipped" for r in records)
    rep.unlabelled = sum(r.status == "unlabelled" for r in records) if has_status else 0
    if rep.skipped or rep.unlabelled:
        warn("not_labelled", f"{rep.skipped} skipped and {rep.unlabelled} unlabelled question(s) are left out of the gold set")
    drafts = [r for r in records if r.status == "draft"]
    rep.drafts = len(drafts)
    if drafts:
        warn("draft", f"{rep.drafts} draft question(s) are not gold until accepted in grace annotate")

    _check_reopened(gold, records, rep)
    _check_ids(kb, labelled + drafts, gold, old_kb, rep)
    rep.must_refuse = sum(r.must_refuse for r in labelled)
    rep.must_refuse_share = round(rep.must_refuse / len(labelled), 4) if labelled else 0.0
    for r in labelled:
        if (r.extra.get(CITATIONS_NEEDED) or "").strip().lower() != "all":
            continue
        rep.all_needed += 1
        if r.must_refuse:
            warn("citations_needed", f"{where(gold, r.line)}: question {r.question_id!r} is {MUST_REFUSE} with "
                 f"{CITATIONS_NEEDED} all, which has no article to require; clear the cell", r.line, r.question_id)
    lo, hi = REFUSE_SHARE_RANGE
    if labelled and not lo <= rep.must_refuse_share <= hi:
        warn("refuse_share", f"must_refuse share {rep.must_refuse_share:.1%} is outside {lo:.0%}-{hi:.0%}, the range "
             "seen in production grounded QA: a benchmark with too few (or too many) refusals mis-ranks models")
    rep.near_duplicates = near_duplicates(records)
    for a, b, sim in rep.near_duplicates:
        warn("near_duplicate", f"questions {a} and {b} are near-duplicates (similarity {sim:.2f})", qid=a)
    _check_retrieval(kb, labelled + drafts, k, embedder, rep)
    return rep


def _check_reopened(gold: Path, records: list[LabelRecord], rep: ValidationReport) -> None:
    """A team's gold (``gold.csv`` beside ``adjudications.csv``): a question a reviewer decided that the gold leaves
    out again had a label changed since the decision (``grace annotate --team`` re-opens it for the reviewer)."""
    from annotations.team import ADJUDICATIONS, PLAN, decided_on

    decisions = gold.parent / ADJUDICATIONS
    if not (gold.parent / PLAN).is_file() or not decisions.is_file():
        return
    rows = {r.question_id: r for r in records}
    for d in read_labels(decisions)[0]:
        now = rows.get(d.question_id)
        if now is None or now.status != "unlabelled":
            continue
        on = decided_on(d) or {}
        rep.warnings.append(Issue(
            kind="reopened", question_id=d.question_id,
            message=f"question {d.question_id}: decided by {d.adjudicated_by} ({d.label}) on the labels "
                    f"{', '.join(f'{p} {v}' for p, v in on.items()) or '(not recorded)'}, but a label changed "
                    f"since: it waits for the reviewer again (the queue of 'grace annotate --team'), out of the gold"))


def _check_ids(kb: KB, labelled: list[LabelRecord], gold: Path, old_kb: Path | None, rep: ValidationReport) -> None:
    old, old_source = None, ""
    manifest_retired = set(kb.manifest.retired_ids)
    went: dict[str, Retirement] | None = None
    for rec in labelled:
        unknown = [c for c in rec.expected_citations if c not in kb.by_id]
        if not unknown:
            continue
        if old is None:
            old, old_source = _old_titles(kb, old_kb)
            went = where_ids_went(kb.path, set(kb.by_id))
        for c in unknown:
            if c in went:  # merged or split by curation: the labels have a command that follows
                r = went[c]
                rep.retired.append(RetiredCitation(question_id=rec.question_id, line=rec.line, article_id=c,
                                                   old_title=r.title, title_from=KbDir(kb.path).curation.name))
                rep.errors.append(Issue(
                    kind="curated_id", line=rec.line, question_id=rec.question_id,
                    message=f"{where(gold, rec.line)}: question {rec.question_id!r} cites {describe_retirement(r)}; "
                    f"run 'grace annotations migrate {gold} --kb {kb.path} --out NEW.csv'"
                    + (" (merged labels move to the surviving article)" if r.how == "merged" and len(r.into) == 1
                       else " (it lists the question for relabelling, with both parts suggested)"),
                ))
                continue
            title, source = old.get(c), old_source if c in old else None
            if title is None and len(rec.expected_titles) == len(rec.expected_citations):
                title, source = rec.expected_titles[rec.expected_citations.index(c)], "expected_titles column"
            rc = RetiredCitation(question_id=rec.question_id, line=rec.line, article_id=c, old_title=title, title_from=source)
            rep.retired.append(rc)
            was = f", was {title!r} (from {source})" if title else ""
            retired = " (retired in the KB manifest)" if c in manifest_retired else ""
            rep.errors.append(Issue(
                kind="unknown_id", line=rec.line, question_id=rec.question_id,
                message=f"{where(gold, rec.line)}: question {rec.question_id!r} cites article {c}, not in the KB"
                f"{retired}{was}; relabel it with 'grace annotate {kb.path} --from-gold {gold}'",
            ))


def near_duplicates(records: list[LabelRecord], threshold: float = NEAR_DUPLICATE) -> list[tuple[str, str, float]]:
    """Pairs of questions with TF-IDF cosine >= threshold (word 1-2 grams); sparse, so thousands are quick."""
    if len(records) < 2:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [" ".join(r.question.lower().split()) for r in records]
    try:
        m = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(texts)
    except ValueError:  # every question is stop words or empty
        return []
    out: list[tuple[str, str, float]] = []
    step = 512
    for start in range(0, m.shape[0], step):
        sims = (m[start : start + step] @ m.T).tocoo()
        for i, j, v in zip(sims.row, sims.col, sims.data, strict=True):
            i += start
            if j > i and v >= threshold - 1e-9:
                out.append((records[i].question_id, records[j].question_id, round(float(v), 3)))
    return sorted(out, key=lambda t: -t[2])


def _check_retrieval(kb: KB, labelled: list[LabelRecord], k: int, embedder: str | None, rep: ValidationReport) -> None:
    answerable = [r for r in labelled if r.expected_citations and all(c in kb.by_id for c in r.expected_citations)]
    if not answerable:
        return
    retriever = kb.retriever(embedder)
    rep.retriever = getattr(retriever, "name", "?")
    depth = rep.depth = min(len(kb.articles), max(50, k))
    results = retriever.search_many([r.question for r in answerable], depth)
    for rec, hits in zip(answerable, results, strict=True):
        ids = [h.id for h in hits]
        ranks = [ids.index(c) + 1 for c in rec.expected_citations if c in ids]
        best = min(ranks) if ranks else None
        if best is None or best > k:
            rep.unsurfaced.append(Unsurfaced(question_id=rec.question_id, question=rec.question,
                                             gold=rec.expected_citations, best_rank=best))
    if rep.unsurfaced:
        rep.warnings.append(Issue(kind="unsurfaced", message=f"{len(rep.unsurfaced)} of {len(answerable)} answerable "
                                  f"question(s) never get their gold article in the top {k} of {rep.retriever}"))


def render(rep: ValidationReport, limit: int = 30) -> str:
    lines = [
        f"{rep.gold}: {rep.questions} questions, {rep.labelled} labelled"
        + (f", {rep.skipped} skipped" if rep.skipped else "") + (f", {rep.unlabelled} unlabelled" if rep.unlabelled else "")
        + (f", {rep.drafts} draft" if rep.drafts else ""),
        f"KB {rep.kb} ({rep.kb_hash})",
        f"must_refuse: {rep.must_refuse} of {rep.labelled} labelled ({rep.must_refuse_share:.1%}; "
        f"expected {REFUSE_SHARE_RANGE[0]:.0%}-{REFUSE_SHARE_RANGE[1]:.0%})",
    ]
    if rep.all_needed:
        lines.append(f"{CITATIONS_NEEDED} all: {rep.all_needed} question(s) need every listed article cited")
    for title, items in (("errors", rep.errors), ("warnings", rep.warnings)):
        if items:
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  - {i.message}" for i in items[:limit]]
            if len(items) > limit:
                lines.append(f"  ... and {len(items) - limit} more (--json lists all)")
    if rep.unsurfaced:
        lines.append(f"gold article not in the top {rep.k} ({rep.retriever}):")
        for u in rep.unsurfaced[:limit]:
            where_ = f"rank {u.best_rank}" if u.best_rank else f"not in the top {rep.depth}"
            lines.append(f"  {u.question_id}  gold {';'.join(u.gold)} at {where_}: {u.question}")
        if len(rep.unsurfaced) > limit:
            lines.append(f"  ... and {len(rep.unsurfaced) - limit} more (--json lists all)")
    lines.append("OK: no errors" if not rep.errors else f"FAILED: {len(rep.errors)} error(s)")
    return "\n".join(lines)
