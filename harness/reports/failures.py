"""A sample of wrong responses per model, with the text the model wrote.

Numbers say how often a model fails; reading a handful of failures says why
(wrong format, wrong article, refusing too eagerly). The sample is seeded from
the report's seed so the same run always shows the same examples, and it cycles
through the outcome kinds so one common failure does not hide the rarer ones.

The response text, question and article titles are untrusted: everything goes
through ``html.escape`` and lands in a ``<pre>`` as text.
"""

from __future__ import annotations

import random
from html import escape
from typing import Any

from harness.reports.inputs import CORRECT, ReportInputs, response_text, row_key
from harness.reports.svg import OTHER_COLOR, OUTCOME_COLORS, OUTCOME_LABELS
from harness.run_folder.run_dir import RunDir

PER_MODEL = 6
MAX_CHARS = 3000


def sample_failures(inputs: ReportInputs, model: str, limit: int = PER_MODEL) -> list[dict[str, Any]]:
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for row in inputs.scores:
        if row.get("model") == model and row.get("outcome") not in CORRECT:
            by_outcome.setdefault(str(row.get("outcome")), []).append(row)
    rng = random.Random(f"{inputs.report.seed}:{model}")
    queues = []
    for outcome in [o for o in OUTCOME_COLORS if o in by_outcome] + sorted(set(by_outcome) - set(OUTCOME_COLORS)):
        rows = sorted(by_outcome[outcome], key=lambda r: (str(r.get("question_id")), r.get("repeat") or 0))
        rng.shuffle(rows)
        queues.append(rows)
    picked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for distinct in (True, False):  # different questions first; repeats of one only if nothing else is left
        progress = True
        while len(picked) < limit and progress:
            progress = False
            for q in queues:
                for i in range(len(q) - 1, -1, -1):
                    if len(picked) < limit and (not distinct or str(q[i].get("question_id")) not in seen):
                        row = q.pop(i)
                        picked.append(row)
                        seen.add(str(row.get("question_id")))
                        progress = True
                        break
    return picked


def count_failures(inputs: ReportInputs, model: str) -> int:
    return inputs.failure_counts.get(model, 0)


def _ids(inputs: ReportInputs, ids: Any) -> str:
    if not isinstance(ids, list) or not ids:
        return "<em>none</em>"
    parts = []
    for raw in ids:
        label = str(raw)
        t = inputs.title(label)
        missing = bool(inputs.titles) and not t and label != "REFUSE"
        text = f"[{label}] {t}" if t else f"[{label}]"
        cls = ' class="bad"' if missing else ""
        hint = ' title="not an article in the KB"' if missing else ""
        parts.append(f"<span{cls}{hint}>{escape(text)}</span>")
    return "; ".join(parts)


def _error_text(row: dict[str, Any] | None) -> str | None:
    err = (row or {}).get("error")
    if isinstance(err, dict):
        return " ".join(str(err.get(k)) for k in ("kind", "message") if err.get(k)) or str(err)
    return str(err) if err else None


def failure_card(inputs: ReportInputs, row: dict[str, Any]) -> str:
    outcome = str(row.get("outcome"))
    qid = str(row.get("question_id"))
    response = inputs.responses.get(row_key(row))
    color = OUTCOME_COLORS.get(outcome, OTHER_COLOR)
    repeat = f" · repeat {row.get('repeat')}" if row.get("repeat") else ""
    expected = "must refuse" if row.get("must_refuse") else _ids(inputs, row.get("expected_citations"))
    retrieved = row.get("expected_retrieved")
    lines = [
        '<article class="failure">',
        f'<header><span class="badge" style="background:{color}">{escape(OUTCOME_LABELS.get(outcome, outcome))}</span>'
        f" question <code>{escape(qid)}</code>{escape(repeat)}</header>",
        "<dl>",
    ]
    question = inputs.questions.get(qid)
    if question:
        lines.append(f"<dt>Question</dt><dd>{escape(question)}</dd>")
    lines.append(f"<dt>Expected</dt><dd>{expected}</dd>")
    lines.append(f"<dt>Cited</dt><dd>{'refused' if row.get('refused') else _ids(inputs, row.get('cited_ids'))}</dd>")
    if retrieved is not None:
        was = "was" if retrieved else "was <strong>not</strong>"
        lines.append(f"<dt>Retrieved</dt><dd>expected article {was} retrieved</dd>")
    lines.append("</dl>")
    text, error = response_text(response), _error_text(response)
    if error:
        lines.append(f'<p class="error">call failed: {escape(error)}</p>')
    if text is not None:
        shown = text
        if len(text) > MAX_CHARS:
            shown = text[:MAX_CHARS] + f"\n… ({len(text) - MAX_CHARS:,} more characters)"
        lines.append(f'<pre class="response">{escape(shown)}</pre>')
    elif not error and inputs.responses:  # with no responses file at all, the page says so once, at the top
        lines.append('<p class="muted">response text not found in the responses file</p>')
    lines.append("</article>")
    return "\n".join(lines)


def failures_section(inputs: ReportInputs) -> str:
    if not inputs.scores and not RunDir(inputs.out_dir).scores.exists():
        return '<p class="muted">No scores.jsonl in this folder, so no failures to show.</p>'
    out = []
    for model in inputs.leaderboard:
        total = count_failures(inputs, model)
        rows = sample_failures(inputs, model)
        summary = f"{escape(model)}: {len(rows)} of {total:,} wrong responses"
        opened = " open" if model == inputs.leaderboard[0] else ""
        body = "\n".join(failure_card(inputs, r) for r in rows) or '<p class="muted">No wrong responses.</p>'
        out.append(f'<details class="model-failures"{opened}><summary>{summary}</summary>\n{body}\n</details>')
    return "\n".join(out)
