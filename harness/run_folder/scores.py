"""``scores.jsonl``: its one description (:class:`ScoreLine`), its writer and its reader.

One line per response, read strictly and leniently. :class:`ScoreLine` is the
contract: the fields, their order in the file, their types and the schema
version. The writer and the readers take the field list from it, but neither
routes a line through pydantic: the scorer writes one line per response (a
million in a benchmark) and validating each would cost ~25 s per million rows,
more than scoring them. So :class:`ScoreLines` builds each line with an
f-string that is byte for byte what ``json.dumps`` of a dict with the model's
fields gives (tests hold it to that, and to the model's field order), and
:func:`iter_scores` yields plain dicts checked for the keys every reader joins on.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.core.errors import GraceError, where
from harness.core.jsonl import iter_jsonl, loads_line

# the outcome names and what each means: spelled once, in the outcome table (OUTCOMES[code] is code order)
from harness.run_folder.outcome_table import OUTCOMES as OUTCOMES
from harness.run_folder.outcome_table import Outcome as Outcome

try:  # the C function json.dumps itself uses for a str (with ensure_ascii, the default)
    from _json import encode_basestring_ascii as _json_str
except ImportError:  # pragma: no cover - a Python built without the C accelerator
    from json.encoder import py_encode_basestring_ascii as _json_str

SCORES_SCHEMA_VERSION = 3  # 2: outcome unshown_citation, truncated; 3: forbidden_citation, refusal, unjudged_citation

Rule = Literal["json", "inline", "lenient", "none"]


def _absent_if_none() -> Any:
    return Field(None, exclude_if=lambda v: v is None)


class CitedReference(BaseModel):
    """One citation of an answer read as references (``ScoreLine.citations``), and what it resolved to."""

    model_config = ConfigDict(extra="forbid")

    reference: str  # as the answer gave it: a path, URL, title, quote, the system's own ID, or a KB ID
    articles: list[str]  # the KB articles it resolved to; empty: unmapped
    how: str | None  # how it resolved (kb_builder.references.HOW: mapping, id, rewrite, source+heading...); null: unmapped
    note: str  # why it is unmapped, or which rule mapped it
    quote: str | None  # the quoted span attached to it (a quote in its sentence, or the reference itself); null: none
    quote_found: bool | None  # the quote occurs in the article it cites (case, spaces, quotes folded); null: unchecked


class ScoreLine(BaseModel):
    """One line of ``scores.jsonl``: one response, read strictly and leniently."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCORES_SCHEMA_VERSION  # version of the line's format
    question_id: str  # the gold question
    model: str  # the model's display name in the run
    repeat: int  # which asking of the question, from 0
    cited_ids: list[str]  # distinct, in order of first appearance
    refused: bool  # true when the lenient reading found a refusal
    outcome: Outcome  # what the response came to, read leniently (correct, wrong_citation, false_refusal...)
    extraction: Rule  # the lenient rule that read the citation
    strict_cited_ids: list[str]  # the IDs cited in exactly the prompt's format ([ID: x] or the JSON object)
    strict_refused: bool  # true when the response is the prompt's exact refusal
    strict_outcome: Outcome  # the outcome when read strictly
    must_refuse: bool  # the gold question's must_refuse
    expected_citations: list[str]  # the gold question's expected article IDs
    # IDs of the articles shown to the model (the response line's); null when it has none
    # what the response was judged against: the articles shown to the model, or the IDs a system (python:, http:,
    # imported logs) said it retrieved itself (the response's system_retrieved)
    retrieved_ids: list[str] | None
    expected_retrieved: bool | None  # any expected ID among retrieved_ids (None: unknown, or must_refuse)
    cost_usd: float | None  # the call's cost, USD, from the response line; null when unknown
    latency_ms: float | None  # the call's latency, milliseconds, from the response line; null when unknown
    input_tokens: int | None  # prompt tokens, from the response line; null when unknown
    output_tokens: int | None  # answer tokens, from the response line; null when unknown
    truncated: bool = False  # the response's finish_reason says the output limit (max_tokens) cut it off
    # -- only on the lines of a model whose citations are read as references or scored several per answer (its
    # CitationSettings; issue 39), all seven written there (null where unknown); absent on a GRACE model's lines --
    # each citation of the answer, in order, with what it resolved to (cited_ids are the articles they resolved to)
    citations: list[CitedReference] | None = _absent_if_none()
    # acceptable articles cited over citations made (an unmapped one counts as a miss); null: no citation, or the
    # question has no label or must be refused
    cit_precision: float | None = _absent_if_none()
    cit_recall: float | None = _absent_if_none()  # acceptable articles cited over the gold's acceptable set
    cit_f1: float | None = _absent_if_none()  # harmonic mean of cit_precision and cit_recall (0 when either is 0)
    # share of the citations that exist (resolve), are reachable by the asker and are supported (no quote that is
    # not in the article); null: no citation
    cit_correct: float | None = _absent_if_none()
    coverage: float | None = _absent_if_none()  # cited articles among the retrieved ones, over those; null: unknown
    marker_problems: list[str] | None = _absent_if_none()  # harness.scoring.markers.PROBLEMS codes of the answer


