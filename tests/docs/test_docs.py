"""The documentation: the tutorial's commands run as written, the site builds in strict mode, the README stays short.

The tutorial's commands are its ```bash blocks (docs/tutorial.md): each runs in a fresh shell with the real
``grace`` command, in a temporary folder holding a copy of the sample benchmark, as a user runs them from a
clone. The site build needs the ``docs`` extra (``pip install -e '.[docs]'``; .ci/run installs it) and is
skipped without it. Where the machine allows (``unshare -rn``), both run with no network at all, so a command
or a theme that fetched anything would fail here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent


def bash_blocks(page: Path) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def _offline_prefix() -> list[str]:
    """``unshare -rn``: a new network namespace with nothing in it, where the machine permits one."""
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-rn"]
    return []


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", GRACE_CACHE_DIR=str(tmp_path / "cache"),
               COLUMNS="120", TERM="dumb", NO_MKDOCS_2_WARNING="1")
    return env


@pytest.mark.slow  # every tutorial command: 11 s
def test_the_tutorial_commands_run_as_written(tmp_path):
    blocks = bash_blocks(DOCS / "tutorial.md")
    assert len(blocks) >= 10 and all("grace " in b or b.startswith(("ls ", "head ", "cat ")) for b in blocks)
    work = tmp_path / "clone"
    shutil.copytree(SAMPLE, work / "benchmarks" / "sample")
    env, offline = _env(tmp_path), _offline_prefix()
    for block in blocks:
        done = subprocess.run([*offline, "bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"tutorial command failed (exit {done.returncode}):\n{block}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, block
    out = work / "tutorial"
    assert (out / "run" / "report.html").is_file() and (out / "run" / "spotcheck.json").is_file()
    assert (out / "site" / "index.html").is_file() and (out / "suspects.csv").is_file()
    assert "cautious" in (out / "run" / "leaderboard.md").read_text()  # the third model of the tutorial's board
    assert sorted(p.name for p in work.iterdir()) == ["benchmarks", "tutorial"]  # it writes only tutorial/
    # the pages that table the pipeline say what `grace run` writes: every file the tutorial's run left
    written = {p.name for p in (out / "run").iterdir() if p.is_file() and not p.name.startswith(".")}
    for page in (ROOT / "README.md", DOCS / "concepts" / "grace-method.md"):
        rows = [r for r in page.read_text(encoding="utf-8").splitlines()
                if r.startswith("| ") and r.split(" | ")[1:2] and r.split(" | ")[1].startswith("`grace run ")]
        assert rows, f"{page.name}: no table row for grace run"
        for name in sorted(written & {"responses.jsonl", "run.json", "scores.jsonl", "report.json", "leaderboard.md",
                                      "report.html"}):
            assert all(name in r for r in rows), f"{page.name}: the grace run row does not name {name}, which it writes"


def _gen_ref():
    sys.path.insert(0, str(DOCS))
    try:
        import gen_ref
    finally:
        sys.path.remove(str(DOCS))
    return gen_ref


def test_the_file_reference_covers_every_format_and_field():
    gen_ref = _gen_ref()
    page = gen_ref.render()
    for fmt in gen_ref.FORMATS:
        cls = gen_ref.find_class(fmt)
        assert f"### `{fmt.path}`" in page
        for name in gen_ref._field_names(cls):
            assert f"| `{name}` |" in page, f"{fmt.path}: field {name} of {cls.__name__} missing"


def test_every_field_of_the_file_reference_has_a_description():
    """An empty description cell tells a user nothing about the value: every field the page shows needs one (a
    comment on its line, or the lines just above it, or ``Field(description=...)``), found as the page finds it."""
    gen_ref = _gen_ref()
    seen: set[str] = set()
    missing = []
    for fmt in gen_ref.FORMATS:
        for kind, schema in gen_ref.section_models(gen_ref.find_class(fmt), seen):
            missing += [f"{fmt.path}: {kind.__module__}.{kind.__qualname__}.{key}"
                        for key, _, _, about in gen_ref.field_rows(kind, schema) if not about.strip()]
    assert seen and not missing, ("fields with no description in the file reference (add a comment on the field's "
                                  "line saying what the value is, with its unit or format):\n" + "\n".join(missing))


def test_every_how_to_is_a_short_guide():
    """A how-to is the steps a newcomer follows; options, formats and how it works go to a reference page."""
    long = {p.name: n for p in sorted((DOCS / "how-to").glob("*.md"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300}
    assert not long, f"how-to guides over 300 lines (move the details to docs/reference/): {long}"


def test_readme_is_short_and_keeps_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "./dev demo" in readme and "./dev test" in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).exists(), f"README links to missing {target}"


@pytest.mark.slow  # the whole MkDocs site
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed: pip install -e '.[docs]' (.ci/run does)")
def test_the_site_builds_in_strict_mode_offline(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([*_offline_prefix(), sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                          cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    for html in pages.values():  # nothing loaded from elsewhere: no web fonts, no remote scripts or styles
        assert not re.search(r'<(?:script|link)[^>]+(?:src|href)="https?://', html)
    from harness.cli.app import COMMANDS

    cli = pages["reference/cli/index.html"]
    assert all(f'id="grace-{name}"' in cli for name in COMMANDS)
    assert 'id="grace-kb-build"' in cli and 'id="grace-spotcheck-run"' in cli
    assert "Sentinel" not in cli and "UNSET" not in cli  # click's marker for "no default", never a default shown
    api = pages["reference/python-api/index.html"]
    assert all(f'id="{path}"' in api for _, path in _gen_ref().api_objects())  # every name of grace.__all__
    assert "ScoreLine" in pages["reference/files/index.html"]


@pytest.mark.parametrize("command, default", [
    (["kb", "curate"], "harness.kb_curate.proposals:OUTPUT_TOKENS"),
    (["spotcheck", "run"], "harness.spotcheck.judge_prompt:DEFAULT_MAX_TOKENS"),
])
def test_the_help_gives_the_output_limit_the_command_sends(command, default):
    """``--max-tokens``'s default in ``--help`` (and so the CLI reference) is the limit the calls carry when the flag
    is not given, read from the constant the command's calls use, not "the provider's own"."""
    import importlib

    from click.testing import CliRunner

    from harness.cli.app import cli

    module, name = default.split(":")
    limit = getattr(importlib.import_module(module), name)
    text = " ".join(CliRunner().invoke(cli, [*command, "--help"], terminal_width=200).output.split())
    assert "--max-tokens INTEGER RANGE Output limit per" in text
    assert f"[default: {limit}]" in text.split("--max-tokens", 1)[1].split("--", 1)[0], text


def test_the_committed_generated_pages_follow_the_code():
    """reference/files.md and reference/python-api.md are committed so that links to them work on the code host;
    the site renders them afresh, so only the committed copy can fall behind, and this says so."""
    gen_ref = _gen_ref()
    for path, content in ((gen_ref.PAGE, gen_ref.render()), (gen_ref.API_PAGE, gen_ref.render_api())):
        committed = DOCS / path
        assert committed.is_file() and committed.read_text(encoding="utf-8") == content, (
            f"docs/{path} is behind the code: run python docs/gen_ref.py --write and commit it")
