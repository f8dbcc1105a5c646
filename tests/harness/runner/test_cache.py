"""The response cache never stops a run: damage is moved aside or worked around; `grace cache` finds and fixes it."""

from __future__ import annotations

import json
import logging
import re
import shutil
import sqlite3
import struct
from pathlib import Path

import pytest

from harness.runner.cache import ResponseCache, check_cache, default_cache_path
from harness.testing import FakeAPIServer, cite_first_id
from tests.conftest import run_grace, small_bench

JUNK = b"not a database" * 100


@pytest.fixture()
def bench(tmp_path):
    return small_bench(tmp_path, 4, [])


@pytest.fixture()
def api(openai_server):
    return openai_server


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture()
def notices():
    """Messages of the ``grace`` logger, by a handler of its own: the CLI turns the logger's propagation off."""
    logger, handler = logging.getLogger("grace"), _Collect()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def run_args(bench: Path, out: str, *extra: str) -> list:
    return ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "openai:some-model",
            "--out", bench / out, "--no-score", *extra]


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "responses.jsonl").read_text().splitlines()]


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def filled_cache(path: Path, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(f"k{i:04d}", "m", {"completion": {"text": "x" * 300}})
    cache.close()


def overwrite_in_place(path: Path) -> None:
    """Junk over the same inode, as a stray ``cp`` or a disk fault would; open file handles stay valid."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.write((JUNK * (size // len(JUNK) + 1))[:size])


def _wal_checksum(data: bytes, s0: int, s1: int, fmt: str) -> tuple[int, int]:
    for x0, x1 in struct.iter_unpack(fmt, data):
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def damage_wal_page(wal: Path, pgno: int) -> int:
    """Fill every WAL frame of page ``pgno`` with junk and re-sign the frames, so SQLite trusts and reads them.

    Without valid checksums SQLite just ignores a bad WAL; this is the damage it cannot ignore.
    """
    b = bytearray(wal.read_bytes())
    magic, _, page_size = struct.unpack(">III", b[:12])
    fmt = ">II" if magic & 1 else "<II"
    s = _wal_checksum(bytes(b[:24]), 0, 0, fmt)
    off, hit = 32, 0
    while off + 24 + page_size <= len(b):
        if struct.unpack(">I", b[off:off + 4])[0] == pgno:
            b[off + 24:off + 24 + page_size] = b"\xff" * page_size
            hit += 1
        s = _wal_checksum(bytes(b[off:off + 8]) + bytes(b[off + 24:off + 24 + page_size]), *s, fmt)
        b[off + 16:off + 24] = struct.pack(">II", *s)
        off += 24 + page_size
    wal.write_bytes(bytes(b))
    return hit


# --- grace run with a damaged cache -------------------------------------------------------------------------


def test_damaged_cache_is_moved_aside_and_the_run_goes_on(bench, api):
    path = default_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(JUNK)
    code, out = run_grace(*run_args(bench, "run1"))
    assert code == 0, out
    assert "Traceback" not in out
    moved = sorted(path.parent.glob("responses.sqlite.damaged-*"))
    assert len(moved) == 1 and moved[0].read_bytes() == JUNK
    assert re.fullmatch(r"responses\.sqlite\.damaged-\d{8}-\d{6}", moved[0].name)
    assert out.count("the response cache was damaged") == 1
    warning = next(line for line in out.splitlines() if "the response cache was damaged" in line)
    assert str(path) in warning and str(moved[0]) in warning and "Nothing was lost from your run folders" in warning
    assert len(rows(bench / "run1")) == 4 and len(api.requests) == 4
    # the fresh cache works: a new run folder is answered from it, with no call and no notice
    code, out = run_grace(*run_args(bench, "run2"))
    assert code == 0, out
    assert len(api.requests) == 4 and all(r["cached"] for r in rows(bench / "run2"))
    assert "response cache" not in out


def test_no_cache_with_a_damaged_cache_runs(bench, api):
    path = default_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(JUNK)
    code, out = run_grace(*run_args(bench, "run", "--no-cache"))
    assert code == 0, out
    assert len(rows(bench / "run")) == 4 and "Traceback" not in out
    assert check_cache(path).ok and check_cache(path).rows == 4  # answers are still recorded, in a fresh cache


def test_dry_run_with_a_damaged_cache_moves_and_creates_nothing(bench, api):
    path = default_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(JUNK)
    before = listing(path.parent)
    code, out = run_grace(*run_args(bench, "run", "--dry-run"))
    assert code == 0, out
    assert listing(path.parent) == before and not api.requests
    assert out.count("cannot read the response cache") == 1 and str(path) in out
    assert re.search(r"openai:some-model\W+4\W+0\W", out)  # 4 calls to make, 0 cached


def test_dry_run_reads_a_healthy_cache_without_creating_files(bench, api):
    code, out = run_grace(*run_args(bench, "run1"))
    assert code == 0, out
    folder = default_cache_path().parent
    before = listing(folder)
    assert list(before) == ["responses.sqlite"]  # the run's last close checkpointed and removed -wal/-shm
    code, out = run_grace(*run_args(bench, "run2", "--dry-run"))
    assert code == 0, out
    assert listing(folder) == before
    assert re.search(r"openai:some-model\W+0\W+4\W", out)  # every call already cached


def test_cache_damaged_during_a_run_does_not_stop_it(bench, monkeypatch):
    path = default_cache_path()

    def damage_after_first_call(body):
        if not getattr(damage_after_first_call, "done", False) and path.exists():
            damage_after_first_call.done = True
            for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                if f.exists():
                    overwrite_in_place(f)
        return cite_first_id(body)

    with FakeAPIServer(responder=damage_after_first_call) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        code, out = run_grace(*run_args(bench, "run", "--concurrency", "1"))
    assert code == 0, out
    assert len(rows(bench / "run")) == 4 and all(r["error"] is None for r in rows(bench / "run"))
    assert out.count("the response cache is damaged") == 1
    assert "grace cache check" in out and "grace cache clear" in out and str(path) in out


def test_an_unusable_cache_folder_warns_and_the_run_goes_on(bench, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("GRACE_CACHE_DIR", str(blocker))
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--model", "baseline:top1",
                          "--out", bench / "run", "--no-score")
    assert code == 0, out
    assert out.count("cannot use the response cache") == 1 and "GRACE_CACHE_DIR" in out
    assert len(rows(bench / "run")) == 4


# --- ResponseCache on its own --------------------------------------------------------------------------------


def test_junk_database_is_moved_aside_with_its_side_files(tmp_path, notices):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(JUNK)
    Path(f"{path}-wal").write_bytes(b"junk wal")
    Path(f"{path}-shm").write_bytes(b"junk shm")
    cache = ResponseCache(path)
    cache.put("k", "m", {"completion": {"text": "hi"}})
    assert cache.get("k") == {"completion": {"text": "hi"}}
    cache.close()
    [moved] = tmp_path.glob("responses.sqlite.damaged-*[0-9]")
    assert moved.read_bytes() == JUNK
    assert Path(f"{moved}-wal").read_bytes() == b"junk wal"  # kept as found: moved before SQLite's close removes it
    assert Path(f"{moved}-shm").exists()  # SQLite's shared-memory index: moved too, its bytes are SQLite's to rebuild
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").read_bytes() != b"junk wal"
    [warning] = notices
    assert str(path) in warning and str(moved) in warning


def test_a_damaged_wal_is_moved_aside_with_its_database(tmp_path, notices):
    src = tmp_path / "src" / "responses.sqlite"
    writer = ResponseCache(src)
    writer.db.execute("PRAGMA wal_autocheckpoint=0")  # keep every write in the WAL
    for i in range(20):
        writer.put(f"k{i}", "m", {"completion": {"text": "x" * 300}})
    path = tmp_path / "cache" / "responses.sqlite"
    path.parent.mkdir()
    shutil.copy(src, path)
    shutil.copy(f"{src}-wal", f"{path}-wal")  # a copy of a live cache: database plus its WAL
    writer.close()
    assert damage_wal_page(Path(f"{path}-wal"), 2) > 0  # page 2 is the responses table's root
    main_alone = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    assert main_alone.execute("PRAGMA integrity_check").fetchall() == [("ok",)]  # the damage is the WAL's
    main_alone.close()

    cache = ResponseCache(path)
    assert cache.get("k1") is None  # a fresh cache, not the damaged one
    cache.put("k", "m", {"completion": {}})
    assert cache.get("k") == {"completion": {}}
    cache.close()
    [moved] = path.parent.glob("responses.sqlite.damaged-*[0-9]")
    assert Path(f"{moved}-wal").exists()  # the damaged WAL goes with its database, not merged into it
    [warning] = notices
    assert "was damaged" in warning and str(path) in warning


def test_damage_found_mid_run_gives_misses_and_skipped_saves_with_one_warning(tmp_path, notices):
    path = tmp_path / "responses.sqlite"
    filled_cache(path, 400)
    data = bytearray(path.read_bytes())
    page = 4096
    last = len(data) // page
    data[(last - 6) * page:] = b"\xff" * (6 * page)  # the newest leaves: the open-time probe never reads them
    path.write_bytes(bytes(data))

    cache = ResponseCache(path)
    assert not list(tmp_path.glob("*.damaged-*"))  # opened fine: the damage is only found by a lookup
    hits = [cache.get(f"k{i:04d}") is not None for i in range(400)]
    assert hits[0] and not all(hits)
    cache.put("new", "m", {"completion": {}})
    assert cache.get("new") is None and cache.contains("k0000") is False
    cache.close()
    [warning] = notices
    assert str(path) in warning and "grace cache check" in warning and "grace cache clear" in warning


def test_a_cache_file_overwritten_while_open_does_not_raise(tmp_path, notices):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    for i in range(50):
        cache.put(f"k{i}", "m", {"completion": {"text": "x" * 300}})
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        overwrite_in_place(f)
    for i in range(5):
        assert cache.get(f"k{i}") is None
        cache.put(f"new{i}", "m", {"completion": {}})
        assert cache.contains(f"k{i}") is False
    cache.close()
    assert len(notices) == 1 and str(path) in notices[0]


def test_a_full_disk_skips_saves_with_one_warning_and_keeps_lookups(tmp_path, notices):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("kept", "m", {"completion": {"text": "hi"}})
    pages = cache.db.execute("PRAGMA page_count").fetchone()[0]
    cache.db.execute(f"PRAGMA max_page_count={pages}")  # SQLite's own SQLITE_FULL, as on a full disk
    for i in range(20):
        cache.put(f"k{i}", "m", {"completion": {"text": "x" * 3000}})
    assert cache.get("kept") == {"completion": {"text": "hi"}}  # a full disk does not switch the cache off
    cache.close()
    [warning] = notices
    assert "disk full" in warning and str(path) in warning and "run folder" in warning


def test_open_for_reading_never_creates_moves_or_writes(tmp_path, notices):
    path = tmp_path / "responses.sqlite"
    assert ResponseCache.open_for_reading(path) is None and not list(tmp_path.iterdir())
    assert not notices  # no cache yet is not a problem

    path.write_bytes(JUNK)
    assert ResponseCache.open_for_reading(path) is None
    assert listing(tmp_path) == {"responses.sqlite": JUNK}
    [warning] = notices
    assert str(path) in warning and "moves it aside" in warning

    path.unlink()
    filled_cache(path, 3)
    before = listing(tmp_path)
    reader = ResponseCache.open_for_reading(path)
    assert reader is not None and reader.contains("k0001") and not reader.contains("nope")
    with pytest.raises(RuntimeError):
        reader.put("k", "m", {})
    reader.close()
    assert listing(tmp_path) == before


# --- grace cache ----------------------------------------------------------------------------------------------


def test_cache_path_prints_the_default_and_honours_path():
    code, out = run_grace("cache", "path")
    assert code == 0 and out.strip() == str(default_cache_path())
    code, out = run_grace("cache", "path", "--path", "/elsewhere/c.sqlite")
    assert code == 0 and out.strip() == "/elsewhere/c.sqlite"


def test_cache_check_on_a_good_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    filled_cache(path, 3)
    before = listing(tmp_path)
    code, out = run_grace("cache", "check", "--path", path)
    assert code == 0, out
    assert re.search(r"rows:\s+3\b", out) and "integrity: OK" in out and str(path) in out
    assert re.search(r"size:\s+\d", out)
    assert listing(tmp_path) == before


def test_cache_check_on_a_damaged_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(JUNK)
    code, out = run_grace("cache", "check", "--path", path)
    assert code == 1, out
    assert "DAMAGED" in out and "file is not a database" in out and "grace cache clear" in out
    assert listing(tmp_path) == {"c.sqlite": JUNK}

    filled_cache(path2 := tmp_path / "pages.sqlite", 400)
    data = bytearray(path2.read_bytes())
    data[-6 * 4096:] = b"\xff" * (6 * 4096)
    path2.write_bytes(bytes(data))
    code, out = run_grace("cache", "check", "--path", path2)
    assert code == 1, out
    assert "DAMAGED" in out and re.search(r"rows:\s+(unknown|\d)", out)


def test_cache_check_with_no_cache_yet():
    code, out = run_grace("cache", "check")
    assert code == 0 and "no cache file yet" in out
    assert not default_cache_path().exists()


def test_cache_clear(tmp_path):
    path = tmp_path / "c.sqlite"
    filled_cache(path, 3)
    Path(f"{path}-wal").write_bytes(b"w")
    (tmp_path / "c.sqlite.damaged-20240101-000000").write_bytes(JUNK)
    (tmp_path / "keep.txt").write_text("not the cache's")

    code, out = run_grace("cache", "clear", "--path", path)  # no terminal under pytest: must say --yes
    assert code == 2 and "--yes" in out and path.exists()

    code, out = run_grace("cache", "clear", "--path", path, "--yes")
    assert code == 0, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert "deleted 3 file(s)" in out

    code, out = run_grace("cache", "clear", "--path", path, "--yes")
    assert code == 0 and "nothing to delete" in out


# --- the SDK imported ahead, unless the cache may answer ------------------------------------------------------

def test_a_run_imports_its_sdk_ahead_unless_the_cache_holds_answers_of_its_model(bench, api, monkeypatch):
    """The SDK (openai's: 0.8 s) is imported on a thread while the KB and retrieval load, when a call will go out;
    a re-run the cache answers never imports it, as before; a dry run neither."""
    import harness.core.preload

    asked: list[tuple[tuple[str, ...], bool]] = []

    def recording(*modules, needed=None, **kw):  # what would be imported, and the thread's own decision
        asked.append((modules, True if needed is None else needed()))

    monkeypatch.setattr(harness.core.preload, "preload", recording)
    code, out = run_grace(*run_args(bench, "first"))
    assert code == 0, out
    assert asked == [(("openai", "aiohttp"), True)]  # a cache with no answer of this model: every call goes out
    code, out = run_grace(*run_args(bench, "again"))
    assert code == 0, out
    assert asked[1] == (("openai", "aiohttp"), False) and all(r["cached"] for r in rows(bench / "again"))
    code, out = run_grace(*run_args(bench, "fresh", "--no-cache"))
    assert code == 0, out
    assert asked[2] == (("openai", "aiohttp"), True)  # no cache reads: the calls go out
    code, out = run_grace(*run_args(bench, "dry", "--dry-run"))
    assert code == 0, out
    assert len(asked) == 3  # a dry run sends nothing


def test_any_cached_reads_the_cache_without_creating_it(tmp_path):
    from harness.runner.cache import any_cached

    path = tmp_path / "cache" / "responses.sqlite"
    assert not any_cached(["openai:a"], path) and not path.parent.exists()
    cache = ResponseCache(path)
    cache.put("k1", "openai:a", {"text": "x"})
    cache.close()
    assert any_cached(["openai:b", "openai:a"], path) and not any_cached(["openai:b"], path)
