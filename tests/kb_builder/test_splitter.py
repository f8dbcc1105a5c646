"""The splitter's merge and split rules, on outlines built by hand; its output and cost on large files."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from kb_builder import splitting, tokens
from kb_builder.documents import Document, Section, discover, load_file
from kb_builder.documents import markdown as md_loader
from kb_builder.splitting import Splitter
from kb_builder.tokens import count_tokens
from tests.conftest import SAMPLE, write

TOPIC = "Employees can take this leave for up to ten working days each year with full pay. " * 5  # ~90 tokens
SMALL = "Ask your manager first."


def doc(*sections: Section, title: str = "Leave") -> Document:
    return Document(source="leave.md", title=title, sections=list(sections))


def test_two_substantial_topics_become_two_articles_with_breadcrumbs():
    d = doc(Section(1, "Leave", ""), Section(2, "Sick leave", TOPIC), Section(2, "Parental leave", TOPIC.replace("this", "parental")))
    drafts = Splitter(max_tokens=800).split(d)
    assert [x.title for x in drafts] == ["Leave > Sick leave", "Leave > Parental leave"]


def test_small_subsections_merge_into_their_parent():
    d = doc(Section(1, "Leave", ""), Section(2, "Sick leave", TOPIC), Section(3, "Notice", SMALL), Section(3, "Pay", "Full pay applies."))
    drafts = Splitter(max_tokens=800).split(d)
    assert len(drafts) == 1
    assert "### Notice" not in drafts[0].text and "## Notice" in drafts[0].text and SMALL in drafts[0].text
    assert "Full pay applies." in drafts[0].text


def test_long_section_split_at_paragraphs_within_budget():
    paras = "\n\n".join(f"Paragraph {i}. " + "Travel must be booked through the portal early. " * 12 for i in range(12))
    d = doc(Section(1, "Travel", paras), title="Travel")
    drafts = Splitter(max_tokens=300).split(d)
    assert len(drafts) > 2
    assert all(count_tokens(x.title + "\n" + x.text) <= 300 for x in drafts)
    assert drafts[0].title == f"Travel (part 1 of {len(drafts)})"
    # no paragraph is cut in the middle
    assert all(x.text.startswith("Paragraph") for x in drafts)
    joined = "\n\n".join(x.text for x in drafts)
    assert joined.count("Paragraph") == 12


def test_single_huge_paragraph_is_cut_at_sentences():
    text = " ".join(f"Sentence number {i} says something about expenses." for i in range(200))
    drafts = Splitter(max_tokens=250).split(doc(Section(1, "Expenses", text), title="Expenses"))
    assert len(drafts) > 3 and all(count_tokens(x.title + "\n" + x.text) <= 250 for x in drafts)
    assert all(x.text.rstrip().endswith(".") for x in drafts)


def test_navigation_and_stubs_are_dropped():
    d = doc(
        Section(1, "Leave", "See the sections below."),
        Section(2, "Sick leave", TOPIC),
        Section(2, "Parental leave", TOPIC),
        Section(2, "See also", "- Holidays\n- Pay dates\n- Benefits"),
    )
    drafts = Splitter().split(d)
    titles = [x.title for x in drafts]
    assert titles == ["Leave > Sick leave", "Leave > Parental leave"]  # the 5-word intro is a stub
    assert not any("Holidays" in x.text for x in drafts)


@pytest.mark.parametrize("heading", ["Related pages", "See also", "Voir aussi", "Siehe auch", "Ver también"])
def test_a_trailing_link_list_never_leads_the_first_topic(heading):
    """Before: the link list was dropped but its heading stayed, joined to the short intro and moved ahead of the
    first sub-topic (the sample's "Health insurance" started with "## Related pages")."""
    for intro in ("", "This page explains leave."):
        d = doc(Section(1, "Leave", intro), Section(2, "Sick leave", TOPIC),
                Section(2, "Parental leave", TOPIC.replace("this", "parental")),
                Section(2, heading, "- [Holidays](holidays.md)\n- [Pay dates](pay.md)"))
        drafts = Splitter().split(d)
        assert [x.title for x in drafts] == ["Leave > Sick leave", "Leave > Parental leave"]
        assert not any(heading in x.text for x in drafts), [x.text[:60] for x in drafts]
        assert drafts[0].text.startswith(intro or TOPIC.strip())  # a short intro still leads the first topic


def test_a_short_trailing_section_closes_the_topic_it_follows():
    d = doc(Section(1, "Leave", ""), Section(2, "Sick leave", TOPIC), Section(2, "Parental leave", TOPIC),
            Section(2, "Jury duty", "Paid in full."))
    drafts = Splitter().split(d)
    assert [x.title for x in drafts] == ["Leave > Sick leave", "Leave > Parental leave"]
    assert drafts[0].text == TOPIC.strip()  # before: "## Jury duty" led the first topic, out of order
    assert drafts[1].text.endswith("## Jury duty\n\nPaid in full.")


def test_parent_text_with_small_children_stays_one_article_beside_big_ones():
    intro = "All leave requests go through the HR portal and need approval from your line manager before the first day. " * 3
    d = doc(Section(1, "Leave", intro), Section(2, "Sick leave", TOPIC), Section(2, "Parental leave", TOPIC),
            Section(2, "Jury duty", "Paid in full."))
    drafts = Splitter().split(d)
    assert [x.title for x in drafts] == ["Leave", "Leave > Sick leave", "Leave > Parental leave"]
    assert "Jury duty" in drafts[0].text and "Paid in full." in drafts[0].text


# --- splitting is linear, and exactly what it was -------------------------------------------------


@pytest.fixture
def approx(monkeypatch):
    """grace's offline token approximation, whatever this machine could download."""
    monkeypatch.setitem(tokens._state, "enc", None)
    tokens.count_tokens.cache_clear()
    yield
    tokens.count_tokens.cache_clear()


def drafts_digest(root) -> tuple[int, str]:
    rows = []
    s = Splitter()
    for path, rel in discover(root):
        rows += [[rel, d.title, d.path, d.part, d.parts, d.text] for d in s.split(load_file(path, rel))]
    return len(rows), hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()[:16]


def test_sample_handbook_articles_are_unchanged(approx):
    # the sample handbook's 61 articles as the splitter made them before it was made linear
    # (titles there hold no markup, so the title clean-up changes nothing either), less the three navigation
    # headings ("## Related pages", "## See also" twice) that used to open or sit inside a page's first article
    assert drafts_digest(SAMPLE / "handbook") == (61, "6154f3f5a95f28de")


def test_no_sample_article_holds_a_navigation_heading(approx):
    """Before: "Health insurance" opened on "## Related pages", two articles held "## See also"."""
    held = []
    for path, rel in discover(SAMPLE / "handbook"):
        for d in Splitter().split(load_file(path, rel)):
            held += [(d.title, line) for line in d.text.splitlines()
                     if line.startswith("#") and splitting.names_navigation(line.lstrip("#"))]
    assert held == []


WORDS = "leave policy employee manager request approval days travel expense receipt claim the a of to in".split()


def handbook_markdown(n_sections: int, seed: int = 0) -> str:
    """Markdown with headings at several levels, lists, tables, code, links and a few very long sections."""
    rng = random.Random(seed)

    def para() -> str:
        return " ".join(" ".join(rng.choices(WORDS, k=rng.randint(8, 20))).capitalize() + "." for _ in range(rng.randint(1, 5)))

    out = ["# Handbook", para()]
    for i in range(n_sections):
        level = rng.choice([2, 2, 3, 3, 4, 5])
        out.append(f"{'#' * level} Topic {i} [{rng.choice(WORDS)}](https://x.example/{i})")
        for _ in range(rng.randint(60, 120) if rng.random() < 0.05 else rng.randint(0, 4)):
            r = rng.random()
            if r < 0.6:
                out.append(para())
            elif r < 0.8:
                out.append("\n".join(f"- {para()}" for _ in range(rng.randint(2, 6))))
            elif r < 0.9:
                out.append("| a | b |\n| --- | --- |\n" + "\n".join(f"| {rng.choice(WORDS)} | {rng.randint(1, 99)} |" for _ in range(4)))
            else:
                out.append("```\n# not a heading\ncode  here\n```")
    return "\n\n".join(out) + "\n"


def all_nodes(root):
    stack, out = [root], []
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children)
    return out