# the extra fields of a references or multi-citation model's line, in file order, after SCORE_FIELDS
CITATION_FIELDS = ("citations", "cit_precision", "cit_recall", "cit_f1", "cit_correct", "coverage", "marker_problems")
# the fields of every scores line, in file order, as the model declares them
SCORE_FIELDS = tuple(f for f in ScoreLine.model_fields if f not in CITATION_FIELDS)

_LITERAL = {True: "true", False: "false", None: "null"}
_BOOLISH = defaultdict(bool, {bool: True, type(None): True})  # flags written from _LITERAL; others by json.dumps
_INF = float("inf")


def _number(x: Any) -> str:
    """``json.dumps`` of an int, a float or None."""
    t = type(x)
    if t is float:
        if x != x:
            return "NaN"
        if x == _INF or x == -_INF:
            return "Infinity" if x > 0 else "-Infinity"
        return float.__repr__(x)
    if t is int:
        return int.__repr__(x)
    return _LITERAL[x] if x is None or t is bool else json.dumps(x)


def _ids(items: Sequence[str] | None) -> str:
    """``json.dumps`` of a list of str or None."""
    if items is None:
        return "null"
    return "[" + ", ".join(map(_json_str, items)) + "]" if items else "[]"


def score_line(question_id: str, model: str, repeat: int, cited: list[str], refused: bool, outcome: str,
               rule: str, strict_cited: list[str], strict_refused: bool, strict_outcome: str, must_refuse: bool,
               expected: list[str], retrieved: list[str] | None, expected_retrieved: bool | None,
               cost: float | None, latency: float | None, tokens_in: int | None, tokens_out: int | None,
               truncated: bool) -> str:
    """One ``scores.jsonl`` line (without the newline), byte for byte what ``json.dumps`` writes."""
    return ScoreLines().line(question_id, model, repeat, cited, refused, outcome, rule, strict_cited, strict_refused,
                             strict_outcome, must_refuse, expected, retrieved, expected_retrieved, cost, latency,
                             tokens_in, tokens_out, truncated)


