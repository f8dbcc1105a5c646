"""``grace kb build --splitter headings|semantic|llm:MODEL``: documents without headings cut at their topics."""

from __future__ import annotations

import json
import re

import pytest

from harness.runner.topic_split import parse_topics
from harness.testing.fake_api import FakeAPIServer, prompt_text
from kb_builder.documents import Document, Section
from kb_builder.splitting import Splitter
from kb_builder.tokens import count_tokens
from kb_builder.topics import TopicSplitter, topic_title, topic_units
from tests.conftest import ROOT, run_grace, write

# three topics, four paragraphs each, no headings: what a flat export of a handbook page gives
TOPICS = {
    "parking": [
        "Parking permits for the staff garage are issued by the facilities team. A parking permit is tied to one car.",
        "The garage opens at six in the morning. Park only in the marked staff bays of the garage, never in visitor bays.",
        "A lost parking permit is replaced by facilities for a fee of ten euros. Report the lost permit the same day.",
        "Electric cars may charge in the garage bays on level two. Charging bays are for parking while charging only.",
    ],
    "laptop": [
        "Every laptop must use full disk encryption. The security team installs encryption before handing the laptop over.",
        "Lock the laptop screen whenever you leave the laptop. Security checks laptops for screen lock settings each month.",
        "A stolen or lost laptop must be reported to security within one hour, so the laptop can be wiped remotely.",
        "Passwords for the laptop must be fourteen characters long. Security never asks for your laptop password.",
    ],
    "dental": [
        "The dental plan covers two dental checkups a year. Dental cleaning is included in each checkup.",
        "Claims for dental treatment are sent to the insurer within ninety days. Keep the dentist's receipt for the claim.",
        "Orthodontic treatment is covered by the dental plan for children under eighteen, up to a yearly limit.",
        "Dental emergencies abroad are covered. Send the insurer the dentist's invoice and a dental claim form.",
    ],
}


def flat_text(order=("parking", "laptop", "dental")) -> str:
    return "\n\n".join(p for t in order for p in TOPICS[t])


def flat_doc(text: str, title: str = "Staff guide") -> Document:
    return Document(source="guide.md", title=title, sections=[Section(0, "", text)])


def topic_of(text: str) -> set[str]:
    return {t for t, paras in TOPICS.items() for p in paras if p in text}


def test_semantic_finds_the_planted_topic_boundaries_and_titles_each_part():
    drafts = TopicSplitter(max_tokens=800).split(flat_doc(flat_text()))
    assert [topic_of(d.text) for d in drafts] == [{"parking"}, {"laptop"}, {"dental"}]
    for d, topic in zip(drafts, ("parking", "laptop", "dental"), strict=True):
        assert d.text == "\n\n".join(TOPICS[topic])  # every paragraph, once, in order
        first = TOPICS[topic][0].split(".")[0].split()
        assert d.path[0] == "Staff guide" and d.path[1].startswith(" ".join(first[:6])), d.path
        assert d.title == f"Staff guide > {d.path[1]}"
    # the heading splitter, on the same text, keeps it whole: it has no headings to cut at
    assert len(Splitter(max_tokens=800).split(flat_doc(flat_text()))) == 1


def test_a_heading_that_became_a_plain_line_titles_its_part():
    text = "\n\n".join(f"{name.capitalize()} rules\n\n" + "\n\n".join(TOPICS[name]) for name in TOPICS)
    assert topic_units(text)[0].startswith("Parking rules\n\n")  # a title line stays with the paragraph it opens
    drafts = TopicSplitter(max_tokens=800).split(flat_doc(text))
    assert [d.path[-1] for d in drafts] == ["Parking rules", "Laptop rules", "Dental rules"]
    assert topic_title(["<h3 class='x'>\n---\nThe dental plan covers checkups. More text."]) == "The dental plan covers checkups"


def test_semantic_keeps_every_part_within_the_token_budget():
    text = "\n\n".join(flat_text(order) for order in [("parking", "laptop", "dental"), ("dental", "parking", "laptop")] * 3)
    drafts = TopicSplitter(max_tokens=200).split(flat_doc(text))
    assert len(drafts) >= 9
    assert all(count_tokens(d.title + "\n" + d.text) <= 200 for d in drafts), [d.tokens for d in drafts]
    paragraphs = [p for d in drafts for p in d.text.split("\n\n")]
    assert paragraphs == text.split("\n\n")  # nothing lost, nothing repeated, order kept


