"""The responses file (``grace run`` output, or hand-written): its readers and its compaction.

One format, one model: a line is a :class:`~harness.run_folder.run_records.ResponseRecord`
(the runner writes that model), and :func:`iter_response_records` reads it back
as the same model. Two faster readers give parts of it: :func:`read_responses`
is the scorer's checked pass (plain tuples of the fields it scores), and
:func:`read_response_lines` gives whole rows as plain dicts for resuming and
reports. Both name the file and line of a bad row. Every line is checked as it is read and the first bad one stops the run with
its file:line and what to fix, because a silently skipped response would shift
every accuracy on the leaderboard. Rows are yielded as plain tuples: a million
pydantic objects would cost more than the whole scoring.
"""

from __future__ import annotations

import itertools
import json
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from harness.core.errors import GraceError, where
from harness.core.files import atomic_write_text
from harness.core.group_names import group_names
from harness.core.jsonl import iter_jsonl, iter_jsonl_spans, loads_line
from harness.run_folder.run_records import ResponseRecord

if TYPE_CHECKING:
    import numpy as np

REQUIRED = ("question_id", "model", "response")


class ResponseRow(NamedTuple):
    line: int
    question_id: str
    model: str
    repeat: int
    text: str
    error: bool  # the call failed after retries; scored as outcome "error"
    retrieved_ids: list[str] | None
    cost_usd: float | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None  # as the API gave it: "length" / "max_tokens" / "MAX_TOKENS" mean the limit cut it off
    max_tokens: int | None  # the output limit the call was made with (params.max_tokens), if recorded
    user_groups: list[str] | None = None  # the asker's groups (imported logs); None: not said ([] : in no group)
    # a system's citations as data, and the IDs it retrieved itself (python:, http:, imported logs); None: not said
    citations: list[str] | None = None
    system_retrieved: list[str] | None = None
    # the model's own time on the call, milliseconds (latency_ms less its wait in the server's queue); None: not told
    service_ms: float | None = None
    # time the call waited in a queue, milliseconds: in grace for its turn, and in the server's (latency_ms less
    # service_ms); None: not recorded (a row of an older grace, an imported log)
    queued_ms: float | None = None


# the largest token count and amount (USD, milliseconds) a row may hold: far beyond any real call, and small enough
# that nine million rows of them add up in the scorer's 64-bit sums (a count of 10**30 does not fit one column)
MAX_COUNT = 10**12
MAX_AMOUNT = 1e12
MAX_REPEAT = 2**31 - 1  # the scorer's repeat column is 32-bit


def _max_tokens(params: Any) -> int | None:
    if type(params) is not dict:
        return None
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        v = params.get(key)
        if type(v) is int and 0 <= v <= MAX_COUNT:
            return v
    return None


def _number(row: dict, key: str, path: Path, n: int) -> float | None:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise GraceError(f"{where(path, n)}: '{key}' must be a number or null, got {v!r}")
    if v != v or v in (float("inf"), float("-inf")):  # written by a pipeline that divided by zero: not known
        return None
    if not -MAX_AMOUNT <= v <= MAX_AMOUNT:
        raise GraceError(f"{where(path, n)}: '{key}' must be a number of at most {MAX_AMOUNT:g} or null, got {v!r}")
    return float(v)


def _count(row: dict, key: str, path: Path, n: int) -> int | None:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_COUNT:
        raise GraceError(f"{where(path, n)}: '{key}' must be a whole number from 0 to {MAX_COUNT:,} or null, "
                         f"got {v!r}")
    return int(v)


def _id_list(value: Any, key: str, path: Path, n: int) -> list[str] | None:
    """A row's list of article IDs (numbers read as text), or None when it has none."""
    if value is None:
        return None
    if type(value) is not list or any(isinstance(v, bool) or not isinstance(v, str | int) for v in value):
        raise GraceError(f"{where(path, n)}: '{key}' must be a list of article IDs or null, got {value!r}")
    return [v if type(v) is str else str(v) for v in value]


