"""The splitter's merge and split rules, on outlines built by hand."""

from __future__ import annotations

from kb_builder.documents import Document, Section
from kb_builder.splitting import Splitter
from kb_builder.tokens import count_tokens

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


def test_parent_text_with_small_children_stays_one_article_beside_big_ones():
    intro = "All leave requests go through the HR portal and need approval from your line manager before the first day. " * 3
    d = doc(Section(1, "Leave", intro), Section(2, "Sick leave", TOPIC), Section(2, "Parental leave", TOPIC),
            Section(2, "Jury duty", "Paid in full."))
    drafts = Splitter().split(d)
    assert [x.title for x in drafts] == ["Leave", "Leave > Sick leave", "Leave > Parental leave"]
    assert "Jury duty" in drafts[0].text and "Paid in full." in drafts[0].text
