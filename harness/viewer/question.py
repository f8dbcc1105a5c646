"""One question in full, for the Question page: gold, retrieval, every model's answer and why it scored as it did.

Everything here is data for the page (JSON), never HTML: answer and article text
are hostile and reach the page as strings that it puts into text nodes. An answer
is cut into pieces, its citations marked (an ID the lenient reading took, where it
stands in the text), so the page can link each to the article's text without
parsing anything itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.jsonl import iter_jsonl
from harness.run_folder.outcome_table import OUTCOME_KINDS
from harness.run_folder.run_dir import RunDir
from harness.scoring.outcomes import HITS, REFUSE, is_cut_off
from harness.viewer.grid import tone
from harness.viewer.index import RunIndex
from harness.viewer.markdown_tree import markdown_tree

_BRACKETED = re.compile(r"[\[(\u3010\u3014][^\[\]()\u3010\u3011\u3014\u3015\n]{1,300}[\])\u3011\u3015]")
ARTICLE_TEXT_LIMIT = 20_000  # characters of an article sent with a question page


def pieces(text: str, cited: list[str]) -> list[dict[str, Any]]:
    """``text`` as ``{"text"}`` pieces, the places that cite an article as ``{"text", "cites": [ids]}``.

    A bracketed group (``[ID: 17]``, ``(ID: 4, 9)``, ``[17]``) cites the IDs of the
    lenient reading that it names as whole tokens; with none found (a JSON answer),
    each quoted ``"17"`` does.
    """
    if not text:
        return []
    wanted = [c for c in dict.fromkeys(cited) if c]
    marks: list[tuple[int, int, list[str]]] = []
    if wanted:
        tokens = {c: re.compile(rf"(?<![\w\-]){re.escape(c)}(?![\w\-])") for c in wanted}
        for m in _BRACKETED.finditer(text):
            named = [c for c in wanted if tokens[c].search(m.group(0))]
            if named:
                marks.append((m.start(), m.end(), named))
        if not marks:
            for c in wanted:
                for m in re.finditer(rf'"{re.escape(c)}"', text):
                    marks.append((m.start(), m.end(), [c]))
            marks.sort()
    out: list[dict[str, Any]] = []
    at = 0
    for start, end, ids in marks:
        if start < at:
            continue
        if start > at:
            out.append({"text": text[at:start]})
        out.append({"text": text[start:end], "cites": ids})
        at = end
    if at < len(text):
        out.append({"text": text[at:]})
    return out


MAX_CITATIONS = 200  # citations of one answer sent to the page (a hostile answer may list thousands)
CITATION_FIGURES = ("cit_precision", "cit_recall", "cit_f1", "cit_correct", "coverage")


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def citations_of(score: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The answer's citations as the scorer resolved them (scores.jsonl ``citations``, a model read as references):
    each reference as the system wrote it, the articles it maps to, how, the note, the quote and whether it was found;
    ``unmapped`` when it resolved to nothing. None for a GRACE line (no such key). Read defensively: a damaged or
    hostile file gives strings, never markup, and at most :data:`MAX_CITATIONS`."""
    raw = score.get("citations")
    if not isinstance(raw, list):
        return None
    out = []
    for c in raw[:MAX_CITATIONS]:
        if not isinstance(c, dict):
            continue
        articles = [str(a) for a in c.get("articles") or [] if a is not None] if isinstance(c.get("articles"), list) else []
        found = c.get("quote_found")
        out.append({"reference": str(c.get("reference") or ""), "articles": articles, "how": _text_or_none(c.get("how")),
                    "note": str(c.get("note") or ""), "quote": _text_or_none(c.get("quote")),
                    "quote_found": found if isinstance(found, bool) else None, "unmapped": not articles})
    return out


