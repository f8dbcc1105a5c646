"""Each document loader on a realistic fixture; PDF and DOCX are generated here."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import GraceError
from kb_builder.documents import discover, load_file
from tests.conftest import write

MD = """---
title: Time off
last_reviewed: 2026-01-01
---
{% include alert.html %}
# Time off

Everyone at {{ site.company }} can take time off.

{% comment %}
## Hidden draft section
This must never appear.
{% endcomment %}

## Sick leave

You get **10 days** of paid sick leave. Ask in {% slack_channel "people-ops" %} if unsure.
See [the policy](https://example.com/sick) and [our page](/internal/page/).

```
# not a heading inside code
```

### Doctor's note {#notes}

A note is needed after 3 consecutive days.
"""


def test_markdown_front_matter_templates_and_headings(tmp_path):
    doc = load_file(write(tmp_path / "time-off.md", MD), "time-off.md")
    assert doc.title == "Time off"
    text = "\n".join(s.heading + "\n" + s.body for s in doc.sections)
    for junk in ("{%", "%}", "{{", "}}", "last_reviewed", "Hidden draft", "never appear"):
        assert junk not in text
    headings = [(s.level, s.heading) for s in doc.sections]
    assert (2, "Sick leave") in headings and (3, "Doctor's note") in headings
    assert not any("not a heading" in h for _, h in headings)
    sick = next(s for s in doc.sections if s.heading == "Sick leave")
    assert "#people-ops on Slack" in sick.body
    assert "the policy (https://example.com/sick)" in sick.body and "our page" in sick.body
    assert "/internal/page/" not in sick.body


def test_html_drops_navigation_and_keeps_structure(tmp_path):
    html = """<html><head><title>Expenses | Larkspur</title><script>var x = 1;</script></head><body>
    <nav><a href="/">Home</a> <a href="/x">Other</a></nav>
    <h1>Expenses</h1><p>Claim within <b>30 days</b>.</p>
    <h2>Meals</h2><ul><li>Breakfast: 15 EUR</li><li>Dinner: 35 EUR</li></ul>
    <h2>Mileage</h2><p>0.36 EUR per km &amp; parking.</p>
    <footer>Copyright Larkspur</footer></body></html>"""
    doc = load_file(write(tmp_path / "expenses.html", html), "expenses.html")
    assert doc.title == "Expenses"
    all_text = " ".join(s.body for s in doc.sections)
    assert "Home" not in all_text and "Copyright" not in all_text and "var x" not in all_text
    meals = next(s for s in doc.sections if s.heading == "Meals")
    assert "- Breakfast: 15 EUR" in meals.body and "- Dinner: 35 EUR" in meals.body
    assert "0.36 EUR per km & parking." in next(s for s in doc.sections if s.heading == "Mileage").body


def test_text_headings_by_convention(tmp_path):
    txt = "EMPLOYEE GUIDE\n\nIntro line here.\n\n1 Leave\n\nLeave rules.\n\n1.1 Sick leave\n\nTen days.\n\nTravel\n------\n\nBook via the portal.\n"
    doc = load_file(write(tmp_path / "guide.txt", txt), "guide.txt")
    heads = [(s.level, s.heading) for s in doc.sections if s.level]
    assert heads == [(1, "Employee Guide"), (1, "Leave"), (2, "Sick leave"), (2, "Travel")]


def make_pdf(path: Path, topics: list[tuple[str, str]], title: str = "Staff Manual") -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 20)
    pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    for heading, body in topics:
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    pdf.output(str(path))
    return path


def make_docx(path: Path, topics: list[tuple[str, str]], title: str = "Staff Manual") -> Path:
    import docx

    d = docx.Document()
    d.add_heading(title, level=0)
    for heading, body in topics:
        d.add_heading(heading, level=1)
        for para in body.split("\n\n"):
            d.add_paragraph(para)
    d.add_heading("Rates", level=1)
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text, t.cell(0, 1).text = "Item", "Rate"
    t.cell(1, 0).text, t.cell(1, 1).text = "Mileage", "0.36 EUR"
    d.save(str(path))
    return path


TOPICS = [
    ("Sick leave", "Employees receive ten days of paid sick leave each calendar year. " * 6),
    ("Parental leave", "Parents receive sixteen weeks of paid parental leave after the birth or adoption of a child. " * 6),
    ("Travel booking", "Book all business travel through the travel portal at least fourteen days before departure. " * 6),
]


def test_pdf_headings_from_font_sizes(tmp_path):
    doc = load_file(make_pdf(tmp_path / "manual.pdf", TOPICS), "manual.pdf")
    assert doc.title == "Staff Manual"
    heads = [s.heading for s in doc.sections if s.level]
    assert heads[-3:] == ["Sick leave", "Parental leave", "Travel booking"]
    parental = next(s for s in doc.sections if s.heading == "Parental leave")
    assert "sixteen weeks" in parental.body and "ten days" not in parental.body


def test_docx_heading_styles_and_tables(tmp_path):
    doc = load_file(make_docx(tmp_path / "manual.docx", TOPICS), "manual.docx")
    heads = [s.heading for s in doc.sections if s.level]
    assert heads == ["Staff Manual", "Sick leave", "Parental leave", "Travel booking", "Rates"]
    rates = next(s for s in doc.sections if s.heading == "Rates")
    assert "Mileage | 0.36 EUR" in rates.body


def test_unreadable_pdf_is_a_clear_error(tmp_path):
    bad = write(tmp_path / "broken.pdf", "this is not a pdf at all")
    with pytest.raises(GraceError, match="broken.pdf: unreadable PDF"):
        load_file(bad, "broken.pdf")


def test_corrupt_docx_is_a_clear_error(tmp_path):
    bad = write(tmp_path / "broken.docx", "zip? no")
    with pytest.raises(GraceError, match="broken.docx: unreadable DOCX"):
        load_file(bad, "broken.docx")


def test_discover_empty_and_missing(tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty" / "image.png", "x")
    with pytest.raises(GraceError, match="no readable documents"):
        discover(tmp_path / "empty")
    with pytest.raises(GraceError, match="no such file or folder"):
        discover(tmp_path / "nope")


def test_markdown_headings_match_a_full_markdown_it_parse():
    # only markdown-it's block pass runs now: it must find the same headings, with the same raw text
    from markdown_it import MarkdownIt

    from kb_builder.documents.markdown import _scan

    text = (
        "Intro *text*.\n\nSetext heading\n===\n\n> # Quoted heading\n\n- item\n\n  ## Heading in a list\n\n"
        "```\n# not a heading\n```\n\n    # indented code\n\n<div>\n# inside html\n</div>\n\n"
        "## [Linked](https://x.example) **bold** `code` &amp; {#anchor}\n\nText.\n\nSub\n---\n"
    )
    tokens = MarkdownIt("commonmark").parse(text)
    full = [(t.map[0], t.map[1], int(t.tag[1]), tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert [h[:4] for h in _scan(text)] == full
    assert len(full) == 5


def test_tidy_skips_passes_that_cannot_match_but_cleans_the_same():
    from kb_builder.documents.cleanup import tidy

    assert tidy("a  b\t\tc  \nd\r\n\r\n\r\n\u00a0e\n\n\n\nf ") == "a b c\nd\n\n e\n\nf"
    assert tidy("  plain text\nwith lines  ") == "plain text\nwith lines"
