"""A scored run as one tidy table: a row per question x model x repeat, for pandas, Polars, DuckDB and the trackers.

Every export target reads the run through :func:`question_table`, so a column means the same thing in a parquet
file, a W&B table and an Inspect sample. The rows are the scored responses (``scores.jsonl``: one per question,
model and repeat, the last answer when a call was retried), in the scores file's order. The columns:

=====================  ================  ==========================================================================
column                 type              what it holds
=====================  ================  ==========================================================================
question_id            string            the gold question
question               string            its text, from the gold file (null when the gold file cannot be found)
category               string            its gold category; null when the gold file has no category column
model                  string            the model's display name in the run
repeat                 int32             which asking of the question, from 0 (``--repeats``)
outcome                string            what the answer came to, read leniently (correct, wrong_citation, ...)
strict_outcome         string            the same, read strictly (only the prompt's exact citation format)
correct                bool              outcome is a hit (correct or correct_refusal): the mean is the accuracy;
                                         null in a run with no labels (imported logs without gold: no accuracy)
cited_ids              list<string>      the article IDs cited, read leniently, in order of first appearance
gold_ids               list<string>      the gold question's expected article IDs (empty for a must-refuse one)
must_refuse            bool              the question must be refused; null in a run with no labels
citations_needed       string            the gold's citations_needed: any (one listed article answers) or all (every
                                         one is required); null when the gold file cannot be found
retrieved_ids          list<string>      the articles shown to the model, best first (what a system that retrieves
                                         for itself said it retrieved); null when the run does not say
gold_rank              int32             1-based rank of the first gold article among retrieved_ids; null when no
                                         gold article was retrieved or the question has none
response               string            the answer text; null when the call failed
error                  string            why the call failed (timeout, rate_limit, server, ...); null when answered
input_tokens           int64             prompt tokens; null when the provider did not say
output_tokens          int64             answer tokens; null when the provider did not say
cost_usd               float64           the call's cost in USD (a cache hit: what it would cost); null: no price
latency_ms             float64           the call's latency in milliseconds; null when unknown
cached                 bool              the answer came from grace's response cache
truncated              bool              the output limit (max_tokens) cut the answer off
cit_precision          float64           runs with a model read as references only (issue 39): the answer's
                                         citation precision; null for a GRACE model's rows, and where the scorer
                                         left it null (no citation, a must-refuse question)
cit_recall             float64           ... its citation recall
cit_f1                 float64           ... its citation F1
cit_correct            float64           ... the share of its citations that exist, are reachable and supported
coverage               float64           ... cited articles among the retrieved ones, over those
spot_segments          int32             spot-checked runs only: segments (claims, in claims mode) judged in the
                                         answer; null when the answer was not checked
spot_unsupported       int32             ... of which the judge found unsupported (the first judging, judge
                                         repeat 0); null when the answer was not checked
spot_hallucinated      bool              ... at least one unsupported segment (claim); null when not checked
=====================  ================  ==========================================================================

The five citation columns are present only when some model's citations were read as references (report.json
``models[].citations``), so a run of GRACE prompts gives the table it always gave. The three ``spot_`` columns are
present only when the run was spot-checked (``grace spotcheck run``); an answer
counts as checked when every one of its segments has a verdict from the judge named in ``spotcheck.json``.

The table is read with pyarrow's JSON reader (threads, no Python object per row): a million responses take a few
seconds, where a pydantic parse per row would take minutes. A file pyarrow cannot read by the types above (a
hand-written responses file with numeric question IDs, an error given as text) is read row by row instead, with the
same result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.core.errors import GraceError
from harness.run_folder.run_dir import RunDir

if TYPE_CHECKING:
    import pyarrow as pa

PIP = "pip install 'grace-eval[parquet]'"
SPOT_COLUMNS = ("spot_segments", "spot_unsupported", "spot_hallucinated")
CITATION_COLUMNS = ("cit_precision", "cit_recall", "cit_f1", "cit_correct", "coverage")  # scores.jsonl's own names
NOTES_KEY = b"grace.notes"  # the table's schema metadata: what could not be filled, in sentences (one per line)


def require_pyarrow() -> Any:
    """pyarrow, or a GraceError with the pip command: the table (and every export) needs it."""
    try:
        import pyarrow
    except ImportError:
        raise GraceError(f"exporting a run needs pyarrow, which is not installed; install it with: {PIP}") from None
    return pyarrow


def columns(spotchecked: bool = False, cited: bool = False) -> list[str]:
    """The table's column names, in order (``cited``: a run with a model read as references)."""
    names = ["question_id", "question", "category", "model", "repeat", "outcome", "strict_outcome", "correct",
             "cited_ids", "gold_ids", "must_refuse", "citations_needed", "retrieved_ids", "gold_rank", "response",
             "error", "input_tokens", "output_tokens", "cost_usd", "latency_ms", "cached", "truncated"]
    return names + (list(CITATION_COLUMNS) if cited else []) + (list(SPOT_COLUMNS) if spotchecked else [])