def _bad_field(row: dict, path: Path, n: int, gold_ids: Mapping[str, object]) -> GraceError:
    """The slow path: say exactly what is wrong with a row the fast path rejected."""
    for key in REQUIRED:
        if key not in row:
            return GraceError(
                f"{where(path, n)}: missing field '{key}'; each line needs question_id, model and response"
            )
    qid, model, resp = row["question_id"], row["model"], row["response"]
    if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
        return GraceError(f"{where(path, n)}: 'question_id' must be a non-empty string, got {qid!r}")
    if str(qid).strip() not in gold_ids:
        return GraceError(
            f"{where(path, n)}: unknown question_id {str(qid)!r}: it is not in the gold file; "
            "fix the ID or score against the gold set the run used"
        )
    if not isinstance(model, str) or not model.strip():
        return GraceError(f"{where(path, n)}: 'model' must be a non-empty string, got {model!r}")
    if not isinstance(resp, str):
        return GraceError(
            f"{where(path, n)}: 'response' must be the model's text (a string), got {type(resp).__name__}; "
            "null is allowed only on a row with an 'error'"
        )
    rep = row.get("repeat", 0)
    return GraceError(f"{where(path, n)}: 'repeat' must be a whole number >= 0, got {rep!r}")


def check_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise GraceError(f"{path}: responses file not found")
    if path.is_dir():
        raise GraceError(f"{path}: is a folder, expected a responses .jsonl file")
    return path


