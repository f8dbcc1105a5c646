"""A system's own references (KB ID, source path or URL with a heading, title, quote, its own IDs through a mapping
or rewrite rules) resolve to the article they name, say how, and stay unmapped when unsure: issue 39. Before, every
such reference was read as an article ID (an invalid citation), and a footnote ``1`` as article 1."""

from __future__ import annotations

import pytest

from harness.core.errors import GraceError
from kb_builder.loader import load_kb
from kb_builder.references import Resolver, read_mapping, read_rewrites, slug
from tests.conftest import BODY, ROOT, run_grace, write


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    """The sample KB (benchmarks/sample), built as a user builds it."""
    out = tmp_path_factory.mktemp("refs") / "kb"
    code, text = run_grace("kb", "build", ROOT / "benchmarks/sample/handbook", "--out", out, "--no-lint")
    assert code == 0, text
    return load_kb(out)


def article(kb, source: str, heading: str):
    """The one article of ``source`` whose deepest heading is ``heading`` (the expected answer, from the records)."""
    [a] = [a for a in kb.articles if a.source == source and a.heading_path and a.heading_path[-1] == heading]
    return a


def test_explicit_ids_resolve_and_a_bare_number_only_when_the_system_cites_by_id(kb):
    r = Resolver(kb.articles)
    assert (r.resolve("[ID: 17]").articles, r.resolve("[ID: 17]").how) == (("17",), "id")
    assert r.resolve("ID: 17").articles == ("17",)
    for footnote in ("1", "17", "[1]"):  # a footnote number is never an article ID it merely looks like
        got = r.resolve(footnote)
        assert not got.mapped and got.how is None, footnote
    assert Resolver(kb.articles, bare_ids=True).resolve("17").articles == ("17",)
    assert not r.resolve("[ID: 99999]").mapped  # not an article of this KB
    assert not r.resolve("ID17x").mapped and r.resolve("ID 17").articles == ("17",)


def test_source_with_heading_path_or_url_anchor(kb):
    bonus = article(kb, "payroll/pay-and-compensation.html", "Annual performance bonus")
    r = Resolver(kb.articles)
    for ref in ("payroll/pay-and-compensation.html#Annual performance bonus",
                "https://handbook.example.com/payroll/pay-and-compensation.html#annual-performance-bonus",
                "/site/payroll/pay-and-compensation/#Annual%20performance%20bonus",
                "payroll/pay-and-compensation.md#annual-performance-bonus"):
        got = r.resolve(ref)
        assert (got.articles, got.how) == ((bonus.id,), "source+heading"), ref


def test_a_page_of_several_articles_maps_to_the_page_and_says_so(kb):
    """Before, a page grace split into several articles was unmapped (issue 46: 209 of a bot's 2,036 URLs); it
    points at the page's text, which is its articles'."""
    r = Resolver(kb.articles)
    parts = tuple(a.id for a in kb.articles if a.source == "payroll/pay-and-compensation.html")
    assert len(parts) > 1
    got = r.resolve("https://host/payroll/pay-and-compensation.html")
    assert (got.articles, got.scope, got.how) == (parts, "page", "source") and f"{len(parts)} articles" in got.note
    small = Resolver(kb.articles, max_page_articles=len(parts) - 1).resolve("payroll/pay-and-compensation.html")
    assert not small.mapped and small.warning == "page-too-large" and "cite its headings" in small.note


def test_a_document_of_one_article_maps_by_its_path(tmp_path):
    write(tmp_path / "src/faq/wifi.md", "# Wifi\n\nThe guest network is called Larkspur-Guest and needs no password "
          "at all; staff use the Larkspur network with their own login.\n")
    code, text = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--no-lint")
    assert code == 0, text
    kb = load_kb(tmp_path / "kb")
    [only] = kb.articles
    got = Resolver(kb.articles).resolve("https://intranet.example.com/faq/wifi")
    assert (got.articles, got.how) == ((only.id,), "source")


def test_pages_and_headings_not_in_the_kb_stay_unmapped(kb):
    r = Resolver(kb.articles)
    for ref in ("payroll/pay-and-compensation-archive.html", "payroll/pay-and-compensation.html#No such heading",
                "https://elsewhere.example.org/careers/open-roles.html"):
        got = r.resolve(ref)
        assert not got.mapped and got.note, ref


def test_title_full_or_its_own_heading(kb):
    dental = article(kb, "benefits/health-and-wellbeing.html", "Dental cover")
    r = Resolver(kb.articles)
    for ref in (dental.title, "Dental cover", "  dental   COVER "):
        got = r.resolve(ref)
        assert (got.articles, got.how) == ((dental.id,), "title"), ref


