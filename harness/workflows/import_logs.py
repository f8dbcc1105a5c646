"""The import workflow: ``grace import-logs`` (a production audit log into a run folder, scored like any run).

The deployed system already answered; nothing is asked again. Each log record becomes one row of
``responses.jsonl`` (a :class:`~harness.run_folder.run_records.ResponseRecord`, as ``grace run`` writes), each
distinct ``model`` of the log a model of the run, and the same question answered again by the same model a further
repeat (numbered in log order). The log's retrieved IDs are both what the model was shown (``retrieved_ids``: the
scorer judges unshown citations against them) and what the system retrieved for itself (``system_retrieved``: the
end-to-end figures); its structured citations go to ``citations``; who asked to ``user`` and ``user_groups``.

With gold, each record is matched to a gold question by ID, else by normalised text; a record that matches none is
listed (``unmatched.jsonl``, with its line) and not scored. Without gold, the questions are the logs' own
(``questions.csv``, ready to label) and the report holds only the figures that need no label.

A log may be larger than memory (a year of answers: gigabytes), so nothing is held per record: each line is read,
turned into its row and written at once (``responses.jsonl`` in log order, with each row's model, repeat, question
and size in a keys file beside it), then put in the order ``grace run`` writes by copying byte ranges, a bounded
slice of the order at a time; the malformed and unmatched lines are written as they come (the first few kept to
print), and what run.json and the scorer need is counted on the way (the scorer then reads the written rows
streaming, and tallies them in bounded memory, as for any run). Memory grows with the distinct questions and
models, not with the records.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.run_folder.audit_log import MAX_LINE_BYTES

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console

    from harness.run_folder.audit_log import LogProblem, UnmatchedRecord
    from harness.workflows.results import Run

__all__ = ["ImportLogsConfig", "ImportResult", "import_logs"]

KEPT_PROBLEMS = 100  # malformed and unmatched lines kept in ImportResult (to print); the files hold every one
LOGGED_ERROR = "logged_error"  # CallError.kind of a record whose log says the call failed


class ImportLogsConfig(BaseModel):
    """The options of ``grace import-logs``, under the same names."""

    model_config = ConfigDict(extra="forbid")

    logs: Path  # the audit log: JSON Lines, one record per answer
    kb: Path  # the KB folder the deployed system answered from
    out: Path  # the run folder to write
    gold: Path | None = None  # a gold CSV: score the answers; without one, only what needs no label
    fields: tuple[str, ...] = ()  # FIELD=PATH pairs (--map): where each field is in a log line (JMESPath)
    mapping: Path | None = None  # a TOML file of FIELD = "PATH" lines (--mapping); --map wins over it
    default_model: str = "production"  # the model of a record that names none
    max_line_bytes: int = Field(MAX_LINE_BYTES, gt=0)  # a longer log line is set aside unread (malformed.jsonl)
    force: bool = False  # replace a run already in ``out`` (its responses kept as responses.jsonl.bak)
    # how the system's citations are read and scored (run.json models[].citations): several per answer, its own
    # references (paths, URLs, titles, quotes, index IDs) mapped onto KB articles, unless told otherwise
    citations: Literal["single", "multi"] = "multi"
    reads: Literal["ids", "references"] = "references"
    citation_map: Path | None = None  # a their_id,article_id CSV: the system's own IDs -> KB articles
    rewrite: tuple[str, ...] = ()  # PREFIX=REPLACEMENT path/URL rewrite rules, applied before resolving
    seed: int = 0
    bootstrap: int = 2000


@dataclass
class ImportResult:
    """What an import did: every non-blank log line is imported, malformed or unmatched."""

    run: Run  # the folder, read back (``run.report`` is None when nothing could be imported)
    records: int
    imported: int
    malformed: list[LogProblem] = field(default_factory=list)  # the first KEPT_PROBLEMS (all in malformed.jsonl)
    unmatched: list[UnmatchedRecord] = field(default_factory=list)  # the first KEPT_PROBLEMS (unmatched.jsonl)
    n_malformed: int = 0  # malformed lines in all
    n_unmatched: int = 0  # unmatched records in all
    matched_by_id: int = 0
    matched_by_text: int = 0
    models: dict[str, int] = field(default_factory=dict)  # model -> rows
    questions: int = 0
    labelled: bool = False


def import_logs(logs: str | Path, kb: str | Path, out: str | Path, *, gold: str | Path | None = None,
                fields: Sequence[str] = (), mapping: str | Path | None = None, default_model: str = "production",
                max_line_bytes: int = MAX_LINE_BYTES, force: bool = False,
                citations: Literal["single", "multi"] = "multi", reads: Literal["ids", "references"] = "references",
                citation_map: str | Path | None = None, rewrite: Sequence[str] = (), seed: int = 0,
                bootstrap: int = 2000, console: Console | None = None) -> ImportResult:
    """Read a production audit log into the run folder ``out``, score it and write its reports.

    The keywords are :class:`ImportLogsConfig`'s (``fields``, ``mapping``, ``default_model``, ``force``, ``seed``,
    ``bootstrap``, and how citations are read and scored: ``citations``, ``reads``, ``citation_map``, ``rewrite``). Malformed lines are kept aside in ``malformed.jsonl`` (line, problem, text), records no gold
    question matches in ``unmatched.jsonl``; the rest is imported. A folder that already holds a run is refused
    unless ``force``. Raises ``GraceError`` for bad input, and when no line could be imported (the two files are
    written first, to say why).
    """
    from harness.core.outputs import check_output_folder, keep_backup
    from harness.run_folder.audit_log import field_map
    from harness.run_folder.file_names import LEADERBOARD_MD, REPORT, REPORT_HTML, SCORES
    from harness.run_folder.run_dir import RunDir
    from harness.runner.citation_settings import check_against_kb, settings
    from kb_builder.gold import load_gold
    from kb_builder.loader import load_kb

    c = ImportLogsConfig(logs=logs, kb=kb, out=out, gold=gold, fields=tuple(fields), mapping=mapping,
                         default_model=default_model, max_line_bytes=max_line_bytes, force=force, citations=citations,
                         reads=reads, citation_map=citation_map, rewrite=tuple(rewrite), seed=seed, bootstrap=bootstrap)
    paths = field_map(c.fields, c.mapping)
    folder = RunDir(c.out)
    check_output_folder(c.out, {"log file": c.logs, "KB folder": c.kb, "gold CSV": c.gold, "mapping file": c.mapping},
                        [p.name for p in _written(folder)] + [SCORES, REPORT, LEADERBOARD_MD, REPORT_HTML])
    if not c.logs.is_file():
        raise GraceError(f"{c.logs}: log file not found" if not c.logs.exists() else
                         f"{c.logs}: is a folder; give the log file (JSON Lines, one record per line)")
    held = [p for p in (folder.responses, folder.run_info) if p.exists()]
    if held and not c.force:
        raise GraceError(f"--out {c.out} already holds a run ({held[0].name}); give a new folder, or add --force to "
                         f"replace it (its responses are kept as {folder.responses.name}.bak)")
    kb_obj = load_kb(c.kb, write_missing=False)
    reading = check_against_kb(settings(c.citations, c.reads, c.citation_map, c.rewrite), kb_obj, "--citation-map")
    gold_set = load_gold(c.gold) if c.gold is not None else None
    with folder.lock():
        if held:
            keep_backup(folder.responses)
            for path in _written(folder):
                path.unlink(missing_ok=True)
            folder.discard_derived()  # the old run's scores, reports, spot-check and exports describe the old answers
        result, questions, seen = _read(c, paths, folder, gold_set)
        if not result.imported:
            raise GraceError(f"{c.logs}: nothing imported: {result.n_malformed} malformed line(s) "
                             f"({folder.malformed}), {result.n_unmatched} unmatched record(s)"
                             + (f" ({folder.unmatched})" if gold_set is not None else "")
                             + "; check the field mapping (--map FIELD=PATH)")
        _write_run_info(c, folder, paths, kb_obj, gold_set, questions, result, seen, reading)
        result.run = _score(c, folder, kb_obj, gold_set, questions, console)
    return result


def _written(folder: Any) -> list[Path]:
    """The files an import writes besides the scores and reports: removed first when ``--force`` replaces a run."""
    return [folder.responses, folder.run_info, folder.malformed, folder.unmatched, folder.questions]


@dataclass
class _Seen:
    """What run.json says of the rows, counted while they are written (the rows are not read back)."""

    k: int = 0  # the most retrieved IDs of a row
    repeats: int = 0  # the most repeats of a question by a model
    answered: Counter[str] = field(default_factory=Counter)  # model -> rows with an answer
    errors: Counter[str] = field(default_factory=Counter)  # model -> error rows
    looped: set[str] = field(default_factory=set)  # models whose records said their tool calls (the funnel's)


def _read(c: ImportLogsConfig, mapping: dict[str, str], folder: Any,
          gold_set: Any) -> tuple[ImportResult, list[Any], _Seen]:
    """Read the log a line at a time into response rows; write them, ``malformed.jsonl`` and
    ``unmatched.jsonl``/``questions.csv``. Each file is written to a temp file and renamed when whole."""
    from harness.core.files import atomic_write_text, csv_text, temp_path_for
    from harness.run_folder.audit_log import (
        GoldMatcher,
        UnmatchedRecord,
        jsonl_line,
        question_id_for,
        read_audit_log,
    )
    from harness.run_folder.responses import response_line
    from kb_builder.gold import GOLD_COLUMNS, GoldQuestion

    result = ImportResult(run=None, records=0, imported=0, labelled=gold_set is not None)  # type: ignore[arg-type]
    seen = _Seen()
    matcher = GoldMatcher(gold_set.questions) if gold_set is not None else None
    order = {q.question_id: i for i, q in enumerate(gold_set.questions)} if gold_set is not None else {}
    asked: dict[str, GoldQuestion] = {}  # without gold: the logs' questions, in order of first appearance
    repeats: Counter[tuple[int, int]] = Counter()
    model_index: dict[str, int] = {}
    answered_q: set[int] = set()
    staging, malformed, unmatched = (temp_path_for(p) for p in (folder.responses, folder.malformed, folder.unmatched))
    # per row, in log order: its model, repeat and question (as positions) and its line's size in the staging file
    keys = _RowKeys(staging.with_name(staging.name + ".keys"))
    try:
        with staging.open("wb") as rows_fh, malformed.open("w", encoding="utf-8") as bad_fh, \
                unmatched.open("w", encoding="utf-8") as unmatched_fh, keys:
            for line in read_audit_log(c.logs, mapping, max_line_bytes=c.max_line_bytes):
                result.records += 1
                if line.record is None:
                    assert line.problem is not None  # a line is a record or a problem
                    bad_fh.write(jsonl_line(line.problem))
                    result.n_malformed += 1
                    if len(result.malformed) < KEPT_PROBLEMS:
                        result.malformed.append(line.problem)
                    continue
                rec = line.record
                if matcher is not None:
                    qid, how = matcher.match(rec)
                    if qid is None:
                        u = UnmatchedRecord(line=line.line, question_id=rec.question_id, question=rec.question,
                                            reason=how, record=line.data or {})
                        unmatched_fh.write(jsonl_line(u))
                        result.n_unmatched += 1
                        if len(result.unmatched) < KEPT_PROBLEMS:
                            result.unmatched.append(u)
                        continue
                    if how == "id":
                        result.matched_by_id += 1
                    else:
                        result.matched_by_text += 1
                    qi = order[qid]
                else:
                    qid = question_id_for(rec)
                    q = asked.get(qid)
                    if q is None:
                        q = asked[qid] = GoldQuestion(question_id=qid, question=rec.question, line=line.line)
                        order[qid] = len(order)
                    qi = order[qid]
                model = rec.model or c.default_model
                mi = model_index.setdefault(model, len(model_index))
                repeat = repeats[mi, qi]
                repeats[mi, qi] += 1
                row = _response(rec, qid, model, repeat, line.line)
                if row.tool_loop is not None:
                    seen.looped.add(model)
                data = response_line(row)
                rows_fh.write(data)
                keys.add(mi, repeat, qi, len(data))
                answered_q.add(qi)
                seen.k = max(seen.k, len(row.retrieved_ids))
                seen.repeats = max(seen.repeats, repeat + 1)
                (seen.errors if row.error is not None else seen.answered)[model] += 1
        questions = list(gold_set.questions) if gold_set is not None else list(asked.values())
        result.imported = keys.n
        models = sorted(model_index)
        result.models = {m: seen.answered[m] + seen.errors[m] for m in models}
        result.questions = len(answered_q)
        os.replace(malformed, folder.malformed)
        if gold_set is not None:
            os.replace(unmatched, folder.unmatched)
        else:
            atomic_write_text(folder.questions, csv_text(GOLD_COLUMNS, (q.gold_cells() for q in questions)))
        if result.imported:
            rank = {mi: models.index(m) for m, mi in model_index.items()}
            _write_in_order(staging, folder.responses, keys, [rank[i] for i in range(len(rank))], repeats,
                            len(order))
    finally:
        for tmp in (staging, malformed, unmatched, keys.path):
            tmp.unlink(missing_ok=True)
    return result, questions, seen


class _RowKeys:
    """Each imported row's model, repeat, question and size, appended to a file as the rows are written (20 bytes
    a row on disk, none held): what puts ``responses.jsonl`` in order afterwards."""

    BLOCK = 1 << 13  # rows buffered before they are appended (a tuple each: under 1 MB)
    READ = 1 << 16  # rows read back at once (1.3 MB)

    def __init__(self, path: Path) -> None:
        import numpy as np

        self.dtype = np.dtype([("model", "i4"), ("repeat", "i4"), ("q", "i4"), ("size", "i8")])
        self.path = path
        self.n = 0
        self._rows: list[tuple[int, int, int, int]] = []
        self._fh: Any = None

    def __enter__(self) -> _RowKeys:
        self._fh = self.path.open("wb")
        return self

    def __exit__(self, *exc: object) -> None:
        self._flush()
        self._fh.close()

    def add(self, model: int, repeat: int, q: int, size: int) -> None:
        self._rows.append((model, repeat, q, size))
        if len(self._rows) >= self.BLOCK:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            import numpy as np

            np.array(self._rows, dtype=self.dtype).tofile(self._fh)
            self.n += len(self._rows)
            self._rows.clear()

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(byte offset of the chunk's first row in the staging file, its keys), in log order."""
        import numpy as np

        at = 0
        with self.path.open("rb") as fh:
            while (chunk := np.fromfile(fh, dtype=self.dtype, count=self.READ)).size:
                yield at, chunk
                at += int(chunk["size"].sum())


