"""Curation as an overlay: hand edits saved at once, re-applied by a rebuild, conflicts listed, one writer per KB."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import grace
from harness.core.errors import GraceError
from harness.workflows.kb_edits import KbEdit, edit_kb, open_curation
from kb_builder.curation_records import read_edits
from kb_builder.kb_dir import CONFLICTS, CURATION
from kb_builder.loader import load_kb
from tests.conftest import killed_at_replace

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

HANDBOOK = {
    "leave.md": """\
        # Leave

        ## Annual leave

        Every employee gets 25 days of paid annual leave a year. Days not taken by 31 March of the next year are lost.

        Part-time staff get the same share of 25 days as their share of a full-time week.

        Ask your manager for leave in the HR portal at least two weeks ahead.

        ## Sick leave

        Tell your manager before 10:00 on the first day you are ill, by phone or chat, and say how long you expect to be
        away. From the fourth day in a row a doctor's note is needed, uploaded to the HR portal within a week.

        ## Parental leave

        Parents get 16 weeks of paid leave after a birth or adoption, to be taken within the first year of the child's
        arrival, in one block or in up to three blocks of at least two weeks each, agreed with your manager.
        """,
    "expenses.md": """\
        # Expenses

        ## Meals on trips

        On a business trip abroad you may claim up to EUR 65 a day for meals; at home EUR 40 a day. On the days you
        travel out and back you get 75% of that, and a meal paid by a client or a conference is taken off the claim.

        ## Taxis

        Taxis are refunded when no public transport runs to where you need to go, or between 22:00 and 06:00, or when
        you carry heavy equipment for work. Claim them in the expenses tool with the receipt within 30 days.
        """,
}


def write_handbook(folder: Path, files: dict[str, str] = HANDBOOK) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def ids_by_title(kb_dir: Path) -> dict[str, str]:
    return {a.title.rpartition(" > ")[2]: a.id for a in load_kb(kb_dir).articles}


def snapshot(kb_dir: Path) -> list[tuple[str, str, str]]:
    return [(a.id, a.title, a.text) for a in load_kb(kb_dir).articles]


@pytest.fixture
def kb(tmp_path):
    src = write_handbook(tmp_path / "src")
    grace.build_kb(src, tmp_path / "kb", min_tokens=1)
    return tmp_path / "kb"


def grace_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli.app", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


def test_every_action_is_saved_at_once_and_seen_by_every_command(kb):
    t = ids_by_title(kb)
    with open_curation(kb) as cur:
        e1 = cur.set_title(t["Taxis"], "Taxis at night and without public transport", author="ann", reason="vague")
        # saved the moment it is taken: the file and the KB say so before the session closes
        assert [e.seq for e in read_edits(kb)] == [1]
        assert load_kb(kb).by_id[t["Taxis"]].title == "Taxis at night and without public transport"
        merged = cur.merge_articles(t["Annual leave"], t["Parental leave"], author="ann")
        split = cur.split_article(t["Annual leave"], 3, titles=["Annual leave: days", "Annual leave: asking"],
                                  author="bob")
        distinct = cur.mark_distinct(t["Sick leave"], t["Meals on trips"], why="different policies", author="bob")
    assert (e1.action, e1.before.keys(), e1.author, e1.reason) == ("title", {t["Taxis"]}, "ann", "vague")
    assert e1.before[t["Taxis"]] != e1.after[t["Taxis"]]
    assert merged.merged_into == t["Annual leave"] and merged.articles == [t["Annual leave"], t["Parental leave"]]
    kb_now = load_kb(kb)
    # the merge kept one ID and retired the other; the split gave both parts new IDs and retired the original
    assert t["Parental leave"] not in kb_now.by_id and t["Annual leave"] not in kb_now.by_id
    p1, p2 = split.parts
    assert int(p1) > max(int(i) for i in t.values()) and int(p2) == int(p1) + 1
    assert kb_now.by_id[p1].title == "Annual leave: days" and kb_now.by_id[p1].text.count("\n\n") == 1
    assert kb_now.by_id[p2].text.startswith("Ask your manager") and "16 weeks" in kb_now.by_id[p2].text
    assert {t["Parental leave"], t["Annual leave"]} <= set(kb_now.manifest.retired_ids)
    assert kb_now.manifest.next_id == int(p2) + 1 and kb_now.manifest.article_count == len(kb_now.articles)
    # the manifest names this content: a fresh load does not see a hand-edited file
    assert kb_now.kb_hash == json.loads((kb / "manifest.json").read_text())["kb_hash"]
    assert distinct.reason == "different policies"
    lines = (kb / CURATION).read_text().splitlines()
    assert [json.loads(x)["action"] for x in lines] == ["title", "merge", "split", "distinct"]


def test_undo_restores_articles_and_ids_exactly(kb):
    t = ids_by_title(kb)
    before = snapshot(kb)
    with open_curation(kb) as cur:
        cur.merge_articles(t["Sick leave"], t["Taxis"], author="ann")
        split = cur.split_article(t["Annual leave"], 2, author="ann")
        cur.set_text(split.parts[0], "Every employee gets 25 days of paid annual leave a year.", author="ann")
        with pytest.raises(GraceError, match=r"cannot undo action 2 .*action\(s\) 3.*undo those first"):
            cur.undo(seq=2)
        assert cur.undo(author="ann").undoes == 3
        assert cur.undo().undoes == 2
        assert cur.undo().undoes == 1
        with pytest.raises(GraceError, match="no curation action to undo"):
            cur.undo()
    assert snapshot(kb) == before  # the same articles, in the same order, with the same IDs
    retired = load_kb(kb).manifest.retired_ids
    assert set(split.parts) <= set(retired)  # an undone split's IDs are never handed out again
    with open_curation(kb) as cur:
        again = cur.split_article(t["Annual leave"], 2)
    assert not set(again.parts) & set(split.parts)


def test_bad_input_is_refused_with_a_clear_message_and_nothing_saved(kb):
    t = ids_by_title(kb)
    with open_curation(kb) as cur:
        cur.merge_articles(t["Annual leave"], t["Parental leave"])
        cases = [
            (lambda: cur.set_title("999", "x"), r"no such article in .*grace kb show"),
            (lambda: cur.split_article(t["Sick leave"], 2), r"has 1 paragraph: nothing to split"),
            (lambda: cur.split_article(t["Annual leave"], 9), r"has 4 paragraphs: split --at must be 2 to 4"),
            (lambda: cur.split_article(t["Annual leave"], 1), r"must be 2 to 4"),
            (lambda: cur.merge_articles(t["Taxis"], t["Taxis"]), r"cannot merge article \d+ with itself"),
            (lambda: cur.merge_articles(t["Taxis"], t["Parental leave"]),
             rf"article {t['Parental leave']}: it was merged into {t['Annual leave']} \(action 1"),
            (lambda: cur.mark_distinct(t["Taxis"], t["Sick leave"], why="  "), r"say why"),
            (lambda: cur.set_title(t["Taxis"], "   "), r"new title is empty"),
            (lambda: cur.set_title(t["Taxis"], "Expenses > Taxis"), r"already titled"),
            (lambda: cur.set_text(t["Taxis"], "\n"), r"new text is empty"),
            (lambda: cur.undo(seq=7), r"no curation action 7 in force"),
        ]
        for call, message in cases:
            with pytest.raises(GraceError, match=message):
                call()
    assert [e.action for e in read_edits(kb)] == ["merge"]
    load_kb(kb).manifest.retired_ids.append("x")  # (a copy: the file is untouched)
    retired = load_kb(kb).manifest.retired_ids
    with open_curation(kb) as cur:
        cur.kb.manifest.retired_ids.append("77")  # an ID a rebuild retired (not curation): said as retired
        with pytest.raises(GraceError, match="cannot retitle article 77: the ID is retired"):
            cur.set_title("77", "x")
    assert "77" not in retired


def test_grace_kb_edit_on_the_command_line(kb, tmp_path):
    t = ids_by_title(kb)
    ok = grace_cli("kb", "edit", kb, "--merge", t["Annual leave"], t["Parental leave"], "--author", "cia",
                   "--why", "one topic")
    assert ok.returncode == 0 and f"article {t['Parental leave']} merged into {t['Annual leave']}" in ok.stdout
    bad = [
        (["--title", "999", "x"], "no such article"),
        (["--split", t["Sick leave"], "--at", "3"], "nothing to split"),
        (["--split", t["Annual leave"], "--at", "12"], "split --at must be 2 to 4"),
        (["--split", t["Annual leave"]], "give --at N"),
        (["--merge", t["Taxis"], t["Taxis"]], "with itself"),
        (["--title", t["Parental leave"], "x"], "it was merged into"),
        (["--distinct", t["Taxis"], t["Sick leave"]], "say why"),
        (["--text", t["Taxis"], str(tmp_path / "missing.txt")], "file not found"),
        ([], "give exactly one action"),
        (["--undo", "--seq", "5"], "no curation action 5"),
    ]
    for args, message in bad:
        done = grace_cli("kb", "edit", kb, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    new_text = tmp_path / "taxi.txt"
    new_text.write_text("Taxis are refunded at night (22:00-06:00) or when no public transport runs.\n")
    assert grace_cli("kb", "edit", kb, "--text", t["Taxis"], new_text).returncode == 0
    assert load_kb(kb).by_id[t["Taxis"]].text.startswith("Taxis are refunded at night")
    listed = json.loads(grace_cli("kb", "edit", kb, "--list", "--json").stdout)
    assert [(e["seq"], e["action"], e["author"]) for e in listed["edits"]][0] == (1, "merge", "cia")
    assert grace_cli("kb", "edit", kb, "--undo").returncode == 0
    assert load_kb(kb).by_id[t["Taxis"]].text.startswith("Taxis are refunded when")


def test_rebuild_from_unchanged_sources_keeps_the_curation_and_the_ids(tmp_path):
    src = write_handbook(tmp_path / "src")
    kb = tmp_path / "kb"
    grace.build_kb(src, kb, min_tokens=1)
    t = ids_by_title(kb)
    with open_curation(kb) as cur:
        cur.set_title(t["Taxis"], "Taxi fares", author="ann")
        cur.merge_articles(t["Annual leave"], t["Parental leave"], author="ann")
        split = cur.split_article(t["Annual leave"], 2, author="ann")
        cur.mark_distinct(t["Sick leave"], t["Meals on trips"], why="different", author="ann")
        cur.set_title(t["Sick leave"], "Calling in sick")
        cur.undo()
    curated, manifest = snapshot(kb), load_kb(kb).manifest
    result = grace.build_kb(src, kb, min_tokens=1)
    assert snapshot(kb) == curated  # the same articles, titles, texts, IDs and order
    assert result.curation.applied == [1, 2, 3, 4] and result.curation.conflicts == []
    rebuilt = load_kb(kb).manifest
    assert (rebuilt.kb_hash, rebuilt.retired_ids, rebuilt.next_id) == (manifest.kb_hash, manifest.retired_ids,
                                                                       manifest.next_id)
    assert not (kb / CONFLICTS).exists()
    # and again: a rebuild of a rebuild is the same KB (the overlay is applied to the build, not to itself)
    grace.build_kb(src, kb, min_tokens=1)
    assert snapshot(kb) == curated
    # a new section added to the sources gets a new number, never one curation handed out
    (src / "leave.md").write_text((src / "leave.md").read_text() + "\n## Unpaid leave\n\n" + "You may take up to "
                                  "three months of unpaid leave a year, once your manager and HR agree; your pension and "
                                  "health cover continue, and your job is kept for you until you return.\n")
    grace.build_kb(src, kb, min_tokens=1)
    new = {a.id for a in load_kb(kb).articles} - {x[0] for x in curated}
    assert len(new) == 1 and int(new.pop()) > int(split.parts[1])


def test_rebuild_from_changed_sources_lists_conflicts_and_applies_the_rest(tmp_path):
    src = write_handbook(tmp_path / "src")
    kb = tmp_path / "kb"
    grace.build_kb(src, kb, min_tokens=1)
    t = ids_by_title(kb)
    with open_curation(kb) as cur:
        cur.set_title(t["Taxis"], "Taxi fares", author="ann")  # 1: its source does not change
        cur.merge_articles(t["Annual leave"], t["Parental leave"], author="bob")  # 2: annual leave changes below
        cur.set_title(t["Annual leave"], "Leave: annual and parental", author="bob")  # 3: stands on 2
        cur.mark_distinct(t["Sick leave"], t["Meals on trips"], why="different", author="cy")  # 4: unchanged
        cur.set_text(t["Sick leave"], "Tell your manager before 10:00 on your first sick day.", author="cy")  # 5
    text = (src / "leave.md").read_text()
    (src / "leave.md").write_text(text.replace("25 days of paid annual leave", "27 days of paid annual leave"))
    result = grace.build_kb(src, kb, min_tokens=1)
    assert result.curation.applied == [1, 4, 5]
    conflicts = {c.seq: c for c in result.curation.conflicts}
    assert sorted(conflicts) == [2, 3]
    assert f"article(s) {t['Annual leave']} changed" in conflicts[2].reason and conflicts[2].author == "bob"
    assert "--undo --seq 2" in conflicts[2].reason
    assert conflicts[2].found[t["Annual leave"]] != conflicts[2].expected[t["Annual leave"]]
    kb_now = load_kb(kb)
    # never applied to the wrong text, never dropped: the changed article is the source's, both articles live
    assert "27 days" in kb_now.by_id[t["Annual leave"]].text and kb_now.by_id[t["Annual leave"]].title.endswith("Annual leave")
    assert t["Parental leave"] in kb_now.by_id and t["Parental leave"] not in kb_now.manifest.retired_ids
    assert kb_now.by_id[t["Taxis"]].title == "Taxi fares"
    assert kb_now.by_id[t["Sick leave"]].text == "Tell your manager before 10:00 on your first sick day."
    saved = [json.loads(x) for x in (kb / CONFLICTS).read_text().splitlines()]
    assert [c["seq"] for c in saved] == [2, 3]
    # --json says the same
    out = grace_cli("kb", "build", src, "--out", kb, "--min-tokens", "1", "--json", "--no-lint")
    assert out.returncode == 0, out.stderr
    built = json.loads(out.stdout)
    assert built["curation"]["applied"] == [1, 4, 5] and [c["seq"] for c in built["curation"]["conflicts"]] == [2, 3]
    assert "2 in conflict" in out.stderr
    # a person settles it: drop the stale edits (newest first), and the next build is clean
    with open_curation(kb) as cur:
        assert [c.seq for c in cur.conflicts()] == [2, 3]
        cur.undo(seq=3)
        cur.undo(seq=2)
        assert cur.conflicts() == []
    again = grace.build_kb(src, kb, min_tokens=1)
    assert again.curation.conflicts == [] and not (kb / CONFLICTS).exists()


def test_pairs_marked_distinct_leave_lint_and_are_shown_on_request(tmp_path):
    files = {"a.md": """\
        # Travel

        ## Hotel booking abroad

        Book hotels abroad through the travel desk portal at least a week ahead; the nightly limit is EUR 180 in capital
        cities and EUR 140 elsewhere, breakfast included, and a room above the limit needs your director's approval.
        """, "b.md": """\
        # Travel

        ## Hotel booking at home

        Book hotels at home through the travel desk portal at least a week ahead; the nightly limit is EUR 150 in capital
        cities and EUR 110 elsewhere, breakfast included, and a room above the limit needs your director's approval.
        """}
    src = write_handbook(tmp_path / "src", files)
    kb = tmp_path / "kb"
    grace.build_kb(src, kb, min_tokens=1)
    pair = [f for f in grace.lint_kb(kb).findings if f.kind == "confusable"]
    assert len(pair) == 1
    a, b = pair[0].articles
    with open_curation(kb) as cur:
        assert len(cur.worklist().findings) == len(grace.lint_kb(kb).findings)
        cur.mark_distinct(b, a, why="abroad and at home have different limits", author="dee")
        assert not [f for f in cur.worklist().findings if f.kind == "confusable"]
    report = grace.lint_kb(kb)
    assert not [f for f in report.findings if f.kind == "confusable"] and report.silenced == 1
    assert report.distinct[0]["author"] == "dee" and report.distinct[0]["reason"].startswith("abroad")
    shown = grace_cli("kb", "lint", kb, "--show-distinct")
    assert "marked distinct (1)" in shown.stdout and "abroad and at home" in shown.stdout
    assert "--show-distinct" in grace_cli("kb", "lint", kb).stdout
    assert json.loads(grace_cli("kb", "lint", kb, "--json").stdout)["distinct"][0]["articles"] == [b, a]
    # an article of the pair changes in the sources: the mark is a conflict, and lint shows the pair again
    (src / "b.md").write_text((src / "b.md").read_text().replace("EUR 150", "EUR 155"), encoding="utf-8")
    rebuilt = grace.build_kb(src, kb, min_tokens=1)
    assert [c.action for c in rebuilt.curation.conflicts] == ["distinct"]
    assert [f for f in grace.lint_kb(kb).findings if f.kind == "confusable"] and not grace.lint_kb(kb).distinct
    with open_curation(kb) as cur:
        assert cur.distinct() == []
        cur.mark_distinct(a, b, why="still different limits", author="dee")  # looked at again, marked again
    assert not [f for f in grace.lint_kb(kb).findings if f.kind == "confusable"]
    with open_curation(kb) as cur:
        cur.undo()
    assert [f for f in grace.lint_kb(kb).findings if f.kind == "confusable"]


def test_one_writer_per_kb(kb, tmp_path):
    t = ids_by_title(kb)
    with open_curation(kb):
        # a second writer in this process, in another process, and a rebuild are all refused while it is open
        with pytest.raises(GraceError, match="another grace is writing this KB"):
            open_curation(kb)
        other = grace_cli("kb", "edit", kb, "--title", t["Taxis"], "x")
        assert other.returncode == 2 and "another grace is writing this KB" in other.stderr
        assert "pid " in other.stderr
        with pytest.raises(GraceError, match="another grace is writing this KB"):
            grace.build_kb(tmp_path / "src", kb, min_tokens=1)
    assert read_edits(kb) == []
    with open_curation(kb) as cur:  # released on close
        cur.set_title(t["Taxis"], "Taxi fares")


def test_a_writer_killed_between_the_record_and_the_articles_is_caught_up(kb):
    """Before: every reader used the unmerged KB with no note until the next curation session opened it."""
    t = ids_by_title(kb)
    kept = {name: (kb / name).read_bytes() for name in ("articles.jsonl", "manifest.json")}
    with open_curation(kb) as cur:
        cur.set_title(t["Taxis"], "Taxi fares")
    for name, data in kept.items():  # as if the process died after the fsync of curation.jsonl
        (kb / name).write_bytes(data)
    # a reader that writes nothing sees the action in force, and the files are left as they are
    assert load_kb(kb, write_missing=False).by_id[t["Taxis"]].title == "Taxi fares"
    assert (kb / "articles.jsonl").read_bytes() == kept["articles.jsonl"]
    with open_curation(kb):  # the KB's writer saves it
        pass
    assert "Taxi fares" in (kb / "articles.jsonl").read_text()
    assert json.loads((kb / "manifest.json").read_text())["curation_seq"] == 1


def test_a_curation_killed_half_way_is_in_force_for_every_reader(kb):
    """Before: ``kb edit --list`` listed the action while ``kb search`` and the rest used the KB without it."""
    t = ids_by_title(kb)
    killed = killed_at_replace("articles.jsonl", "kb", "edit", kb, "--title", t["Taxis"], "Taxi fares at night")
    assert killed.returncode == -signal.SIGKILL
    assert "Taxi fares at night" not in (kb / "articles.jsonl").read_text()  # the kill fell between the two writes
    assert [e.seq for e in read_edits(kb)] == [1]
    found = grace_cli("kb", "search", kb, "taxi at night", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert "Taxi fares at night" in found.stdout
    assert "action 1" in found.stderr and "stopped half-way" in found.stderr  # said, not silent
    listed = grace_cli("kb", "edit", kb, "--list")
    assert listed.returncode == 0 and "1. article" in listed.stdout
    assert "Taxi fares at night" in (kb / "articles.jsonl").read_text()  # merged for good by a command that writes
    assert json.loads((kb / "manifest.json").read_text())["curation_seq"] == 1
    again = grace_cli("kb", "search", kb, "taxi at night", "-k", "1")
    assert again.returncode == 0 and "half-way" not in again.stderr


def test_a_torn_last_action_is_set_aside_and_the_kb_stays_usable(kb, tmp_path):
    """A crash mid-append leaves half a line with no newline: it never took effect. Before: every 'kb build' and
    'kb edit' exited 2 until the file was edited by hand."""
    t = ids_by_title(kb)
    assert grace_cli("kb", "edit", kb, "--title", t["Taxis"], "Taxi fares").returncode == 0
    path = kb / "curation.jsonl"
    whole = path.read_text()
    torn = whole[: len(whole) // 2]
    path.write_text(whole + torn)  # a second action cut off mid-write
    listed = grace_cli("kb", "edit", kb, "--list")
    assert listed.returncode == 0 and listed.stdout.startswith("1. article"), listed.stderr
    built = grace_cli("kb", "build", tmp_path / "src", "--out", kb, "--min-tokens", "1")
    assert built.returncode == 0, built.stderr
    assert "curation.jsonl:2: the last curation action was cut off" in built.stderr and "curation.jsonl.torn" in built.stderr
    assert (kb / "curation.jsonl.torn").read_text() == torn + "\n"
    assert path.read_text() == whole
    saved = grace_cli("kb", "edit", kb, "--title", t["Sick leave"], "Sick days")
    assert saved.returncode == 0, saved.stderr
    assert [e.seq for e in read_edits(kb)] == [1, 2]
    assert load_kb(kb).by_id[t["Taxis"]].title == "Taxi fares"


def test_a_damaged_action_in_the_middle_is_a_clear_error(kb):
    t = ids_by_title(kb)
    for title in ("Taxi fares", "Taxi refunds"):
        assert grace_cli("kb", "edit", kb, "--title", t["Taxis"], title).returncode == 0
    path = kb / "curation.jsonl"
    first, second = path.read_text().splitlines(keepends=True)
    path.write_text(first[: len(first) // 2] + "\n" + second)  # damaged, with a whole action after it
    for args in (["--list"], ["--title", t["Sick leave"], "Sick days"]):
        done = grace_cli("kb", "edit", kb, *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"{path}:1: not valid JSON" in done.stderr and "restore it from a copy" in done.stderr


def test_the_python_api_and_one_action_call(kb):
    t = ids_by_title(kb)
    assert grace.open_curation is open_curation
    saved = edit_kb(kb, KbEdit(merge=(t["Sick leave"], t["Taxis"]), author="eve"))
    assert saved.action == "merge" and saved.author == "eve"
    edits, conflicts = grace.curation_edits(kb)
    assert [e.seq for e in edits] == [1] and conflicts == []
    with pytest.raises(GraceError, match="exactly one action"):
        edit_kb(kb, KbEdit(undo=True, title=("1", "x")))


def test_a_copied_kb_keeps_its_curation(kb, tmp_path):
    """The overlay lives in the KB folder: a copy of the folder is the curated KB, rebuildable on its own."""
    t = ids_by_title(kb)
    with open_curation(kb) as cur:
        cur.set_title(t["Taxis"], "Taxi fares")
    shutil.copytree(kb, tmp_path / "copy")
    grace.build_kb(tmp_path / "src", tmp_path / "copy", min_tokens=1)
    assert load_kb(tmp_path / "copy").by_id[t["Taxis"]].title == "Taxi fares"
