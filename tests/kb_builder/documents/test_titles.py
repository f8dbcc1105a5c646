"""Titles and heading paths are plain text in every loader; bodies keep their links; IDs survive the clean-up."""

from __future__ import annotations

import pytest

from kb_builder.documents import Document, Section, load_file
from kb_builder.documents.cleanup import clean_title
from kb_builder.ids import assign_ids
from kb_builder.kb_records import Article
from kb_builder.splitting import Splitter
from kb_builder.store import finish_articles
from tests.conftest import BODY, write
from tests.kb_builder.documents.test_loaders import make_docx, make_pdf


@pytest.mark.parametrize(("raw", "clean"), [
    ("Logging in &amp; Networks", "Logging in & Networks"),
    ("1. Submit an [Intake Form](https://docs.google.com/forms/d/e/x/viewform)", "1. Submit an Intake Form"),
    ('Reporting [Phishing](https://insite.gsa.gov/p?term=x "Phishing page")', "Reporting Phishing"),
    ("Wiki [Foo](https://en.wikipedia.org/wiki/Foo_(bar)) page", "Wiki Foo page"),
    ("See the [form][intake] today", "See the form today"),
    ("Node.js (https://nodejs.org/)", "Node.js"),
    ("Contact (mailto:hr@example.com) or HR", "Contact or HR"),
    ('Fill in <a href="https://x.org/f">the form</a>', "Fill in the form"),
    ("Travel <em>before</em> onboarding", "Travel before onboarding"),
    ("See <https://x.org>", "See https://x.org"),
    ("![icon](i.png) Travel", "Travel"),
    ("**Resources**", "Resources"),
    ("You _do not_ need ~~a~~ clearance", "You do not need a clearance"),
    ("`max_tokens` and `a*b` in snake_case", "max_tokens and a*b in snake_case"),
    ("\\#ttsc-help Slack channel", "#ttsc-help Slack channel"),
    ("gathering\\*?", "gathering*?"),
    ("5 * 3 < 20", "5 * 3 < 20"),
    ("AT&T &lt;b&gt;", "AT&T <b>"),
    ("Play 7 -  Learn\tto delegate", "Play 7 - Learn to delegate"),
    ("(https://x.org)", "(https://x.org)"),  # nothing but a link target: better than an empty title
])
def test_clean_title(raw, clean):
    assert clean_title(raw) == clean


def test_clean_title_leaves_parser_decoded_text_alone():
    assert clean_title("R&amp;D", decoded=True) == "R&amp;D"  # the page said "R&amp;amp;D"
    assert clean_title("R&amp;D") == "R&D"


MD = """---
title: Logging in &amp; Networks
---
# Logging in &amp; Networks

Everyone needs an account. {body}

## Reporting [Phishing](https://insite.example.gov/phishing?term=x)

Forward the mail to the [security team](https://security.example.gov/report). {body} {body}

### `ssh` keys &amp; **tokens**

Keys are rotated yearly. {body} {body}

## Tools <em>before</em> onboarding

Short note. {body} {body}

### \\#it-help Slack channel

Ask in the channel.
"""


def test_markdown_titles_and_paths_are_plain_bodies_keep_links(tmp_path):
    doc = load_file(write(tmp_path / "login.md", MD.format(body=BODY)), "login.md")
    assert doc.title == "Logging in & Networks"
    assert [s.heading for s in doc.sections if s.level] == [
        "Logging in & Networks", "Reporting Phishing", "ssh keys & tokens", "Tools before onboarding", "#it-help Slack channel"]
    phishing = next(s for s in doc.sections if s.heading == "Reporting Phishing")
    assert "security team (https://security.example.gov/report)" in phishing.body
    drafts = Splitter().split(doc)
    titles = [d.title for d in drafts]
    assert "Logging in & Networks > Reporting Phishing" in titles
    phishing_article = next(d for d in drafts if d.title == "Logging in & Networks > Reporting Phishing")
    assert "## ssh keys" in phishing_article.text  # one topic with its detail: merged
    assert not any(mark in t for t in titles for mark in ("&amp;", "http", "<em>", "**", "`", "\\"))
    # a small section merged into its parent's article keeps its heading's link: that is content
    tools = next(d for d in drafts if d.title.endswith("Tools before onboarding"))
    assert "## #it-help Slack channel" in tools.text or "\\#it-help Slack channel" in tools.text


def test_merged_subheading_keeps_its_link_in_the_parent_article():
    d = Document(source="blog.md", title="Blogging", sections=[
        Section(1, "Blogging", BODY),
        Section(2, "Product update — example", BODY,
                heading_in_text="Product update — example (https://blog.example.gov/update)"),
    ])
    [draft] = Splitter().split(d)
    assert draft.title == "Blogging"
    assert "## Product update — example (https://blog.example.gov/update)" in draft.text
    assert draft.path == ["Blogging"]


