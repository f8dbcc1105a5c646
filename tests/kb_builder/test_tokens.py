"""Token counts offline by default: tiktoken's file is used when it is already here, never downloaded unasked."""

from __future__ import annotations

import base64
import hashlib
import socket

import pytest

from kb_builder import tokens
from tests.conftest import BODY, run_grace, write

TEST_URL = "https://example.invalid/grace-test-bytes.tiktoken"


@pytest.fixture
def fresh_tokenizer(tmp_path, monkeypatch):
    """No encoding loaded yet, an empty tiktoken cache, and a record of every host name looked up."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    for var in ("GRACE_TOKENIZER", "GRACE_TIKTOKEN_ENCODING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tokens, "_state", {})
    tokens.count_tokens.cache_clear()
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        lookups.append(host)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield lookups
    tokens.count_tokens.cache_clear()


def build(tmp_path):
    write(tmp_path / "src" / "leave.md", f"# Leave\n\n## Sick leave\n\nTen days a year. {BODY}\n")
    return run_grace("kb", "build", tmp_path / "src", "--out", tmp_path / "kb")


def test_a_build_with_no_cached_encoding_tries_no_network_and_says_so_once(tmp_path, fresh_tokenizer):
    code, out = build(tmp_path)
    assert code == 0, out
    assert fresh_tokenizer == []  # not even a DNS lookup of the download host
    assert "ConnectionError" not in out and "unavailable" not in out
    assert out.count("counting tokens approximately") == 1 and "GRACE_TOKENIZER=tiktoken" in out
    assert tokens.tokenizer_name() == "approx-cl100k"


def test_grace_tokenizer_tiktoken_opts_in_to_the_download(tmp_path, fresh_tokenizer, monkeypatch):
    monkeypatch.setenv("GRACE_TOKENIZER", "tiktoken")
    code, out = build(tmp_path)
    assert code == 0, out
    assert fresh_tokenizer  # it tried (the tests' network guard refused)
    assert out.count("counting tokens approximately") == 1 and "could not load" in out


def test_an_encoding_already_in_tiktokens_cache_is_used_offline(tmp_path, fresh_tokenizer, monkeypatch):
    """A one-byte-per-token encoding whose file sits where tiktoken caches it (sha1 of the URL)."""
    import tiktoken.load
    import tiktoken.registry

    data = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
    (tmp_path / "tiktoken-cache").mkdir()
    (tmp_path / "tiktoken-cache" / hashlib.sha1(TEST_URL.encode()).hexdigest()).write_bytes(data)

    def constructor():
        ranks = tiktoken.load.load_tiktoken_bpe(TEST_URL, expected_hash=hashlib.sha256(data).hexdigest())
        return {"name": "grace_test_bytes", "pat_str": r"\S+|\s+", "mergeable_ranks": ranks, "special_tokens": {}}

    tiktoken.registry.list_encoding_names()  # the plugin table is filled on first use
    monkeypatch.setitem(tiktoken.registry.ENCODING_CONSTRUCTORS, "grace_test_bytes", constructor)
    monkeypatch.setenv("GRACE_TIKTOKEN_ENCODING", "grace_test_bytes")
    assert tokens.count_tokens("sick leave") == 10  # one token per byte: tiktoken's count, not the approximation
    assert tokens.tokenizer_name() == "tiktoken:grace_test_bytes" and fresh_tokenizer == []
    tiktoken.registry.ENCODINGS.pop("grace_test_bytes", None)
