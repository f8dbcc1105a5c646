"""grace compare: two runs made against the fake server with different behaviours, checked question by question
against their scores.jsonl, read here independently of grace's own reader."""

from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from pathlib import Path

import pytest

import grace
from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import run_grace, small_bench, write

MODEL = "openai:fake-m"
REFUSALS = ["what is the capital of France", "who won the 1998 world cup", "how tall is mount everest"]


def shown_ids(body: dict) -> list[str]:
    """The IDs of the articles in the prompt (not the ``[ID: <id>]`` of the format instructions)."""
    return [i for i in re.findall(r"\[ID: ([^\]]+)\]", prompt_text(body)) if i != "<id>"]


def cite_first_article(body: dict) -> str:
    """Run A's model: answers every question from the first article shown."""
    return f"According to the article, this is answered there. [ID: {shown_ids(body)[0]}]"


class ChangedBehaviour:
    """Run B's model: like run A's except that it cites the second article shown for every third question,
    refuses the must-refuse ones, and answers a fourth group right on one call in three (so with three
    repeats the majority is wrong, though one repeat is right)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        text = prompt_text(body)
        ids = shown_ids(body)
        variant = re.search(r"\(variant (\d+)\)", text)
        if variant is None:  # a must-refuse question
            return "I don't have enough information to answer this question."
        n = int(variant.group(1))
        with self.lock:
            self.calls[variant.group(1)] += 1
            call = self.calls[variant.group(1)]
        if n % 3 == 0 and len(ids) > 1:
            return f"It is in the second article. [ID: {ids[1]}]"
        if n % 4 == 1 and call > 1 and len(ids) > 1:
            return f"Maybe this one. [ID: {ids[-1]}]"
        return cite_first_article(body)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    bench = small_bench(root, 16, REFUSALS)
    common = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--repeats", "3", "--concurrency", "4"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "grace-cache"))  # a module fixture: conftest's is not set yet
        with FakeAPIServer(responder=cite_first_article) as srv:
            mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
            mp.setenv("OPENAI_API_KEY", "x")
            code, out = run_grace(*common, "-m", MODEL, "-m", "baseline:top1", "--out", root / "a")
            assert code == 0, out
        with FakeAPIServer(responder=ChangedBehaviour()) as srv:
            mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
            code, out = run_grace(*common, "-m", MODEL, "-m", "baseline:top1", "-m", "baseline:threshold",
                                  "--out", root / "b", "--no-cache")
            assert code == 0, out
    return root


def independent_flips(run_a: Path, run_b: Path, model: str) -> tuple[set[str], set[str], float, float]:
    """Improved and regressed questions and both accuracies, from the two scores files with nothing of grace's."""

    def per_question(run: Path) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = defaultdict(list)
        for line in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["model"] == model:
                out[row["question_id"]].append(row["outcome"] in ("correct", "correct_refusal"))
        return out

    a, b = per_question(run_a), per_question(run_b)
    both = sorted(set(a) & set(b))
    right_a = {q for q in both if sum(a[q]) * 2 > len(a[q])}  # the report's rule: more than half of the repeats
    right_b = {q for q in both if sum(b[q]) * 2 > len(b[q])}
    acc_a = sum(sum(a[q]) / len(a[q]) for q in both) / len(both)
    acc_b = sum(sum(b[q]) / len(b[q]) for q in both) / len(both)
    return right_b - right_a, right_a - right_b, acc_a, acc_b


def test_json_lists_exactly_the_flipped_questions(runs):
    out_json = runs / "cmp.json"
    code, out = run_grace("compare", runs / "a", runs / "b", "--json", out_json)
    assert code == 0, out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["schema_version"] == 1 and data["only_in_b"] == ["baseline:threshold"]
    rows = {m["model"]: m for m in data["models"]}
    assert set(rows) == {MODEL, "baseline:top1"}
    improved, regressed, acc_a, acc_b = independent_flips(runs / "a", runs / "b", MODEL)
    m = rows[MODEL]
    assert set(m["improved"]) == improved and set(m["regressed"]) == regressed
    assert improved and regressed  # the behaviours really differ both ways: the test checks something
    assert set(rows["baseline:top1"]["improved"]) == set() == set(rows["baseline:top1"]["regressed"])
    assert m["accuracy_a"] == pytest.approx(acc_a, abs=1e-6) and m["accuracy_b"] == pytest.approx(acc_b, abs=1e-6)
    assert m["delta"] == pytest.approx(acc_b - acc_a, abs=1e-6)
    lo, hi = m["delta_ci"]
    assert lo <= m["delta"] <= hi
    scipy_stats = pytest.importorskip("scipy.stats")
    expected_p = scipy_stats.binomtest(len(regressed), len(regressed) + len(improved), 0.5).pvalue
    assert m["mcnemar_p"] == pytest.approx(expected_p, abs=1e-7)
    # the question with one right repeat in three counts as wrong, as the report's majority rule says
    mixed = [q for q in m["regressed"] if q.startswith("q") and int(q[1:]) % 4 == 1 and int(q[1:]) % 3]
    assert mixed, "no question was right on one repeat of three"
    assert all(a["article"] for a in m["articles"]) and sum(a["improved"] for a in m["articles"]) >= len(improved)
    # the terminal names the flips too
    assert MODEL in out and "regressed" in out


