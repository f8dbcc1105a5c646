"""Production audit logs (``grace import-logs``): the one reader of their format, its field mapping, and the files
an import leaves beside the run (``malformed.jsonl``, ``unmatched.jsonl``).

A log is JSON Lines, one object per answer the deployed system gave. :class:`AuditRecord` is the record grace reads
from each line, under its default field names; a log that spells them otherwise is read through a field mapping
(``question=query``, ``answer=response.text``, ``citations=sources[*].id``): each value is a JMESPath expression
into the line's object, so nested keys and lists of objects need no code. A line that is not JSON, has no question,
or holds a field of the wrong type is kept aside with its line number and what is wrong (:class:`LogProblem`), and
the rest is read: one bad line in a week of logs must not stop the import, and must never vanish without a word.

A log is read as any input grace did not write: a line at a time, with limits. A line longer than
``max_line_bytes`` (default :data:`MAX_LINE_BYTES`) is set aside unread, its rest skipped; one nested deeper than
:data:`MAX_DEPTH` levels, or with a number beyond what a figure can hold (:data:`MAX_COUNT` tokens, an infinite or
NaN latency or cost), is set aside as malformed like any other bad line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.core.errors import GraceError
from harness.core.group_names import group_names
from harness.core.hashing import text_hash
from harness.core.jsonl import iter_bounded_lines, loads_line
from harness.run_folder.responses import MAX_AMOUNT, MAX_COUNT
from kb_builder.gold import GoldQuestion, split_ids

MAX_LINE_BYTES = 4 << 20  # a longer log line is set aside unread (--max-line-mb); a line of 4 MB parses in ~50 MB
MAX_DEPTH = 100  # a line nested deeper is set aside: its object is written back (unmatched.jsonl), to 255 levels at most


class AuditRecord(BaseModel):
    """One answer of the deployed system, as grace reads it from a log line (the default field names).

    Only ``question`` is required; an ``answer`` is too, unless the line records an ``error`` (the call failed:
    an error row, scored as outcome ``error``). Numbers may be written as strings (``"812"``), IDs as numbers, and an
    ID list as one string (``"12; 14"``).
    """

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    question: str  # what the user asked
    question_id: str | None = None  # the log's own ID for the question; matched against the gold IDs first
    model: str | None = None  # the model (or system version) that answered; each one is a model of the run
    answer: str | None = None  # the text the user was shown
    error: str | None = None  # the call failed: why (then no answer is needed)
    citations: list[str] | None = None  # the article IDs the system cited as data; None: read them from the answer
    retrieved_ids: list[str] | None = None  # the article IDs the system retrieved and showed the model, in rank order
    user: str | None = None  # who asked
    user_groups: list[str] | None = None  # the groups the asker belongs to (for permissions)
    prompt_hash: str | None = None  # the hash of the prompt the deployed system sent
    latency_ms: float | None = Field(None, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)  # how long it took, milliseconds
    input_tokens: int | None = Field(None, ge=0, le=MAX_COUNT)  # prompt tokens of the answer's model call
    output_tokens: int | None = Field(None, ge=0, le=MAX_COUNT)  # answer tokens of the model call
    cost_usd: float | None = Field(None, ge=0, le=MAX_AMOUNT, allow_inf_nan=False)  # what the answer cost, USD
    timestamp: str | None = None  # when it was answered, as the log writes it
    # the agent loop (the guidance's audit record): how many tool calls it made (a count, or the list of its calls,
    # each an object: name, arguments, returned IDs), the tokens of the context it put before the model, and what the
    # user said of the answer (a rating, a thumb, a comment)
    tool_calls: int | list[Any] | None = None  # tool calls of its loop: a count, or each call ({name, arguments, returned})
    context_tokens: int | None = Field(None, ge=0, le=MAX_COUNT)  # tokens of the retrieved context in the prompt
    feedback: Any = None  # the user's feedback on the answer, as the log writes it (kept on the row)

    @field_validator("citations", "retrieved_ids", "user_groups", mode="before")
    @classmethod
    def _id_list(cls, value: Any) -> Any:
        """``"12; 14"`` -> ``["12", "14"]``, and a number in a list is its ID, as the gold file reads IDs."""
        if isinstance(value, str):
            return split_ids(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return [str(value)]
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value

    @field_validator("user_groups")
    @classmethod
    def _group_names(cls, value: list[str] | None) -> list[str] | None:
        """Named as the articles' audiences are (``" hr "`` is ``hr``): one rule, harness.core.group_names."""
        return None if value is None else group_names(value)

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _calls(cls, value: Any) -> Any:
        """A count (``3`` or ``"3"``), a list of calls, or one call (an object) as a list of one."""
        if isinstance(value, dict):
            return [value]
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or (isinstance(value, int) and not 0 <= value <= MAX_COUNT):
            raise ValueError("must be a count of tool calls (0 or more) or a list of them")
        return value

    @field_validator("latency_ms", "input_tokens", "output_tokens", "cost_usd", "context_tokens", mode="before")
    @classmethod
    def _not_a_flag(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic would read true as 1
            raise ValueError("must be a number, not true or false")
        return value

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value.strip()

    @field_validator("question_id", "model")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @model_validator(mode="after")
    def _answered(self) -> AuditRecord:
        if self.answer is None and not self.error:
            raise ValueError("no answer, and no error saying why")
        return self


FIELDS = tuple(AuditRecord.model_fields)
# the guidance's audit record names two fields otherwise: read by default where a line has no field of grace's name
GUIDANCE_NAMES = {"retrieved_ids": "retrieved_uids", "user": "user_uid"}


class LogProblem(BaseModel):
    """A line of ``malformed.jsonl``: a log line that was not imported, and why."""

    model_config = ConfigDict(extra="forbid")

    line: int  # in the log file, from 1
    problem: str  # what is wrong with it (not JSON, no question at the mapped path, a field of the wrong type...)
    text: str  # the line as written (cut at 10,000 characters)


class UnmatchedRecord(BaseModel):
    """A line of ``unmatched.jsonl``: a log record no gold question matched, by ID or by text."""

    model_config = ConfigDict(extra="forbid")

    line: int  # in the log file, from 1
    question_id: str | None  # the log's own ID for the question; null when the record has none
    question: str  # the question as the log wrote it
    reason: str  # why no gold question matched (no such ID or text, or a text several gold questions share)
    record: dict[str, Any]  # the line's whole object, as the log wrote it


def jsonl_line(row: LogProblem | UnmatchedRecord) -> str:
    """A line of ``malformed.jsonl`` or ``unmatched.jsonl``, written as each is found (a log is never held)."""
    return row.model_dump_json() + "\n"


# -- the field mapping ----------------------------------------------------------------------------------------------
def field_map(pairs: Iterable[str] = (), file: str | Path | None = None) -> dict[str, str]:
    """The mapping of every field (field -> JMESPath into a log line): the defaults, then ``file``'s, then ``pairs``.

    ``pairs`` are ``FIELD=PATH`` (``--map answer=response.text``); ``file`` is a TOML file of ``FIELD = "PATH"``
    lines (a ``[fields]`` table is read as well). An unknown field or a path that is not JMESPath is a
    ``GraceError`` naming it.
    """
    mapping = {name: name for name in FIELDS}
    if file is not None:
        mapping.update(_toml_map(Path(file)))
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise GraceError(f"--map {pair!r}: give FIELD=PATH, e.g. --map question=query or --map answer=response.text")
        mapping[_known(name.strip(), f"--map {pair}")] = path.strip()
    for name, path in mapping.items():
        _compiled(path, name)
    return mapping


def _toml_map(path: Path) -> dict[str, str]:
    import tomllib

    from harness.core.files import read_text_checked

    try:
        data = tomllib.loads(read_text_checked(path))
    except tomllib.TOMLDecodeError as exc:
        raise GraceError(f"{path}: not valid TOML ({exc})") from None
    table = data.pop("fields", {})
    if not isinstance(table, dict):
        raise GraceError(f"{path}: [fields] must be a table of FIELD = \"PATH\"")
    out = {}
    for name, value in {**data, **table}.items():
        if not isinstance(value, str) or not value.strip():
            raise GraceError(f"{path}: {name} must be a path in a log line, as a string (e.g. {name} = \"query\")")
        out[_known(name, str(path))] = value.strip()
    return out


def _known(name: str, place: str) -> str:
    if name not in FIELDS:
        raise GraceError(f"{place}: {name!r} is not a field of a log record; the fields are {', '.join(FIELDS)}")
    return name


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _compiled(path: str, name: str) -> Any:
    """A plain key is read with ``dict.get`` (a million lines: no parser per field); anything else is JMESPath."""
    if _PLAIN.fullmatch(path):
        return None
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(path)
    except JMESPathError as exc:
        raise GraceError(f"the path of {name}, {path!r}, is not a JMESPath expression ({exc}); nested keys are "
                         "written a.b.c, a list of objects' IDs sources[*].id, a key with a dot or a dash \"x-y\"") \
            from None


# -- reading --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogLine:
    """One line of the log: its record, or the problem that kept it out (then ``record`` is None)."""

    line: int
    record: AuditRecord | None
    data: dict[str, Any] | None  # the line's object, when it was one
    problem: LogProblem | None = None


def read_audit_log(path: str | Path, mapping: Mapping[str, str] | None = None, *,
                   max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[LogLine]:
    """Every non-blank line of the log, read through ``mapping`` (:func:`field_map`; default: the field names).

    A line longer than ``max_line_bytes`` is a problem line (its first 10,000 characters kept), never read whole.
    """
    path = Path(path)
    mapping = dict(mapping or field_map())
    plan = [(name, p, _compiled(p, name)) for name, p in mapping.items()]
    for n, raw, length in iter_bounded_lines(path, max_line_bytes,
                                             expected="the log file (JSON Lines, one record per line)"):
        yield _read_line(n, raw, plan, length, max_line_bytes)


def _read_line(n: int, raw: bytes, plan: list[tuple[str, str, Any]], length: int = 0,
               max_line_bytes: int = MAX_LINE_BYTES) -> LogLine:
    def bad(problem: str, data: dict[str, Any] | None = None) -> LogLine:
        text = raw[:40_000].decode("utf-8", errors="replace").rstrip("\r\n")[:10_000]
        return LogLine(n, None, data, LogProblem(line=n, problem=problem, text=text))

    if length > max_line_bytes:
        return bad(f"the line is {length:,} bytes, longer than the limit of {max_line_bytes:,} "
                   f"({max_line_bytes / (1 << 20):g} MB); not read. Raise it with --max-line-mb to import it")
    try:
        data = loads_line(raw, max_depth=MAX_DEPTH)
    except UnicodeDecodeError as exc:
        return bad(f"not UTF-8 text (byte {exc.start + 1} of the line)")
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("nested"):
            return bad(f"{exc.msg}; a log line may nest {MAX_DEPTH} levels")
        return bad(f"not valid JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(data, dict):
        return bad(f"expected a JSON object, got {type(data).__name__}")
    values = {}
    for name, p, compiled in plan:
        value = data.get(p) if compiled is None else compiled.search(data)
        if value is None and p == name and name in GUIDANCE_NAMES:  # unmapped: the guidance's name will do
            value = data.get(GUIDANCE_NAMES[name])
        if value is not None:
            values[name] = value
    if "question" not in values:
        keys = ", ".join(list(data)[:12]) or "none"
        at = next(p for name, p, _ in plan if name == "question")
        return bad(f"no question at {at!r} (the line's keys: {keys}); map it with --map question=PATH", data)
    try:
        return LogLine(n, AuditRecord.model_validate(values), data)
    except ValidationError as exc:
        return bad(_problem(exc, dict((name, p) for name, p, _ in plan)), data)


def _problem(exc: ValidationError, paths: dict[str, str]) -> str:
    e = exc.errors(include_url=False)[0]
    if not e["loc"]:
        return e["msg"].removeprefix("Value error, ")
    name = str(e["loc"][0])
    at = f" (at {paths[name]!r})" if paths.get(name, name) != name else ""
    shown = json.dumps(e.get("input"), ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{name}{at}: {e['msg'].removeprefix('Value error, ')}, got {shown}"


# -- questions ------------------------------------------------------------------------------------------------------
_ASCII_PUNCTUATION = {i: " " for i in range(128) if unicodedata.category(chr(i)).startswith("P")}
_NORMALISED: dict[str, str] = {}  # a log asks the same questions over and over: each spelling is normalised once
_CACHED_CHARS = 2_000  # longer texts are not kept (a hostile log of long distinct questions must not fill memory)
_CACHED_TEXTS = 50_000  # the cache is emptied when it holds this many (a few MB at most)


def normalise_question(text: str) -> str:
    """The form two spellings of one question share: Unicode NFKC, case folded, punctuation dropped, spaces
    collapsed (``"What's  the per-diem?"`` and ``"what s the per diem"`` match)."""
    done = _NORMALISED.get(text)
    if done is not None:
        return done
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():  # the common case, by one translate instead of a category look-up per character
        done = " ".join(folded.translate(_ASCII_PUNCTUATION).split())
    else:
        done = " ".join("".join(" " if unicodedata.category(c).startswith("P") else c for c in folded).split())
    if len(text) <= _CACHED_CHARS:
        if len(_NORMALISED) >= _CACHED_TEXTS:
            _NORMALISED.clear()
        _NORMALISED[text] = done
    return done


def question_id_for(record: AuditRecord) -> str:
    """A log question's ID without gold: the log's own ID, else one made from its normalised text (so the same
    question asked twice is one question, answered twice)."""
    return record.question_id or "q-" + text_hash(normalise_question(record.question), 12)


class GoldMatcher:
    """Which gold question a log record asks: by ID first, else by normalised text (:func:`normalise_question`)."""

    def __init__(self, questions: Iterable[GoldQuestion]):
        self.by_id: dict[str, GoldQuestion] = {}
        self.by_text: dict[str, list[str]] = {}
        for q in questions:
            self.by_id[q.question_id] = q
            self.by_text.setdefault(normalise_question(q.question), []).append(q.question_id)

    def match(self, record: AuditRecord) -> tuple[str | None, str]:
        """``(question_id, "id" | "text")``, or ``(None, why not)``."""
        if record.question_id is not None and record.question_id in self.by_id:
            return record.question_id, "id"
        found = self.by_text.get(normalise_question(record.question), [])
        if len(found) == 1:
            return found[0], "text"
        if found:
            return None, f"its text matches {len(found)} gold questions ({', '.join(found[:5])}); give the log's " \
                         "question_id"
        said = f"no gold question has the ID {record.question_id!r} or this text" if record.question_id \
            else "no gold question has this text"
        return None, said