def test_subtree_counts_equal_counting_the_rendered_text(approx, tmp_path):
    doc = load_file(write(tmp_path / "h.md", handbook_markdown(300)), "h.md")
    s = Splitter()
    nodes = all_nodes(splitting.outline(doc))
    assert all(s._tokens(n) == tokens.count_tokens(splitting._render(n)) for n in nodes)
    # a body with space at an end is rendered and counted whole, still exactly
    odd = Document("x.md", "X", [Section(1, "X", "  Indented start.  "), Section(2, "Y ", "Tail\t\n")])
    assert all(Splitter()._tokens(n) == tokens.count_tokens(splitting._render(n)) for n in all_nodes(splitting.outline(odd)))


def test_line_by_line_counts_are_exact(approx):
    rng = random.Random(7)
    alphabet = ["a", "Hello", "x" * 9, " ", "  ", "\n", "\n\n", " \n ", "\t", ".", "_", "1", "12345", "'s", "é",
                "\u00a0", "\u2028", "\r\n", "\r", "#", "- ", "|", "(", "..."]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert splitting._Counter()(text) == tokens.count_tokens(text), repr(text)


def test_cl100k_pieces_never_cross_a_line_start(monkeypatch):
    # what makes counting cl100k line by line exact; needs its pre-tokeniser pattern only, not the vocabulary
    regex = pytest.importorskip("regex")
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    pattern = regex.compile(openai_public.cl100k_base()["pat_str"])
    rng = random.Random(3)
    alphabet = ["a", "Hello", " ", "  ", "\n", "\n\n", " \n ", "\t", ".", "_", "1", "12345", "'s", "'LL", "é", "\r\n", "#", "/", ")", "..."]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        by_line = [p for line in splitting._LINE_START.split(text) for p in pattern.findall(line)]
        assert by_line == pattern.findall(text), repr(text)


