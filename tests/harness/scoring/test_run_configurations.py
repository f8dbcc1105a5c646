"""Configurations side by side (issue 47): one leaderboard across run folders with the same model at k=1 and k=3 as
two rows and a paired test between them; ``grace compare`` and the viewer naming every setting two runs differ in;
the response cache telling configurations apart.

The runs are real ``grace run`` folders against the fake API server, whose model cites the *last* article it is
shown: at k=1 that is the retriever's first, at k=3 its third, so the two configurations answer differently. Every
figure is checked against the folders' scores.jsonl read here with nothing of grace's (McNemar from scipy, Holm by
hand)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

import grace
from harness.core.errors import GraceError
from harness.testing import FakeAPIServer, prompt_text
from tests.conftest import run_grace, small_bench

MODEL = "openai:fake-m"
REFUSALS = ["what is the capital of France", "who won the 1998 world cup", "how tall is mount everest"]


def cite_last_shown(body: dict) -> str:
    ids = [i for i in re.findall(r"\[ID: ([^\]]+)\]", prompt_text(body)) if i != "<id>"]
    return f"It is in this article. [ID: {ids[-1]}]"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """k3 and k1 (the same model and baseline), k3-again (k3's configuration in another folder), temp (k3 with the
    model at temperature 0.7) and json (k3 asking for JSON answers); the server's calls counted per run."""
    root = tmp_path_factory.mktemp("configs")
    bench = small_bench(root, 16, REFUSALS)
    common = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", MODEL, "-m", "baseline:top1"]
    calls = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRACE_CACHE_DIR", str(root / "grace-cache"))  # one cache for every run, as on a machine
        with FakeAPIServer(responder=cite_last_shown) as srv:
            mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
            mp.setenv("OPENAI_API_KEY", "x")
            for name, extra in (("k3", ["--k", "3"]), ("k1", ["--k", "1"]), ("k3-again", ["--k", "3"]),
                                ("temp", ["--k", "3", "--temperature", "0.7"]),
                                ("json", ["--k", "3", "--output-mode", "json"])):
                before = len(srv.requests)
                code, out = run_grace(*common, *extra, "--out", root / name)
                assert code == 0, out
                calls[name] = len(srv.requests) - before
    return root, calls


def majority_hits(run: Path, model: str) -> dict[str, bool]:
    """Per question: right when more than half of its repeats are (read from scores.jsonl, nothing of grace's)."""
    got: dict[str, list[bool]] = defaultdict(list)
    for line in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["model"] == model:
            got[row["question_id"]].append(row["outcome"] in ("correct", "correct_refusal"))
    return {q: sum(v) * 2 > len(v) for q, v in got.items()}


def holm(pvalues: list[float]) -> list[float]:
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        out[i] = running
    return out


def test_the_cache_key_holds_every_setting_that_changes_an_answer(runs):
    """k, the output mode and the temperature each ask the model again; the same configuration in another folder
    is answered from the cache (the folder, like concurrency, is no part of a key)."""
    _, calls = runs
    assert calls["k3"] == 19 and calls["k1"] == 19 and calls["temp"] == 19 and calls["json"] == 19
    assert calls["k3-again"] == 0


def test_one_board_holds_the_model_at_k1_and_k3_as_two_rows_with_a_paired_test(runs):
    root, _ = runs
    out = root / "board.json"
    code, text = run_grace("report", root / "k1", root / "k3", "--out", out)
    assert code == 0, text
    board = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["row"]: r for r in board["rows"]}
    assert set(rows) == {f"{MODEL} · k=1", f"{MODEL} · k=3", "baseline:top1 · k=1", "baseline:top1 · k=3"}
    assert rows[f"{MODEL} · k=1"]["settings"] == {"k": "1"} and rows[f"{MODEL} · k=3"]["run"] == "k3"
    assert f"{MODEL} · k=1" in text and f"{MODEL} · k=3" in text and "Paired tests" in text
    # each row's figures are its run's own report.json figures
    for r in board["rows"]:
        report = json.loads((root / r["run"] / "report.json").read_text(encoding="utf-8"))
        assert r["figures"]["accuracy"] == report["models"][r["model"]]["accuracy"]
        assert r["figures"]["accuracy_ci95"] == report["models"][r["model"]]["accuracy_ci95"]
    accuracies = [r["figures"]["accuracy"] for r in board["rows"]]
    assert accuracies == sorted(accuracies, reverse=True)
    # the pair k=1 vs k=3: McNemar exact (scipy) on the questions only one of them got right, Holm over all six pairs
    one, three = majority_hits(root / "k1", MODEL), majority_hits(root / "k3", MODEL)
    only_1 = sum(one[q] and not three[q] for q in one)
    only_3 = sum(three[q] and not one[q] for q in one)
    assert only_1 + only_3 > 0  # the configurations really answer differently: the test checks something
    pair = next(p for p in board["pairwise"] if {p["a"], p["b"]} == {f"{MODEL} · k=1", f"{MODEL} · k=3"})
    assert pair["n"] == 19 and {pair["a_only"], pair["b_only"]} == {only_1, only_3}
    binom = pytest.importorskip("scipy.stats").binomtest
    assert pair["p_value"] == pytest.approx(binom(min(only_1, only_3), only_1 + only_3, 0.5).pvalue, abs=1e-7)
    assert len(board["pairwise"]) == 6
    adjusted = holm([p["p_value"] for p in board["pairwise"]])
    assert [p["p_adjusted"] for p in board["pairwise"]] == pytest.approx(adjusted, abs=1e-7)
    assert board["varying"] == [{"setting": "k", "kind": "answers", "values": {"k1": "1", "k3": "3"}}]


