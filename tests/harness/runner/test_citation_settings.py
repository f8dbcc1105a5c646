"""How each model's citations are read and scored (issue 39): ``[models.citations]`` in the TOML, ``grace run
--citations`` and ``grace import-logs``' flags reach run.json's ``models[].citations`` (a system's default: several
citations per answer, its own references mapped onto articles; a GRACE prompt model: nothing, its run.json as
before), are checked before anything is asked (a bad key, value, map file or rule: its place and the fix, exit 2),
never change what is asked (no call is made again for them), and reach the scorer from run.json.

Everything runs through the real ``grace`` command line, with a real ``python:`` system (a team's bot that cites its
own source paths and headings) over the sample KB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grace
from tests.conftest import run_grace, sample_bench, write

N_QUESTIONS = 6

BOT = '''
"""A team's bot: its own retriever, and it cites its own documents (source path and heading), never an article ID."""
import json
import os
import re
from pathlib import Path

from grace import SystemAnswer

ARTICLES = [json.loads(line) for line in (Path(os.environ["BOT_KB"]) / "articles.jsonl").open(encoding="utf-8")]


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def answer(request):
    asked = words(request.question)
    hits = sorted(ARTICLES, key=lambda a: (-len(asked & words(a["title"] + " " + a["text"])), a["id"]))[:3]
    top = hits[0]
    heading = (top.get("heading_path") or [top["title"]])[-1]
    return SystemAnswer(answer=f"From our handbook: {top['text'][:80]} [1]",
                        citations=[f"{top['source']}#{heading}"], retrieved=[f"doc-{a['id']}" for a in hits])