def test_split_never_compares_nodes_by_content(approx, monkeypatch, tmp_path):
    # `node in list` compared whole subtrees: quadratic in a file's sections. Identity only.
    doc = load_file(write(tmp_path / "h.md", handbook_markdown(400)), "h.md")
    expected = [(d.title, d.text) for d in Splitter().split(doc)]

    def boom(self, other):
        raise AssertionError("nodes compared by content")

    monkeypatch.setattr(splitting.Node, "__eq__", boom)
    assert [(d.title, d.text) for d in Splitter().split(doc)] == expected


def test_tokenised_text_grows_linearly(approx):
    # every subtree is sized at each level above it: with whole texts counted, a deep file was tokenised
    # several times over; line by line, each line is tokenised about once whatever the size
    ratios = []
    for n in (200, 800):
        text = handbook_markdown(n, seed=n)
        doc = Document("h.md", "Handbook", md_loader.markdown_sections(text)[1])
        seen = [0]
        s = Splitter()
        real = s._count._raw
        s._count._raw = lambda t, real=real, seen=seen: seen.__setitem__(0, seen[0] + len(t)) or real(t)
        s.split(doc)
        ratios.append(seen[0] / len(text))
    assert ratios[1] < 1.2 and ratios[1] < ratios[0] * 1.2


def test_large_documents_use_a_second_process_and_give_the_same_articles(approx, monkeypatch, tmp_path):
    text = handbook_markdown(600, seed=5)
    path = write(tmp_path / "h.md", text)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 10**12)
    monkeypatch.setattr(splitting, "PARALLEL_CHARS", 10**12)
    one = load_file(path, "h.md")
    expected = [(d.title, d.text) for d in Splitter().split(one)]
    calls = []
    from kb_builder.documents import offload

    real = offload.Offloaded.__init__

    def spy(self, func, *args):
        calls.append(func.__name__)
        real(self, func, *args)

    monkeypatch.setattr(offload.Offloaded, "__init__", spy)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 1000)
    monkeypatch.setattr(splitting, "PARALLEL_CHARS", 1000)
    two = load_file(path, "h.md")
    assert two.sections == one.sections
    assert [(d.title, d.text) for d in Splitter().split(two)] == expected
    assert calls == ["_part_sections", "_count_parts"]


@pytest.mark.parametrize("opener", ["```\n", "<pre>\n"])
def test_a_block_open_across_the_halfway_heading_is_read_in_one_go(monkeypatch, opener):
    # the heading at the cut is inside a fence (or <pre>): not a heading, and not a place to cut
    lines = [f"## Part {i}\n\nText {i}.\n" for i in range(40)]
    lines.insert(15, opener)  # opened before the middle, closed after it
    lines.insert(35, opener.replace("<pre>", "</pre>"))
    text = "\n".join(lines)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 10**12)
    one = md_loader.markdown_sections(text)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 10)
    assert md_loader._cut_line(text.split("\n")) is not None
    assert md_loader.markdown_sections(text) == one
    assert not any(s.heading == "Part 20" for s in one[1])


def test_no_second_process_means_the_same_work_in_one(approx, monkeypatch):
    from kb_builder.documents import offload

    def refuse(self, func, *args):
        raise OSError("no processes here")

    text = handbook_markdown(300, seed=9)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 10**12)
    expected = md_loader.markdown_sections(text)
    monkeypatch.setattr(offload.Offloaded, "__init__", refuse)
    monkeypatch.setattr(md_loader, "PARALLEL_CHARS", 1000)
    monkeypatch.setattr(splitting, "PARALLEL_CHARS", 1000)
    assert md_loader.markdown_sections(text) == expected
    doc = Document("h.md", "Handbook", expected[1])
    assert [d.text for d in Splitter().split(doc)]


def test_cl100k_style_counts_line_by_line_split_as_whole_texts(monkeypatch):
    # tiktoken's cl100k cannot be downloaded here: a stand-in with its pre-tokeniser (one token a piece)
    regex = pytest.importorskip("regex")
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    pattern = regex.compile(openai_public.cl100k_base()["pat_str"])

    class Pieces:
        name = "cl100k_base"

        def encode(self, text, disallowed_special=()):
            return pattern.findall(text)

    monkeypatch.setitem(tokens._state, "enc", Pieces())
    tokens.count_tokens.cache_clear()
    doc = Document("h.md", "Handbook", md_loader.markdown_sections(handbook_markdown(300, seed=11))[1])
    try:
        assert splitting._Counter().mode == "lines"
        by_line = [(d.title, d.text) for d in Splitter().split(doc)]
        monkeypatch.setattr(splitting, "_LINE_ADDITIVE", set())
        assert splitting._Counter().mode is None
        assert [(d.title, d.text) for d in Splitter().split(doc)] == by_line
    finally:
        tokens.count_tokens.cache_clear()