def test_quotes_map_by_text_overlap_and_short_or_foreign_ones_do_not(kb):
    bonus = article(kb, "payroll/pay-and-compensation.html", "Annual performance bonus")
    sentence = next(s for s in bonus.text.split(". ") if len(s.split()) >= 10)
    r = Resolver(kb.articles)
    got = r.resolve(f"\u201c{sentence}\u201d")
    assert (got.articles, got.how) == ((bonus.id,), "quote")
    words = sentence.split()
    changed = " ".join(words[:-1] + ["whatsoever"])  # one word changed: still most of its 3-word runs
    if len(words) >= 12:
        assert r.resolve(changed).articles == (bonus.id,)
    assert not r.resolve(" ".join(words[:3])).mapped  # too short to be one article's
    assert not r.resolve("The quarterly town hall is streamed to every office in the company.").mapped


def test_a_quote_found_in_two_articles_is_unmapped(tmp_path):
    same = "Every request must be approved by your line manager before you book anything."
    write(tmp_path / "src/a.md", f"# A\n\n## Travel\n\nTrains are preferred. {same} {BODY}\n\n"
          f"## Kit\n\nLaptops only. {same} {BODY}\n")
    code, text = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--no-lint")
    assert code == 0, text
    got = Resolver(load_kb(tmp_path / "kb").articles).resolve(same)
    assert not got.mapped and len(got.candidates) == 2


def test_mapping_file_and_rewrite_rules(kb, tmp_path):
    bonus = article(kb, "payroll/pay-and-compensation.html", "Annual performance bonus")
    path = write(tmp_path / "map.csv", f"their_id,article_id\nchunk-0007,{bonus.id}\n\ndoc:42,17\n")
    table = read_mapping(path, kb.by_id)
    assert table == {"chunk-0007": (bonus.id,), "doc:42": ("17",)}
    r = Resolver(kb.articles, mapping=table,
                 rewrites=read_rewrites(["confluence://HR/Pay/=payroll/pay-and-compensation.html#"]))
    assert (r.resolve("chunk-0007").articles, r.resolve("chunk-0007").how) == ((bonus.id,), "mapping")
    got = r.resolve("confluence://HR/Pay/Annual performance bonus")
    assert (got.articles, got.how) == ((bonus.id,), "rewrite")
    assert not r.resolve("chunk-0008").mapped


@pytest.mark.parametrize(("rows", "line", "words"), [
    ("chunk-1,33\nchunk-2,99999\n", 2, "'99999' is not in the KB"),
    ("chunk-1,33\nchunk-1,33\n", 2, "duplicate"),
    ("their_id,article_id\nchunk-1,33\nchunk-1,34\n", 3, "conflicting (line 2"),
    ("chunk-1,33,extra\n", 1, "expected 2 columns"),
    ("chunk-1,\n", 1, "empty"),
    ("chunk-1,33;99999\n", 1, "'99999' is not in the KB"),  # one of several articles unknown: the row is an error
    ("chunk-1,33;\n", 1, "an empty article ID in '33;'"),
    ("chunk-1,33;34\nchunk-1,34;33\n", 2, "duplicate row"),  # the same articles in another order
    ("chunk-1,33;34\nchunk-1,33\n", 2, "conflicting (line 1 maps it to '33;34')"),
])
def test_bad_mapping_files_name_file_and_line(kb, tmp_path, rows, line, words):
    path = write(tmp_path / "map.csv", rows)
    with pytest.raises(GraceError) as err:
        read_mapping(path, kb.by_id)
    assert f"{path}:{line}" in str(err.value) and words in str(err.value)


def test_bad_rewrite_rules(kb):
    with pytest.raises(GraceError, match="conflicting rule"):
        read_rewrites(["a/=b/", "a/=c/"])
    with pytest.raises(GraceError, match="duplicate rule"):
        read_rewrites([("a/", "b/"), ("a/", "b/")])
    with pytest.raises(GraceError, match="PREFIX=REPLACEMENT"):
        read_rewrites(["no-equals-sign"])


def test_cli_resolve_prints_how_and_unmapped_and_exits_2_on_a_bad_mapping(kb, tmp_path):
    code, out = run_grace("kb", "resolve", kb.path, "payroll/pay-and-compensation.html#Annual performance bonus", "1")
    assert code == 0, out
    assert "(source+heading" in out and "unmapped" in out and "1 of 2 reference(s) mapped" in out
    code, out = run_grace("kb", "resolve", kb.path, "Dental cover", "--json")
    assert code == 0 and '"how": "title"' in out
    bad = write(tmp_path / "bad.csv", "chunk-1,33\nchunk-1,34\n")
    code, out = run_grace("kb", "resolve", kb.path, "chunk-1", "--map", bad)
    assert code == 2 and f"{bad}:2" in out and "conflicting" in out and "Traceback" not in out


