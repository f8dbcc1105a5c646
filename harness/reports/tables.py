"""The HTML tables of the report: leaderboard, per-model details, pairwise tests,
per-article recall (weakest first) and the spot-check block.

Every value from a file is escaped here; the page assembles these strings as-is.
"""

from __future__ import annotations

from html import escape
from typing import Any

from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import (
    CATEGORY_LEGEND,
    CITATION_COLUMNS,
    CITATION_LEGEND,
    CITATION_PAIR_HEADERS,
    CITATION_PAIRS_LEGEND,
    DASH,
    DETAIL_COLUMNS,
    DETAIL_LEGEND,
    PPI_TITLE,
    category_table,
    citation_models,
    citation_pairs,
    columns_for,
    count,
    error_note,
    errors_text,
    labels_cell,
    leaderboard_rows,
    legend_for,
    millis,
    number,
    pct,
    pct_ci,
    ppi_note,
    truncation_notes,
    usd,
)
from harness.run_folder.report import SpotcheckModel

VISIBLE_ARTICLES = 25


def table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(), cls: str = "") -> str:
    """Cells are already-escaped HTML."""
    head = "".join(f'<th{" class=num" if i in numeric else ""}>{h}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{c}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def leaderboard_table(inputs: ReportInputs) -> str:
    columns = columns_for(inputs.ranked)
    rows = leaderboard_rows(inputs.ranked, columns)
    numeric = {i for i, c in enumerate(columns) if c.numeric}
    cells = []
    for row in rows:
        values = []
        for c in columns:
            value = escape(row.cells[c.key])
            if c.key == "model":
                value = f"<strong>{value}</strong>"
                if row.errors:
                    value += f' <span class="bad">({errors_text(row.errors)})</span>'
            elif c.key == "group":
                value = f'<span class="group">{value}</span>'
            values.append(value)
        cells.append(values)
    note = error_note(rows)
    ppi = ppi_note(inputs.report)
    warning = f'<p class="warning">{escape(note)}</p>' if note else ""
    warning += "".join(f'<p class="warning">{escape(cut)}</p>' for cut in truncation_notes(inputs.ranked))
    legend = "".join(f"<li>{escape(item)}</li>" for item in legend_for(columns))
    return ((f'<p class="caption"><strong>{PPI_TITLE}:</strong> {escape(ppi)}</p>' if ppi else "")
            + table([escape(c.header) for c in columns], cells, numeric, "leaderboard") + warning
            + f'<ul class="legend">{legend}</ul>')


def _parsed_by(rules: dict[str, int]) -> str:
    parts = [f"{escape(str(k))} {count(v)}" for k, v in rules.items() if number(v)]
    return ", ".join(parts) or DASH


def details_table(inputs: ReportInputs) -> str:
    """Small tables (quality; repeats; cost and speed) so none needs a horizontal scroll on a laptop."""
    quality = ["Model", "n", "Questions", "Errors", "Macro F1", "Weighted F1", "Refusal recall", "Answer rate",
               "Recall@k", "Parsed by"]
    spend = ["Model", "Total cost", "Cost / 1k Q", "Input tokens", "Output tokens", "p50 latency", "p95 latency"]
    again = ["Model", "Repeats", "Agreement", "Accuracy per repeat", "Std"]
    rows_q, rows_s, rows_r = [], [], []
    for m in inputs.ranked:
        refusal, retrieval, repeats, cost, latency = m.refusal, m.retrieval, m.repeat_stats, m.cost, m.latency
        recall = pct(retrieval.recall_at_k) if retrieval is not None else DASH
        if recall != DASH:
            recall += f" (k={retrieval.k})"
        label = f"<strong>{escape(m.model)}</strong>"
        rows_q.append([
            label, count(m.n), count(m.n_questions), count(m.error_count), pct(m.macro_f1), pct(m.weighted_f1),
            pct(refusal.should_refuse_did), pct(refusal.should_answer_did), recall, _parsed_by(m.extraction_rules),
        ])
        rows_s.append([
            label, escape(usd(cost.total_usd)), escape(usd(cost.per_1k_questions_usd)), count(cost.input_tokens),
            count(cost.output_tokens), millis(latency.p50_ms), millis(latency.p95_ms),
        ])
        if repeats is not None:
            rows_r.append([label, count(repeats.n_repeats), pct(repeats.question_agreement),
                           ", ".join(pct(a) for a in repeats.accuracy_per_repeat), pct(repeats.accuracy_std, 2)])
    caption = ('<p class="caption">n: responses scored; Questions: distinct gold questions asked. Refusal recall: '
               "share of must-refuse questions the model refused. Answer rate: share of answerable questions it "
               "answered rather than refused. Recall@k: share of answerable questions whose expected article was "
               "retrieved. Parsed by: how many responses each extraction rule read (inline: the prompt's own format; "
               "json: a JSON answer; lenient: another citation style; none: nothing found).</p>")
    html = table(quality, rows_q, set(range(1, len(quality) - 1))) + caption
    details = leaderboard_rows(inputs.ranked, DETAIL_COLUMNS)
    html += ("<h3>Answer format</h3>"
             + table([escape(c.header) for c in DETAIL_COLUMNS],
                     [[f"<strong>{escape(d.cells[c.key])}</strong>" if c.key == "model" else escape(d.cells[c.key])
                       for c in DETAIL_COLUMNS] for d in details],
                     {i for i, c in enumerate(DETAIL_COLUMNS) if c.numeric})
             + '<p class="caption">No citation, Invalid cit., Unshown cit.: shares of responses with that outcome. '
             f"{escape(DETAIL_LEGEND)}</p>")
    if rows_r:
        html += ("<h3>Repeats</h3>" + table(again, rows_r, {1, 2, 4})
                 + '<p class="caption">Agreement: for each question asked more than once, the share of its repeats '
                 "giving its most common answer, averaged over questions. Std: standard deviation of accuracy across "
                 "repeats.</p>")
    return html + "<h3>Cost and speed</h3>" + table(spend, rows_s, set(range(1, len(spend))))


def category_section(inputs: ReportInputs, heatmap: str | None) -> str:
    """Accuracy per gold category and model: the table (the same as leaderboard.md's) and its heatmap; empty
    when the gold file has no categories."""
    headers, rows = category_table(inputs.report.categories, inputs.ranked)
    if not rows:
        return ""
    head = [escape(h) if i < 2 else f'<span class="model" title="{escape(h)}">{_breakable(h)}</span>'
            for i, h in enumerate(headers)]
    body = [[f"<strong>{escape(r[0])}</strong>", *map(escape, r[1:])] for r in rows]
    figure = (f"<figure>{heatmap}<figcaption><strong>How to read:</strong> each cell is a model's accuracy on one "
              "category's questions, greener for higher; hover a cell for its 95% CI and the number of questions."
              "</figcaption></figure>") if heatmap else ""
    return (table(head, body, set(range(1, len(headers))), "categories")
            + f'<p class="caption">{escape(CATEGORY_LEGEND)}</p>' + figure)


def pairwise_table(inputs: ReportInputs) -> str:
    pairs = inputs.report.pairwise
    if not pairs:
        if len(inputs.models) < 2:
            return '<p class="muted">Only one model, so no pairwise tests.</p>'
        return '<p class="muted">No pairwise tests in the report.</p>'
    rows = []
    for p in pairs:
        pv, adj = number(p.p_value), number(p.p_adjusted)
        rows.append([
            escape(p.a), escape(p.b), count(p.n), count(p.a_only), count(p.b_only),
            DASH if pv is None else f"{pv:.3g}", DASH if adj is None else f"{adj:.3g}",
            '<span class="good">yes</span>' if p.significant else "no",
        ])
    headers = ["Model A", "Model B", "Paired n", "Only A right", "Only B right", "p (McNemar exact)", "p (Holm)",
               "Significant"]
    return table(headers, rows, {2, 3, 4, 5, 6})


def ppi_section(inputs: ReportInputs) -> str:
    """A prediction-powered report's figures beside the human-only ones, and its pairwise differences; "" otherwise."""
    ppi = inputs.report.ppi
    if ppi is None:
        return ""
    rows = []
    for m in inputs.ranked:
        p = m.ppi
        if p is None:
            continue
        acc, cal = p.accuracy, p.refusal_calibration
        rows.append([escape(m.model), pct_ci(acc.value, acc.ci95), pct_ci(acc.human_only, acc.human_only_ci95),
                     pct(p.machine_accuracy), DASH if acc.lam is None else f"{acc.lam:.2f}",
                     labels_cell(p),
                     DASH if acc.effective_labels is None else f"{acc.effective_labels:,.0f}",
                     DASH if cal is None else pct_ci(cal.value, cal.ci95)])
    head = ["Model", "PPI accuracy [95%]", "Human labels only [95%]", "Against machine labels", "lambda",
            "Labels (human + machine)", "Effective labels", "PPI refusal calib. [95%]"]
    pairs = [[escape(x.a), escape(x.b), f"{count(x.n_human)} + {count(x.n_machine)}",
              DASH if x.difference is None else pct_ci(x.difference, x.ci95), f"{x.p_value:.3g}", f"{x.p_adjusted:.3g}",
              '<span class="good">yes</span>' if x.significant else "no"] for x in ppi.pairwise]
    caption = ('<p class="caption">Each PPI figure is the figure against the machine labels over every question, '
               "corrected by the machine labels' error on the human-labelled ones; lambda is the weight PPI++ gave "
               "the machine labels (0: the human labels alone). Effective labels: how many human labels the "
               "human-only interval would need to be as narrow. The intervals are valid whatever the machine labels' "
               "quality, provided the human-labelled questions are a random draw of all of them (see the notes "
               "above). Against machine labels: the uncorrected accuracy, for comparison.</p>")
    return (caption + table(head, rows, {1, 2, 3, 4, 5, 6, 7})
            + ("<h3>Differences between models, prediction-powered</h3>"
               + table(["Model A", "Model B", "Questions (human-labelled + others)", "A − B [95%]", "p", "p (Holm)",
                        "Significant"], pairs, {2, 3, 4, 5}) if pairs else ""))


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
    models = inputs.ranked
    for m in models:
        for label, stats in m.per_class.items():
            if stats.support > 0:
                labels[label] = max(labels.get(label, 0), stats.support)
    for label, support in labels.items():
        recalls = [number(stats.recall) if (stats := m.per_class.get(label)) is not None else None for m in models]
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


def _rate(block: SpotcheckModel, key: str) -> str:
    """The spot-check's own wording ("100.0% (n=3, too few for an interval)") where it gave one."""
    shown = (block.display or {}).get(key)
    return escape(shown if shown is not None else pct_ci(getattr(block, key), getattr(block, f"{key}_ci95")))


def spotcheck_section(inputs: ReportInputs) -> str:
    """Renders ``report["spotcheck"]`` as written by ``grace spotcheck``; absent until that has run."""
    spot = inputs.report.spotcheck
    if spot is None:
        return ('<p class="muted">No spot-check yet. <code>grace spotcheck</code> has a judge model fact-check a '
                "sample of correctly cited answers for unsupported claims.</p>")
    judge = spot.judge  # spotcheck.json's judge block, as a dict (harness.spotcheck.spotcheck_records.JudgeBlock)
    kappa = number(judge.get("kappa"))
    if judge.get("calibrated") is False:
        mark = ('<span class="badge warn-badge">judge not calibrated</span> The judge has not been checked against '
                "human labels: treat these rates as rough.")
    elif kappa is not None:
        mark = f'<span class="badge ok-badge">judge calibrated</span> Cohen\'s kappa vs human labels {kappa:.2f}.'
    else:
        mark = '<span class="badge warn-badge">judge calibration unknown</span>'
    head = f"<p>Judge: <code>{escape(str(judge.get('model', '?')))}</code> {mark}</p>"
    per_model = spot.models
    claims = spot.mode == "claims"
    rows, quality = [], []
    for name in [m for m in inputs.leaderboard if m in per_model] + [m for m in per_model if m not in inputs.models]:
        block = per_model[name]
        first = ([count(block.n), count(block.n_claims), _rate(block, "faithfulness"), _rate(block, "partial_rate")]
                 if claims else [count(block.n), _rate(block, "groundedness")])
        rows.append([f"<strong>{escape(name)}</strong>", *first, _rate(block, "hallucination_rate"),
                     _rate(block, "hallucination_risk") if block.hallucination_risk is not None else "-",
                     _rate(block, "coverage") if block.coverage is not None else "-"])
        g = block.quality
        if g:
            def grade(k: str, g: dict = g) -> str:
                v, ci = g.get(k), g.get(f"{k}_ci95")
                shown = "-" if v is None else (f"{100 * v:.0f}%" if k == "usefulness" else f"{v:.2f}")
                return escape(shown + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and k != "usefulness" else "")
                              + f" (n={g.get(f'{k}_n', 0)})")
            quality.append([f"<strong>{escape(name)}</strong>", grade("relevancy"), grade("completeness"),
                            grade("faithfulness"), grade("usefulness"), count(g.get("n_refusals"))])
    headers = (["Model", "Answers", "Claims", "Faithfulness ± 95% CI", "Partial claims"] if claims
               else ["Model", "Checked", "Groundedness ± 95% CI"])
    headers += ["Hallucination rate ± 95% CI", "Hallucination risk ± 95% CI", "Coverage ± 95% CI"]
    notes = spot.notes
    explain = ('<p class="caption"><strong>How to read:</strong> a judge model checks whether each claim in a '
               "correctly cited answer is supported by the cited article. Groundedness is the share of checked "
               "segments (claims) that are supported; the hallucination rate is the share of checked answers with "
               "at least one unsupported segment; hallucination risk = 1 − accuracy × (1 − hallucination rate), "
               "the chance an answer is wrong or unfaithful. Intervals are 95% CIs."
               + (f" The judge's own run-to-run spread of groundedness is {100 * spot.max_judge_spread:.1f} "
                  "points: differences between models smaller than that are noise."
                  if spot.max_judge_spread is not None else "")
               + (f" {escape(str(notes))}" if notes else "") + "</p>")
    unit = ("claims (the judge splits each answer into atomic claims and labels each supported, partial or "
            "unsupported; faithfulness is the supported share)" if claims else "segments (one verdict per citation)")
    scope = {"hits": "correctly cited answers", "answered": "every answer that is not a refusal",
             "all": "every answer and refusal"}.get(spot.scope or "hits", "correctly cited answers")
    head += f'<p class="caption">Checked: {escape(scope)}, by {escape(unit)}.</p>'
    body = table(headers, rows, set(range(1, len(headers)))) if rows else '<p class="muted">No models checked.</p>'
    if quality:
        body += ('<h3>Answer quality (GroUSE-style)</h3><p class="caption">Mean grades 1–5 against the gold article: '
                 "relevancy (does all of it address the question), completeness (how much of what the question needs "
                 "from the gold article it has), faithfulness (each statement in the article it cites); usefulness: "
                 "share of refusals whose added information helps. n = answers each grade applies to.</p>"
                 + table(["Model", "Relevancy", "Completeness", "Faithfulness", "Usefulness", "Refusals"], quality,
                         {1, 2, 3, 4, 5}))
    return head + body + explain