SLICE_ROWS = 1 << 18  # rows of the order put in place at once (their keys: about 8 MB)


def _write_in_order(staging: Path, final: Path, keys: _RowKeys, model_rank: list[int], repeats: Counter[tuple[int, int]],
                    n_questions: int) -> None:
    """``responses.jsonl`` in the order grace run's compaction keeps (models by name, then repeat, then question
    order), from the rows written in log order, copied by byte offset; no row, nor a key of every row, is held.

    The order's groups (a model's repeat: at most one row per question) are known from the counts per (model,
    question) alone, so the order is cut into slices of whole groups of about ``SLICE_ROWS`` rows; each slice's
    rows are picked out of the keys file, sorted and copied (the staging file is fresh in the page cache)."""
    import numpy as np

    from harness.core.files import temp_path_for

    # rows per group: for model rank k and repeat r, the questions that model answered more than r times
    pairs = np.array([(model_rank[mi], n) for (mi, _), n in repeats.items()], dtype=np.int64).reshape(-1, 2)
    groups = []
    for k in range(len(model_rank)):
        answered = np.bincount(pairs[pairs[:, 0] == k, 1])  # questions by how often they were answered
        groups.append(np.cumsum(answered[::-1])[::-1][1:])  # [r]: answered more than r times
    first = np.r_[0, np.cumsum([g.size for g in groups])]  # each model rank's first group
    before = np.r_[0, np.cumsum(np.concatenate(groups))][:-1]  # rows before each group in the order
    slice_of = before // SLICE_ROWS
    rank = np.asarray(model_rank, dtype=np.int64)
    tmp = temp_path_for(final)
    try:
        with staging.open("rb") as src, tmp.open("wb") as out:
            for part in np.unique(slice_of).tolist():
                picked = []
                for at, chunk in keys.chunks():
                    group = first[rank[chunk["model"]]] + chunk["repeat"]
                    mine = slice_of[group] == part
                    offsets = at + np.r_[0, np.cumsum(chunk["size"])[:-1]]
                    picked.append((group[mine] * n_questions + chunk["q"][mine], offsets[mine], chunk["size"][mine]))
                key, offset, size = (np.concatenate(x) for x in zip(*picked, strict=True))
                order = np.argsort(key)
                _copy_rows(src, out, offset[order], size[order])
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _copy_rows(src: Any, out: Any, offsets: np.ndarray, sizes: np.ndarray) -> None:
    """The byte ranges of ``src``, in the order given, to ``out``, a few MB at a time."""
    chunk: list[bytes] = []
    held = 0
    for offset, n in zip(offsets.tolist(), sizes.tolist(), strict=True):
        src.seek(offset)
        chunk.append(src.read(n))
        held += n
        if held >= 1 << 22:
            out.write(b"".join(chunk))
            chunk.clear()
            held = 0
    out.write(b"".join(chunk))