def test_markdown_for_a_pull_request_and_the_api(runs):
    md = runs / "summary.md"
    write(md, "# earlier step\n")  # $GITHUB_STEP_SUMMARY is appended to
    code, out = run_grace("compare", runs / "a", runs / "b", "--model", MODEL, "--markdown", md)
    assert code == 0, out
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n") and "## grace compare" in text
    assert "| Model | A | B | Δ accuracy [95% CI] | McNemar p | Improved | Regressed | Verdict |" in text
    assert "openai:fake-m" in text and "<details><summary>" in text and "baseline:top1" not in text
    cmp = grace.compare_runs(runs / "a", runs / "b", [MODEL])
    improved, regressed, _, _ = independent_flips(runs / "a", runs / "b", MODEL)
    assert set(cmp[MODEL].improved) == improved and set(cmp[MODEL].regressed) == regressed
    # two models of one run: the same arithmetic, A = the first model
    two = grace.compare_models(runs / "b", "baseline:top1", MODEL)
    assert two.models[0].model == f"baseline:top1 vs {MODEL}" and two.models[0].n_questions == 19


def test_bad_inputs_exit_2_with_the_fix(runs, tmp_path):
    code, out = run_grace("compare", runs / "a", tmp_path / "nope")
    assert code == 2 and "no such run folder" in out and "Traceback" not in out
    unscored = tmp_path / "unscored"
    unscored.mkdir()
    code, out = run_grace("compare", runs / "a", unscored)
    assert code == 2 and "no scores.jsonl yet" in out and "grace score" in out
    code, out = run_grace("compare", runs / "a", runs / "b", "--model", "openai:other")
    assert code == 2 and "no model 'openai:other'" in out
    # another gold set: refused, with the command that makes the runs comparable
    other = tmp_path / "other"
    (other).mkdir()
    for name in ("scores.jsonl", "report.json", "responses.jsonl"):
        (other / name).write_bytes((runs / "b" / name).read_bytes())
    report = json.loads((other / "report.json").read_text(encoding="utf-8"))
    report["gold"]["hash"] = "0" * 16
    (other / "report.json").write_text(json.dumps(report), encoding="utf-8")
    code, out = run_grace("compare", runs / "a", other)
    assert code == 2 and "different gold sets" in out and "grace score" in out
    # --json may not overwrite an input, nor an existing file unasked
    code, out = run_grace("compare", runs / "a", runs / "b", "--json", runs / "a" / "report.json")
    assert code == 2 and "would destroy it" in out


def test_a_run_still_being_written_or_not_yet_scored_is_named_with_what_to_do(runs, tmp_path):
    """grace compare reads scores.jsonl; a run grace run is still writing (its folder's lock is held), or whose
    responses.jsonl holds answers its scores do not, is compared on old scores: the terminal, --json and --markdown say
    so, naming the run and what to do."""
    import os
    import shutil

    b = tmp_path / "b"
    shutil.copytree(runs / "b", b)  # times kept: scores.jsonl is newer than responses.jsonl, as grace run leaves it
    code, out = run_grace("compare", runs / "a", b)
    assert code == 0 and "being written" not in out and "not scored yet" not in out
    (b / ".grace.lock").write_text(f"pid {os.getpid()}, 'grace run --out {b}', since now\n")  # grace run holds it
    md = tmp_path / "summary.md"
    code, out = run_grace("compare", runs / "a", b, "--json", tmp_path / "cmp.json", "--markdown", md)
    assert code == 0, out
    note = next(line for line in out.splitlines() if "being written now" in line)
    assert note.startswith("note: run B") and str(b) in note and f"pid {os.getpid()}" in note
    assert "wait for" in note.lower() and "grace compare again" in note
    assert any("being written now" in n and str(b) in n for n in json.loads((tmp_path / "cmp.json").read_text())["notes"])
    assert "being written now" in md.read_text()
    # the writer is gone (killed, or --no-score) and left an answer the scores do not hold (its last call again)
    (b / ".grace.lock").write_text("")
    with (b / "responses.jsonl").open("a", encoding="utf-8") as fh:
        fh.write((b / "responses.jsonl").read_text(encoding="utf-8").splitlines()[-1] + "\n")
    code, out = run_grace("compare", b, runs / "a")
    assert code == 0, out
    note = next(line for line in out.splitlines() if "not scored yet" in line)
    assert note.startswith("note: run A") and f"grace score {b / 'responses.jsonl'} --gold" in note
    two = grace.compare_models(b, "baseline:top1", MODEL)
    assert any("not scored yet" in n for n in two.notes)