def question_table(run: RunDir | str | Path, *, gold: Any = None, report: Any = None) -> pa.Table:
    """The run's tidy table (columns in the module docstring). ``gold`` (a :class:`GoldSet` or a CSV path) gives
    the question texts and categories; by default the gold file report.json names is read, when it can be found.
    ``report`` is the run's report.json already read (a :class:`Report`), so a caller that has it does not read it
    again.

    Raises ``GraceError`` when the run is not scored (``grace score``) or pyarrow is missing."""
    pa = require_pyarrow()
    import pyarrow.compute as pc

    run = run if isinstance(run, RunDir) else RunDir(run)
    report = _scored_report(run, report)
    notes: list[str] = []
    cited = any(m.citations is not None for m in report.models.values())
    scores = _read_scores(run.scores, cited)
    n = scores.num_rows
    responses = _aligned_responses(responses_file(run, report), scores)
    texts, categories, needed = _gold_columns(gold, report, run, notes)
    qid = scores["question_id"]
    unlabelled = report.unlabelled is not None
    hits = pa.array(sorted(_hits()), pa.string())
    cols: dict[str, Any] = {
        "question_id": qid,
        "question": _lookup(qid, texts),
        "category": _lookup(qid, categories),
        "model": scores["model"],
        "repeat": scores["repeat"].cast(pa.int32()),
        "outcome": scores["outcome"],
        "strict_outcome": scores["strict_outcome"],
        "correct": pa.nulls(n, pa.bool_()) if unlabelled else pc.is_in(scores["outcome"], value_set=hits),
        "cited_ids": _ids(scores["cited_ids"]),
        "gold_ids": _ids(scores["expected_citations"]),
        "must_refuse": pa.nulls(n, pa.bool_()) if unlabelled else pc.fill_null(scores["must_refuse"], False),
        "citations_needed": _lookup(qid, needed),
        "retrieved_ids": scores["retrieved_ids"],
        "gold_rank": _gold_rank(qid, scores["retrieved_ids"], scores["expected_citations"]),
        "response": responses["response"],
        "error": responses["error"],
        "input_tokens": scores["input_tokens"],
        "output_tokens": scores["output_tokens"],
        "cost_usd": scores["cost_usd"],
        "latency_ms": scores["latency_ms"],
        "cached": responses["cached"],
        "truncated": pc.fill_null(scores["truncated"], False),
    }
    if cited:
        cols.update({name: scores[name] for name in CITATION_COLUMNS})
    spot = _spot_columns(run, scores, notes)
    if spot is not None:
        cols.update(spot)
    table = pa.table({name: _chunked(cols[name]) for name in columns(spot is not None, cited)})
    table = table.cast(schema(spot is not None, cited))
    if notes:
        table = table.replace_schema_metadata({NOTES_KEY: "\n".join(notes).encode()})
    return table


def schema(spotchecked: bool = False, cited: bool = False) -> pa.Schema:
    """The table's types (the module docstring's), column by column."""
    pa = require_pyarrow()
    ids = pa.list_(pa.string())
    types = {"question_id": pa.string(), "question": pa.string(), "category": pa.string(), "model": pa.string(),
             "repeat": pa.int32(), "outcome": pa.string(), "strict_outcome": pa.string(), "correct": pa.bool_(),
             "cited_ids": ids, "gold_ids": ids, "must_refuse": pa.bool_(), "citations_needed": pa.string(),
             "retrieved_ids": ids,
             "gold_rank": pa.int32(), "response": pa.string(), "error": pa.string(), "input_tokens": pa.int64(),
             "output_tokens": pa.int64(), "cost_usd": pa.float64(), "latency_ms": pa.float64(), "cached": pa.bool_(),
             "truncated": pa.bool_(), "spot_segments": pa.int32(), "spot_unsupported": pa.int32(),
             "spot_hallucinated": pa.bool_(), **dict.fromkeys(CITATION_COLUMNS, pa.float64())}
    return pa.schema([(name, types[name]) for name in columns(spotchecked, cited)])


def table_notes(table: pa.Table) -> list[str]:
    """What :func:`question_table` could not fill, and why (e.g. the gold file was not found)."""
    meta = table.schema.metadata or {}
    text = meta.get(NOTES_KEY, b"").decode()
    return [line for line in text.splitlines() if line]


