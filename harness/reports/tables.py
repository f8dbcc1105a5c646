"""The HTML tables of the report: leaderboard, per-model details, pairwise tests,
per-article recall (weakest first) and the spot-check block.

Every value from a file is escaped here; the page assembles these strings as-is.
"""

from __future__ import annotations

from html import escape
from typing import Any

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import (
    COLUMNS,
    DASH,
    DETAIL_COLUMNS,
    DETAIL_LEGEND,
    LEGEND,
    count,
    detail_rows,
    error_note,
    errors_text,
    leaderboard_rows,
    millis,
    number,
    pct,
    pct_ci,
    truncation_notes,
    usd,
)

VISIBLE_ARTICLES = 25
_NUMERIC = {"rank", "accuracy", "strict", "calibration", "invalid", "unshown", "cost", "latency"}


def table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(), cls: str = "") -> str:
    """Cells are already-escaped HTML."""
    head = "".join(f'<th{" class=num" if i in numeric else ""}>{h}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{c}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def leaderboard_table(inputs: ReportInputs) -> str:
    rows = leaderboard_rows(inputs.models, inputs.leaderboard)
    numeric = {i for i, (key, _) in enumerate(COLUMNS) if key in _NUMERIC}
    cells = []
    for row in rows:
        values = [escape(row.cells[key]) for key, _ in COLUMNS]
        values[1] = f"<strong>{values[1]}</strong>"
        if row.errors:
            values[1] += f' <span class="bad">({errors_text(row.errors)})</span>'
        values[-1] = f'<span class="group">{values[-1]}</span>'
        cells.append(values)
    note = error_note(rows)
    warning = f'<p class="warning">{escape(note)}</p>' if note else ""
    warning += "".join(f'<p class="warning">{escape(cut)}</p>'
                       for cut in truncation_notes(inputs.models, inputs.leaderboard))
    legend = "".join(f"<li>{escape(item)}</li>" for item in LEGEND)
    return (table([escape(h) for _, h in COLUMNS], cells, numeric, "leaderboard") + warning
            + f'<ul class="legend">{legend}</ul>')


def _parsed_by(rules: Any) -> str:
    if not isinstance(rules, dict):
        return DASH
    parts = [f"{escape(str(k))} {count(v)}" for k, v in rules.items() if number(v)]
    return ", ".join(parts) or DASH


def details_table(inputs: ReportInputs) -> str:
    """Small tables (quality; repeats; cost and speed) so none needs a horizontal scroll on a laptop."""
    quality = ["Model", "n", "Questions", "Errors", "Macro F1", "Weighted F1", "Refusal recall", "Answer rate",
               "Recall@k", "Parsed by"]
    spend = ["Model", "Total cost", "Cost / 1k Q", "Input tokens", "Output tokens", "p50 latency", "p95 latency"]
    again = ["Model", "Repeats", "Agreement", "Accuracy per repeat", "Std"]
    rows_q, rows_s, rows_r = [], [], []
    for name in inputs.leaderboard:
        m = inputs.models[name]
        refusal, retrieval = m.get("refusal") or {}, m.get("retrieval") or {}
        repeats, cost, latency = m.get("repeat_stats"), m.get("cost") or {}, m.get("latency") or {}
        recall = pct(retrieval.get("recall_at_k"))
        if recall != DASH and retrieval.get("k") is not None:
            recall += f" (k={escape(str(retrieval.get('k')))})"
        label = f"<strong>{escape(name)}</strong>"
        rows_q.append([
            label, count(m.get("n")), count(m.get("n_questions")), count(m.get("error_count")),
            pct(m.get("macro_f1")), pct(m.get("weighted_f1")), pct(refusal.get("should_refuse_did")),
            pct(refusal.get("should_answer_did")), recall, _parsed_by(m.get("extraction_rules")),
        ])
        rows_s.append([
            label, escape(usd(cost.get("total_usd"))), escape(usd(cost.get("per_1k_questions_usd"))),
            count(cost.get("input_tokens")), count(cost.get("output_tokens")), millis(latency.get("p50_ms")),
            millis(latency.get("p95_ms")),
        ])
        if isinstance(repeats, dict):
            per = repeats.get("accuracy_per_repeat")
            per_text = ", ".join(pct(a) for a in per) if isinstance(per, list) else DASH
            rows_r.append([label, count(repeats.get("n_repeats")), pct(repeats.get("question_agreement")), per_text,
                           pct(repeats.get("accuracy_std"), 2)])
    caption = ('<p class="caption">n: responses scored; Questions: distinct gold questions asked. Refusal recall: '
               "share of must-refuse questions the model refused. Answer rate: share of answerable questions it "
               "answered rather than refused. Recall@k: share of answerable questions whose expected article was "
               "retrieved. Parsed by: how many responses each extraction rule read (inline: the prompt's own format; "
               "json: a JSON answer; lenient: another citation style; none: nothing found).</p>")
    html = table(quality, rows_q, set(range(1, len(quality) - 1))) + caption
    details = detail_rows(inputs.models, inputs.leaderboard)
    html += ("<h3>Answer format</h3>"
             + table([escape(h) for _, h in DETAIL_COLUMNS],
                     [[f"<strong>{escape(d['model'])}</strong>"] + [escape(d[k]) for k, _ in DETAIL_COLUMNS[1:]]
                      for d in details], set(range(1, len(DETAIL_COLUMNS))))
             + '<p class="caption">No citation, Invalid cit., Unshown cit.: shares of responses with that outcome. '
             f"{escape(DETAIL_LEGEND)}</p>")
    if rows_r:
        html += ("<h3>Repeats</h3>" + table(again, rows_r, {1, 2, 4})
                 + '<p class="caption">Agreement: for each question asked more than once, the share of its repeats '
                 "giving its most common answer, averaged over questions. Std: standard deviation of accuracy across "
                 "repeats.</p>")
    return html + "<h3>Cost and speed</h3>" + table(spend, rows_s, set(range(1, len(spend))))


def pairwise_table(inputs: ReportInputs) -> str:
    pairs = [p for p in inputs.report.get("pairwise") or [] if isinstance(p, dict)]
    if not pairs:
        if len(inputs.models) < 2:
            return '<p class="muted">Only one model, so no pairwise tests.</p>'
        return '<p class="muted">No pairwise tests in the report.</p>'
    rows = []
    for p in pairs:
        pv, adj = number(p.get("p_value")), number(p.get("p_adjusted"))
        rows.append([
            escape(str(p.get("a"))), escape(str(p.get("b"))), count(p.get("n")), count(p.get("a_only")),
            count(p.get("b_only")), DASH if pv is None else f"{pv:.3g}", DASH if adj is None else f"{adj:.3g}",
            '<span class="good">yes</span>' if p.get("significant") else "no",
        ])
    headers = ["Model A", "Model B", "Paired n", "Only A right", "Only B right", "p (McNemar exact)", "p (Holm)",
               "Significant"]
    return table(headers, rows, {2, 3, 4, 5, 6})


def _recall_cell(value: float | None, support: Any) -> str:
    if value is None:
        return f'<td class="num">{DASH}</td>'
    hue = round(120 * value)
    tip = f' title="recall {value:.0%} of {count(support)}"'
    return f'<td class="num" style="background:hsl({hue},55%,86%)"{tip}>{value:.0%}</td>'


def article_rows(inputs: ReportInputs) -> list[tuple[str, float, int, list[float | None]]]:
    """(label, mean recall, support, recall per model), weakest first; labels no gold question uses are skipped."""
    out = []
    labels: dict[str, int] = {}
    for name in inputs.leaderboard:
        for label, stats in (inputs.models[name].get("per_class") or {}).items():
            support = number((stats or {}).get("support")) or 0
            if support > 0:
                labels[label] = max(labels.get(label, 0), int(support))
    for label, support in labels.items():
        recalls = [number(((inputs.models[m].get("per_class") or {}).get(label) or {}).get("recall"))
                   for m in inputs.leaderboard]
        known = [r for r in recalls if r is not None]
        mean = sum(known) / len(known) if known else 0.0
        out.append((label, mean, support, recalls))
    out.sort(key=lambda r: (r[1], -r[2], r[0]))
    return out


def _breakable(name: str) -> str:
    """Let a long model name wrap after ':' or '/' rather than mid-word in a narrow column header."""
    return escape(name).replace(":", ":<wbr>").replace("/", "/<wbr>")


def article_table(inputs: ReportInputs) -> str:
    rows = article_rows(inputs)
    if not rows:
        return '<p class="muted">No per-article results in the report.</p>'
    heads = (["Article", "Title", '<span class="num">Support</span>']
             + [f'<span class="model" title="{escape(m)}">{_breakable(m)}</span>' for m in inputs.leaderboard]
             + ["Mean"])

    def render(chunk: list[tuple[str, float, int, list[float | None]]]) -> str:
        body = []
        for label, mean, support, recalls in chunk:
            title = "questions that must be refused" if label == "REFUSE" else inputs.title(label)
            cells = [f"<td><code>{escape(label)}</code></td>", f'<td class="title">{escape(title) or DASH}</td>',
                     f'<td class="num">{support:,}</td>']
            cells += [_recall_cell(r, support) for r in recalls] + [_recall_cell(mean, support)]
            body.append("<tr>" + "".join(cells) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in heads)
        return (f'<div class="scroll"><table class="articles"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table></div>')

    html = render(rows[:VISIBLE_ARTICLES])
    if len(rows) > VISIBLE_ARTICLES:
        rest = len(rows) - VISIBLE_ARTICLES
        html += f"<details><summary>The other {rest:,} articles</summary>{render(rows[VISIBLE_ARTICLES:])}</details>"
    return html


def _rate(block: dict[str, Any], key: str) -> str:
    """The spot-check's own wording ("100.0% (n=3, too few for an interval)") where it gave one."""
    shown = (block.get("display") or {}).get(key) if isinstance(block.get("display"), dict) else None
    return escape(str(shown) if isinstance(shown, str) else pct_ci(block.get(key), block.get(f"{key}_ci95")))


def spotcheck_section(inputs: ReportInputs) -> str:
    """Renders ``report["spotcheck"]`` as written by ``grace spotcheck``; absent until that has run."""
    spot = inputs.report.get("spotcheck")
    if not isinstance(spot, dict):
        return ('<p class="muted">No spot-check yet. <code>grace spotcheck</code> has a judge model fact-check a '
                "sample of correctly cited answers for unsupported claims.</p>")
    judge = spot.get("judge") or {}
    kappa = number(judge.get("kappa"))
    if judge.get("calibrated") is False:
        mark = ('<span class="badge warn-badge">judge not calibrated</span> The judge has not been checked against '
                "human labels: treat these rates as rough.")
    elif kappa is not None:
        mark = f'<span class="badge ok-badge">judge calibrated</span> Cohen\'s kappa vs human labels {kappa:.2f}.'
    else:
        mark = '<span class="badge warn-badge">judge calibration unknown</span>'
    head = f"<p>Judge: <code>{escape(str(judge.get('model', '?')))}</code> {mark}</p>"
    per_model = spot.get("models") or spot.get("per_model") or {}
    rows = []
    for name in [m for m in inputs.leaderboard if m in per_model] + [m for m in per_model if m not in inputs.models]:
        block = per_model[name] if isinstance(per_model[name], dict) else {}
        rows.append([f"<strong>{escape(str(name))}</strong>", count(block.get("n")), _rate(block, "groundedness"),
                     _rate(block, "hallucination_rate"), _rate(block, "hallucination_risk")])
    headers = ["Model", "Checked", "Groundedness ± 95% CI", "Hallucination rate ± 95% CI",
               "Hallucination risk ± 95% CI"]
    notes = spot.get("notes") or spot.get("explanation")
    explain = ('<p class="caption"><strong>How to read:</strong> a judge model checks whether each claim in a '
               "correctly cited answer is supported by the cited article. Groundedness is the share of checked "
               "segments (claims) that are supported; the hallucination rate is the share of checked answers with "
               "at least one unsupported segment; hallucination risk = 1 − accuracy × (1 − hallucination rate), "
               "the chance an answer is wrong or unfaithful. Intervals are 95% CIs."
               + (f" The judge's own run-to-run spread of groundedness is {100 * float(spot['max_judge_spread']):.1f} "
                  "points: differences between models smaller than that are noise."
                  if isinstance(spot.get("max_judge_spread"), int | float) else "")
               + (f" {escape(str(notes))}" if notes else "") + "</p>")
    return head + (table(headers, rows, {1, 2, 3, 4}) if rows else '<p class="muted">No models checked.</p>') + explain



def label_suspects_section(inputs: ReportInputs) -> str:
    """A short list of gold labels most models contradict: a wrong label reads as every model's error."""
    block = inputs.report.get("label_suspects") or {}
    top = block.get("top") or []
    if not top:
        return ""
    gold_path = (inputs.report.get("gold") or {}).get("path", "GOLD.csv")
    kb_path = (inputs.report.get("kb") or {}).get("path", "KB")
    rows = []
    for s in top:
        qids = str(s.get("question_id", ""))
        question = inputs.questions.get(qids, "") if ";" not in qids else ""
        rows.append([escape(qids), escape(question or str(s.get("question", ""))), escape(str(s.get("gold", ""))),
                     escape(str(s.get("suggested", ""))), escape(str(s.get("kind", ""))), escape(str(s.get("reason", "")))])
    more = block.get("n", len(top)) - len(top)
    kinds = ", ".join(f"{escape(str(k))} {int(n)}" for k, n in (block.get("by_kind") or {}).items())
    cmd = (f"grace annotations audit {gold_path} --kb {kb_path} --run {inputs.out_dir} --out suspects.csv && "
           f"grace annotate {kb_path} --from-gold {gold_path} --only suspects.csv")
    return ('<p class="caption">Gold labels that most models contradict. A wrong label is read as a model error by '
            "every row of this report, so check these before trusting small differences. "
            f"{int(block.get('n', len(top)))} in all ({kinds}).</p>"
            + table(["Question", "Text", "Gold", "Models say", "Rule", "Why"], rows)
            + (f'<p class="muted">{more} more.</p>' if more > 0 else "")
            + f"<p>Review them: <code>{escape(cmd)}</code></p>")