def test_text_under_a_heading_within_budget_is_left_as_the_author_cut_it():
    sections = [Section(1, "Guide", ""), Section(2, "Parking", "\n\n".join(TOPICS["parking"])),
                Section(2, "Laptops", "\n\n".join(TOPICS["laptop"] + TOPICS["dental"]))]
    doc = Document(source="guide.md", title="Guide", sections=sections)
    assert ([(d.title, d.text) for d in TopicSplitter().split(doc)] == [(d.title, d.text) for d in Splitter().split(doc)])


def kb_lines(kb) -> list[dict]:
    return [json.loads(line) for line in (kb / "articles.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_headings_build_is_unchanged_and_records_no_splitter(tmp_path):
    src = ROOT / "benchmarks" / "external" / "clef-en" / "pages"
    code, out = run_grace("kb", "build", src, "--out", tmp_path / "default", "--no-lint")
    assert code == 0, out
    code, out = run_grace("kb", "build", src, "--out", tmp_path / "named", "--splitter", "headings", "--no-lint")
    assert code == 0 and "splitter:" not in out, out
    default = (tmp_path / "default" / "articles.jsonl").read_bytes()
    assert default == (tmp_path / "named" / "articles.jsonl").read_bytes()
    assert "splitter" not in json.loads((tmp_path / "default" / "manifest.json").read_text())
    # the handbook's gold labels (IDs and titles of the headings build) still name the same articles
    import csv

    titles = {a["id"]: a["title"] for a in kb_lines(tmp_path / "default")}
    with (ROOT / "benchmarks" / "external" / "clef-en" / "gold.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            ids = [i for i in row["expected_citations"].split(";") if i]
            assert [titles[i] for i in ids] == [t for t in row["expected_titles"].split(" || ") if t]


def test_semantic_ids_are_stable_on_rebuild_and_the_kb_keeps_its_splitter(tmp_path):
    write(tmp_path / "src" / "guide.md", "---\ntitle: Staff guide\n---\n\n" + flat_text())
    write(tmp_path / "src" / "more.txt", flat_text(("dental", "laptop", "parking")))
    kb = tmp_path / "kb"
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb, "--splitter", "semantic")
    assert code == 0 and "splitter: semantic" in out, out
    first = kb_lines(kb)
    assert len(first) == 6 and json.loads((kb / "manifest.json").read_text())["splitter"] == "semantic"
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb)  # no --splitter: the KB's own
    assert code == 0 and "0 added, 0 changed, 0 removed, 6 unchanged" in out and "splitter: semantic" in out, out
    assert kb_lines(kb) == first
    # an edit inside one part changes that article only; the others keep their IDs and texts
    write(tmp_path / "src" / "guide.md", "---\ntitle: Staff guide\n---\n\n"
          + flat_text().replace("fee of ten euros", "fee of twelve euros"))
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb)
    assert code == 0 and "0 added, 1 changed, 0 removed, 5 unchanged" in out, out


def test_a_bad_splitter_is_a_clear_error(tmp_path):
    write(tmp_path / "src" / "guide.md", flat_text())
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--splitter", "topics")
    assert code == 2 and "choose headings" in out and "semantic" in out and "Traceback" not in out, out
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--splitter", "llm:gpt-4o")
    assert code == 2 and "llm:PROVIDER:MODEL" in out and "Traceback" not in out, out
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--splitter", "semantic", "--dry-run")
    assert code == 2 and "calls no model" in out, out
    assert not (tmp_path / "kb").exists()


