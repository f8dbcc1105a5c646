"""``grace annotations stats``: where the gold set looks, and where it does not.

A benchmark that asks ten questions about one article and none about forty others
measures that one article. Questions per article, uncovered articles (also per
top-level section) and category counts show the gaps to fill before trusting it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from annotations.labels import read_labels
from harness.core.errors import GraceError
from kb_builder.gold import split_ids
from kb_builder.loader import load_kb

CATEGORY_COLUMNS = ("category", "case", "topic", "type")


class ArticleCount(BaseModel):
    id: str
    title: str
    questions: int


class SectionCoverage(BaseModel):
    section: str
    articles: int
    covered: int


class GoldStats(BaseModel):
    schema_version: int = 1
    gold: str
    kb: str
    questions: int
    labelled: int
    skipped: int
    unlabelled: int
    must_refuse: int
    multi_article: int
    articles: int
    covered: int
    per_article: list[ArticleCount] = Field(default_factory=list)  # most-asked first
    uncovered: list[ArticleCount] = Field(default_factory=list)
    unknown_ids: list[str] = Field(default_factory=list)
    sections: list[SectionCoverage] = Field(default_factory=list)
    category_column: str | None = None
    categories: dict[str, int] = Field(default_factory=dict)
    annotators: dict[str, int] = Field(default_factory=dict)
    draft: int = 0
    provenance: dict[str, int] = Field(default_factory=dict)  # labelled rows by where the label came from
    labelled_by: dict[str, int] = Field(default_factory=dict)  # a team's gold: labels each person gave to it
    adjudicated: int = 0  # ... questions a reviewer decided, the people having disagreed
    adjudicators: dict[str, int] = Field(default_factory=dict)  # ... decisions per reviewer


def gold_stats(gold: str | Path, kb_dir: str | Path, column: str | None = None) -> GoldStats:
    records, extra_cols = read_labels(gold)
    kb = load_kb(kb_dir)
    if column and column not in extra_cols:
        raise GraceError(f"{gold}: no column {column!r}; the extra columns are {', '.join(extra_cols) or 'none'}")
    column = column or next((c for c in CATEGORY_COLUMNS if c in extra_cols), None)
    labelled = [r for r in records if r.status == "labelled"]
    counts = Counter(c for r in labelled for c in r.expected_citations)
    per_article = [
        ArticleCount(id=i, title=kb.by_id[i].title, questions=n) for i, n in counts.most_common() if i in kb.by_id
    ]
    uncovered = [ArticleCount(id=a.id, title=a.title, questions=0) for a in kb.articles if a.id not in counts]
    by_section: dict[str, list[int]] = {}
    for a in kb.articles:
        sec = _section(a)
        tally = by_section.setdefault(sec, [0, 0])
        tally[0] += 1
        tally[1] += a.id in counts
    return GoldStats(
        gold=str(gold),
        kb=str(kb.path),
        questions=len(records),
        labelled=len(labelled),
        skipped=sum(r.status == "skipped" for r in records),
        unlabelled=sum(r.status == "unlabelled" for r in records),
        must_refuse=sum(r.must_refuse for r in labelled),
        multi_article=sum(len(r.expected_citations) > 1 for r in labelled),
        articles=len(kb.articles),
        covered=len(kb.articles) - len(uncovered),
        per_article=per_article,
        uncovered=uncovered,
        unknown_ids=sorted(i for i in counts if i not in kb.by_id),
        # least covered first: the gaps are the point
        sections=[
            SectionCoverage(section=s, articles=t[0], covered=t[1])
            for s, t in sorted(by_section.items(), key=lambda kv: (kv[1][1] / kv[1][0], -kv[1][0], kv[0]))
        ],
        category_column=column,
        categories=dict(Counter((r.extra.get(column) or "(empty)") for r in records).most_common()) if column else {},
        annotators=dict(Counter(r.annotator or "(unknown)" for r in labelled).most_common()),
        draft=sum(r.status == "draft" for r in records),
        provenance=dict(Counter(r.provenance for r in labelled if r.provenance).most_common()),
        labelled_by=dict(Counter(p for r in labelled for p in split_ids(r.labelled_by)).most_common()),
        adjudicated=sum(bool(r.adjudicated_by) for r in labelled),
        adjudicators=dict(Counter(r.adjudicated_by for r in labelled if r.adjudicated_by).most_common()),
    )


def _section(article) -> str:
    """Top folder of the source document, else the document, else the first heading."""
    source = (article.source or "").replace("\\", "/").strip("/")
    if "/" in source:
        return source.split("/")[0]
    if source:
        return source
    return (article.heading_path[0] if article.heading_path else "") or "(none)"


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def render(st: GoldStats, limit: int = 20) -> str:
    cut = (lambda xs: xs) if limit <= 0 else (lambda xs: xs[:limit])
    lines = [
        f"{st.gold}: {st.questions} questions, {st.labelled} labelled "
        f"({st.must_refuse} must_refuse = {_pct(st.must_refuse, st.labelled)}, {st.multi_article} with several articles)"
        + (f", {st.skipped} skipped" if st.skipped else "") + (f", {st.unlabelled} unlabelled" if st.unlabelled else "")
        + (f", {st.draft} drafts not yet accepted" if st.draft else ""),
        f"KB {st.kb}: {st.covered} of {st.articles} articles have a question ({_pct(st.covered, st.articles)})",
        "",
        "questions per article (most asked first):",
    ]
    lines += [f"  {a.questions:4d}  {a.id:>8}  {a.title}" for a in cut(st.per_article)]
    if len(st.per_article) > len(cut(st.per_article)):
        lines.append(f"  ... {len(st.per_article) - limit} more (--limit 0 lists all)")
    if st.per_article:
        n = [a.questions for a in st.per_article]
        lines.append(f"  ({len(n)} cited articles; max {max(n)}, {sum(x == 1 for x in n)} with one question)")
    lines += ["", f"coverage gaps: {len(st.uncovered)} article(s) with no question"]
    lines += [f"  {a.id:>8}  {a.title}" for a in cut(st.uncovered)]
    if len(st.uncovered) > len(cut(st.uncovered)):
        lines.append(f"  ... {len(st.uncovered) - limit} more (--limit 0 lists all)")
    if len(st.sections) > 1:
        lines += ["", "coverage by section (least covered first):"]
        lines += [f"  {s.covered:4d}/{s.articles:<4d} {_pct(s.covered, s.articles):>6}  {s.section}" for s in cut(st.sections)]
        if len(st.sections) > len(cut(st.sections)):
            lines.append(f"  ... {len(st.sections) - limit} more sections (--limit 0 lists all)")
    if st.unknown_ids:
        lines += ["", f"cited IDs not in the KB: {', '.join(st.unknown_ids)} (run 'grace annotations validate')"]
    if st.category_column:
        lines += ["", f"questions by {st.category_column}:"]
        lines += [f"  {n:4d}  {c}" for c, n in st.categories.items()]
    if st.provenance:
        lines += ["", "labels by provenance:"] + [f"  {n:4d}  {p}" for p, n in st.provenance.items()]
        unknown = st.labelled - sum(st.provenance.values())
        if unknown:
            lines.append(f"  {unknown:4d}  (not recorded)")
    if st.labelled_by:  # a team's gold: who labelled it, and who decided where they disagreed
        agreed = st.labelled - st.adjudicated
        lines += ["", f"a team's gold: {agreed} question(s) the people agreed on, {st.adjudicated} decided by a reviewer"
                  + (f" ({', '.join(f'{a} {n}' for a, n in st.adjudicators.items())})" if st.adjudicators else "")]
        lines += ["labels given by:"] + [f"  {n:4d}  {a}" for a, n in st.labelled_by.items()]
    elif len(st.annotators) > 1:
        lines += ["", "labels by annotator:"] + [f"  {n:4d}  {a}" for a, n in st.annotators.items()]
    return "\n".join(lines)