def test_a_url_maps_by_a_documents_whole_path_never_by_a_page_name_every_site_has(tmp_path):
    """Before, ``https://other.example.org/about`` mapped to the KB's root-level about.md (the URL's last segment
    matched the document's one-segment path): a citation of any site's about page scored as the KB's."""
    write(tmp_path / "src/about.md", f"# About us\n\nThe company was founded in 1998 in Leeds by two nurses. {BODY}\n")
    write(tmp_path / "src/team/contact.md", f"# Contact\n\nWrite to the people team at any time of day. {BODY}\n")
    code, text = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--no-lint")
    assert code == 0, text
    kb = load_kb(tmp_path / "kb")
    about = next(a for a in kb.articles if a.source == "about.md")
    contact = next(a for a in kb.articles if a.source == "team/contact.md")
    r = Resolver(kb.articles)
    for ref in ("https://other.example.org/about", "https://other.example.org/company/about.html",
                "https://other.example.org/contact", "other/about.md"):
        got = r.resolve(ref)
        assert not got.mapped, (ref, got)
    assert "rewrite rule" in r.resolve("https://other.example.org/about").note
    # the document's own path, and a URL that ends with a folder-and-name path, still map
    assert r.resolve("about.md").articles == (about.id,)
    assert r.resolve("https://intranet.example.com/wiki/team/contact").articles == (contact.id,)
    assert r.resolve("contact.md").articles == (contact.id,)  # a bare file name names the one document so named
    # a rewrite rule for the site's prefix makes the site's URLs the KB's
    site = Resolver(kb.articles, rewrites=read_rewrites([("https://hr.example.com/docs/", "")]))
    got = site.resolve("https://hr.example.com/docs/about")
    assert (got.articles, got.how) == ((about.id,), "rewrite")
    assert not site.resolve("https://other.example.org/about").mapped


def test_a_mapping_file_that_is_not_utf8_names_its_line(kb, tmp_path):
    path = tmp_path / "map.csv"
    path.write_bytes("their_id,article_id\nchunk-1,33\nm\u00fcller-2,34\n".encode("latin-1"))
    with pytest.raises(GraceError) as err:
        read_mapping(path, kb.by_id)
    assert f"{path}:3" in str(err.value) and "not UTF-8" in str(err.value)
    # a UTF-8 file with a byte-order mark (as spreadsheets save it) is read, header and all
    path.write_bytes("\ufefftheir_id,article_id\nm\u00fcller-2,34\n".encode())
    assert read_mapping(path, kb.by_id) == {"m\u00fcller-2": ("34",)}


def test_a_2gb_mapping_file_is_refused_unread_and_a_long_one_by_its_rows(kb, tmp_path):
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as fh:  # sparse: 2 GB as the file system reports it, no disk used
        fh.truncate(2 << 30)
    with pytest.raises(GraceError) as err:
        read_mapping(huge, kb.by_id)
    assert str(huge) in str(err.value) and "2,048 MB" in str(err.value) and "right file" in str(err.value)
    rows = write(tmp_path / "rows.csv", "".join(f"chunk-{i},33\n" for i in range(30)))
    with pytest.raises(GraceError) as err:
        read_mapping(rows, kb.by_id, max_rows=20)
    assert f"{rows}:21" in str(err.value) and "more than 20 rows" in str(err.value)
    assert len(read_mapping(rows, kb.by_id, max_rows=30)) == 30


@pytest.mark.parametrize(("rows", "line", "words"), [
    ("chunk-1,33\n\"" + "x" * 200_000 + "\",34\n", 2, "a line of 200,006 bytes"),  # one long line
    ("chunk-1,33\n\"chunk-2,34\n" + "more text\n" * 1000, 2, "an ID over 4,096 characters"),  # a quote left open
])
def test_a_row_too_long_for_an_id_is_an_error_with_its_line(kb, tmp_path, rows, line, words):
    path = write(tmp_path / "map.csv", rows)
    with pytest.raises(GraceError) as err:
        read_mapping(path, kb.by_id)
    assert f"{path}:{line}" in str(err.value) and words in str(err.value)


def test_a_url_of_no_kb_document_is_never_read_as_a_quote_of_its_words(kb):
    """Before, a URL of no KB document fell through to the quote reading, and an anchor made of an article's words
    (``https://other.example.org/index.md#who-is-eligible-for-the-annual-performance-bonus``) mapped to it."""
    bonus = article(kb, "payroll/pay-and-compensation.html", "Annual performance bonus")
    sentence = next(s for s in bonus.text.split(". ") if len(s.split()) >= 10)
    r = Resolver(kb.articles)
    assert r.resolve(sentence).articles == (bonus.id,)  # the words as a quote: its article
    for ref in (f"https://other.example.org/index.md#{slug(sentence)}", f"other/index.html#{sentence}"):
        got = r.resolve(ref)
        assert not got.mapped, (ref, got)