'''


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The sample KB and the first questions of its gold set."""
    return sample_bench(tmp_path_factory.mktemp("citations"), N_QUESTIONS)


@pytest.fixture
def bot(bench, tmp_path, monkeypatch):
    """The bot's file in a folder of its own; grace runs from that folder."""
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    monkeypatch.setenv("BOT_KB", str(bench / "kb"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(bench, out, *args) -> tuple[int, str]:
    return run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", out, *args)


def models(out: Path) -> dict[str, dict]:
    return {m["name"]: m for m in json.loads((out / "run.json").read_text(encoding="utf-8"))["models"]}


def board(path: Path, citations: str, spec: str = "python:bot.py:answer") -> Path:
    return write(path, f'[[models]]\nspec = "{spec}"\nname = "bot"\n\n[models.citations]\n{citations}\n'
                       '[[models]]\nspec = "baseline:top1"\n')


def test_a_system_reads_references_several_per_answer_by_default_and_a_prompt_model_is_unchanged(bench, bot):
    code, out = run(bench, bot / "run", "--model", "python:bot.py:answer", "--model", "baseline:top1")
    assert code == 0, out
    got = models(bot / "run")
    assert got["python:bot.py:answer"]["citations"] == {"scoring": "multi", "reads": "references", "map": None,
                                                        "map_hash": None, "rewrite": {}}
    assert "citations" not in got["baseline:top1"]  # GRACE's reading: no new key in its run.json entry


def test_the_toml_table_with_a_map_relative_to_it_is_recorded_with_its_absolute_path_and_hash(bench, bot):
    kb = grace.load_kb(bench / "kb")
    bonus = next(a for a in kb.articles if a.heading_path and a.heading_path[-1] == "Annual performance bonus")
    (bot / "conf").mkdir()
    write(bot / "conf/chunks.csv", f"their_id,article_id\nchunk-7,{bonus.id}\n")
    toml = board(bot / "conf/board.toml", 'scoring = "single"\nmap = "chunks.csv"\n'
                 'rewrite = {"https://hr.example.com/docs/" = "payroll/"}\n')
    code, out = run(bench, bot / "run", "--config", toml)
    assert code == 0, out
    c = models(bot / "run")["bot"]["citations"]
    from harness.core.hashing import file_hash

    assert c == {"scoring": "single", "reads": "references", "map": str((bot / "conf/chunks.csv").resolve()),
                 "map_hash": file_hash(bot / "conf/chunks.csv"), "rewrite": {"https://hr.example.com/docs/": "payroll/"}}
    assert "citations" not in models(bot / "run")["baseline:top1"]


def test_citation_settings_never_change_what_is_asked(bench, bot):
    """Scoring-only: a run with other settings finds every answer already on file (no call made again)."""
    code, out = run(bench, bot / "run", "--config", board(bot / "a.toml", 'scoring = "multi"\n'))
    assert code == 0, out
    code, out = run(bench, bot / "run", "--config", board(bot / "b.toml", 'scoring = "single"\nreads = "ids"\n'))
    assert code == 0, out
    assert f"{2 * N_QUESTIONS} responses already done" in out and ", 0 to do" in out
    assert models(bot / "run")["bot"]["citations"]["reads"] == "ids"  # the new settings, recorded


def test_the_command_line_sets_a_models_scoring_and_reading_over_its_default(bench, bot):
    code, out = run(bench, bot / "run", "--model", "python:bot.py:answer", "--model", "baseline:top1",
                    "--citations", "baseline:top1=multi", "--citations", "python:bot.py:answer=single:ids")
    assert code == 0, out
    got = models(bot / "run")
    assert (got["baseline:top1"]["citations"]["scoring"], got["baseline:top1"]["citations"]["reads"]) == ("multi", "ids")
    assert (got["python:bot.py:answer"]["citations"]["scoring"],
            got["python:bot.py:answer"]["citations"]["reads"]) == ("single", "ids")
    for bad, words in (("nobody=multi", "no model named 'nobody'"), ("baseline:top1=many", "SCORING is one of"),
                       ("multi", "MODEL=SCORING[:READS]")):
        code, out = run(bench, bot / "bad", "--model", "baseline:top1", "--citations", bad)
        assert code == 2 and words in out and "Traceback" not in out, (bad, out)


@pytest.mark.parametrize(("table", "words"), [
    ('scoring = "multi"\nmaps = "x.csv"\n', "unknown key 'maps'; did you mean 'map'?"),
    ('scoring = "several"\n', "key 'scoring' must be one of 'single' or 'multi'"),
    ('reads = "urls"\n', "key 'reads' must be one of 'ids' or 'references'"),
    ('map = "missing.csv"\n', "key 'map':"),
    ('rewrite = {"https://a/" = 3}\n', "key 'rewrite'"),
    ('rewrite = {"" = "x/"}\n', "an empty prefix"),
])
def test_a_bad_citations_table_is_named_with_its_place_and_exits_2(bench, bot, table, words):
    toml = board(bot / "board.toml", table)
    code, out = run(bench, bot / "run", "--config", toml)
    assert code == 2 and f"{toml}: [[models]] #1: [models.citations]" in out and words in out, out
    assert "Traceback" not in out and not (bot / "run" / "responses.jsonl").exists()


@pytest.mark.parametrize(("rows", "line", "words"), [
    ("chunk-1,33\nchunk-2,99999\n", 2, "'99999' is not in the KB"),
    ("chunk-1,33\nchunk-1,33\n", 2, "duplicate row"),
    ("chunk-1,33\nchunk-1,34\n", 2, "conflicting (line 1"),
])
def test_a_bad_map_file_is_its_file_and_line_before_any_call(bench, bot, rows, line, words):
    write(bot / "map.csv", rows)
    code, out = run(bench, bot / "run", "--config", board(bot / "board.toml", 'map = "map.csv"\n'))
    assert code == 2 and f"{bot / 'map.csv'}:{line}" in out and words in out and "model bot" in out, out
    assert "Traceback" not in out and not (bot / "run" / "responses.jsonl").exists()


def test_rescoring_with_a_changed_map_warns_and_uses_the_new_one_and_a_lost_map_is_an_error(bench, bot):
    write(bot / "map.csv", "chunk-1,33\n")
    code, out = run(bench, bot / "run", "--config", board(bot / "board.toml", 'map = "map.csv"\n'))
    assert code == 0, out
    score = ("score", bot / "run" / "responses.jsonl", "--gold", bench / "gold.csv", "--kb", bench / "kb")
    code, out = run_grace(*score)
    assert code == 0 and "citation map changed" not in out, out
    write(bot / "map.csv", "chunk-1,34\n")
    code, out = run_grace(*score)
    assert code == 0 and "citation map changed" in out and str(bot / "map.csv") in out, out
    (bot / "map.csv").unlink()
    code, out = run_grace(*score)
    assert code == 2 and "is gone" in out and "Traceback" not in out, out


LOG = [{"question_id": "q001", "question": "How large is the annual bonus?", "answer": "Up to 10% [1].",
        "citations": ["payroll/pay-and-compensation.html#Annual performance bonus"], "model": "hr-bot"},
       {"question_id": "q002", "question": "Can I carry over leave?", "answer": "See the policy.",
        "citations": ["chunk-9"], "model": "hr-bot"}]


def import_logs(bench, tmp: Path, *args: str) -> tuple[int, str]:
    log = write(tmp / "logs.jsonl", "".join(json.dumps(r) + "\n" for r in LOG))
    return run_grace("import-logs", log, "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp / "imp",
                     *args)


def test_import_logs_reads_references_several_per_answer_unless_told_and_records_it(bench, tmp_path):
    code, out = import_logs(bench, tmp_path)
    assert code == 0, out
    assert models(tmp_path / "imp")["hr-bot"]["citations"] == {"scoring": "multi", "reads": "references", "map": None,
                                                               "map_hash": None, "rewrite": {}}
    write(tmp_path / "map.csv", "chunk-9,33\n")
    code, out = import_logs(bench, tmp_path, "--force", "--citations", "single", "--reads", "ids", "--citation-map",
                            tmp_path / "map.csv", "--rewrite", "https://hr.example.com/docs/=payroll/")
    assert code == 0, out
    c = models(tmp_path / "imp")["hr-bot"]["citations"]
    assert (c["scoring"], c["reads"], c["map"], c["rewrite"]) == (
        "single", "ids", str((tmp_path / "map.csv").resolve()), {"https://hr.example.com/docs/": "payroll/"})
    assert len(c["map_hash"]) == 16


@pytest.mark.parametrize(("args", "words"), [
    (("--rewrite", "a/=b/", "--rewrite", "a/=c/"), "conflicting rule for prefix 'a/'"),
    (("--rewrite", "no-equals"), "PREFIX=REPLACEMENT"),
    (("--citation-map", "MAP"), "map.csv:1: article '99999' is not in the KB"),
    (("--citations", "many"), "'many' is not one of 'single', 'multi'"),
])
def test_import_logs_bad_citation_flags_are_clear_errors(bench, tmp_path, args, words):
    write(tmp_path / "map.csv", "chunk-9,99999\n")
    args = tuple(str(tmp_path / "map.csv") if a == "MAP" else a for a in args)
    code, out = import_logs(bench, tmp_path, *args)
    assert code == 2 and words in out and "Traceback" not in out, out
    assert not (tmp_path / "imp" / "responses.jsonl").exists()


CHUNK_BOT = '''
from grace import SystemAnswer


