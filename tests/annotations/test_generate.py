"""``grace gold generate`` end to end: the real SDKs against the fake API server writing and checking questions."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console

from annotations.generate import COPY_SHARE, copies_article, copy_overlap, generate_draft
from annotations.labels import read_labels, render_csv, split_titles
from harness.core.errors import GraceError
from harness.testing import FakeAPIServer, generate_questions, prompt_text
from kb_builder.gold import read_gold
from kb_builder.loader import load_kb
from tests.annotations.test_labeler import ARTICLES
from tests.conftest import ROOT, run_grace, write

MEAL = {"id": "6", "title": "Expenses > Meal allowance", "text": "On business trips you can claim a meal allowance: "
        "the per diem is 45 EUR a day in the EU. Submit receipts in Ledgerly."}  # a near-duplicate of article 4
COPIED = "Is it true that employees get ten days of paid sick leave per year?"
AMBIGUOUS = "Where do I book flights for a trip?"  # written from the sick-leave article, answered by the flights one
MODEL = "openai:gpt-4o-mini"


def writer(body):
    """The fake server's writer, except for article 1: one copied, one good and one ambiguous question."""
    text = prompt_text(body)
    if "<article>" in text and "Article [ID: 1]" in text:
        return json.dumps({"questions": [{"question": COPIED, "answer": "yes"},
                                         {"question": "How many sick days do I get each year?", "answer": "Ten."},
                                         {"question": AMBIGUOUS, "answer": "no idea"}]})
    return generate_questions(body)


@pytest.fixture()
def kb_dir(tmp_path):
    write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES + [MEAL]))
    return tmp_path / "kb"


@pytest.fixture()
def srv(monkeypatch):
    with FakeAPIServer(responder=writer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.google_base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "x")
        yield server