class ScoreLines:
    """:func:`score_line` for a whole file: the strings that repeat from line to line (question IDs, model
    and outcome names) are encoded once."""

    def __init__(self) -> None:
        self._text: dict[str, str] = {}

    def _str(self, value: str) -> str:
        out = self._text.get(value)
        if out is None:
            out = _json_str(value)
            if len(self._text) < 1_000_000:
                self._text[value] = out
        return out

    def line(self, question_id: str, model: str, repeat: int, cited: list[str], refused: bool, outcome: str,
             rule: str, strict_cited: list[str], strict_refused: bool, strict_outcome: str, must_refuse: bool,
             expected: list[str], retrieved: list[str] | None, expected_retrieved: bool | None,
             cost: float | None, latency: float | None, tokens_in: int | None, tokens_out: int | None,
             truncated: bool, citations: str = "") -> str:
        """One line; ``citations``: a references or multi-citation model's CITATION_FIELDS, as
        :meth:`citation_fields` writes them (nothing for a GRACE model)."""
        s, ids, num, lit = self._str, _ids, _number, _LITERAL
        if not (_BOOLISH[type(refused)] and _BOOLISH[type(strict_refused)] and _BOOLISH[type(must_refuse)]
                and _BOOLISH[type(expected_retrieved)] and _BOOLISH[type(truncated)]):
            plain = json.dumps(dict(zip(SCORE_FIELDS, (
                SCORES_SCHEMA_VERSION, question_id, model, repeat, cited, refused, outcome, rule, strict_cited,
                strict_refused, strict_outcome, must_refuse, expected, retrieved, expected_retrieved, cost, latency,
                tokens_in, tokens_out, truncated), strict=True)))
            return plain[:-1] + citations + "}" if citations else plain
        # the keys in SCORE_FIELDS order (tests compare this line with json.dumps over SCORE_FIELDS)
        return (f'{{"schema_version": {SCORES_SCHEMA_VERSION}, "question_id": {s(question_id)}, "model": {s(model)}, '
                f'"repeat": {int.__repr__(repeat)}, "cited_ids": {ids(cited)}, "refused": {lit[refused]}, '
                f'"outcome": {s(outcome)}, "extraction": {s(rule)}, "strict_cited_ids": {ids(strict_cited)}, '
                f'"strict_refused": {lit[strict_refused]}, "strict_outcome": {s(strict_outcome)}, '
                f'"must_refuse": {lit[must_refuse]}, "expected_citations": {ids(expected)}, '
                f'"retrieved_ids": {ids(retrieved)}, "expected_retrieved": {lit[expected_retrieved]}, '
                f'"cost_usd": {num(cost)}, "latency_ms": {num(latency)}, "input_tokens": {num(tokens_in)}, '
                f'"output_tokens": {num(tokens_out)}, "truncated": {lit[truncated]}{citations}}}')

    def citation_fields(self, citations: Sequence[Sequence[Any]], precision: float | None, recall: float | None,
                        f1: float | None, correct: float | None, coverage: float | None,
                        problems: Sequence[str]) -> str:
        """The CITATION_FIELDS of a references model's line, byte for byte as ``json.dumps`` writes them after the
        other fields: ``, "citations": [...], ..., "marker_problems": [...]`` (:meth:`line`'s ``citations``). Each citation is ``(reference, articles, how, note, quote, quote_found, ...)``, a
        :class:`CitedReference`'s fields in order."""
        s, num, lit = self._str, _number, _LITERAL
        items = []
        for c in citations:
            ref, articles, how, note, quote, found = c[:6]
            items.append(f'{{"reference": {s(ref)}, "articles": {_ids(articles)}, '
                         f'"how": {"null" if how is None else s(how)}, "note": {s(note)}, '
                         f'"quote": {"null" if quote is None else _json_str(quote)}, "quote_found": {lit[found]}}}')
        return (f', "citations": [{", ".join(items)}], "cit_precision": {num(precision)}, '
                f'"cit_recall": {num(recall)}, "cit_f1": {num(f1)}, "cit_correct": {num(correct)}, '
                f'"coverage": {num(coverage)}, "marker_problems": {_ids(problems)}')


def citation_fields(citations: Sequence[Sequence[Any]], precision: float | None, recall: float | None,
                    f1: float | None, correct: float | None, coverage: float | None, problems: Sequence[str]) -> str:
    """The CITATION_FIELDS of a line, as ``json.dumps`` writes them after the others (see
    :meth:`ScoreLines.citation_fields`)."""
    return ScoreLines().citation_fields(citations, precision, recall, f1, correct, coverage, problems)


def iter_scores(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of a scores file, each row checked for the keys every reader joins on.

    Rows are :class:`ScoreLine`'s fields as a plain dict (older files may lack the
    fields added since: read them with ``.get``), not validated models: a
    million-line file is read in seconds, not minutes.
    """
    for n, row in iter_jsonl(path, hint="; run 'grace score' again"):
        yield n, _checked(row, path, n)


def iter_scores_at(path: Path) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """``(line, byte offset, length, row)``: :func:`iter_scores` for a reader that comes back for single lines
    (``read_score_at``), such as the results viewer's index."""
    try:
        fh = Path(path).open("rb")
    except OSError:
        raise GraceError(f"{path}: file not found; run 'grace score'") from None
    offset = 0
    with fh:
        for n, raw in enumerate(fh, 1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            yield n, start, len(raw), _checked(_line(path, n, raw), path, n)


def read_score_at(fh: IO[bytes], offset: int, length: int) -> dict[str, Any] | None:
    """One scores line by its place (from :func:`iter_scores_at`); None when the file changed under the reader."""
    fh.seek(offset)
    try:
        row = loads_line(fh.read(length))
    except (ValueError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) and "outcome" in row else None


def _line(path: Path, n: int, raw: bytes) -> dict[str, Any]:
    if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        row = loads_line(raw)
    except (ValueError, UnicodeDecodeError):
        raise GraceError(f"{where(path, n)}: not valid JSON; run 'grace score' again") from None
    if not isinstance(row, dict):
        raise GraceError(f"{where(path, n)}: expected a JSON object; run 'grace score' again")
    return row


def _checked(row: dict[str, Any], path: Path, n: int) -> dict[str, Any]:
    try:
        row["model"], row["question_id"] = str(row["model"]), str(row["question_id"])
        row["repeat"] = int(row.get("repeat") or 0)
        row["outcome"]  # noqa: B018 - presence check
    except (KeyError, TypeError, ValueError):
        raise GraceError(f"{where(path, n)}: a scores line needs model, question_id, repeat and outcome; "
                         "run 'grace score' again") from None
    return row
