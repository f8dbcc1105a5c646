"""``report.html``: one self-contained page, readable offline and safe to open.

No JavaScript, no CDN, no external file: the CSS is inlined, the plots are
inline SVG, and a Content-Security-Policy forbids anything else, so a model
response that contains ``<script>`` (already escaped here) could not run or load
anything even if an escape were missed.
"""

from __future__ import annotations

from html import escape
from importlib import resources

from harness.reports.failures import failures_section
from harness.reports.heatmap import category_heatmap, confusion_heatmap
from harness.reports.inputs import ReportInputs
from harness.reports.leaderboard import asked_text, citation_models, run_size
from harness.reports.plots import accuracy_chart, citation_chart, outcome_chart, pareto_chart, retrieval_chart
from harness.reports.tables import (
    article_table,
    category_section,
    citation_section,
    details_table,
    label_suspects_section,
    leaderboard_table,
    pairwise_table,
    ppi_section,
    spotcheck_section,
)

HTML_SCHEMA_VERSION = 1
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CAPTIONS = {
    "accuracy": "Each bar is a model's accuracy; the black whisker is its 95% (Wilson) confidence interval and the "
    "orange diamond its strict-extraction accuracy. Overlapping whiskers suggest two models may not really differ; "
    "the significance letters in the leaderboard are the proper paired test.",
    "pareto": "Each point is a model, with its 95% CI as a vertical line. Up is more accurate, left is cheaper. "
    "Filled green points, joined by the dashed line, form the Pareto front: no other model is both cheaper and at "
    "least as accurate. Hollow points are dominated: some model on the front is better on both counts.",
    "outcomes": "Each bar splits a model's responses by outcome. Green is right (cited the expected article, or "
    "refused a question the KB cannot answer). False refusal: refused an answerable question. Answered "
    "unanswerable: answered a question it should have refused. Wrong citation: cited another real article. Invalid "
    "citation: cited an ID that is not in the KB. Unshown citation: cited a KB article that was not among the "
    "articles shown to the model, so it cannot have read the answer there. No / multiple citations: broke the "
    "answer format. Hover a segment for counts.",
    "retrieval": "For answerable questions: accuracy when retrieval put the expected article in the model's top-k "
    "(blue) and when it did not (red). A model cannot cite what it was not shown, so red is usually near zero; a low "
    "blue bar means the model fails even with the right article in front of it, while many misses (the red n) mean "
    "retrieval, not the model, is losing accuracy.",
    "confusion": "Rows are the gold label (an article ID, or REFUSE), columns what the model cited ('none' means no "
    "usable citation). Green diagonal cells are right; red cells are confusions, darker for a larger share of the "
    "row. Hover a cell or a label for counts and article titles.",
}
# said under the outcome chart only for a run whose KB restricts articles (the others cannot have the outcome)
# said under the outcome chart only for a run with a model read as references (the others cannot have the outcome)
UNMAPPED_CAPTION = (" Unmapped citation (a model read as references): every reference the answer cited resolved to "
                    "no KB article.")
FORBIDDEN_CAPTION = (" Forbidden citation: cited an article the user who asked may not see (its audience has none of "
                     "their groups), a leak whatever else the answer did.")


def _css() -> str:
    return (resources.files("harness.reports") / "assets" / "report.css").read_text(encoding="utf-8")


def _figure(svg: str | None, caption: str, missing: str, extra: str = "") -> str:
    if svg is None:
        return f'<p class="muted">{escape(missing)}</p>'
    return f"<figure>{svg}<figcaption><strong>How to read:</strong> {escape(caption)}{extra}</figcaption></figure>"


def _short(value: object, n: int = 12) -> str:
    s = str(value) if value is not None else "?"
    return f'<code title="{escape(s)}">{escape(s[:n])}</code>'


def _header(inputs: ReportInputs) -> str:
    r = inputs.report
    gold, kb, responses = r.gold, r.kb, r.responses
    repeats = max((m.repeats or 1 for m in inputs.models.values()), default=1)
    scored = run_size(r)  # prediction-powered: the run is every question, gold and responses its human part
    subtitle = (f"{len(inputs.models)} model{'s' if len(inputs.models) != 1 else ''} · "
                + (scored or f"{escape(asked_text(r))} ({gold.n_must_refuse} must refuse"
                   + (" in the gold set)" if r.sample else ")"))
                + (f" · {repeats} repeats per question" if repeats > 1 else ""))
    rows = [
        ("Scored", f"{escape(r.created_at)} with grace {escape(r.grace_version)}"),
        ("Gold", f"{escape(str(gold.path))} · hash {_short(gold.hash)}"
                 + (f" · the {gold.n_questions} human-labelled questions ({gold.n_must_refuse} must refuse)"
                    if scored else "")),
        ("KB", f"{escape(kb.path)} · {kb.n_articles} articles · hash {_short(kb.hash)}"),
        ("Responses", f"{escape(responses.path)} · "
                      + (f"{r.ppi.rows} rows ({responses.n} on the human-labelled questions)"
                         if scored and r.ppi.rows is not None else f"{responses.n} rows")),
        ("Statistics", f"seed {r.seed} · {r.bootstrap_samples} bootstrap samples"),
    ]
    meta = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    toc = "".join(f'<a href="#{i}">{t}</a>' for i, t in [
        ("leaderboard", "Leaderboard"), *([("ppi", "Prediction-powered")] if r.ppi is not None else []),
        ("accuracy", "Accuracy"), *([("citations", "Citations")] if citation_models(inputs.ranked) else []),
        *([("categories", "Categories")] if r.categories else []), ("cost", "Cost"), ("outcomes", "Outcomes"),
        ("retrieval", "Retrieval"), ("details", "Details"), ("confusion", "Confusions"), ("articles", "Articles"),
        ("failures", "Failures"), ("spotcheck", "Spot-check"),
        *([("labels", "Labels to check")] if r.label_suspects is not None and r.label_suspects.n else []),
        ("significance", "Significance")])
    notes = "".join(f"<p>{escape(n)}</p>" for n in inputs.notes)
    return (f"<header><h1>grace report</h1><p class=\"subtitle\">{escape(subtitle)}</p>"
            f'<dl class="meta">{meta}</dl><nav class="toc">{toc}</nav></header>'
            + (f'<div class="notes">{notes}</div>' if notes else ""))