def test_the_board_from_python_and_its_row_names(runs):
    root, _ = runs
    board = grace.combine_runs([root / "k3", root / "k1"], models=[MODEL])
    assert isinstance(board, grace.Board) and [r.model for r in board.rows] == [MODEL, MODEL]
    pair = board.pair(f"{MODEL} · k=1", f"{MODEL} · k=3")
    assert pair.n == 19 and 0 <= pair.p_value <= pair.p_adjusted <= 1
    assert board[f"{MODEL} · k=3"].figures.rank in (1, 2)
    # the same configuration in two folders: told apart by their IDs; a temperature and an output mode by name
    again = grace.combine_runs([root / "k3", root / "k3-again"], models=[MODEL])
    assert sorted(r.row for r in again.rows) == [f"{MODEL} · k3", f"{MODEL} · k3-again"]
    knobs = grace.combine_runs([root / "k3", root / "temp", root / "json"], models=[MODEL])
    names = {r.run: r.row for r in knobs.rows}
    # (the template is the output mode's: its name without its hash tells the rows apart)
    assert names["temp"] == f"{MODEL} · template=grounded-inline.v1, output mode=inline, temperature=0.7"
    assert names["json"] == f"{MODEL} · template=grounded-json.v1, output mode=json, temperature=not set"
    assert names["k3"] == f"{MODEL} · template=grounded-inline.v1, output mode=inline, temperature=not set"
    assert {v.setting for v in knobs.varying} >= {"output mode", "template"}


def test_a_board_needs_one_gold_set(runs, tmp_path):
    root, _ = runs
    other = small_bench(tmp_path, 6, REFUSALS[:1])
    code, out = run_grace("run", "--kb", other / "kb", "--gold", other / "gold.csv", "-m", "baseline:top1",
                          "--out", tmp_path / "other")
    assert code == 0, out
    code, out = run_grace("report", root / "k1", tmp_path / "other")
    assert code == 2 and "2 gold sets" in out and "k1" in out and "other" in out
    with pytest.raises(GraceError, match="gold sets"):
        grace.combine_runs([root / "k1", tmp_path / "other"])
    code, out = run_grace("report", root / "k1", root / "k3", "--kb", other / "kb")
    assert code == 2 and "--kb goes with one OUT_DIR" in out
    code, out = run_grace("report", root / "k1", root / "k3", "--out", tmp_path / "board.svg")
    assert code == 2 and ".json or .md" in out


def test_compare_names_a_difference_in_k(runs):
    """The issue: grace compare of a k=3 and a k=1 run said notes: []; it now names k, in the terminal, the JSON,
    the Markdown and the Python result."""
    root, _ = runs
    out = root / "cmp.json"
    md = root / "cmp.md"
    code, text = run_grace("compare", root / "k3", root / "k1", "--json", out, "--markdown", md)
    assert code == 0, text
    assert "what differs, run A → run B:" in text and "k: 3 → 1" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["differences"] == [{"setting": "k", "model": None, "a": "3", "b": "1", "kind": "answers"}]
    assert any("asked otherwise" in n and "(k:" in n for n in data["notes"])
    assert "- k: 3 → 1 (answers)" in md.read_text(encoding="utf-8")
    cmp = grace.compare_runs(root / "k3", root / "k3-again")
    assert cmp.differences == [] and not any("asked otherwise" in n for n in cmp.notes)