def test_parse_topics_reads_what_models_write_and_refuses_what_cannot_be_used():
    assert parse_topics('{"parts": [{"start": 1, "title": "A"}, {"start": 3, "title": "B"}]}', 4).starts == (0, 2)
    fenced = 'Here you go:\n```json\n{"sections": [{"paragraph": "1", "name": "A"}, {"paragraph": "[4]", "name": "B"}]}\n```'
    seg = parse_topics(fenced, 5)
    assert seg.starts == (0, 3) and seg.titles == ("A", "B")
    assert parse_topics('{"parts": [2, 4]}', 5).starts == (0, 1, 3)  # the text before the first start is a part
    echoed = parse_topics('{"parts": [{"start": 1, "title": "<title>"}, {"start": 2, "title": "Dental"}]}', 5)
    assert echoed.titles == ("", "Dental")  # a placeholder echoed back is no title: the part is titled from its text
    for bad in ("no json here", '{"parts": [{"start": 9, "title": "A"}]}', '{"parts": [3, 2]}', '{"parts": []}',
                '{"title": "A"}', '{"parts": [{"title": "A"}]}', None):
        assert parse_topics(bad, 5) is None, bad


def planted_answer(body: dict) -> str:
    """A model that finds the three topics: the paragraph numbers where each topic's first paragraph is shown."""
    text = prompt_text(body)
    parts = []
    for name, paras in TOPICS.items():
        m = re.search(r"\[(\d+)\] " + re.escape(paras[0][:30]), text)
        if m:
            parts.append((int(m.group(1)), f"{name.capitalize()} policy"))
    return json.dumps({"parts": [{"start": s, "title": t} for s, t in sorted(parts)]})


@pytest.fixture
def topic_server(monkeypatch):
    with FakeAPIServer(responder=planted_answer) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        yield srv


def test_llm_splitter_takes_the_models_boundaries_and_titles_and_caches_them(tmp_path, topic_server):
    write(tmp_path / "src" / "guide.md", "---\ntitle: Staff guide\n---\n\n" + flat_text(("laptop", "dental", "parking")))
    kb = tmp_path / "kb"
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb, "--splitter", "llm:openai:gpt-4o-mini")
    assert code == 0, out
    assert "splitter: llm:openai:gpt-4o-mini; 1 call(s), 0 cached, 0 failed" in out, out
    arts = kb_lines(kb)
    assert [a["title"] for a in arts] == ["Staff guide > Laptop policy", "Staff guide > Dental policy",
                                          "Staff guide > Parking policy"]
    assert [topic_of(a["text"]) for a in arts] == [{"laptop"}, {"dental"}, {"parking"}]
    sent = prompt_text(topic_server.requests[0].body)
    assert "[1] Every laptop must use full disk encryption" in sent and "Paragraphs (12)" in sent
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb)  # a rebuild keeps llm:, asks the cache
    assert code == 0 and "0 call(s), 1 cached" in out and len(topic_server.requests) == 1, out
    assert kb_lines(kb) == arts


def test_an_unreadable_answer_falls_back_to_semantic_and_says_so(tmp_path, topic_server):
    write(tmp_path / "src" / "guide.md", "---\ntitle: Staff guide\n---\n\n" + flat_text())
    topic_server.responder = lambda body: "I think there are three topics here: parking, laptops and dental care."
    kb = tmp_path / "kb"
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", kb, "--splitter", "llm:openai:gpt-4o-mini")
    assert code == 0, out
    assert "1 text(s) split by semantic instead" in out and "guide.md: Staff guide" in out, out
    semantic = TopicSplitter().split(flat_doc(flat_text()))
    assert [a["text"] for a in kb_lines(kb)] == [d.text for d in semantic]


def test_llm_splitter_dry_run_prices_the_calls_and_writes_nothing(tmp_path, topic_server):
    write(tmp_path / "src" / "guide.md", flat_text())
    write(tmp_path / "src" / "other.md", flat_text(("dental", "parking")))
    write(tmp_path / "src" / "headed.md", "# Headed\n\n## Parking\n\n" + "\n\n".join(TOPICS["parking"]))
    prices = write(tmp_path / "prices.json", json.dumps({"openai:gpt-4o-mini": [0.15, 0.6]}))
    code, out = run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb", "--splitter",
                          "llm:openai:gpt-4o-mini", "--dry-run", "--prices", prices)
    assert code == 0 and "Dry run: no calls made" in out and "finding topics" in out, out
    row = next(line for line in out.splitlines() if "finding topics" in line)
    assert re.search(r"│ 2\s+│ 0\s+│", row), row  # two flat texts asked; the page with headings is not
    assert not topic_server.requests and not (tmp_path / "kb").exists()