def citation_figures(score: dict[str, Any]) -> dict[str, Any]:
    """The answer's citation figures (precision, recall, F1, cit_correct, coverage: numbers or None) and its marker
    problems, as scores.jsonl has them."""
    figures = {k: (v if isinstance(v := score.get(k), int | float) and not isinstance(v, bool) else None)
               for k in CITATION_FIGURES}
    problems = score.get("marker_problems")
    figures["marker_problems"] = [str(p) for p in problems[:50]] if isinstance(problems, list) else []
    return figures


def reference_pieces(text: str, citations: list[dict[str, Any]], structured: Any) -> list[dict[str, Any]]:
    """``text`` in pieces as :func:`pieces`, each marker of a references answer (``[1]``, ``[^a]``, ``【1†x】``, a
    link, ...) a ``{"text", "refs": [k]}`` piece, ``k`` the index of the citation its label resolves to (``refs`` empty:
    a marker the answer's list does not resolve). The markers are the scorer's own reading
    (:func:`harness.scoring.markers.read_markers`); the source list after the body is a plain piece."""
    from harness.scoring.markers import read_markers

    if not text:
        return []
    given = [str(c) for c in structured] if isinstance(structured, list) else None
    reading = read_markers(text, given)
    if not text.startswith(reading.body):  # footnote definitions inside the text: shown as written, unmarked
        return [{"text": text}]
    index: dict[str, int] = {}
    for k, c in enumerate(citations):
        index.setdefault(c["reference"], k)
    out: list[dict[str, Any]] = []
    at = 0
    for mk in reading.markers:
        if mk.start < at:
            continue
        if mk.start > at:
            out.append({"text": text[at:mk.start]})
        refs = [index[r] for r in dict.fromkeys(mk.references) if r is not None and r in index]
        out.append({"text": text[mk.start:mk.end], "refs": refs})
        at = mk.end
    if at < len(text):
        out.append({"text": text[at:]})
    return out


def why(outcome: str, cited: list[str], refused: bool, must_refuse: bool, expected: list[str],
        shown: list[str] | None, error: Any = None) -> str:
    """The outcome in a sentence: what the answer did against what the gold asks."""
    kind = OUTCOME_KINDS.get(outcome)
    if kind is None:  # an outcome this grace does not know (a newer grace's scores): its name
        return outcome
    ids = ", ".join(cited)
    return kind.sentence.format(ids=ids, gold=" or ".join(expected) or "none", shown=", ".join(shown or []),
                                error=_error_text(error), it="it" if len(cited) == 1 else "one of them",
                                citing=f", citing {ids}" if ids else "")


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return f"{error.get('kind', 'error')}: {error.get('message', '')}".strip(": ")
    return str(error or "no answer")