def answer(request):
    return SystemAnswer(answer="From our handbook [1].", citations=[f"chunk-{request.question_id}"])
'''


def test_the_scorer_reads_each_models_settings_from_run_json_and_a_changed_map_is_used(bench, bot):
    """The settings reach the scorer: the bot's chunk IDs are read through its map (``how`` = mapping), and after
    the map is edited, ``grace score`` warns and reads the new one."""
    import csv

    gold = list(csv.DictReader((bench / "gold.csv").open(encoding="utf-8")))
    q = next(g for g in gold if g["expected_citations"])
    right = q["expected_citations"].split(";")[0]
    wrong = next(a.id for a in grace.load_kb(bench / "kb").articles if a.id != right)
    (bot / "chunks.py").write_text(CHUNK_BOT, encoding="utf-8")
    write(bot / "map.csv", f"chunk-{q['question_id']},{wrong}\n")
    code, out = run(bench, bot / "run", "--config", board(bot / "board.toml", 'map = "map.csv"\n',
                                                          spec="python:chunks.py:answer"))
    assert code == 0, out

    def cited() -> list[str]:
        lines = [json.loads(line) for line in (bot / "run" / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
        [line] = [x for x in lines if x["model"] == "bot" and x["question_id"] == q["question_id"]]
        assert "citations" not in next(x for x in lines if x["model"] == "baseline:top1")  # GRACE's line as ever
        return [(c["articles"], c["how"]) for c in line["citations"]]

    assert cited() == [([wrong], "mapping")]
    write(bot / "map.csv", f"chunk-{q['question_id']},{right}\n")
    code, out = run_grace("score", bot / "run" / "responses.jsonl", "--gold", bench / "gold.csv", "--kb", bench / "kb")
    assert code == 0 and "citation map changed" in out, out
    assert cited() == [([right], "mapping")]