def _confusions(inputs: ReportInputs) -> str:
    out = []
    for k, m in enumerate(inputs.ranked):
        name = m.model
        svg, note = confusion_heatmap(name, m.confusion, inputs.title)
        extra = f" <em>({escape(note)})</em>" if note and svg else ""
        body = _figure(svg, CAPTIONS["confusion"], f"{name}: {note}.", extra)
        opened = " open" if k == 0 else ""
        out.append(f"<details{opened}><summary>{escape(name)}</summary>{body}</details>")
    return "".join(out)


def _section(anchor: str, heading: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(heading)}</h2>{body}</section>'


def render_html(inputs: ReportInputs) -> str:
    models = inputs.ranked
    pareto, unknown = pareto_chart(models)
    side = (f" <em>Not plotted, cost unknown: {escape(', '.join(unknown))}.</em>" if unknown and pareto else "")
    no_cost = "Every model with a known cost costs $0 (baselines or local models): no trade-off to plot."
    if len(unknown) == len(models):
        no_cost = "No model has a known cost (set prices in the model config to see this plot)."
    suspects = label_suspects_section(inputs)
    by_category = category_section(inputs, category_heatmap(inputs.report.categories, models))
    ppi = ppi_section(inputs)
    cited = citation_section(inputs, citation_chart(models))
    sections = [
        _section("leaderboard", "Leaderboard", leaderboard_table(inputs)),
        *([_section("ppi", "Prediction-powered figures (PPI++)", ppi)] if ppi else []),
        _section("accuracy", "Accuracy with 95% confidence intervals",
                 _figure(accuracy_chart(models), CAPTIONS["accuracy"], "No accuracy to plot.")),
        *([_section("citations", "Citations: precision and recall with 95% confidence intervals", cited)]
          if cited else []),
        *([_section("categories", "Accuracy per category", by_category)] if by_category else []),
        _section("cost", "Accuracy vs cost", _figure(pareto, CAPTIONS["pareto"], no_cost, side)),
        _section("outcomes", "Outcome breakdown",
                 _figure(outcome_chart(models), CAPTIONS["outcomes"], "No outcomes recorded.",
                         (escape(FORBIDDEN_CAPTION) if inputs.report.permissions is not None else "")
                         + (escape(UNMAPPED_CAPTION) if citation_models(models) else ""))),
        _section("retrieval", "Retrieval vs model", _figure(retrieval_chart(models), CAPTIONS["retrieval"],
                 "No retrieval information in this run (questions were not asked with retrieved articles).")),
        _section("details", "Per-model details", details_table(inputs)),
        _section("confusion", "Confusions", _confusions(inputs)),
        _section("articles", "Per-article recall, weakest first",
                 '<p class="caption">Recall: the share of questions about an article that a model answered by '
                 "citing it. The articles at the top are the ones every model struggles with: check their text and "
                 "their gold questions first.</p>" + article_table(inputs)),
        _section("failures", "Failures: a sample of wrong responses",
                 '<p class="caption">A fixed, seeded sample per model, cycling through the kinds of failure. '
                 "The response is shown exactly as the model wrote it, as plain text.</p>" + failures_section(inputs)),
        _section("spotcheck", "Spot-check: hallucination in correctly cited answers", spotcheck_section(inputs)),
        *([_section("labels", "Labels to check", suspects)] if suspects else []),
        _section("significance", "Significance",
                 "<p>Models sharing a letter in the <em>Sig.</em> column are not significantly different. Each pair "
                 "of models is compared on the same questions with an exact McNemar test (only the questions exactly "
                 "one of the two got right count), and the p-values are Holm-corrected for the number of pairs at "
                 "alpha 0.05.</p>" + pairwise_table(inputs)),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="grace-report-schema-version" content="{HTML_SCHEMA_VERSION}">'
        f"<title>grace report</title><style>{_css()}</style></head>\n<body><main>"
        + _header(inputs) + "\n".join(sections)
        + "<footer>Written by <code>grace report</code>. Self-contained: no scripts, no network requests.</footer>"
        + "</main></body></html>\n"
    )