def test_html_titles_drop_markup_and_link_targets(tmp_path):
    html = f"""<html><head><title>Expenses &amp; travel | Larkspur</title></head><body>
    <h2>Claim <a href="https://x.example/form">the form</a> &amp; <em>receipts</em></h2><p>{BODY}
    See <a href="https://x.example/policy">the policy</a>.</p>
    <h2>Meals</h2><p>{BODY}</p></body></html>"""
    doc = load_file(write(tmp_path / "expenses.html", html), "expenses.html")
    assert doc.title == "Expenses & travel | Larkspur"
    claim = doc.sections[0]
    assert claim.heading == "Claim the form & receipts"
    assert "the policy (https://x.example/policy)" in claim.body


def test_text_headings_drop_markup(tmp_path):
    txt = f"## [Sick leave](https://hr.example/sick) &amp; **pay**\n\n{BODY}\n\nQ&amp;A\n---\n\n{BODY}\n"
    doc = load_file(write(tmp_path / "guide.txt", txt), "guide.txt")
    assert [s.heading for s in doc.sections if s.level] == ["Sick leave & pay", "Q&A"]


def test_pdf_headings_and_title_drop_entities_and_links(tmp_path):
    topics = [("Travel &amp; expenses", "Book travel through the portal. " * 8),
              ("Intake [form](https://x.example/intake)", "Submit the form first. " * 8)]
    doc = load_file(make_pdf(tmp_path / "manual.pdf", topics, title="Staff &amp; contractors"), "manual.pdf")
    assert doc.title == "Staff & contractors"
    assert [s.heading for s in doc.sections if s.level][-2:] == ["Travel & expenses", "Intake form"]


def test_docx_headings_and_title_drop_entities_and_links(tmp_path):
    import docx

    path = make_docx(tmp_path / "manual.docx", [("Travel &amp; expenses", BODY), ("Intake [form](https://x.example/f)", BODY)])
    d = docx.Document(str(path))
    d.core_properties.title = "Staff &amp; contractors"
    d.save(str(path))
    doc = load_file(path, "manual.docx")
    assert doc.title == "Staff & contractors"
    assert [s.heading for s in doc.sections if s.level][1:3] == ["Travel & expenses", "Intake form"]


def _article(aid: str, path: list[str], text: str = "Body text.") -> Article:
    return Article(id=aid, title=" > ".join(["Doc", *path]), text=text, source="doc.md", heading_path=path)


def test_rebuild_keeps_ids_when_a_heading_only_lost_markup():
    old = [_article("1", ["Reporting Phishing (https://insite.example.gov/p)"]),
           _article("2", ["Software in [GEAR] (https://ea.example.gov/#!/it)", "For desktops"]),
           _article("3", ["\\#it-help Slack channel"]),
           _article("4", ["Sick leave"])]
    finish_articles(old)
    new = [_article("", ["Reporting Phishing"]), _article("", ["Software in GEAR", "For desktops"]),
           _article("", ["#it-help Slack channel"]), _article("", ["Sick leave"]), _article("", ["Parental leave"])]
    finish_articles(new)
    changes, next_id, retired = assign_ids(new, old, 5, [])
    assert [a.id for a in new] == ["1", "2", "3", "4", "5"]
    assert changes.added == ["5"] and changes.removed == [] and retired == []
    assert sorted(changes.changed) == ["1", "2", "3"] and changes.unchanged == 1  # the titles changed
    assert next_id == 6


def test_exact_place_wins_over_a_loose_match():
    # the old KB had both spellings: each keeps its own ID, the loose match only takes what is left over
    old = [_article("1", ["Tools & resources"]), _article("2", ["Tools &amp; resources"])]
    new = [_article("", ["Tools &amp; resources"]), _article("", ["Tools & resources"])]
    finish_articles(old)
    finish_articles(new)
    assign_ids(new, old, 3, [])
    assert [a.id for a in new] == ["2", "1"]
    new = [_article("", ["Tools & resources"]), _article("", ["Tools and resources"])]
    finish_articles(new)
    changes, _, retired = assign_ids(new, old, 3, [])
    assert [a.id for a in new] == ["1", "3"] and retired == ["2"]  # "and" is not "&": a new article


def test_repeated_headings_keep_their_ids_on_rebuild():
    # the second "FAQ" is stored as "FAQ (2)" but keyed as "FAQ"#1: it used to get a new ID on every rebuild
    def build() -> list[Article]:
        arts = [_article("", ["FAQ"], "First."), _article("", ["FAQ"], "Second.")]
        finish_articles(arts)
        return arts

    first = build()
    assign_ids(first, None, None, [])
    again = build()
    changes, _, retired = assign_ids(again, first, 3, [])
    assert [a.id for a in again] == ["1", "2"] and [a.heading_path for a in again] == [["FAQ"], ["FAQ (2)"]]
    assert changes.added == [] and retired == []