# -- the run's files ------------------------------------------------------------------------------------------------
def _hits() -> frozenset[str]:
    from harness.scoring.outcomes import HITS

    return HITS


def _scored_report(run: RunDir, report: Any = None) -> Any:
    if not run.path.is_dir():
        raise GraceError(f"{run.path}: run folder not found")
    if not run.scores.exists() or not run.report.exists():
        raise GraceError(f"{run.path}: not scored yet (no scores.jsonl and report.json); score it first with "
                         f"'grace score {run.responses} --gold GOLD --kb KB', then export")
    if run.scores_behind():
        raise GraceError(f"{run.path}: responses.jsonl changed after it was scored, so scores.jsonl does not hold "
                         f"every answer; score it again ('grace score {run.responses} --gold GOLD --kb KB', or "
                         "re-run the same 'grace run'), then export")
    return report if report is not None else run.read_report()


def _found(recorded: str | None, run: RunDir) -> Path | None:
    """A path report.json recorded: as written (relative to where the command ran), or inside the run folder."""
    if not recorded:
        return None
    p = Path(recorded)
    for option in (p, run.path / p, run.path / p.name):
        if option.exists():
            return option
    return None


def responses_file(run: RunDir, report: Any) -> Path:
    """The responses file the run was scored from: the folder's own, else the one report.json names."""
    if run.responses.exists():
        return run.responses
    found = _found(report.responses.path, run)
    if found is None or found.is_dir():
        raise GraceError(f"{run.path}: the responses file it was scored from ({report.responses.path}) is not "
                         "there; put it back (as responses.jsonl in the run folder) to export the run")
    return found


def _gold_columns(gold: Any, report: Any, run: RunDir,
                  notes: list[str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Question ID -> text, -> category (only for a gold file with a category column), -> citations_needed."""
    from kb_builder.gold import GoldSet, read_gold, read_questions

    if isinstance(gold, GoldSet):
        questions = gold.questions
    else:
        path = Path(gold) if gold is not None else _found(report.gold.path, run)
        if path is None or path.is_dir():
            notes.append(f"gold file {report.gold.path} not found: the question and category columns are empty")
            return {}, {}, {}
        try:
            questions = read_gold(path)
        except GraceError:
            try:  # questions with no label (grace import-logs without gold writes them as questions.csv)
                return {q.question_id: q.question for q in read_questions(path)}, {}, {}
            except GraceError as exc:
                notes.append(f"gold file unreadable, the question and category columns are empty: {exc}")
                return {}, {}, {}
    texts = {g.question_id: g.question for g in questions}
    return (texts, {g.question_id: g.category for g in questions if g.category is not None},
            {g.question_id: g.citations_needed for g in questions})


def _lookup(keys: Any, mapping: dict[str, str]) -> Any:
    """``mapping[key]`` for each key, null where absent, without a Python call per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not mapping:
        return pa.nulls(len(keys), pa.string())
    index = pc.index_in(keys, value_set=pa.array(list(mapping), pa.string()))
    return pc.take(pa.array(list(mapping.values()), pa.string()), index)


def _chunked(column: Any) -> Any:
    import pyarrow as pa

    return column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])