def label_suspects_section(inputs: ReportInputs) -> str:
    """A short list of gold labels most models contradict: a wrong label reads as every model's error."""
    block = inputs.report.label_suspects
    top = block.top if block is not None else []
    if not top:
        return ""
    gold_path, kb_path = inputs.report.gold.path or "GOLD.csv", inputs.report.kb.path
    rows = []
    for s in top:
        question = inputs.questions.get(s.question_id, "") if ";" not in s.question_id else ""
        rows.append([escape(s.question_id), escape(question or s.question), escape(s.gold), escape(s.suggested),
                     escape(s.kind), escape(s.reason)])
    more = block.n - len(top)
    kinds = ", ".join(f"{escape(k)} {n}" for k, n in block.by_kind.items())
    cmd = (f"grace annotations audit {gold_path} --kb {kb_path} --run {inputs.out_dir} --out suspects.csv && "
           f"grace annotate {kb_path} --from-gold {gold_path} --only suspects.csv")
    who = (f"most of the {len(block.models)} models that are not baselines (" + ", ".join(map(escape, block.models))
           + "; the retrieval baselines all cite one retriever's top article, one opinion, so they are not counted)"
           if block.models else "most models")
    return (f'<p class="caption">Gold labels that {who} contradict. A wrong label is read as a model error by '
            "every row of this report, so check these before trusting small differences. "
            f"{block.n} in all ({kinds}).</p>"
            + table(["Question", "Text", "Gold", "Models say", "Rule", "Why"], rows)
            + (f'<p class="muted">{more} more.</p>' if more > 0 else "")
            + f"<p>Review them: <code>{escape(cmd)}</code></p>")