def judgements(run: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """The spot-check's verdicts per answer (judge repeat 0, the latest line per segment and pass)."""
    path = RunDir(run).judgements
    if not path.exists():
        return {}
    latest: dict[tuple, dict[str, Any]] = {}
    try:
        for _, row in iter_jsonl(path, torn_tail_ok=True):
            if int(row.get("judge_repeat") or 0) != 0:
                continue
            key = (str(row.get("model")), str(row.get("question_id")), int(row.get("repeat") or 0),
                   int(row.get("segment_index") or 0), str(row.get("pass") or "cited"))
            latest[key] = row
    except (GraceError, ValueError, TypeError):
        return {}
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for (model, qid, rep, seg, pass_), row in sorted(latest.items(), key=lambda kv: kv[0]):
        out.setdefault((model, qid, rep), []).append({
            "segment": seg, "pass": pass_, "text": str(row.get("segment_text") or ""),
            "citations": [str(c) for c in row.get("citations") or []], "supported": row.get("supported"),
            "explanation": str(row.get("explanation") or ""), "source": str(row.get("source") or ""),
            "judge": str(row.get("judge") or ""),
        })
    return out


def _retrieved(rows: dict[tuple[int, int], tuple[dict | None, dict | None]]) -> tuple[list[str], list, bool]:
    """The articles shown (from the first answer that says), their scores, and whether models saw different lists."""
    lists = []
    for score, row in rows.values():
        source = row if row is not None and row.get("retrieved_ids") else score
        ids = source.get("retrieved_ids") if source else None
        if isinstance(ids, list) and ids:
            scores = row.get("retrieval_scores") if row is not None else None
            scores = scores if isinstance(scores, list) else []
            lists.append(([str(i) for i in ids], [s if isinstance(s, int | float) else None for s in scores]))
    if not lists:
        return [], [], False
    ids, scores = lists[0]
    return ids, (scores + [None] * len(ids))[:len(ids)], any(other[0] != ids for other in lists[1:])


def question_page(runs: list[tuple[str, RunIndex, dict]], qid: str, annotate: dict[str, Any] | None = None) -> dict:
    """Question ``qid`` across the picked runs: ``runs`` is (run id, index, the run's spot-check verdicts)."""
    present = [(rid, ix, spot) for rid, ix, spot in runs if qid in ix.qindex]
    if not present:
        raise LookupError(f"no question {qid!r} in the runs picked")
    rid0, ix0, _ = present[0]
    q0 = ix0.qindex[qid]
    gold = ix0.gold[q0]
    must = gold == REFUSE
    expected = [] if must else [g for g in gold.split(";") if g]
    articles: dict[str, dict[str, Any]] = {}

    def article(aid: str, ix: RunIndex) -> None:
        if aid in articles or not aid:
            return
        found = ix.article(aid)
        text = found[1][:ARTICLE_TEXT_LIMIT] if found else ""
        # the text as written, and its Markdown as the page draws it (bold shown bold; HTML in it stays text)
        articles[aid] = {"id": aid, "in_kb": found is not None, "title": found[0] if found else "", "text": text,
                         "blocks": markdown_tree(text), "cut": bool(found and len(found[1]) > ARTICLE_TEXT_LIMIT)}

    for aid in expected:
        article(aid, ix0)
    sections = []
    for rid, ix, spot in present:
        q = ix.qindex[qid]
        rows = ix.answers_of(q)
        shown, scores, differs = _retrieved(rows)
        for aid in shown:
            article(aid, ix)
        models = []
        for m, model in enumerate(ix.models):
            asked = int(ix.arrays["asked"][q, m])
            if not asked:
                continue
            answers = []
            for rep in range(ix.repeats):
                if (m, rep) in rows:
                    score, row = rows[(m, rep)]
                    answers.append(_answer(score, row, rep, model, qid, must, expected, spot, ix, article))
            hits = int(ix.arrays["hits"][q, m])
            models.append({"model": model, "hits": hits, "n": asked, "hit": hits * 2 > asked,
                           "outcome": (name := _name(ix.arrays["outcome"][q, m])), "tone": tone(name),
                           "answers": answers})
        sections.append({"run": rid, "models": models,
                         "retrieved": [{"id": a, "score": s, "gold": a in expected} for a, s in zip(shown, scores,
                                                                                                    strict=True)],
                         "retrieval_differs": differs, "suspects": ix.suspects_of(q), "notes": ix.notes})
    return {"id": qid, "question": ix0.questions[q0], "gold": gold, "must_refuse": must, "expected": expected,
            "runs": sections, "articles": articles, "annotate": annotate}


def loop_view(loop: Any, cited: list[str]) -> dict[str, Any] | None:
    """A row's search loop as the page shows it: every call in turn order with its arguments and the articles it
    returned, the loop's outcome, and the cited articles no call returned. Model output, shown as text only."""
    if not isinstance(loop, dict):
        return None
    calls = []
    turns = loop.get("turns") if isinstance(loop.get("turns"), list) else []
    for n, turn in enumerate(turns, 1):
        for c in (turn.get("calls") if isinstance(turn, dict) and isinstance(turn.get("calls"), list) else [])[:100]:
            if not isinstance(c, dict):
                continue
            returned = c.get("returned") if isinstance(c.get("returned"), list) else []
            calls.append({"turn": n, "name": str(c.get("name") or "")[:200], "arguments": str(c.get("arguments") or "")[:500],
                          "returned": [str(i) for i in returned[:50]], "problem": str(c.get("problem") or ""),
                          "note": str(c.get("note") or "")[:300]})
    seen = {str(i) for i in loop.get("retrieved") or []} if isinstance(loop.get("retrieved"), list) else set()
    return {"tool_calls": loop.get("tool_calls"), "turns": len(turns), "outcome": str(loop.get("outcome") or ""),
            "calls": calls, "cited": cited, "unseen": [c for c in cited if c not in seen]}


def _name(code: Any) -> str:
    from harness.scoring.outcomes import OUTCOMES

    return OUTCOMES[int(code)] if int(code) >= 0 else ""


def _answer(score: dict[str, Any] | None, row: dict[str, Any] | None, rep: int, model: str, qid: str, must: bool,
            expected: list[str], spot: dict, ix: RunIndex, article) -> dict[str, Any]:
    """One response: its text in pieces, the scorer's two readings (from scores.jsonl) and why, and the spot-check's
    segments if it was checked."""
    text = row.get("response") if row is not None and isinstance(row.get("response"), str) else ""
    error = row.get("error") if row is not None else None
    shown = [str(i) for i in (score or {}).get("retrieved_ids") or []] or None
    readings: dict[str, Any] = {}
    for name, prefix in (("lenient", ""), ("strict", "strict_")):
        if score is None:
            readings[name] = {"outcome": "", "tone": "none", "cited": [], "refused": False, "hit": False,
                              "why": "not in scores.jsonl (re-score the run)"}
            continue
        outcome = str(score.get(f"{prefix}outcome") or score.get("outcome"))
        cited = [str(c) for c in score.get(f"{prefix}cited_ids") or []]
        refused = bool(score.get(f"{prefix}refused"))
        readings[name] = {"outcome": outcome, "tone": tone(outcome), "cited": cited, "refused": refused,
                          "hit": outcome in HITS,
                          "why": why(outcome, cited, refused, must, expected, shown, error)}
    readings["lenient"]["rule"] = str((score or {}).get("extraction") or "")
    own = [str(i) for i in row["system_retrieved"]] \
        if row is not None and isinstance(row.get("system_retrieved"), list) else None
    for c in readings["lenient"]["cited"] + (own or []):
        article(c, ix)
    loop = loop_view(row.get("tool_loop") if row is not None else None, readings["lenient"]["cited"])
    for c in loop["calls"] if loop is not None else []:
        for aid in c["returned"]:
            article(aid, ix)
    resolved = citations_of(score) if score is not None else None
    for c in resolved or []:
        for aid in c["articles"]:
            article(aid, ix)
    return {
        "repeat": rep,
        "pieces": (pieces(text, readings["lenient"]["cited"]) if resolved is None
                   else reference_pieces(text, resolved, (row or {}).get("citations"))),
        "note": "" if row is not None else "the response is not on file",
        "lenient": readings["lenient"],
        "strict": readings["strict"],
        "truncated": bool((score or {}).get("truncated")) or is_cut_off((row or {}).get("finish_reason")),
        "latency_ms": (row or {}).get("latency_ms"),
        "cost_usd": (row or {}).get("cost_usd"),
        "spotcheck": spot.get((model, qid, rep), []),
        # a system that retrieved for itself (python:, http:, imported logs): what it retrieved, best first (the
        # page lists them with the answer, each linked to its article)
        **({"system_retrieved": own} if own is not None else {}),
        # a model that searched (or a system's own loop): each call, what it returned, what of it was cited
        **({"tool_loop": loop} if loop is not None else {}),
        # a model read as references (scores.jsonl has citations): every citation with how it resolved, and the
        # answer's citation figures; absent for a GRACE line
        **({"citations": resolved, "citation_figures": citation_figures(score)} if resolved is not None else {}),
    }