def rows(path):
    return {r["question_id"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}


def generate(kb_dir, out, model=MODEL, **kwargs):
    buf = io.StringIO()
    kwargs = {"per_article": 3, "refusals": 3, "k": 3} | kwargs
    res = generate_draft(load_kb(kb_dir), model, out, console=Console(file=buf, width=200), **kwargs)
    return res, buf.getvalue()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
def test_generate_filters_copies_and_ambiguity_and_labels_the_rest(tmp_path, kb_dir, srv, provider):
    res, text = generate(kb_dir, tmp_path / "draft.csv", f"{provider}:some-model")
    assert {r.api for r in srv.requests} == {provider}
    assert (res.generated, len(res.copied), res.duplicates, len(res.ambiguous)) == (18, 1, 0, 1)
    assert res.copied[0][:2] == ("gen-1-1", COPIED) and res.copied[0][2] >= COPY_SHARE
    assert res.ambiguous[0][:2] == ("gen-1-3", AMBIGUOUS) and "the labeler says 3" in res.ambiguous[0][2]
    assert (res.kept_single, res.kept_multi, res.refusals_generated, res.refusals_kept) == (13, 3, 3, 3)
    assert (res.unchecked, res.unreadable) == (0, 0)
    draft = rows(tmp_path / "draft.csv")
    assert len(draft) == 16 + 3 and "gen-1-1" not in draft and "gen-1-3" not in draft
    assert {r["status"] for r in draft.values()} == {"draft"}
    assert {r["suggestion_source"] for r in draft.values()} == {f"generated:{provider}:some-model"}
    assert draft["gen-1-2"]["expected_citations"] == "1" and draft["gen-1-2"]["expected_answer"] == "Ten."
    assert draft["gen-1-2"]["source_article"] == "1" and draft["gen-1-2"]["must_refuse"] == "false"
    for n in (1, 2, 3):  # the per diem and the meal allowance both answer a question about the per diem
        assert (draft[f"gen-4-{n}"]["expected_citations"], draft[f"gen-4-{n}"]["suggested"]) == ("4;6", "4;6")
        assert draft[f"gen-6-{n}"]["expected_citations"] == "6"
    refusals = [r for q, r in draft.items() if q.startswith("gen-refuse-")]
    assert len(refusals) == 3
    assert all(r["must_refuse"] == "true" and r["expected_citations"] == "" and r["suggested"] == "REFUSE"
               and r["source_article"] == "" for r in refusals)
    assert "rejected for copying the article: 1" in text and "dropped as ambiguous: 1" in text
    assert "kept: 16 (13 single-article, 3 multi-article)" in text and "refusals: 3 kept, 0 dropped" in text
    first = srv.requests[0].body  # the first article's questions, asked for with the nested JSON schema
    schema = {"openai": lambda b: b["response_format"]["json_schema"]["schema"],
              "anthropic": lambda b: b["output_config"]["format"]["schema"],
              "google": lambda b: b["generationConfig"]["responseJsonSchema"]}[provider](first)
    assert schema["properties"]["questions"]["items"]["required"] == ["question", "answer"]


def test_the_cli_writes_a_draft_that_validate_accepts_and_read_gold_ignores(tmp_path, kb_dir, srv):
    draft = tmp_path / "draft.csv"
    code, out = run_grace("gold", "generate", kb_dir, "--model", MODEL, "--per-article", "3", "--refusals", "3",
                          "--out", draft, "-k", "3")
    assert code == 0, out
    assert "19 draft question(s) -> " in out and "generator (openai:gpt-4o-mini): 7 call(s), 0 cached" in out
    assert "labeler (openai:gpt-4o-mini): 20 call(s)" in out  # 17 passed the copy filter, + 3 refusals
    code, out = run_grace("annotations", "validate", draft, "--kb", kb_dir)
    assert code == 0, out
    assert "19 questions, 0 labelled, 19 draft" in out and "OK: no errors" in out
    assert "19 draft question(s) are not gold until accepted in grace annotate" in out
    with pytest.raises(GraceError, match="no questions found"):
        read_gold(draft)  # drafts are not gold
    records, extra = read_labels(draft)
    assert extra == ["source_article"]
    records[0].status = "labelled"  # a person accepted one
    draft.write_text(render_csv(records, extra), encoding="utf-8")
    gold = read_gold(draft)
    assert [(q.question_id, q.expected_citations) for q in gold] == [(records[0].question_id, records[0].expected_citations)]


def test_running_again_costs_nothing_and_never_overwrites_a_reviewed_file(tmp_path, kb_dir, srv):
    draft = tmp_path / "draft.csv"
    generate(kb_dir, draft)
    n, first = len(srv.requests), draft.read_text()
    _, text = generate(kb_dir, draft)
    assert len(srv.requests) == n and draft.read_text() == first
    assert "generator (openai:gpt-4o-mini): 0 call(s), 7 cached" in text
    records, extra = read_labels(draft)
    records[0].status = "labelled"
    draft.write_text(render_csv(records, extra), encoding="utf-8")
    code, out = run_grace("gold", "generate", kb_dir, "--model", MODEL, "--out", draft)
    assert code == 2 and "is not an untouched draft" in out
    assert len(srv.requests) == n


def test_a_refusal_that_an_article_answers_is_dropped(tmp_path, kb_dir, srv):
    def refusals(body):
        if "<titles>" in prompt_text(body):
            return json.dumps({"questions": [{"question": "Can I bring my dog to the office?", "topic": "pets"},
                                             {"question": "How many days of paid sick leave do I get?", "topic": "x"}]})
        return writer(body)

    srv.responder = refusals
    res, text = generate(kb_dir, tmp_path / "draft.csv", refusals=2)
    assert (res.refusals_generated, res.refusals_kept) == (2, 1)
    assert res.refusals_answerable[0][0] == "gen-refuse-2" and "cites 1" in res.refusals_answerable[0][2]
    draft = rows(tmp_path / "draft.csv")
    assert "gen-refuse-1" in draft and "gen-refuse-2" not in draft
    titles = next(prompt_text(r.body) for r in srv.requests if "<titles>" in prompt_text(r.body))
    assert all(f"- {a['title']}" in titles for a in ARTICLES + [MEAL])  # the model sees what the KB covers


def test_unusable_replies_are_counted_not_guessed(tmp_path, kb_dir, srv):
    def broken(body):
        text = prompt_text(body)
        if "Article [ID: 2]" in text:
            return "Here are some questions: 1. how long is parental leave"  # no JSON
        if "Question: Who do I talk to about laptop return?" in text:
            return "article 5 probably"
        return writer(body)

    srv.responder = broken
    res, text = generate(kb_dir, tmp_path / "draft.csv", refusals=0)
    assert (res.unreadable, res.unchecked) == (1, 1)
    draft = rows(tmp_path / "draft.csv")
    assert not any(q.startswith("gen-2-") for q in draft) and "gen-5-1" in draft and "gen-5-2" not in draft
    assert "1 generator repl(ies) without questions, 1 question(s) the labeler could not check" in text


def test_dry_run_estimates_and_calls_nothing(tmp_path, kb_dir, srv):
    draft = tmp_path / "draft.csv"
    code, out = run_grace("gold", "generate", kb_dir, "--model", MODEL, "--per-article", "2", "--refusals", "4",
                          "--out", draft, "--dry-run")
    assert code == 0, out
    assert srv.requests == [] and not draft.exists()
    assert "Dry run: no calls made" in out
    cells = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[3:5]]
             for line in out.splitlines() if line.count("│") > 5}
    assert cells["writing questions"] == ["6", "0"] and cells["writing refusals"] == ["1", "0"]
    assert cells["checking questions"] == ["~16", "~0"]  # 6 articles x 2 + 4 refusals, not written yet