def test_compare_names_template_output_mode_and_parameters(runs):
    root, _ = runs
    cmp = grace.compare_runs(root / "k3", root / "json")
    named = {(d.model, d.setting): (d.a, d.b) for d in cmp.differences}
    assert named[(None, "output mode")] == ("inline", "json")
    assert named[(None, "template")][0] != named[(None, "template")][1]
    temp = grace.compare_runs(root / "k3", root / "temp", [MODEL])
    assert [d.text() for d in temp.differences] == [f"{MODEL} temperature: not set → 0.7"]
    two = grace.compare_models(root / "temp", "baseline:top1", MODEL)
    texts = [d.text() for d in two.differences]
    assert f"baseline:top1 vs {MODEL} model: baseline:top1 → openai:fake-m" in texts
    assert not any("temperature" in t for t in texts)  # --temperature gave both models 0.7


def test_the_viewer_compare_page_names_the_differences(runs, tmp_path):
    from harness.viewer import open_viewer

    root, _ = runs
    app, indexer = open_viewer([root / "k3", root / "k1"], tmp_path / "view-cache", child=True)
    try:
        assert indexer.wait(120)
        data = app.compare("k3", "k1", "", "")
    finally:
        indexer.stop()
    assert [d["text"] for d in data["differences"]] == ["k: 3 → 1"]
    assert data["differences"][0]["kind"] == "answers"


def test_differences_skip_what_was_not_recorded_and_name_what_was_not_set():
    from harness.run_folder.run_settings import Setting, differences

    a = [Setting(name="k", value="3", kind="answers"), Setting(name="seed", value=None, kind="scoring"),
         Setting(name="concurrency", value="8", kind="calls")]
    b = [Setting(name="concurrency", value="2", kind="calls"), Setting(name="k", value="3", kind="answers"),
         Setting(name="seed", value="1", kind="scoring"), Setting(name="rerank", value="x (top 20)", kind="answers")]
    found = differences(a, b)
    assert [d.text() for d in found] == ["rerank: not set → x (top 20)", "concurrency: 8 → 2"]
    assert differences([], b) == []  # a side with nothing recorded (no run.json) differs in nothing nameable


def test_every_recorded_setting_is_named_kb_gold_template_retriever(runs):
    """A KB rebuilt, another gold file, an edited template, another retriever and reranker: each named, with its
    hash where a hash is what tells two files apart."""
    from harness.run_folder.run_dir import RunDir
    from harness.run_folder.run_settings import run_differences

    root, _ = runs
    info, report = RunDir(root / "k3").read_run_info(), RunDir(root / "k3").read_report()
    other = info.model_copy(deep=True)
    other.kb.kb_hash, other.kb.embedder = "f" * 16, "dense:minilm"
    other.templates = {name: "e" * 16 for name in info.templates}
    other.config.rerank = {"reranker": "cross-encoder", "depth": 20}
    other_report = report.model_copy(deep=True)
    other_report.kb.hash, other_report.gold.hash = "f" * 16, "d" * 16
    found = {d.setting: (d.a, d.b) for d in run_differences(info, report, other, other_report)}
    assert found["KB"] == (f"{report.kb.hash[:12]} (4 articles)", "ffffffffffff (4 articles)")
    assert found["gold"] == (report.gold.hash[:12], "dddddddddddd")
    assert found["template"][1] == "grounded-inline.v1 (eeeeeeeeeeee)" and found["template"][0] != found["template"][1]
    assert found["retriever"] == ("bm25f", "dense:minilm") and found["rerank"] == (None, "cross-encoder (top 20)")


def test_a_models_own_parameters_are_two_rows_of_one_run(tmp_path):
    """Temperature (any generation parameter) is the model's: the same model listed twice under two names is two
    rows of one run, with the run's paired test between them; compare_models names what sets them apart."""
    bench = small_bench(tmp_path, 8, REFUSALS[:1])
    toml = tmp_path / "board.toml"
    toml.write_text('[[models]]\nspec = "openai:fake-m"\nname = "fake t0"\ntemperature = 0\n\n'
                    '[[models]]\nspec = "openai:fake-m"\nname = "fake t0.7"\ntemperature = 0.7\n', encoding="utf-8")
    with FakeAPIServer(responder=cite_last_shown) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        mp.setenv("OPENAI_API_KEY", "x")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", toml,
                              "--out", tmp_path / "run")
        assert code == 0, out
        temperatures = sorted(r.body["temperature"] for r in srv.requests)
    assert temperatures == [0] * 9 + [0.7] * 9  # each asked on its own: the temperature is in the cache key
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert [{p["a"], p["b"]} for p in report["pairwise"]] == [{"fake t0", "fake t0.7"}]
    cmp = grace.compare_models(tmp_path / "run", "fake t0", "fake t0.7")
    assert [d.text() for d in cmp.differences] == ["fake t0 vs fake t0.7 temperature: 0 → 0.7"]
