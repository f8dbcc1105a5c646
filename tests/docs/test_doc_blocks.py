"""The documentation's code blocks run as written, and what they quote is what the commands print.

Every block of the README, the tutorial and the how-to guides is a command, a quoted output, a file or marked
illustrative (see :mod:`tests.docs.doc_blocks`). A page with commands names its set-up in its first lines; its
blocks then run in order, offline, in a fresh folder, with the real ``grace`` command, and each quoted output is
compared with what the command before it printed (times, hashes and temporary paths masked). A page whose
example or output drifts from the commands fails here, not in a newcomer's terminal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE, SHARED_DATA
from tests.docs.doc_blocks import Page, missing_lines, read_page
from tests.docs.test_docs import _env, _offline_prefix

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", DOCS / "tutorial.md", DOCS / "install.md", DOCS / "troubleshooting.md",
         *sorted((DOCS / "how-to").glob("*.md"))]
# where a page's commands run: "clone" a folder laid out as a clone of the repository (benchmarks/, and the
# shared data beside it as ../shared); "sample-kb" a folder holding the sample benchmark's KB as kb/ and its gold
# set as gold.csv; "sample-questions" its KB as kb/ and its questions alone, no label, as questions.csv (where a
# team starts); "tutorial" the tutorial's own test
SETUPS = ("clone", "sample-kb", "sample-questions", "tutorial")


def test_every_block_says_what_it_is():
    bad = [f"{p.path.relative_to(ROOT)}:{b.line}: ```{b.lang} block is neither a command (bash, console, python) "
           "nor marked <!-- output -->, <!-- file: NAME --> or <!-- illustrative -->"
           for p in map(read_page, PAGES) for b in p.blocks if b.kind == "unmarked"]
    no_setup = [f"{p.path.relative_to(ROOT)}: has commands but no <!-- docs-test: SETUP --> in its first lines"
                for p in map(read_page, PAGES) if any(b.kind == "command" for b in p.blocks) and p.setup not in SETUPS]
    assert not bad + no_setup, "\n".join(bad + no_setup)


@pytest.fixture(scope="module")
def sample_kb(tmp_path_factory) -> Path:
    """The sample benchmark's KB, built once for the pages that use it."""
    root = tmp_path_factory.mktemp("sample-kb")
    done = subprocess.run([str(Path(sys.executable).parent / "grace"), "kb", "build", str(SAMPLE / "handbook"),
                           "--out", str(root / "kb")], capture_output=True, text=True, env=_env(root), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "kb"


def _lay_out(setup: str, tmp: Path, sample_kb: Path) -> Path:
    if setup == "clone":
        work = tmp / "clone"
        (work / "benchmarks").mkdir(parents=True)
        shutil.copytree(SAMPLE, work / "benchmarks" / "sample")
        for other in (ROOT / "benchmarks").iterdir():
            if other.name != "sample" and not (work / "benchmarks" / other.name).exists():
                (work / "benchmarks" / other.name).symlink_to(other)
        if SHARED_DATA.is_dir():
            (tmp / "shared").symlink_to(SHARED_DATA.parent)
        return work
    work = tmp / "work"
    work.mkdir()
    shutil.copytree(sample_kb, work / "kb")
    if setup == "sample-kb":
        shutil.copy(SAMPLE / "gold.csv", work / "gold.csv")
        return work
    import csv

    with (SAMPLE / "gold.csv").open(newline="", encoding="utf-8") as src, \
            (work / "questions.csv").open("w", newline="", encoding="utf-8") as dst:
        w = csv.writer(dst)
        w.writerow(["question_id", "question"])
        w.writerows([r["question_id"], r["question"]] for r in csv.DictReader(src))
    return work


def run_page(page: Page, work: Path, env: dict[str, str]) -> None:
    offline = _offline_prefix()
    where = page.path.relative_to(ROOT)
    printed, python = "", []

    def sh(command: str, line: int, must_succeed: bool = True) -> str:
        done = subprocess.run([*offline, "bash", "-euo", "pipefail", "-c", command], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        out = done.stdout + done.stderr
        if os.environ.get("GRACE_DOCS_SHOW"):  # to write a page's quoted output: GRACE_DOCS_SHOW=1 pytest -s ...
            print(f"--- {where}:{line}\n{out}")
        assert done.returncode == 0 or not must_succeed, f"{where}:{line}: exit {done.returncode}:\n{command}\n{out}"
        assert "Traceback" not in out, f"{where}:{line}:\n{command}\n{out}"
        return out

    def flush() -> str:
        if not python:
            return ""
        line, code = python[0][0], "\n".join(text for _, text in python)
        python.clear()
        return sh(f"{sys.executable} - <<'GRACE_DOCS_EOF'\n{code}\nGRACE_DOCS_EOF", line)

    for b in page.blocks:
        if b.kind == "file":
            (work / b.file).parent.mkdir(parents=True, exist_ok=True)
            (work / b.file).write_text(b.text, encoding="utf-8")
        elif b.kind == "command" and b.lang == "python":
            python.append((b.line, b.text))
            continue
        elif b.kind == "command" and b.lang == "bash":
            printed = flush() + sh(b.text, b.line)
        elif b.kind == "command":  # console: "$ command" lines, each followed by what it prints
            printed = flush()
            steps: list[tuple[str, list[str]]] = []
            for text in b.text.splitlines():
                if text.startswith("$ "):
                    steps.append((text[2:], []))
                elif steps:
                    steps[-1][1].append(text)
            for command, quoted in steps:  # a console may show an error: what it prints is what is checked
                printed = sh(command, b.line, must_succeed=False)
                missing = missing_lines("\n".join(quoted), printed)
                assert not missing, (f"{where}:{b.line}: '{command}' no longer prints what the page quotes:\n"
                                     + "\n".join(missing) + f"\n--- it printed:\n{printed}")
        elif b.kind == "app":
            printed = flush() + serve_app(page, b.text, b.line, work, env)
        elif b.kind == "output":
            printed += flush()
            if b.file:  # a quoted file: what the commands wrote there
                assert (work / b.file).is_file(), f"{where}:{b.line}: the page quotes {b.file}, which was not written"
            got = (work / b.file).read_text(encoding="utf-8") if b.file else printed
            missing = missing_lines(b.text, got)
            assert not missing, (f"{where}:{b.line}: {b.file or 'the command before this output'} no longer "
                                 "holds what the page quotes:\n" + "\n".join(missing) + f"\n--- it holds:\n{got}")
    flush()


def accept_every_suggestion(url: str, work: Path) -> None:
    """The labeller of label-gold.md: ``y`` on every question with a usable suggestion, nothing else."""
    base = url.split("?")[0].rstrip("/")
    state = _json(f"{base}/api/state")
    for i in range(len(state["question_ids"])):
        q = _json(f"{base}/api/question/{i}")
        s = q.get("suggestion") or {}
        if s.get("usable"):
            _json(f"{base}/api/label", {"question_id": q["record"]["question_id"], "status": "labelled",
                                        "must_refuse": s["must_refuse"], "expected_citations": s["citations"]})


def _json(url: str, body: dict | None = None) -> dict:
    import json
    import urllib.request

    req = urllib.request.Request(url, None if body is None else json.dumps(body).encode(),
                                 {"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


PEOPLE = {"label-gold.md": accept_every_suggestion}  # page -> what the person at its web app does


def serve_app(page: Page, command: str, line: int, work: Path, env: dict[str, str]) -> str:
    """Start the page's web app with a browser that opens nothing, act as the person, stop it with Ctrl-C."""
    import re
    import signal
    import threading

    proc = subprocess.Popen(["bash", "-c", f"exec {command.strip()}"], cwd=work, env=env | {"BROWSER": "true"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for text in proc.stdout:
            lines.append(text)
            if re.search(r"http://127\.0\.0\.1:\d+", text):
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert found.wait(120) and proc.poll() is None, f"{page.path.name}:{line}: no URL:\n{''.join(lines)}"
        url = re.search(r"http://127\.0\.0\.1:\d+\S*", "".join(lines)).group(0)
        PEOPLE[page.path.name](url, work)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        reader.join(10)
    out = "".join(lines)
    assert "Traceback" not in out, out
    return out


RUNNABLE = [p for p in PAGES if read_page(p).setup in ("clone", "sample-kb", "sample-questions")]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_the_page_runs_as_written(path, tmp_path, sample_kb):
    page = read_page(path)
    if page.setup == "clone" and "../shared/data" in path.read_text(encoding="utf-8") and not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (the page reads ../shared/data)")
    work = _lay_out(page.setup, tmp_path, sample_kb)
    env = _env(tmp_path) | {"COLUMNS": "200"}
    env.pop("BROWSER", None)
    os.environ.get("DISPLAY") and env.pop("DISPLAY")
    run_page(page, work, env)
