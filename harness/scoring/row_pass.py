"""The one pass over the responses: read, extract, judge, write a scores line, keep a few integers.

This is the hot path (a million responses in well under a minute). Each row
becomes one ``scores.jsonl`` line and a record of ~80 bytes in its columns file
(:mod:`harness.scoring.row_columns`), written as it goes; the whole-run metrics are
tallied from those files afterwards (:mod:`harness.scoring.tallies`), so memory
does not grow with the rows. A large file is split
into byte ranges scored by worker processes (forked when this process runs no
other thread, as under ``grace score``; spawned otherwise, so calling this from
a threaded program is safe) and merged in file order, so the
output is identical whatever the number of workers.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from harness.run_folder.responses import ResponseRow, check_file, read_responses, split_ranges
from harness.run_folder.scores import ScoreLines
from harness.scoring.answer_language import AnswerLanguage
from harness.scoring.citation_reading import ALL_OF, ANY_OF, CitationReader, citation_figures
from harness.scoring.extraction import RULES, Extraction, extract_both, given_citations
from harness.scoring.markers import PROBLEMS
from harness.scoring.outcomes import OUTCOME_CODE, decide_outcome, is_cut_off
from harness.scoring.refusal_languages import LANGUAGES as PARAPHRASED
from harness.scoring.row_columns import WARNING_BITS, ColumnWriter, RowColumns, columns_file
from kb_builder.gold import GoldQuestion
from kb_builder.references import HOW, WARNINGS

RULE_CODE = {rule: i for i, rule in enumerate(RULES)}
# a citation's way of resolving, as a column index (the last: unmapped); a marker problem, as a bit of a mask
HOW_CODE = {how: i for i, how in enumerate(HOW)}
UNMAPPED_HOW = len(HOW)
PROBLEM_BIT = {code: 1 << i for i, code in enumerate(PROBLEMS)}
WARNING_CODE = {name: i for i, name in enumerate(WARNINGS)}  # a reference's named problem, as a column index
PARALLEL_MIN_BYTES = 32 << 20  # below this, starting workers costs more than it saves
_FLUSH_EVERY = 20_000
_NOTHING = Extraction([], False, "none")


@contextmanager
def _collector_off() -> Iterator[None]:
    """No cyclic garbage is made in the row pass, and with a collection every 700 allocations the collector's
    passes over the objects it keeps (the lines and rows of a block) cost ~6% of it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def score_part(
    path: Path, start: int, end: int | None, questions: list[GoldQuestion], kb_ids: frozenset[str],
    label_ids: list[str], out_path: Path, question_langs: list[str] | None = None,
    audiences: dict[str, frozenset[str]] | None = None, readers: dict[str, CitationReader] | None = None,
) -> list[str]:
    """Score the lines in bytes ``[start, end)``; write their scores lines to ``out_path`` and their columns beside
    it (:func:`~harness.scoring.row_columns.columns_file`); return the models in the order the lines name them.

    ``question_langs`` (each question's language) turns on the answer-language check; None leaves it off.
    ``audiences`` (the KB's restricted articles: ID -> the groups that may see it) turns on the permission check
    of the rows whose asker's groups are known (the row's user_groups, else the gold question's groups).
    ``readers``: the models whose citations are read as references or scored several per answer, by name, each
    with its reader; every other model is read exactly as a GRACE prompt (and its lines are what they were)."""
    code = {a: i for i, a in enumerate(label_ids)}
    gold_index = {g.question_id: i for i, g in enumerate(questions)}
    # per question: must_refuse, its articles, as a set, and whether every one is needed (citations_needed = all)
    qinfo = [(g.must_refuse, g.expected_citations, frozenset(g.expected_citations),
              g.citations_needed == ALL_OF and len(g.expected_citations) > 1) for g in questions]
    audiences = audiences or None
    qgroups = [g.groups for g in questions]
    refuse_code, none_code = len(label_ids), len(label_ids) + 1
    language_of = AnswerLanguage().check if question_langs else None
    readers = readers or None
    c = ColumnWriter(columns_file(out_path), language_of, citations=readers is not None)
    add, add_answer, add_language = c.rows.append, c.answers.append, c.languages.append
    add_figures = c.citation_rows.append if c.citation_rows is not None else None
    langs = question_langs or [""] * len(questions)
    models: list[str] = []
    model_index: dict[str, int] = {}
    writer = ScoreLines()
    line, decide, nan = writer.line, decide_outcome, float("nan")
    # each question's language as the tuple of refusal languages extract_both takes (empty for English or another
    # language without paraphrases of its own: none to look for), one tuple per language, not one per row
    as_tuple = {code: (code,) if code in PARAPHRASED else () for code in set(question_langs or ())}
    refusal_langs = [as_tuple[code] for code in question_langs] if question_langs else [()] * len(questions)
    buf: list[str] = []
    with _collector_off(), open(out_path, "w", encoding="utf-8") as fh:
        for row in read_responses(path, gold_index, start, end):
            qi = gold_index[row.question_id]
            must, expected, expected_set, needed = qinfo[qi]
            mi = model_index.get(row.model)
            if mi is None:
                mi = model_index[row.model] = len(models)
                models.append(row.model)
            retrieved = row.retrieved_ids  # the articles shown to the model; None or [] when not known
            own = row.system_retrieved is not None
            if own:  # a system that retrieved for itself: its citations are judged against what it retrieved
                retrieved = row.system_retrieved
            groups = None  # the asker's groups: known only where the KB restricts articles (else nothing to check)
            if audiences:
                groups = row.user_groups if row.user_groups is not None else qgroups[qi]
            reader = readers.get(row.model) if readers is not None else None
            if reader is not None:  # a model read as references or scored several citations per answer
                read = _read_row(reader, row, retrieved, must, expected_set, kb_ids, refusal_langs[qi], audiences,
                                 groups, writer, needed)
                ext, strict, outcome, strict_outcome = read.ext, read.strict, read.outcome, read.strict_outcome
                retrieved, tail = read.retrieved, read.citation_fields
            elif row.error:
                ext = strict = _NOTHING
                outcome = strict_outcome = "error"
                tail = ""
            else:
                tail = ""
                # refusal paraphrases in English and the question's language only (see refusal_languages)
                if row.citations is None:
                    ext, strict = extract_both(row.text, kb_ids, refusal_langs[qi])
                else:  # citations given as data: taken as they are, the refusal still read from the text
                    ext, strict = given_citations(row.text, row.citations, refusal_langs[qi])
                outcome = decide(ext.cited_ids, ext.refused, must, expected_set, kb_ids, shown=retrieved,
                                 audiences=audiences, groups=groups, all_needed=needed)
                strict_outcome = decide(strict.cited_ids, strict.refused, must, expected_set, kb_ids, shown=retrieved,
                                        audiences=audiences, groups=groups, all_needed=needed)
            cited = ext.cited_ids
            # labels for the per-article metrics (see outcomes.true_label / predicted_label)
            if must:
                true = refuse_code
            elif expected:
                true = code[next((x for x in cited if x in expected_set), expected[0])]
            else:  # a question with no label (imported logs without gold): no true article
                true = none_code
            if ext.refused:
                pred = refuse_code
            elif len(cited) == 1 and cited[0] in kb_ids and (not retrieved or cited[0] in retrieved):
                pred = code[cited[0]]
            else:
                pred = none_code  # also an unshown citation: it names no article the model read
            cut = row.finish_reason is not None and is_cut_off(row.finish_reason)
            er = None  # a gold article among those retrieved (a loop: any() over a generator costs a frame a row)
            if retrieved and not must and expected:
                er = False
                for e in expected:
                    if e in retrieved:
                        er = True
                        break
            buf.append(line(row.question_id, row.model, row.repeat, cited, ext.refused, outcome, ext.rule,
                            strict.cited_ids, strict.refused, strict_outcome, must, expected, retrieved, er,
                            row.cost_usd, row.latency_ms, row.input_tokens, row.output_tokens, cut, tail))
            if add_figures is not None:
                add_figures(_GRACE_FIGURES if reader is None else read.figures)
            add((mi, qi, row.repeat, OUTCOME_CODE[outcome], OUTCOME_CODE[strict_outcome], RULE_CODE[ext.rule], true,
                 pred, ext.refused, -1 if er is None else er, len(retrieved) if retrieved else -1,
                 nan if row.cost_usd is None else row.cost_usd,
                 row.service_ms if row.service_ms is not None else nan if row.latency_ms is None else row.latency_ms,
                 nan if row.queued_ms is None else row.queued_ms,
                 -1 if row.input_tokens is None else row.input_tokens,
                 -1 if row.output_tokens is None else row.output_tokens,
                 (2 if not cited and not ext.refused else 1) if cut else 0,
                 -1 if row.max_tokens is None else row.max_tokens, groups is not None, own))
            add_answer("" if row.error else row.text)
            add_language(langs[qi])
            if len(buf) >= _FLUSH_EVERY:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
                c.flush()
        if buf:
            fh.write("\n".join(buf) + "\n")
        c.close()
    return models


