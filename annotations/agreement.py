"""Inter-annotator agreement over gold labels (an article ID set, or ``REFUSE``).

Cohen's kappa for two annotators, Fleiss' kappa for more, both from their
formulas (no statsmodels). A label is ``REFUSE`` or the sorted ``;``-joined cited
IDs, so two annotators who both chose articles 17 and 18 agree whatever order they
clicked in; only questions every annotator labelled are compared.

Files written with suggestions (``grace annotate --suggestions/--run``, drafts) also
measure the suggester: over every labelled row with a ``suggested`` label, per
``suggestion_source``, the share of suggestions people accepted and Cohen's kappa
between the suggestion and the saved label. That is the number to check before
trusting a suggester's unreviewed labels.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from annotations.labels import REFUSE, LabelRecord, read_labels
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text, spreadsheet_safe
from harness.stats.kappa import cohen_kappa, fleiss_kappa
from kb_builder.gold import (
    EXPECTED_ANSWER,
    EXPECTED_CITATIONS,
    GOLD_COLUMNS,
    MUST_REFUSE,
    QUESTION,
    QUESTION_ID,
    STATUS,
    format_bool,
)


def fleiss_from_labels(rows: list[list[str]]) -> float:
    cats = sorted({lab for row in rows for lab in row})
    pos = {c: j for j, c in enumerate(cats)}
    counts = []
    for row in rows:
        r = [0] * len(cats)
        for lab in row:
            r[pos[lab]] += 1
        counts.append(r)
    return fleiss_kappa(counts)


def strength(kappa: float) -> str:
    """Landis and Koch (1977), the usual words for a kappa."""
    if math.isnan(kappa):
        return "undefined"
    for bound, word in ((0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


@dataclass
class Comparison:
    names: list[str]
    files: list[Path]
    records: list[dict[str, LabelRecord]]
    compared: list[str]  # question IDs labelled by every annotator
    labels: list[list[str | None]]  # per compared question, one label per annotator (None: not given it)
    order: list[str]  # every question ID, first file's order first
    incomplete: int = 0
    kappa: float = math.nan
    kappa_name: str = "Cohen's kappa"
    pairwise: list[tuple[str, str, float]] = field(default_factory=list)
    raw_agreement: float = math.nan
    disagreements: list[int] = field(default_factory=list)  # indexes into compared
    overlap: bool = False  # no question labelled by all: each compared one by two or more (None for the others)


def _names(paths: list[Path], files: list[list[LabelRecord]]) -> list[str]:
    names = []
    for path, recs in zip(paths, files, strict=True):
        who = Counter(r.annotator for r in recs if r.annotator and r.status == "labelled").most_common(1)
        names.append(who[0][0] if who else path.stem)
    if len(set(names)) < len(names):  # one person labelled twice (test-retest): tell files apart
        names = [f"{n} ({p.name})" for n, p in zip(names, paths, strict=True)]
    return names


def compare_files(paths: list[Path]) -> Comparison:
    paths = [Path(p) for p in paths]
    files = [read_labels(p)[0] for p in paths]
    return compare_records(_names(paths, files), paths, files)


def compare_records(names: list[str], paths: list[Path], files: list[list[LabelRecord]]) -> Comparison:
    """The comparison of annotators' rows as read (``grace annotations agree``) or held by a live team session
    (:mod:`annotations.team`): one computation, so the page's kappa is the command's.

    Questions every annotator labelled are compared, as always. When there is none and three or more annotators
    labelled, the design is an overlap (each question given to some of them, ``grace annotate --assign
    overlap:N``): every question two or more labelled is compared, each pair over the questions both labelled
    (Cohen's kappa), and overall Fleiss' kappa when every compared question has the same number of labels (Fleiss
    does not need the same raters per subject, only the same count), else the mean of the pairwise kappas.
    """
    records = [{r.question_id: r for r in recs} for recs in files]
    order = list(dict.fromkeys(r.question_id for recs in files for r in recs))
    compared = [q for q in order if all(q in recs and recs[q].status == "labelled" for recs in records)]
    if not compared and len(files) >= 3:
        return _compare_overlap(names, paths, records, order)
    if not compared:
        raise GraceError(
            f"no question is labelled in all of {', '.join(str(p) for p in paths)}; "
            "check that the files share question_ids"
        )
    labels = [[recs[q].label for recs in records] for q in compared]
    res = Comparison(names, paths, records, compared, labels, order)
    res.incomplete = len(order) - len(compared)
    if len(paths) == 2:
        res.kappa = cohen_kappa([r[0] for r in labels], [r[1] for r in labels])
    else:
        res.kappa_name = "Fleiss' kappa"
        res.kappa = fleiss_from_labels(labels)
        for i in range(len(paths)):
            for j in range(i + 1, len(paths)):
                k = cohen_kappa([r[i] for r in labels], [r[j] for r in labels])
                res.pairwise.append((res.names[i], res.names[j], k))
    res.disagreements = [i for i, row in enumerate(labels) if len(set(row)) > 1]
    res.raw_agreement = 1 - len(res.disagreements) / len(compared)
    return res


def _label(rec: LabelRecord | None) -> str | None:
    return rec.label if rec is not None else None


def _compare_overlap(names: list[str], paths: list[Path], records: list[dict[str, LabelRecord]],
                     order: list[str]) -> Comparison:
    """Each question labelled by some of the annotators: a row holds ``None`` for those who did not label it."""
    rows = {q: [_label(recs.get(q)) for recs in records] for q in order}
    compared = [q for q in order if sum(lab is not None for lab in rows[q]) >= 2]
    if not compared:
        raise GraceError(
            f"no question is labelled by two or more of {', '.join(str(p) for p in paths)}; "
            "agreement needs questions that several annotators labelled (an overlap)"
        )
    labels = [rows[q] for q in compared]
    res = Comparison(names, paths, records, compared, labels, order, overlap=True)
    res.incomplete = len(order) - len(compared)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            both = [(r[i], r[j]) for r in labels if r[i] is not None and r[j] is not None]
            if both:
                res.pairwise.append((names[i], names[j], cohen_kappa([a for a, _ in both], [b for _, b in both])))
    given = [[lab for lab in row if lab is not None] for row in labels]
    per_question = {len(g) for g in given}
    if len(per_question) == 1:
        res.kappa_name = f"Fleiss' kappa ({per_question.pop()} labels per question)"
        res.kappa = fleiss_from_labels(given)
    else:
        res.kappa_name = "mean pairwise Cohen's kappa"
        defined = [k for _, _, k in res.pairwise if not math.isnan(k)]
        res.kappa = sum(defined) / len(defined) if defined else math.nan
    res.disagreements = [i for i, g in enumerate(given) if len(set(g)) > 1]
    res.raw_agreement = 1 - len(res.disagreements) / len(compared)
    return res


@dataclass
class SuggesterAgreement:
    source: str  # a suggestion_source, or "all"
    rows: int  # labelled rows that were shown a suggestion from it
    accepted: int  # ... whose saved label is the suggestion
    kappa: float


def suggester_agreement(paths: list[Path]) -> list[SuggesterAgreement]:
    """The suggester against the people, per source (most rows first), then ``all`` when several; [] when none."""
    pairs: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        for rec in read_labels(path)[0]:
            if rec.label is not None and rec.suggested:
                pairs.setdefault(rec.suggestion_source or "(unknown)", []).append((_spelled(rec.suggested), rec.label))
    groups = sorted(pairs.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    if len(groups) > 1:
        groups.append(("all", [p for _, ps in groups for p in ps]))
    return [SuggesterAgreement(source, len(ps), sum(a == b for a, b in ps), cohen_kappa([a for a, _ in ps], [b for _, b in ps]))
            for source, ps in groups]


def _spelled(label: str) -> str:
    return REFUSE if label.strip().upper() == REFUSE else ";".join(sorted({x.strip() for x in label.split(";") if x.strip()}))


def render_suggester(rows: list[SuggesterAgreement]) -> str:
    lines = ["suggester vs people (labelled rows that showed a suggestion):"]
    for r in rows:
        kappa = _fmt(r.kappa) + ("" if math.isnan(r.kappa) else f" ({strength(r.kappa)})")
        lines.append(f"  {r.source}: {r.rows} row(s), accepted {r.accepted} ({r.accepted / r.rows:.1%}), "
                     f"Cohen's kappa {kappa}")
    return "\n".join(lines)


def _kind(row: list[str | None]) -> str:
    row = [lab for lab in row if lab is not None]
    if REFUSE in row:
        return "refuse vs answer"
    sets = [set(lab.split(";")) for lab in row]
    return "partial overlap" if set.intersection(*sets) else "different article"


def _fmt(value: float) -> str:
    return "undefined (every label is the same)" if math.isnan(value) else f"{value:.3f}"


def _show(label: str, titles: dict[str, str]) -> str:
    if label == REFUSE or not titles:
        return label
    return "; ".join(f"{i} {titles.get(i, '(not in KB)')}" for i in label.split(";"))


def render(res: Comparison, titles: dict[str, str] | None = None, limit: int = 50) -> str:
    titles = titles or {}
    n = len(res.compared)
    lines = [f"{len(res.names)} annotators: " + ", ".join(f"{a} ({p})" for a, p in zip(res.names, res.files, strict=True))]
    lines.append(
        f"compared {n} question(s) labelled by "
        + ("two or more annotators" if res.overlap else "every annotator")
        + (f"; {res.incomplete} not labelled by {'two' if res.overlap else 'all'} (skipped, unlabelled or missing) left out" if res.incomplete else "")
    )
    lines.append(f"{res.kappa_name}: {_fmt(res.kappa)}" + ("" if math.isnan(res.kappa) else f" ({strength(res.kappa)})"))
    for a, b, k in res.pairwise:
        lines.append(f"  Cohen's kappa {a} vs {b}: {_fmt(k)}")
    agree = n - len(res.disagreements)
    lines.append(f"raw agreement: {res.raw_agreement:.3f} ({agree}/{n})")
    kinds = Counter(_kind(res.labels[i]) for i in res.disagreements)
    if res.disagreements:
        lines.append(f"disagreements ({len(res.disagreements)}: " + ", ".join(f"{c} {k}" for k, c in kinds.items()) + "):")
    width = max(len(x) for x in res.names)
    shown = res.disagreements if limit <= 0 else res.disagreements[:limit]
    for i in shown:
        qid = res.compared[i]
        lines.append(f"  {qid}  {next(recs[qid] for recs in res.records if qid in recs).question}")
        for name, lab in zip(res.names, res.labels[i], strict=True):
            if lab is None:  # an overlap: this annotator was not given the question
                continue
            lines.append(f"      {name.ljust(width)}  {_show(lab, titles)}")
    if len(shown) < len(res.disagreements):
        lines.append(f"  ... and {len(res.disagreements) - len(shown)} more (--limit 0 lists all, --merge writes them)")
    return "\n".join(lines)


def write_merge(res: Comparison, path: Path, titles: dict[str, str] | None = None) -> None:
    """One row per question, every annotator's label side by side; agreed labels pre-filled.

    Open it with ``grace annotate KB --from-gold MERGED.csv --out FINAL.csv`` to
    adjudicate: agreed rows arrive labelled, the rest unlabelled with each label shown.
    """
    titles = titles or {}
    compared = {q: i for i, q in enumerate(res.compared)}
    cols = [*GOLD_COLUMNS, STATUS, "agreement"]
    for name in res.names:
        cols += [f"label_{name}", f"notes_{name}"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for qid in res.order:
        first = next(recs[qid] for recs in res.records if qid in recs)
        row = {QUESTION_ID: qid, QUESTION: first.question, EXPECTED_ANSWER: first.expected_answer}
        i = compared.get(qid)
        if i is not None and i not in res.disagreements:
            lab = next(x for x in res.labels[i] if x is not None)
            row.update({"agreement": "agreed", STATUS: "labelled", MUST_REFUSE: format_bool(lab == REFUSE),
                        EXPECTED_CITATIONS: "" if lab == REFUSE else lab})
        else:
            row.update({"agreement": "disagree" if i is not None else "incomplete", STATUS: "unlabelled",
                        MUST_REFUSE: format_bool(False)})
        for name, recs in zip(res.names, res.records, strict=True):
            rec = recs.get(qid)
            lab = (rec.label or rec.status) if rec else "missing"
            row[f"label_{name}"] = _show(lab, titles) if rec and rec.label else lab
            row[f"notes_{name}"] = rec.notes if rec else ""
        w.writerow({k: spreadsheet_safe(v) for k, v in row.items()})  # read back by read_labels, which unescapes
    atomic_write_text(Path(path), buf.getvalue())
