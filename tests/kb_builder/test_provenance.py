"""Articles that know where they came from (issue 46): each built article records the spans of its source document
it holds and every heading inside them, with the anchors site generators make of them; rebuilds and curation keep
them right, and a KB without them still loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import grace
from kb_builder.anchors import page_anchors
from kb_builder.curation import open_curation
from kb_builder.documents import load_file
from kb_builder.documents.cleanup import strip_templates, strip_templates_mapped
from kb_builder.loader import load_kb
from tests.conftest import shared, write
from tests.kb_builder.handbook_pages import write_pages


@pytest.fixture()
def built(tmp_path):
    src = write_pages(tmp_path / "src")
    return src, grace.build_kb(src, tmp_path / "kb").kb


def by_title(kb, title: str):
    [a] = [a for a in kb.articles if a.title == title]
    return a


def test_each_generator_makes_its_own_anchor_and_a_heading_keeps_the_set():
    """Worked by hand from each generator's documented rule (github-slugger, kramdown auto_ids, Python-Markdown's
    toc slugify), a repeat numbered as each numbers it, an explicit anchor taking the place of all of them."""
    got = page_anchors([("Paid Parental Leave", ""), ("Café & 2024 plans", ""), ("1. Intro", ""), ("Overview", ""),
                        ("Overview", ""), ("Anything", "my-id"), ("¿Qué?", "")])
    assert got == [["paid-parental-leave"], ["café--2024-plans", "caf--2024-plans", "cafe-2024-plans"],
                   ["1-intro", "intro"], ["overview"], ["overview-1", "overview_1"], ["my-id"],
                   ["qué", "qu", "que"]]


def test_sections_know_their_place_in_the_file_as_written(tmp_path):
    src = write_pages(tmp_path / "src")
    raw = (src / "leave.md").read_text()
    doc = load_file(src / "leave.md", "leave.md")
    for s in doc.sections:
        line = raw[s.start:].split("\n", 1)[0]
        if s.level:  # a heading's section starts at its line, after the front matter and the template tag
            assert line.startswith("#") and s.heading in line, (s.heading, line)
        assert s.end > s.start
    assert [s.end for s in doc.sections[:-1]] == [s.start for s in doc.sections[1:]] and doc.sections[-1].end == len(raw)
    assert doc.sections[1].anchor == "annual"  # {#annual}
    html = write(tmp_path / "page.html", '<html><body><p>Intro text here.</p>\n<h2 id="pay">Pay &amp; bonus</h2>\n'
                 "<p>Paid monthly.</p>\n<h2><a name=\"cars\"></a>Company cars</h2><p>None.</p></body></html>")
    page = load_file(html, "page.html")
    text = html.read_text()
    assert [(s.heading, s.anchor, text[s.start:s.start + 3]) for s in page.sections[1:]] == \
        [("Pay & bonus", "pay", "<h2"), ("Company cars", "cars", "<h2")]
    plain = write(tmp_path / "notes.txt", "Intro line of the notes.\n\nTRAVEL RULES\n\nBook early.\n")
    notes = load_file(plain, "notes.txt")
    assert plain.read_text()[notes.sections[-1].start:].startswith("TRAVEL RULES")


def test_templates_are_taken_out_exactly_as_before_and_mapped_back(tmp_path):
    text = 'A {% comment %}hidden {{ x }}{% endcomment %}b {% slack_channel "dev" %} c {{ site.url }} d {% x %}e'
    out, shifts = strip_templates_mapped(text)
    assert out == strip_templates(text) == 'A b #dev on Slack c  d e'
    for word in ("b", "c", "d", "e"):
        assert text[shifts.before(out.index(" " + word) + 1)] == word
    pages = shared("tts-handbook/pages")
    for path in sorted(pages.rglob("*.md"))[:80]:
        raw = path.read_text(encoding="utf-8")
        assert strip_templates_mapped(raw)[0] == strip_templates(raw), path


def test_every_article_holds_spans_of_its_page_and_the_headings_inside_them(built):
    src, kb = built
    raw = (src / "leave.md").read_text()
    leave = [a for a in kb.articles if a.source == "leave.md"]
    spans = sorted((sp.start, sp.end) for a in leave for sp in a.spans)
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))  # no text in two articles
    for a in leave:  # what an article says is in the page where its spans say
        held = " ".join(raw[sp.start:sp.end] for sp in a.spans)
        first = re.findall(r"\w+", a.text)[:8]
        assert re.search(r"\W+".join(first), held), a.title
    annual, sick = by_title(kb, "Leave types > Annual leave"), by_title(kb, "Leave types > Sick leave")
    # a short section folded into the one before: its heading, with its anchors, is in the article that holds it
    assert [(h.text, h.anchors) for h in sick.headings] == [("Sick leave", ["sick-leave"]),
                                                            ("Paid Parental Leave", ["paid-parental-leave"])]
    assert [h.text for h in annual.headings] == ["Annual leave", "Carry over"] and annual.headings[0].anchors == ["annual"]
    # a section cut into parts: the first part holds its heading; the parts' spans follow one another
    parts = [a for a in leave if a.title.startswith("Leave types > Court leave (part")]
    assert len(parts) == 3 and [h.text for h in parts[0].headings] == ["Court leave"]
    assert not parts[1].headings and parts[0].spans[-1].end == parts[1].spans[0].start
    court = parts[0].headings[0]
    assert court.start == raw.index("## Court leave") and court.end == raw.index("## Disabled veteran")


def test_a_rebuild_records_the_same_places(built, tmp_path):
    src, kb = built
    again = grace.build_kb(src, tmp_path / "kb").kb
    assert [(a.id, a.spans, a.headings) for a in again.articles] == [(a.id, a.spans, a.headings) for a in kb.articles]
    lines = (tmp_path / "kb" / "articles.jsonl").read_text().splitlines()
    assert '"spans": [{"start": ' in lines[1] and '"anchors": ["annual"]' in lines[1]
    assert json.loads((tmp_path / "kb" / "manifest.json").read_text())["format_version"] == 2


def test_curation_keeps_cuts_and_joins_the_places(built, tmp_path):
    src, kb = built
    path = tmp_path / "kb"
    annual, sick = by_title(kb, "Leave types > Annual leave"), by_title(kb, "Leave types > Sick leave")
    with open_curation(path) as cur:
        cur.set_text(annual.id, annual.text + "\n\nAsk HR about leave you could not take.")
        cur.set_title(annual.id, "Annual leave and carry over")
        merged = cur.merge_articles(annual.id, sick.id)
    now = load_kb(path).by_id[annual.id]
    assert [(sp.start, sp.end) for sp in now.spans] == [(annual.spans[0].start, sick.spans[-1].end)]
    assert [h.text for h in now.headings] == ["Annual leave", "Carry over", "Sick leave", "Paid Parental Leave"]
    with open_curation(path) as cur:  # split before "### Carry over" (paragraph 2): the cut is at that heading
        split = cur.split_article(annual.id, 2)
    first, second = (load_kb(path).by_id[p] for p in split.parts)
    carry = next(h for h in annual.headings if h.text == "Carry over")
    assert first.spans[-1].end == carry.start == second.spans[0].start
    assert [h.text for h in first.headings] == ["Annual leave"] and second.headings[0].text == "Carry over"
    with open_curation(path) as cur:  # undone, the article holds what both parts held
        cur.undo()
    assert load_kb(path).by_id[annual.id].spans == now.spans
    assert merged.after_articles[0].spans == now.spans  # the record carries them too


def test_a_rebuild_moves_a_curated_articles_places_with_its_source(built, tmp_path):
    """An edit replayed on a rebuild takes its places from the articles as built now, never from its old copy."""
    src, kb = built
    path = tmp_path / "kb"
    sick = by_title(kb, "Leave types > Sick leave")
    with open_curation(path) as cur:
        cur.set_title(sick.id, "Sick leave, and parental leave")
    page = src / "leave.md"
    added = "Court leave, sick leave and the rest are recorded in the HR system by your timekeeper.\n\n"
    page.write_text(page.read_text().replace("## Annual leave", added + "## Annual leave"))
    result = grace.build_kb(src, path)
    assert result.curation.applied == [1]
    now = load_kb(path).by_id[sick.id]
    assert now.title == "Sick leave, and parental leave"
    assert [(sp.start, sp.end) for sp in now.spans] == [(sp.start + len(added), sp.end + len(added)) for sp in sick.spans]
    assert [h.start for h in now.headings] == [h.start + len(added) for h in sick.headings]


def test_a_kb_without_places_still_loads(built, tmp_path):
    path = tmp_path / "kb"
    lines = [json.loads(x) for x in (path / "articles.jsonl").read_text().splitlines()]
    for a in lines:
        a.pop("spans"), a.pop("headings")
    (path / "articles.jsonl").write_text("".join(json.dumps(a) + "\n" for a in lines))
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1}))
    kb = load_kb(path)
    assert len(kb.articles) == len(lines) and all(a.spans is None and a.headings is None for a in kb.articles)


def test_bad_places_in_an_articles_file_are_named(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", json.dumps({"id": "1", "title": "T", "text": "x", "spans": [
        {"start": 9, "end": 3}]}) + "\n")
    code_path = Path(tmp_path / "kb")
    from harness.core.errors import GraceError

    with pytest.raises(GraceError, match=r"articles.jsonl:1: field 'spans.0': it ends \(3\) before it starts"):
        load_kb(code_path)