def _response(rec: Any, qid: str, model: str, repeat: int, line: int) -> Any:
    from harness.run_folder.logged_loops import logged_loop
    from harness.run_folder.run_records import CallError, ResponseRecord

    error = CallError(kind=LOGGED_ERROR, message=rec.error, attempts=1) if rec.error else None
    return ResponseRecord(
        question_id=qid, model=model, repeat=repeat, response=None if error else rec.answer,
        retrieved_ids=rec.retrieved_ids or [], system_retrieved=rec.retrieved_ids,
        citations=None if error else rec.citations,  # a failed call cited nothing
        user=rec.user, user_groups=rec.user_groups, prompt_hash=rec.prompt_hash,
        input_tokens=rec.input_tokens, output_tokens=rec.output_tokens, cost_usd=rec.cost_usd,
        latency_ms=rec.latency_ms, error=error, created_at=rec.timestamp,
        question=rec.question, log_line=line,  # extra columns: the question as the user wrote it, and where
        tool_loop=logged_loop(rec.tool_calls, rec.retrieved_ids) if rec.tool_calls is not None else None,
        # the guidance's audit fields grace has no column of: kept on the row when the log has them
        **{k: v for k, v in (("context_tokens", rec.context_tokens), ("feedback", rec.feedback)) if v is not None},
    )


