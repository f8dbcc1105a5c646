"""One typed RunConfig behind `grace run` and `grace.run()`: one list of options, one precedence, gold read once."""

from __future__ import annotations

import inspect
import sys

import pytest

from harness.core.errors import GraceError
from harness.runner.config import RunConfig, RunTable
from tests.conftest import run_grace, small_bench, write


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return small_bench(tmp_path_factory.mktemp("bench"), 8, ["where is the gym"])


def test_every_run_option_is_a_field_and_a_keyword_once():
    import grace
    from harness.cli.run import run as command

    flags = [p.name for p in command.params if p.name != "help"]
    fields = list(RunConfig.model_fields)
    keywords = list(inspect.signature(grace.run).parameters)
    assert len(flags) == len(set(flags)) and len(keywords) == len(set(keywords))
    assert sorted(flags) == sorted(fields), set(flags) ^ set(fields)
    assert set(flags) <= set(keywords)
    assert set(keywords) - set(flags) == {"progress", "console"}  # the API's own: a progress bar, and where to


def test_the_engine_settings_of_a_run_come_from_its_config_by_name():
    """RunSettings took eleven options from RunConfig one by one; now every field they share is copied by name, so an
    option the engine reads is a field of each and nothing more."""
    from dataclasses import fields
    from pathlib import Path

    from harness.runner.session import RunSettings

    given = {"k": 5, "repeats": 2, "concurrency": 3, "max_attempts": 2, "seed": 7, "threshold": 0.4, "wait": True,
             "cancel_batches": True}
    config = RunConfig(kb=Path("kb"), gold=Path("g.csv"), out=Path("o"), no_cache=True, poll_interval=5, **given)
    settings = RunSettings.of(config)
    shared = {f.name for f in fields(RunSettings)} & set(RunConfig.model_fields)
    assert shared == set(given)
    assert {n: getattr(settings, n) for n in shared} == given
    assert settings.read_cache is False and settings.poll_s == 5


def test_how_many_calls_at_once_and_how_often_is_said_once():
    """grace run's flags, the engine, and the judge / labeler / generator calls start from one pair of defaults."""
    from harness.runner.call_defaults import CONCURRENCY, MAX_ATTEMPTS
    from harness.runner.engine import EngineSettings
    from harness.workflows.calls import ModelCalls

    for owner in (EngineSettings, ModelCalls):
        assert (owner.concurrency, owner.max_attempts) == (CONCURRENCY, MAX_ATTEMPTS)
    fields_ = RunConfig.model_fields
    assert (fields_["concurrency"].default, fields_["max_attempts"].default) == (CONCURRENCY, MAX_ATTEMPTS)
    code, out = run_grace("run", "--help")
    assert code == 0 and f"[default: {CONCURRENCY}]" in out


def test_toml_keys_are_the_fields_marked_for_it_and_keep_their_bounds():
    assert {"k", "repeats", "batch", "retrieved", "no_score", "poll_interval"} <= set(RunTable.model_fields)
    assert not {"kb", "gold", "out", "models", "dry_run", "cancel_batches"} & set(RunTable.model_fields)
    with pytest.raises(ValueError):
        RunTable.model_validate({"k": 0})
    with pytest.raises(ValueError):
        RunTable.model_validate({"k": "3"})  # TOML has real types: "3" is a typo
    assert RunTable.model_validate({"retrieved": "ranked.jsonl"}).retrieved == "ranked.jsonl"


def test_precedence_defaults_then_toml_then_command_line():
    base = {"kb": "kb", "gold": "g.csv", "out": "o"}
    assert RunConfig.build(base).k == 3
    assert RunConfig.build(base, {"k": 5, "batch": True}).k == 5
    built = RunConfig.build({**base, "k": 2, "batch": False}, {"k": 5, "batch": True})
    assert built.k == 2 and built.batch  # a flag left off keeps the TOML's value
    with pytest.raises(GraceError, match=r"--k must be 1 or more, got 0"):
        RunConfig.build({**base, "k": 0})
    with pytest.raises(GraceError, match="unknown run option"):
        RunConfig.build({**base, "kay": 2})
    with pytest.raises(ValueError, match="frozen"):
        RunConfig.build(base).k = 9  # frozen: one config for the whole run


def test_grace_run_reads_the_gold_file_once(bench, tmp_path):
    gold = tmp_path / "gold.csv"
    gold.write_bytes((bench / "gold.csv").read_bytes())
    opened: list[str] = []

    def hook(event, args):
        if event == "open" and args and str(args[0]) == str(gold):
            opened.append(event)

    sys.addaudithook(hook)
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", gold, "-m", "baseline:top1", "-m", "baseline:threshold",
                          "--out", tmp_path / "run")
    assert code == 0, out
    assert len(opened) == 1, opened  # asked, recorded in run.json, scored and reported from one read
    assert (tmp_path / "run" / "report.html").exists()


def test_k_short_flag_and_k_larger_than_the_kb_is_clamped_with_a_warning(bench, tmp_path):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1", "-k", "2",
                          "--out", tmp_path / "two", "--no-score")
    assert code == 0, out
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "baseline:top1",
                          "--k", "100000", "--out", tmp_path / "all", "--no-score")
    assert code == 0, out
    assert "--k 100000 is more than the KB's 4 articles; every prompt shows all 4" in out
    from harness.run_folder.run_dir import RunDir

    assert RunDir(tmp_path / "all").read_run_info().config.k == 4


def test_a_dry_run_needs_no_api_key(bench, tmp_path):
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "openai:gpt-4o-mini",
                          "--rerank", "openai:gpt-4o-mini", "--out", tmp_path / "dry", "--dry-run")
    assert code == 0, out
    assert "Dry run: no calls made" in out and "OPENAI_API_KEY" in out  # said, not refused
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "-m", "openai:gpt-4o-mini",
                          "--out", tmp_path / "real")
    assert code == 2 and "OPENAI_API_KEY" in out  # the real run still refuses before any call


def test_toml_run_table_sets_defaults_the_command_line_overrides(bench, tmp_path):
    board = write(tmp_path / "board.toml", '[run]\nk = 2\nno_score = true\n[[models]]\nspec = "baseline:top1"\n')
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", board,
                          "--out", tmp_path / "run")
    assert code == 0, out
    from harness.run_folder.run_dir import RunDir

    folder = RunDir(tmp_path / "run")
    assert folder.read_run_info().config.k == 2 and not folder.report.exists()  # no_score from the TOML
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--config", board, "-k", "3",
                          "--out", tmp_path / "run3")
    assert code == 0 and RunDir(tmp_path / "run3").read_run_info().config.k == 3