_NAN = float("nan")
_GRACE_FIGURES = (_NAN,) * 3 + (-1, _NAN, _NAN) + (0,) * (5 + len(HOW) + 1) + (_NAN, _NAN, 0)


class RowReading(NamedTuple):
    """One row of a model with CitationSettings, read and judged (a tuple: a million rows)."""

    ext: Extraction  # the lenient reading, as the scores line gives it
    strict: Extraction
    outcome: str
    strict_outcome: str
    retrieved: list[str] | None  # what it was judged against (a system's own retrieval, resolved)
    citation_fields: str  # its scores line's CITATION_FIELDS (ScoreLines.citation_fields)
    figures: tuple  # its row_columns.CITATIONS columns, in order


def _read_row(reader: CitationReader, row: ResponseRow, retrieved: list[str] | None, must: bool,
              expected: frozenset[str], kb_ids: frozenset[str], langs: tuple[str, ...],
              audiences: dict[str, frozenset[str]] | None, groups: list[str] | frozenset[str] | None,
              lines: ScoreLines, all_needed: bool = False) -> RowReading:
    """One row of a model with CitationSettings: its readings, outcomes, what it was judged against (a system's
    own retrieval resolved the same way as its citations), its scores line's citation fields and figure columns.
    Such a model is read as references or scored several per answer: settings of single citations read as IDs are
    GRACE's own reading, and score_run gives no reader for them (its rows take GRACE's path, line for line)."""
    if reader.references and row.system_retrieved is not None:
        retrieved = reader.resolve_retrieved(row.system_retrieved)
    answerable = not must and bool(expected)
    if row.error:
        reading = None
        ext = strict = _NOTHING
        cited: list[str] = []
        outcome = strict_outcome = "error"
    else:
        reading = reader.read(row.text, row.citations, langs)
        cited = list(reading.strict_ids) if reader.references else reading.cited_ids()  # the same, read as such
        unmapped = reading.unmapped()
        strict_ids = list(reading.strict_ids)
        ext = Extraction(cited if reader.references else [c.reference for c in reading.citations],
                         reading.refused, reading.rule)
        strict = Extraction(strict_ids, reading.strict_refused, reading.rule)
        # judged by the articles cited and the citations that resolved to none (read as IDs: not KB articles)
        strict_judged = strict_ids if reader.references else [i for i in strict_ids if i in kb_ids]
        strict_unmapped = unmapped if reader.references else len(strict_ids) - len(strict_judged)
        rules = reader.rules
        outcome = decide_outcome(cited, reading.refused, must, expected, kb_ids, shown=retrieved,
                                 audiences=audiences, groups=groups, unmapped=unmapped, all_needed=all_needed,
                                 rules=rules)
        strict_outcome = decide_outcome(strict_judged, reading.strict_refused, must, expected, kb_ids,
                                        shown=retrieved, audiences=audiences, groups=groups,
                                        unmapped=strict_unmapped, all_needed=all_needed, rules=rules)
    f = citation_figures(reading, cited, expected, answerable, retrieved, audiences, groups,
                         ALL_OF if all_needed else ANY_OF, reader.page_of, reader.expected_pages(expected))
    how = [0] * (len(HOW) + 1)
    warned = 0  # row_columns' packed count per named problem
    checked = missing = n_unmapped = mask = 0
    if reading is not None:
        citations = reading.citations
        for cit in citations:
            if cit.warning is not None:
                at = WARNING_CODE.get(cit.warning)
                if at is not None and (warned >> (WARNING_BITS * at)) & 0xFF < 0xFF:
                    warned += 1 << (WARNING_BITS * at)
            if cit.how is None:
                how[UNMAPPED_HOW] += 1
                n_unmapped += 1
            else:
                how[HOW_CODE.get(cit.how, UNMAPPED_HOW)] += 1
            if cit.quote_found is not None:
                checked += 1
                missing += not cit.quote_found
        problems = reading.problems
        for code in problems:
            mask |= PROBLEM_BIT.get(code, 0)
    else:
        citations = problems = ()
    p, r, f1, hit, correct, coverage, page_p, page_r = f
    figures = (_NAN if p is None else p, _NAN if r is None else r, _NAN if f1 is None else f1,
               -1 if hit is None else hit, _NAN if correct is None else correct,
               _NAN if coverage is None else coverage, len(citations), n_unmapped, checked, missing, mask, *how,
               _NAN if page_p is None else page_p, _NAN if page_r is None else page_r, warned)
    tail = lines.citation_fields(citations, _round(p), _round(r), _round(f1), _round(correct), _round(coverage),
                                 problems)
    return RowReading(ext, strict, outcome, strict_outcome, retrieved, tail, figures)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def default_workers(path: Path) -> int:
    if path.stat().st_size < PARALLEL_MIN_BYTES:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def score_all(
    path: Path, questions: list[GoldQuestion], kb_ids: frozenset[str], label_ids: list[str], out_path: Path,
    workers: int | None = None, question_langs: list[str] | None = None,
    audiences: dict[str, frozenset[str]] | None = None, readers: dict[str, CitationReader] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> RowColumns:
    """Score the whole file into ``out_path``; returns its rows' columns (files in the same folder, which the
    caller removes: :meth:`RowColumns.remove`), their models in file order.

    ``readers`` go to each worker pickled (without their resolvers, which each builds again on first use).
    ``meanwhile`` starts the caller's own work on a thread (hashing the file) once the workers are under way:
    after they are forked, since forking a process with a thread running is unsafe."""
    path = check_file(path)
    workers = default_workers(path) if workers is None else max(1, workers)
    ranges = split_ranges(path, workers) if workers > 1 else [(0, None)]
    citations = bool(readers)
    if len(ranges) <= 1:
        if meanwhile is not None:
            meanwhile()
        try:
            models = score_part(path, 0, None, questions, kb_ids, label_ids, out_path, question_langs, audiences,
                                readers)
        except BaseException:
            columns_file(out_path).unlink(missing_ok=True)
            raise
        return RowColumns([columns_file(out_path)], [models], citations)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # the first share is written in place; the others are appended to it (a million lines: 500 MB not copied)
    parts = [out_path] + [out_path.with_name(f"{out_path.name}.part{i}") for i in range(1, len(ranges))]
    done = False
    try:
        # a fork starts at once with everything imported; a spawned worker imports numpy and grace again
        # (0.5 s), but forking a process with other threads running can deadlock the child
        alone = threading.active_count() == 1 and sys.platform == "linux"  # macOS: fork is unsafe there
        context = multiprocessing.get_context("fork" if alone else "spawn")
        with ProcessPoolExecutor(len(ranges), mp_context=context) as pool:
            futures = [pool.submit(score_part, path, a, b, questions, kb_ids, label_ids, part, question_langs,
                                   audiences, readers) for (a, b), part in zip(ranges, parts, strict=True)]
            if meanwhile is not None:
                meanwhile()
            results = [f.result() for f in futures]  # in file order, so the first bad line is reported
        with open(out_path, "r+b") as dst:  # not "ab": sendfile cannot write to a file opened for appending
            for part in parts[1:]:
                _append(part, dst)
        done = True
        return RowColumns([columns_file(part) for part in parts], results, citations)
    finally:
        for part in parts[1:]:
            part.unlink(missing_ok=True)
        if not done:
            for part in parts:
                columns_file(part).unlink(missing_ok=True)


def _append(src_path: Path, dst: BinaryIO) -> None:
    """Append a file inside the kernel where it can (no trip through Python's buffers), else by copying."""
    with open(src_path, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        dst.flush()
        start = dst.seek(0, os.SEEK_END)
        sent = 0
        try:
            while sent < size:
                n = os.sendfile(dst.fileno(), src.fileno(), sent, size - sent)
                if n == 0:
                    break
                sent += n
        except (AttributeError, OSError):  # no sendfile for files here (macOS, Windows): copy instead
            dst.truncate(start)
            sent = 0
        dst.seek(start + sent)
        src.seek(sent)
        shutil.copyfileobj(src, dst, 1 << 22)


class KeptLines:
    """The scores lines of the rows a report keeps, rewritten in step with the tally's pass over the rows (one
    line per row, in file order): superseded responses, and with machine labels the rows of the questions without a
    human label, are left out."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(path.name + ".dedup")
        self._src = path.open("rb")
        self._dst = self._tmp.open("wb")

    def take(self, keep: np.ndarray) -> None:
        """The next ``keep.size`` lines: each written when ``keep`` says so."""
        read, write = self._src.readline, self._dst.write
        for k in keep.tolist():
            line = read()
            if k:
                write(line)

    def close(self) -> None:
        self._src.close()
        self._dst.close()
        os.replace(self._tmp, self.path)

    def discard(self) -> None:
        self._src.close()
        self._dst.close()
        self._tmp.unlink(missing_ok=True)
