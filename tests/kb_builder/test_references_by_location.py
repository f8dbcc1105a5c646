"""References resolved by where they point (issue 46): a heading's anchor maps to the article(s) holding its text
(folded into the article before it, cut into parts), a page to its articles, a quote to the articles it overlaps;
each says what kind of set it is, and bad input is a named warning, never a guess. Before, 777 of a bot's 2,036
chunk URLs were unmapped: 472 headings folded into a neighbour, 209 pages, 96 sections cut into parts."""

from __future__ import annotations

import json

import pytest

import grace
from kb_builder.references import Resolution, Resolver, read_mapping, read_rewrites
from tests.conftest import run_grace, write
from tests.kb_builder.handbook_pages import JURY, write_pages

SITE = "https://handbook.example.gov/"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("located")
    return grace.build_kb(write_pages(root / "src"), root / "kb").kb


def ids(kb, prefix: str) -> tuple[str, ...]:
    return tuple(a.id for a in kb.articles if a.title.startswith(prefix))


def resolver(kb, **kw) -> Resolver:
    return Resolver(kb.articles, rewrites=read_rewrites([f"{SITE}="]), **kw)


def test_an_anchor_of_a_folded_heading_maps_to_the_article_holding_it(kb):
    """The issue's case: ``### Paid Parental Leave`` folded into the article before it; before, "no heading"."""
    [sick] = ids(kb, "Leave types > Sick leave")
    got = resolver(kb).resolve(f"{SITE}leave/#paid-parental-leave")
    assert (got.articles, got.scope, got.how) == ((sick,), "article", "rewrite") and "source+heading" in got.note


def test_an_anchor_of_a_section_cut_into_parts_maps_to_every_part(kb):
    parts = ids(kb, "Leave types > Court leave (part")
    got = resolver(kb).resolve(f"{SITE}leave/#court-leave")
    assert len(parts) == 3 and (got.articles, got.scope) == (parts, "several")
    assert "the text under heading 'Court leave' is in 3 articles" in got.note


def test_anchors_of_every_generator_an_explicit_one_and_heading_text_map(kb):
    [dvl_owner] = {a.id for a in kb.articles if any(h.text.startswith("Disabled") for h in a.headings or [])}
    [annual] = ids(kb, "Leave types > Annual leave")
    r = resolver(kb)
    for ref, want in ((f"{SITE}leave/#disabled-veteran-leave-dvl", dvl_owner),  # GitHub, kramdown and MkDocs alike
                      (f"{SITE}leave/#annual", annual),  # the page's own {#annual}
                      ("leave.md#Annual leave", annual), ("leave.md#carry-over", annual),
                      (f"{SITE}leave/#Annual%20leave", annual)):
        got = r.resolve(ref)
        assert got.articles == (want,), (ref, got)


def test_a_page_maps_to_its_articles_and_a_page_too_large_is_a_named_warning(kb, tmp_path):
    page = tuple(a.id for a in kb.articles if a.source == "leave.md")
    got = resolver(kb).resolve(f"{SITE}leave/")
    assert (got.articles, got.scope) == (page, "page")
    many = "".join(f"## Topic {i}\n\nTopic {i} is about item {i}: " + " ".join(f"w{i}x{k}" for k in range(60))
                   + ".\n\n" for i in range(300))
    big = grace.build_kb(write(tmp_path / "big" / "all.md", many), tmp_path / "bigkb").kb
    assert len(big.articles) == 300
    r = Resolver(big.articles, rewrites=read_rewrites(["https://site.example/="]))
    got = r.resolve("https://site.example/all/")
    assert not got.mapped and got.warning == "page-too-large" and "300 articles" in got.note
    assert r.resolve("https://site.example/all/#topic-17").articles == (big.articles[17].id,)


def test_an_anchor_two_headings_share_is_a_named_warning_never_a_guess(kb):
    travel, equipment = ids(kb, "Travel and equipment > Travel"), ids(kb, "Travel and equipment > Equipment")
    r = resolver(kb)
    got = r.resolve("travel.md#Rules")  # a heading's text: both "Rules" headings, in two articles
    assert not got.mapped and got.warning == "ambiguous-anchor" and set(got.candidates) == {*travel, *equipment}
    assert "matches 2 headings of travel.md" in got.note
    # as the site numbers them, each anchor is one heading
    assert r.resolve(f"{SITE}travel/#rules").articles == travel
    assert r.resolve(f"{SITE}travel/#rules-1").articles == equipment == r.resolve(f"{SITE}travel/#rules_1").articles