def citation_section(inputs: ReportInputs, chart: str | None) -> str:
    """The models read as references: their precision against recall (the plot) and how their references resolved;
    "" when no model is (a GRACE run's page is as it was)."""
    cited = citation_models(inputs.ranked)
    if not cited:
        return ""
    rows = leaderboard_rows(cited, CITATION_COLUMNS)
    body = [[f"<strong>{escape(r.cells[c.key])}</strong>" if c.key == "model" else escape(r.cells[c.key])
             for c in CITATION_COLUMNS] for r in rows]
    figure = (f"<figure>{chart}<figcaption><strong>How to read:</strong> each point is a model whose citations are "
              "read as references, at its mean citation precision (right: fewer citations that do not answer the "
              "question, unmapped ones included) and recall (up: more of the acceptable articles cited); the lines "
              "through it are the 95% bootstrap intervals. Dashed curves join points of equal F1. A model read as "
              "GRACE IDs has no point: its accuracy is in the leaderboard.</figcaption></figure>") if chart else ""
    pairs = [[escape(v) if i != 7 else ('<span class="good">yes</span>' if v == "yes" else "no")
              for i, v in enumerate(r)] for r in citation_pairs(inputs.report)]
    tests = ("<h3>Differences in citation F1</h3>" + table(CITATION_PAIR_HEADERS, pairs, {2, 3, 4, 5, 6})
             + f'<p class="caption">{escape(CITATION_PAIRS_LEGEND)}</p>') if pairs else ""
    return (figure + table([escape(c.header) for c in CITATION_COLUMNS], body,
                           {i for i, c in enumerate(CITATION_COLUMNS) if c.numeric})
            + f'<p class="caption">{escape(CITATION_LEGEND)}</p>' + tests)