def _ids(column: Any) -> Any:
    """A list column with null read as empty (older scores files may lack the field)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(column, pa.scalar([], pa.list_(pa.string())))


# -- scores.jsonl ------------------------------------------------------------------------------------------------------
def _scores_schema(cited: bool = False) -> pa.Schema:
    import pyarrow as pa

    ids = pa.list_(pa.string())
    extra = [(name, pa.float64()) for name in CITATION_COLUMNS] if cited else []
    return pa.schema([("question_id", pa.string()), ("model", pa.string()), ("repeat", pa.int64()),
                      ("cited_ids", ids), ("outcome", pa.string()), ("strict_outcome", pa.string()),
                      ("must_refuse", pa.bool_()), ("expected_citations", ids), ("retrieved_ids", ids),
                      ("cost_usd", pa.float64()), ("latency_ms", pa.float64()), ("input_tokens", pa.int64()),
                      ("output_tokens", pa.int64()), ("truncated", pa.bool_())] + extra)


def _read_scores(path: Path, cited: bool = False) -> pa.Table:
    """The scores file's columns the table needs (``cited``: and the citation figures): pyarrow's reader, else row
    by row (a file it cannot type)."""
    import pyarrow as pa

    schema = _scores_schema(cited)
    table = _fast_json(path, schema)
    if table is None:
        from harness.run_folder.scores import iter_scores

        rows = [row for _, row in iter_scores(path)]
        table = pa.Table.from_pylist([{k: row.get(k) for k in schema.names} for row in rows], schema=schema)
    if table.num_rows == 0:
        raise GraceError(f"{path}: no scored responses; score the run again ('grace score')")
    if table["outcome"].null_count or table["question_id"].null_count or table["model"].null_count:
        raise GraceError(f"{path}: a scores line has no question_id, model or outcome; run 'grace score' again")
    return table.set_column(2, "repeat", _fill_zero(table["repeat"]))


def _fill_zero(column: Any) -> Any:
    import pyarrow.compute as pc

    return pc.fill_null(column, 0)


def _fast_json(path: Path, schema: pa.Schema) -> pa.Table | None:
    """The file read by pyarrow as ``schema`` (other fields ignored); None when a line does not fit the types."""
    import pyarrow as pa
    import pyarrow.json as pj

    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        with path.open("rb") as fh:
            if fh.read(3) != b"\xef\xbb\xbf":  # a byte-order mark (Windows editors): the row reader handles it
                fh.seek(0)
                return pj.read_json(fh, read_options=pj.ReadOptions(block_size=16 << 20), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        pass
    return None


# -- responses.jsonl ---------------------------------------------------------------------------------------------------
def _responses_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([("question_id", pa.string()), ("model", pa.string()), ("repeat", pa.int64()),
                      ("response", pa.string()), ("error", pa.struct([("kind", pa.string())])),
                      ("cached", pa.bool_())])


def _read_responses(path: Path) -> pa.Table:
    """question_id, model, repeat, response (null on error), error (its kind) and cached, one row per line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = _fast_json(path, _responses_schema())
    if raw is not None and not _needs_cleaning(raw):
        failed = pc.is_valid(raw["error"])
        kind = pc.struct_field(raw["error"], [0])
        kind = pc.if_else(pc.and_(failed, pc.is_null(kind)), pa.scalar("error"), kind)
        return pa.table({"question_id": raw["question_id"], "model": raw["model"],
                         "repeat": _fill_zero(raw["repeat"]),
                         "response": pc.if_else(failed, pa.scalar(None, pa.string()), raw["response"]),
                         "error": kind, "cached": pc.fill_null(raw["cached"], False)})
    from harness.run_folder.responses import iter_response_lines

    rows = []
    for row in iter_response_lines(path, hint="; fix the line, then export again"):
        err = row.get("error")
        kind = None if err is None or err is False else (
            err.get("kind") if isinstance(err, dict) and isinstance(err.get("kind"), str) else
            err if isinstance(err, str) else "error")
        text = row.get("response")
        rows.append({"question_id": row["question_id"], "model": row["model"], "repeat": row["repeat"],
                     "response": text if kind is None and isinstance(text, str) else None, "error": kind,
                     "cached": row.get("cached") is True})
    schema = pa.schema([("question_id", pa.string()), ("model", pa.string()), ("repeat", pa.int64()),
                        ("response", pa.string()), ("error", pa.string()), ("cached", pa.bool_())])
    return pa.Table.from_pylist(rows, schema=schema)


def _needs_cleaning(raw: pa.Table) -> bool:
    """Keys the scorer reads differently from the file (an ID with spaces around it, a missing one): row reader."""
    import pyarrow.compute as pc

    qid = raw["question_id"]
    if qid.null_count or raw["model"].null_count:
        return True
    return not pc.all(pc.equal(pc.utf8_trim_whitespace(qid), qid)).as_py()