def _write_run_info(c: ImportLogsConfig, folder: Any, mapping: dict[str, str], kb: Any, gold_set: Any,
                    questions: list[Any], result: ImportResult, seen: _Seen, citations: Any) -> None:
    from harness.core.hashing import file_hash, json_hash
    from harness.core.version import __version__
    from harness.run_folder.run_records import ModelEntry, RowCounts, RunConfig, RunGold, RunImport, RunInfo, RunKb

    at = now()
    info = RunInfo(
        grace_version=__version__, started_at=at, finished_at=at, status="finished",
        kb=RunKb(path=str(kb.path), kb_hash=kb.kb_hash, articles=len(kb.articles), embedder=None),
        gold=RunGold(path=str(gold_set.path if gold_set is not None else folder.questions),
                     hash=gold_set.hash if gold_set is not None else _questions_hash(questions, json_hash),
                     questions=len(questions), must_refuse=sum(q.must_refuse for q in questions)),
        templates={},  # the deployed system's prompt: only its hash per row (prompt_hash), when the log has it
        config=RunConfig(k=seen.k, repeats=seen.repeats, concurrency=0, cache=False,
                         read_cache=False, max_attempts=0, seed=c.seed, output_mode="imported"),
        models=[ModelEntry(name=m, provider="logs", model=m, citations=citations, tool_loop=m in seen.looped or None)
                for m in result.models],
        imported=RunImport(path=str(c.logs), hash=file_hash(c.logs), records=result.records,
                           imported=result.imported, malformed=result.n_malformed,
                           unmatched=result.n_unmatched, matched_by_id=result.matched_by_id,
                           matched_by_text=result.matched_by_text, fields=mapping, default_model=c.default_model),
    )
    # what describe_rows would say, counted while writing: every row is the latest of its call (repeats are numbered),
    # answers the question as asked, and carries no generation parameters (one variant)
    info.rows = {m: RowCounts(rows=seen.answered[m] + seen.errors[m], answered=seen.answered[m], errors=seen.errors[m],
                              params_variants=1) for m in result.models}
    folder.write_run_info(info)


def _questions_hash(questions: list[Any], json_hash: Callable[..., str]) -> str:
    """The unlabelled question set's hash, as the scorer takes one of questions passed in memory: two imports of
    logs that asked the same questions compare as runs on one question set."""
    return json_hash([[q.question_id, q.question] for q in questions], 16)


def _score(c: ImportLogsConfig, folder: Any, kb: Any, gold_set: Any, questions: list[Any], console: Any) -> Run:
    """Score the rows as ``grace score`` would and write the reports (leaderboard.md, report.html)."""
    from harness.core.hashing import json_hash
    from harness.reports import write_reports
    from harness.workflows.score import score
    from kb_builder.gold import GoldSet

    if gold_set is None:  # the logs' own questions, with no label: the scorer leaves out what needs one
        gold_set = GoldSet(folder.questions, _questions_hash(questions, json_hash), tuple(questions))
    run = score(folder.responses, gold_set, kb, folder.path, seed=c.seed, bootstrap=c.bootstrap)
    write_reports(folder.path, kb=kb, console=console, gold=gold_set)
    return run