def split_ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges of the file, each starting at the beginning of a line."""
    size = path.stat().st_size
    bounds = [0]
    with path.open("rb") as fh:
        for i in range(1, parts):
            fh.seek(max(bounds[-1], size * i // parts))
            fh.readline()
            bounds.append(min(fh.tell(), size))
    bounds.append(size)
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _line_number_at(path: Path, offset: int) -> int:
    """1-based number of the line starting at byte ``offset``."""
    n, left = 1, offset
    with path.open("rb") as fh:
        while left > 0:
            block = fh.read(min(left, 1 << 24))
            if not block:
                break
            n += block.count(b"\n")
            left -= len(block)
    return n


def read_responses(
    path: str | Path, gold_ids: Mapping[str, object], start: int = 0, end: int | None = None
) -> Iterator[ResponseRow]:
    """Checked rows of the file, or of the lines in bytes ``[start, end)`` (a worker's share)."""
    path = check_file(path)
    first = _line_number_at(path, start) if start else 1
    with path.open("rb") as fh:
        fh.seek(start)
        if start == 0 and fh.read(3) != b"\xef\xbb\xbf":  # skip a UTF-8 byte-order mark (Windows editors)
            fh.seek(0)
        pos = fh.tell()
        for n, raw in enumerate(fh, first):
            if end is not None and pos >= end:
                break
            pos += len(raw)
            try:
                row = loads_line(raw)
            except json.JSONDecodeError as exc:
                if not raw.strip():
                    continue
                raise GraceError(
                    f"{where(path, n)}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "each line must be one JSON object"
                ) from None
            except UnicodeDecodeError:
                raise GraceError(f"{where(path, n)}: not UTF-8 text; save the file as UTF-8") from None
            if type(row) is not dict:
                raise GraceError(f"{where(path, n)}: expected a JSON object with question_id, model and response")
            qid = row.get("question_id")
            model = row.get("model")
            text = row.get("response")
            repeat = row.get("repeat", 0)
            err = row.get("error")
            error = err is not None and err is not False
            if type(qid) is not str:
                qid = str(qid) if type(qid) is int else None
            elif qid not in gold_ids:
                qid = qid.strip()
            if text is None and error:
                text = ""
            if repeat is None:
                repeat = 0
            if (
                qid not in gold_ids
                or type(model) is not str
                or not model
                or type(text) is not str
                or type(repeat) is not int
                or not 0 <= repeat <= MAX_REPEAT
            ):
                raise _bad_field(row, path, n, gold_ids)
            retrieved = row.get("retrieved_ids")
            if retrieved is not None:
                if type(retrieved) is not list:
                    raise GraceError(f"{where(path, n)}: 'retrieved_ids' must be a list of article IDs or null")
                retrieved = [r if type(r) is str else str(r) for r in retrieved]
            cost, latency = row.get("cost_usd"), row.get("latency_ms")
            tin, tout = row.get("input_tokens"), row.get("output_tokens")
            if not (
                (cost is None or ((type(cost) is float or type(cost) is int) and -MAX_AMOUNT <= cost <= MAX_AMOUNT))
                and (latency is None
                     or ((type(latency) is float or type(latency) is int) and -MAX_AMOUNT <= latency <= MAX_AMOUNT))
                and (tin is None or (type(tin) is int and 0 <= tin <= MAX_COUNT))
                and (tout is None or (type(tout) is int and 0 <= tout <= MAX_COUNT))
            ):
                cost, latency = _number(row, "cost_usd", path, n), _number(row, "latency_ms", path, n)
                tin, tout = _count(row, "input_tokens", path, n), _count(row, "output_tokens", path, n)
            finish = row.get("finish_reason")
            params = row.get("params")
            groups = row.get("user_groups")
            if groups is not None and (type(groups) is not list or not all(type(g) is str for g in groups)):
                raise GraceError(f"{where(path, n)}: 'user_groups' must be a list of group names (strings) or "
                                 f"null, got {groups!r}")
            if groups:  # named as the articles' audiences are: " hr " is hr
                groups = group_names(groups)
            cites, own = row.get("citations"), row.get("system_retrieved")
            if cites is not None or own is not None:
                cites, own = _id_list(cites, "citations", path, n), _id_list(own, "system_retrieved", path, n)
            service = queued = None
            if "queue_ms" in row or "service_ms" in row:  # a row of grace 3 or later that made the call
                service, queued = _times(row, latency, path, n)
            yield ResponseRow(n, qid, model, repeat, text, error, retrieved, cost, latency, tin, tout,
                              finish if type(finish) is str else None, None if params is None else _max_tokens(params),
                              groups, cites, own, service, queued)


def _times(row: dict, latency: float | None, path: Path, n: int) -> tuple[float | None, float | None]:
    """(service_ms, queued_ms) of a row: the model's own time, and the time the call waited in grace and in the
    server's queue (latency_ms less service_ms); a value that is no time is named with its line."""
    service, waited = _number(row, "service_ms", path, n), _number(row, "queue_ms", path, n)
    for key, value in (("service_ms", service), ("queue_ms", waited)):
        if value is not None and not 0 <= value <= MAX_AMOUNT:
            raise GraceError(f"{where(path, n)}: '{key}' must be milliseconds (0 or more), got {value!r}")
    if latency is None:
        return service, waited
    in_server = max(0.0, latency - service) if service is not None else 0.0
    return service, (waited or 0.0) + in_server


RowKey = tuple[str, str, int]  # (model, question_id, repeat)


def row_key(row: dict[str, Any]) -> RowKey:
    """The key of a row already checked by :func:`read_response_lines`."""
    return (row["model"], str(row["question_id"]), row.get("repeat") or 0)


def read_response_lines(path: Path, hint: str = "; fix or delete the line") -> list[dict[str, Any]]:
    """Whole response rows, each checked for what resuming and joining rely on (model, question_id, repeat).

    A half-written last line (the process was killed mid-write) is skipped:
    it was never a finished response, and the next run asks that call again.
    """
    return list(iter_response_lines(path, hint))


def iter_response_lines(path: Path, hint: str = "; fix or delete the line") -> Iterator[dict[str, Any]]:
    """:func:`read_response_lines` one row at a time, for a reader that keeps a few of a million rows."""
    for _, row in _numbered_rows(Path(path), hint):
        yield row


def iter_response_records(path: Path, hint: str = "; fix or delete the line") -> Iterator[ResponseRecord]:
    """Each row as the :class:`ResponseRecord` the runner wrote: a row read back equals the record written.

    A hand-written file's own extra columns are kept (``ResponseRecord`` allows them); a field of the wrong type
    is a ``GraceError`` naming the file, line and field.
    """
    path = Path(path)
    for n, row in _numbered_rows(path, hint):
        try:
            yield ResponseRecord.model_validate(row)
        except ValidationError as exc:
            e = exc.errors(include_url=False)[0]
            place = ".".join(str(p) for p in e["loc"])
            raise GraceError(f"{where(path, n)}: '{place}': {e['msg']}, got {e.get('input')!r}{hint}") from None


def _numbered_rows(path: Path, hint: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.exists():
        return
    for n, row in iter_jsonl(path, torn_tail_ok=True, hint=hint):
        row["question_id"], row["model"], row["repeat"] = _checked_key(row, path, n, hint)
        yield n, row


def _checked_key(row: dict[str, Any], path: Path, n: int, hint: str) -> tuple[str, str, int]:
    """A row's (question_id, model, repeat) as resuming and joining read them (an ID written as a number, or with
    spaces around it, is the same question; no repeat is repeat 0), or the error naming the file and line."""
    qid, model, repeat = row.get("question_id"), row.get("model"), row.get("repeat", 0)
    if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
        raise GraceError(f"{where(path, n)}: 'question_id' must be a non-empty string, got {qid!r}{hint}")
    if not isinstance(model, str) or not model:
        raise GraceError(f"{where(path, n)}: 'model' must be a non-empty string, got {model!r}{hint}")
    if repeat is None:
        repeat = 0
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise GraceError(f"{where(path, n)}: 'repeat' must be a whole number >= 0, got {repeat!r}{hint}")
    return str(qid).strip(), model, repeat


class RowIndex:
    """``responses.jsonl`` as a few compact columns, one entry per line: what resuming, the final rewrite and
    ``run.json``'s row counts read, at about 70 bytes a row where the rows as dicts take 2-3 KB (a million-call
    run: 70 MB instead of several GB). A whole line is read again, by its offset, only where one is needed.

    Columns (numpy arrays, in file order): ``model``, ``qid`` (codes into :attr:`models` and :attr:`qids`),
    ``repeat``, ``offset`` and ``length`` (the line's bytes), ``error`` (the row is a failed call), ``fingerprint``
    (its 32 bytes; zeros when the row has none), ``qhash`` (a code into :attr:`qhashes`, the question text's hash
    the row was asked with, -1 when not recorded), ``params`` (a code into :attr:`params`, the generation
    parameters as text) and ``plain`` (the line is as grace writes it: a rewrite may copy its bytes).
    """

    def __init__(self, path: Path):
        import numpy as np  # (not at import: most readers of run folders never need it)

        self.path = Path(path)
        self.models: list[str] = []
        self.qids: list[str] = []
        self.qhashes: list[str] = []
        self.params: list[str] = []
        self.model, self.qid, self.repeat = (np.zeros(0, np.int32),) * 2 + (np.zeros(0, np.int64),)
        self.offset, self.length = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self.error, self.plain = np.zeros(0, bool), np.zeros(0, bool)
        self.qhash, self.params_code = np.zeros(0, np.int32), np.zeros(0, np.int32)
        self.fingerprint = np.zeros(0, "S32")

    def __len__(self) -> int:
        return int(self.model.size)

    @classmethod
    def scan(cls, path: Path, hint: str = "; fix or delete the line") -> RowIndex:
        """One streaming pass over the file (checked as :func:`read_response_lines` checks it, a torn last line
        left out); a missing file is an empty index."""
        index = cls(path)
        import numpy as np

        path = Path(path)
        if not path.exists():
            return index
        codes: dict[str, dict[str, int]] = {"models": {}, "qids": {}, "qhashes": {}, "params": {}}
        columns = {name: array(code) for name, code in (("model", "i"), ("qid", "i"), ("repeat", "q"), ("offset", "q"),
                                                         ("length", "q"), ("error", "b"), ("plain", "b"),
                                                         ("qhash", "i"), ("params_code", "i"))}
        fingerprints = bytearray()
        zero = bytes(32)

        def code(kind: str, value: str) -> int:
            table = codes[kind]
            c = table.get(value)
            if c is None:
                c = table[value] = len(table)
                getattr(index, kind).append(value)
            return c

        add = {name: col.append for name, col in columns.items()}
        for n, start, raw, row in iter_jsonl_spans(path, torn_tail_ok=True, hint=hint):
            qid, model, repeat = _checked_key(row, path, n, hint)
            add["model"](code("models", model))
            add["qid"](code("qids", qid))
            try:
                add["repeat"](repeat)
            except OverflowError:
                raise GraceError(f"{where(path, n)}: 'repeat' must be a whole number below 2**63, got {repeat!r}"
                                 f"{hint}") from None
            add["offset"](start)
            add["length"](len(raw))
            add["error"](bool(row.get("error")))
            add["plain"](row.get("question_id") == qid and type(row.get("repeat")) is int)
            qh = row.get("question_hash")
            add["qhash"](-1 if qh is None else code("qhashes", str(qh)))
            params = row.get("params") or {}
            add["params_code"](code("params", repr(sorted(params.items())) if isinstance(params, dict) else
                                    repr(params)))
            fp = row.get("fingerprint")
            try:
                fp_bytes = bytes.fromhex(fp) if type(fp) is str and len(fp) == 64 else zero
            except ValueError:
                fp_bytes = zero
            fingerprints += fp_bytes
        for name, col in columns.items():  # views of the arrays filled above, not copies (a million rows: 50 MB)
            if len(col):
                setattr(index, name, np.frombuffer(col, dtype=col.typecode))
        index.error, index.plain = index.error.view(bool), index.plain.view(bool)
        if fingerprints:
            index.fingerprint = np.frombuffer(fingerprints, dtype="S32")
        return index

    def latest(self) -> np.ndarray:
        """The row that counts for each call (model, question, repeat): its last line, as :func:`latest_rows`
        keeps it; in the order each call first appears in the file."""
        import numpy as np  # (not at import: most readers of run folders never need it)

        n = len(self)
        if not n:
            return np.zeros(0, np.int64)
        rows = np.arange(n)
        order = np.lexsort((rows, self.repeat, self.qid, self.model))
        m, q, r = self.model[order], self.qid[order], self.repeat[order]
        new = np.r_[True, (m[1:] != m[:-1]) | (q[1:] != q[:-1]) | (r[1:] != r[:-1])]
        starts = np.flatnonzero(new)
        ends = np.r_[starts[1:], n] - 1
        first, last = order[starts], order[ends]
        return last[np.argsort(first, kind="stable")]

    def grid(self, models: list[str], question_ids: list[str], repeats: int) -> np.ndarray:
        """The latest row of every planned call, ``[model, repeat, question]`` (-1: none on file)."""
        import numpy as np  # (not at import: most readers of run folders never need it)

        out = np.full((len(models), repeats, len(question_ids)), -1, dtype=np.int64)
        if not len(self):
            return out
        model_at = np.array([models.index(m) if m in models else -1 for m in self.models] or [-1], np.int64)
        where_q = {q: i for i, q in enumerate(question_ids)}
        q_at = np.array([where_q.get(q, -1) for q in self.qids] or [-1], np.int64)
        latest = self.latest()
        mi, qi, r = model_at[self.model[latest]], q_at[self.qid[latest]], self.repeat[latest]
        keep = (mi >= 0) & (qi >= 0) & (r < repeats)
        out[mi[keep], r[keep], qi[keep]] = latest[keep]  # one latest row per call: no index is written twice
        return out

    def fingerprint_of(self, i: int) -> bytes:
        """Row ``i``'s fingerprint, all 32 bytes (a numpy bytes scalar drops trailing zero bytes)."""
        return self.fingerprint[i:i + 1].tobytes()

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` read again from the file, whole."""
        with self.path.open("rb") as fh:
            fh.seek(int(self.offset[i]))
            row = loads_line(fh.read(int(self.length[i])))
        row["question_id"], row["model"], row["repeat"] = self.qids[self.qid[i]], self.models[self.model[i]], \
            int(self.repeat[i])
        return row


def latest_rows(rows: list[dict[str, Any]]) -> dict[RowKey, dict[str, Any]]:
    """The last row per (model, question_id, repeat): a retried call supersedes its error row."""
    return {row_key(r): r for r in rows}


def write_responses(path: Path, records: Iterable[ResponseRecord]) -> int:
    """A whole responses file at once, from its records (``grace import-logs``: rows that were read, not asked);
    atomic, so an interrupted write leaves no half file. Returns the rows written."""
    lines = [response_line(r).decode("utf-8") for r in records]
    atomic_write_text(path, "".join(lines))
    return len(lines)


def response_line(record: ResponseRecord) -> bytes:
    """One line of the file, newline included: for a writer that streams rows (``grace import-logs``)."""
    return (json.dumps(record.model_dump(mode="json"), ensure_ascii=False) + "\n").encode("utf-8")


def compact_responses(path: Path, question_order: list[str], index: RowIndex | None = None) -> int:
    """Rewrite the file with one (the latest) row per call, in a stable order; returns rows dropped.

    The order (models by name, then repeat, then gold order) makes the file,
    and so ``scores.jsonl``, the same whether a run was resumed or done at once,
    whatever order concurrent answers arrived in. Atomic (write, then rename):
    a kill during the rewrite leaves the old file whole and only a temp file,
    which the next command under the folder's lock removes.

    Streamed: the file is read once into a :class:`RowIndex` and written line by line in the new order (copied as
    they are, or written again where a line spells its question ID or repeat another way), so a million rows
    take the index's memory, not the rows'. ``index``: the file's, when the caller has it already.
    """
    import numpy as np

    index = RowIndex.scan(path) if index is None else index
    n = len(index)
    if not n:
        return 0
    latest = index.latest()
    qpos = {q: i for i, q in enumerate(question_order)}
    model_rank = np.argsort(np.argsort(np.array(index.models, dtype=object)))
    qid_rank = np.argsort(np.argsort(np.array(index.qids, dtype=object)))
    at = np.array([qpos.get(q, len(qpos)) for q in index.qids], dtype=np.int64)
    m, q = index.model[latest], index.qid[latest]
    order = latest[np.lexsort((qid_rank[q], at[q], index.repeat[latest], model_rank[m]))]
    if latest.size == n and np.array_equal(order, np.arange(n)):
        return 0
    _rewrite_in_order(index, order)
    return n - int(latest.size)


def _rewrite_in_order(index: RowIndex, order: np.ndarray) -> None:
    """Write ``index``'s rows ``order`` as the new file: atomic (a temp file renamed over it), masked as every line
    grace writes is (:func:`harness.core.secrets.mask`)."""
    from harness.core.files import atomic_writer
    from harness.core.secrets import mask

    path = index.path
    with path.open("rb") as src, atomic_writer(path) as dst:
        fd, chunk, size = src.fileno(), [], 0
        for i in order.tolist():
            if index.plain[i]:
                line = os.pread(fd, int(index.length[i]), int(index.offset[i])).rstrip().decode("utf-8")
            else:  # an ID written as a number or with spaces, a missing repeat: written as resuming reads it
                line = json.dumps(index.row(i), ensure_ascii=False)
            chunk.append(line)
            size += len(line)
            if size > 1 << 20:
                dst.write(mask("\n".join(chunk)) + "\n")
                chunk, size = [], 0
        if chunk:
            dst.write(mask("\n".join(chunk)) + "\n")