def _aligned_responses(path: Path, scores: pa.Table) -> pa.Table:
    """The response columns, one row per scores row in the same order: the latest line of each (model, question,
    repeat), as the scorer kept it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    resp = _read_responses(path)
    keys = ["model", "question_id", "repeat"]
    if resp.num_rows == scores.num_rows and all(resp[k].equals(scores[k]) for k in keys[:2]) and \
            pc.all(pc.equal(resp["repeat"], scores["repeat"])).as_py():
        return resp  # a compacted run folder: line i of one file is line i of the other
    resp = resp.append_column("_line", pa.array(range(resp.num_rows), pa.int64()))
    last = resp.group_by(keys, use_threads=False).aggregate([("_line", "max")])
    resp = resp.take(last["_line_max"])
    left = scores.select(keys).append_column("_row", pa.array(range(scores.num_rows), pa.int64()))
    joined = left.join(resp, keys=keys, join_type="left outer", use_threads=True).sort_by("_row")
    if joined.num_rows != scores.num_rows:  # pragma: no cover - the keys are unique on both sides
        raise GraceError(f"{path}: the responses do not match scores.jsonl; run 'grace score' again")
    missing = joined["_line"].null_count
    if missing:
        raise GraceError(f"{path}: {missing} scored response(s) are not in the responses file (it changed after "
                         "scoring); run 'grace score' again, then export")
    return joined


# -- derived columns ---------------------------------------------------------------------------------------------------
def _gold_rank(qid: Any, retrieved: Any, gold: Any) -> Any:
    """1-based rank of the first gold article among each row's retrieved IDs, vectorised: every (row, retrieved ID)
    pair is looked up among the run's (question, gold ID) pairs, and the first match per row kept."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(qid)
    rank = np.zeros(n, dtype=np.int32)
    retrieved = retrieved.combine_chunks() if isinstance(retrieved, pa.ChunkedArray) else retrieved
    gold = gold.combine_chunks() if isinstance(gold, pa.ChunkedArray) else gold
    qid = qid.combine_chunks() if isinstance(qid, pa.ChunkedArray) else qid
    pairs = pa.table({"q": pc.take(qid, pc.list_parent_indices(gold)), "id": pc.list_flatten(gold)})
    if n and pairs.num_rows and len(pc.list_flatten(retrieved)):
        pairs = pairs.group_by(["q", "id"]).aggregate([])
        sep = pa.scalar("\x1f")
        gold_keys = pc.binary_join_element_wise(pairs["q"], pairs["id"], sep)
        parent = pc.list_parent_indices(retrieved)
        flat = pc.list_flatten(retrieved)
        keys = pc.binary_join_element_wise(pc.take(qid, parent), flat, sep)
        hit = pc.is_in(keys, value_set=gold_keys).to_numpy(zero_copy_only=False)
        rows = parent.to_numpy()
        offsets = retrieved.offsets.to_numpy()
        position = np.arange(len(flat)) - (offsets[rows] - offsets[0]) + 1
        rows, position = rows[hit], position[hit]
        if rows.size:  # no row retrieved a gold article: every rank stays null
            first = np.r_[True, rows[1:] != rows[:-1]]  # parent indices ascend: the first hit of a row is its best
            rank[rows[first]] = position[first]
    return pa.array(rank, mask=rank == 0)


# -- spot-check --------------------------------------------------------------------------------------------------------
def _spot_columns(run: RunDir, scores: pa.Table, notes: list[str]) -> dict[str, Any] | None:
    """Per answer: segments judged, unsupported ones, hallucinated; None when the run was not spot-checked."""
    if not run.spotcheck.exists():
        return None
    import pyarrow as pa

    from harness.core.jsonl import iter_jsonl
    from harness.run_folder.spotcheck import read_spotcheck

    try:
        spot = read_spotcheck(run.spotcheck)
    except GraceError as exc:
        notes.append(f"spot-check not read, its columns are empty: {exc}")
        spot = None
    claims = spot is not None and spot.mode == "claims"
    path = run.path / str((spot.judgements.get("path") if spot else None) or "")
    verdicts: dict[tuple[str, str, int], dict[int, bool | None]] = {}
    if spot is not None and path.is_file():
        judge, template = spot.judge.name, spot.judge.template_hash
        index = "claim_index" if claims else "segment_index"
        for _, row in iter_jsonl(path, torn_tail_ok=True, hint="; run 'grace spotcheck run' again"):
            if row.get("judge_repeat", 0) != 0 or row.get("judge") != judge or row.get("template_hash") != template:
                continue
            key = (str(row.get("model")), str(row.get("question_id")), int(row.get("repeat") or 0))
            if claims:
                word = row.get("verdict")
                unsupported = None if word is None else word == "unsupported"
            else:
                supported = row.get("supported")
                unsupported = None if supported is None or row.get("error") else not supported
            verdicts.setdefault(key, {})[int(row.get(index) or 0)] = unsupported  # the latest judgement wins
    elif spot is not None:
        notes.append(f"{path}: spot-check judgements not found; the spot_ columns are empty")
    n = scores.num_rows
    segments, unsupported, hallucinated = [None] * n, [None] * n, [None] * n
    if verdicts:
        for i, key in enumerate(zip(scores["model"].to_pylist(), scores["question_id"].to_pylist(),
                                    scores["repeat"].to_pylist(), strict=True)):
            judged = verdicts.get(key)
            if judged is None or any(v is None for v in judged.values()):
                continue  # not checked, or not every segment has a verdict
            bad = sum(judged.values())
            segments[i], unsupported[i], hallucinated[i] = len(judged), bad, bad > 0
    return {"spot_segments": pa.array(segments, pa.int32()), "spot_unsupported": pa.array(unsupported, pa.int32()),
            "spot_hallucinated": pa.array(hallucinated, pa.bool_())}