def test_the_copy_rule():
    article = ARTICLES[0]["title"] + "\n" + ARTICLES[0]["text"]
    assert copies_article(COPIED, article) == pytest.approx(8 / 12)  # 8 of its 12 word trigrams are in the article
    assert copy_overlap("How many sick days do I get each year?", article) == (0.0, 0)
    assert copies_article("paid sick leave?", article) is None  # one trigram: a term, not a copied sentence
    assert copies_article("Do I need a doctor's note from the fourth day of illness?", article) is None


@pytest.mark.parametrize("article, copied, own", [
    ("Κάθε εργαζόμενος δικαιούται δέκα ημέρες άδειας ασθενείας με αποδοχές τον χρόνο, και οι ημέρες που δεν "
     "χρησιμοποιούνται χάνονται στο τέλος του έτους.",
     "Είναι αλήθεια ότι κάθε εργαζόμενος δικαιούται δέκα ημέρες άδειας ασθενείας με αποδοχές τον χρόνο;",
     "Πόσες μέρες μπορώ να λείπω άρρωστος;"),
    ("Каждый сотрудник имеет право на десять дней оплачиваемого больничного в год.",
     "Правда ли, что каждый сотрудник имеет право на десять дней оплачиваемого больничного?",
     "Сколько дней я могу болеть?"),
    ("员工每年享有十天带薪病假，未使用的病假在年底作废。", "员工每年享有十天带薪病假吗？", "我生病了可以请几天假？"),
], ids=["el", "ru", "zh"])
def test_the_copy_rule_reads_every_script(article, copied, own):
    """Words of any script, a character at a time where there are no spaces: the rule once saw only a-z and 0-9,
    so a Greek, Russian or Chinese question copied from its article had no words at all and always passed."""
    assert copies_article(copied, article) is not None
    assert copies_article(own, article) is None


def test_the_copy_threshold_passes_every_human_question_of_the_sample(tmp_path):
    """The calibration the threshold rests on: no human question of the bundled sample reaches it."""
    code, out = run_grace("kb", "build", ROOT / "benchmarks" / "sample" / "handbook", "--out", tmp_path / "kb")
    assert code == 0, out
    kb = load_kb(tmp_path / "kb")
    gold = [q for q in read_gold(ROOT / "benchmarks" / "sample" / "gold.csv") if not q.must_refuse]
    assert all([kb.by_id[c].title for c in q.expected_citations] == split_titles(q.extra["expected_titles"])
               for q in gold)  # the fresh build gives the gold's articles the IDs the gold names
    shares = [copy_overlap(q.question, " ".join(f"{kb.by_id[c].title}\n{kb.by_id[c].text}" for c in q.expected_citations))[0]
              for q in gold]
    assert len(shares) == 73 and max(shares) <= COPY_SHARE / 2  # 0.25: half the threshold


def test_the_fake_writer_can_copy_its_article_and_every_copy_is_rejected(tmp_path, kb_dir, srv):
    srv.responder = lambda body: generate_questions(body, copy=True)
    res, _ = generate(kb_dir, tmp_path / "draft.csv", per_article=2, refusals=0)
    assert [qid for qid, _, _ in res.copied] == [f"gen-{i}-1" for i in range(1, 7)]
    assert all(q.startswith("Is it true that ") for _, q, _ in res.copied)
    assert res.kept_single + res.kept_multi == 6 and not any(r.question_id.endswith("-1") for r in res.records)
