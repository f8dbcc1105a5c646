"""The small things a newcomer trips on, made one way: every dry run estimates without an API key, and one flag
name says "don't open a browser" (``--no-browser``; ``grace view`` keeps ``--no-open`` as its old name)."""

from __future__ import annotations

import json

from tests.annotations.test_labeler import ARTICLES
from tests.conftest import run_grace, write


def test_gold_generate_dry_run_needs_no_api_key(tmp_path):
    kb = tmp_path / "kb"
    write(kb / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES))
    draft = tmp_path / "draft.csv"
    code, out = run_grace("gold", "generate", kb, "--model", "openai:gpt-4o-mini", "--per-article", "2",
                          "--refusals", "3", "--out", draft, "--dry-run")  # no OPENAI_API_KEY here (conftest)
    assert code == 0, out
    assert "Dry run: no calls made" in out and not draft.exists()
    assert "OPENAI_API_KEY" in out  # the missing key is said, as a warning, as grace run --dry-run says it
    code, out = run_grace("gold", "generate", kb, "--model", "openai:gpt-4o-mini", "--out", draft)
    assert code == 2 and "no API key" in out  # the real run still refuses before any call


def test_one_flag_name_says_do_not_open_a_browser(tmp_path):
    import click

    from harness.cli.app import cli

    ctx = click.Context(cli)
    flags = {}

    def walk(command, path):
        for p in command.params:
            names = set(p.opts) | set(getattr(p, "secondary_opts", []))
            if names & {"--no-browser", "--no-open"}:
                flags[" ".join(path)] = names
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(cli, [])
    assert {"view", "annotate", "kb curate"} <= set(flags)
    assert all("--no-browser" in names for names in flags.values()), flags
    assert [c for c, names in flags.items() if "--no-open" in names] == ["view"]  # its old name, kept
    for flag in ("--no-browser", "--no-open"):
        code, out = run_grace("view", tmp_path / "missing", flag)
        assert code == 2 and "No such option" not in out and "missing" in out, (flag, out)