def test_an_unknown_anchor_says_why(kb):
    got = resolver(kb).resolve(f"{SITE}leave/#no-such-heading")
    assert not got.mapped and "no heading with the anchor 'no-such-heading' in leave.md" in got.note


def test_a_quote_over_two_articles_maps_to_both_and_a_foreign_one_to_none(kb):
    [sick] = ids(kb, "Leave types > Sick leave")
    parts = ids(kb, "Leave types > Court leave (part")
    r = resolver(kb)
    over = ("whatever your years of service. Use it when you are ill, for medical appointments "
            "or to care for a family member who is ill, and tell your supervisor as early as you can on the first "
            f"day. You are entitled to 12 weeks of paid parental leave after a birth or placement. Court leave {JURY}"
            "Paragraph 0 ends here.")
    got = r.resolve(over)
    assert (got.articles, got.scope, got.how) == ((sick, parts[0]), "several", "quote"), got
    assert r.resolve("whatever your years of service. Use it when you are ill, for medical appointments").articles \
        == (sick,)
    assert not r.resolve("The quarterly town hall is streamed to every office in the company.").mapped


def test_a_map_row_may_name_several_articles(kb, tmp_path):
    parts = ids(kb, "Leave types > Court leave (part")
    path = write(tmp_path / "map.csv", f"their_id,article_id\nchunk-17,{parts[0]};{parts[1]}\nchunk-18,{parts[2]}\n")
    r = Resolver(kb.articles, mapping=read_mapping(path, kb.by_id))
    got = r.resolve("chunk-17")
    assert (got.articles, got.scope, got.how) == (parts[:2], "several", "mapping")
    assert r.resolve("chunk-18").scope == "article"


def test_the_resolution_record():
    one = Resolution("x", ("3",), "id")
    assert (one.scope, one.warning, one.mapped) == ("article", None, True)
    assert Resolution("y", ("3", "4"), "quote").scope == "several"
    page = Resolution("z", ("3", "4"), "source", scope="page")
    assert page.as_dict() == {"reference": "z", "articles": ["3", "4"], "how": "source", "scope": "page", "note": "",
                              "candidates": [], "warning": None}
    assert Resolution("w", note="no article matches").scope is None


def test_a_kb_without_places_falls_back_to_heading_paths_and_says_so(kb, tmp_path):
    old = [a.model_copy(update={"spans": None, "headings": None}) for a in kb.articles]
    r = Resolver(old, rewrites=read_rewrites([f"{SITE}="]))
    [annual] = ids(kb, "Leave types > Annual leave")
    got = r.resolve(f"{SITE}leave/#annual-leave")
    assert got.articles == (annual,) and got.warning == "no-positions"
    folded = r.resolve(f"{SITE}leave/#paid-parental-leave")
    assert not folded.mapped and folded.warning == "no-positions" and "rebuild it" in folded.note


def test_cli_says_pages_sets_and_warnings(kb):
    code, out = run_grace("kb", "resolve", kb.path, f"{SITE}leave/", f"{SITE}leave/#court-leave", "travel.md#Rules",
                          f"{SITE}leave/#paid-parental-leave", "--rewrite", f"{SITE}=")
    assert code == 0, out
    assert "-> a page, 6 articles" in out and "-> several articles, 3 articles" in out
    assert "warning ambiguous-anchor:" in out and "Leave types > Sick leave" in out
    assert "4 of 4" not in out and "3 of 4 reference(s) mapped (1 to one article, 1 to several, 1 to a page), 1 unmapped" in out
    code, out = run_grace("kb", "resolve", kb.path, f"{SITE}leave/", "--rewrite", f"{SITE}=", "--json")
    line = json.loads(out)
    assert line["scope"] == "page" and len(line["articles"]) == 6 and line["warning"] is None
