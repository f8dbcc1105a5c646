"""Token counting with tiktoken when its encoding file is already here, else an honest approximation.

tiktoken downloads its BPE file on first use, and grace downloads nothing
unasked: the encoding is used only when tiktoken's cache already holds its
file (``$TIKTOKEN_CACHE_DIR``, else ``data-gym-cache`` in the system temp
folder, named by the SHA-1 of its URL). Otherwise tokens are counted by an
approximation (cl100k's pre-tokeniser pattern, long pieces split every 4
characters) and one line says so; budgets then hold to within a few percent on
English prose, which is what a split budget needs. Scripts written without spaces
(Chinese, Japanese, Thai...) count a token per character, where cl100k spends
one or more: a long run of them is otherwise one "word" counted as a quarter of
its length, and a Chinese article would overflow its budget four times over. ``GRACE_TOKENIZER=tiktoken``
lets tiktoken download the file (it keeps it in that cache);
``GRACE_TOKENIZER=approx`` never loads tiktoken.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from functools import lru_cache

from kb_builder.language import NO_SPACE

log = logging.getLogger("grace")

_PIECE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+", re.UNICODE)
_NO_SPACE = re.compile(f"[{NO_SPACE}]")  # Chinese, Japanese, Thai...: no spaces, and dense in tokens
_lock = threading.Lock()
_state: dict[str, object] = {}


class _NotCached(Exception):
    """tiktoken would have to download this file."""


def _cached_encoding(name: str):
    """tiktoken's encoding ``name`` from files already on this machine; ``_NotCached`` where it would download.

    tiktoken reads every file through ``tiktoken.load.read_file`` (after its cache
    misses), so for this one load that function refuses URLs. Called under ``_lock``.
    """
    import tiktoken
    import tiktoken.load

    download = tiktoken.load.read_file

    def local_only(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise _NotCached(blobpath)
        return download(blobpath)

    tiktoken.load.read_file = local_only
    try:
        return tiktoken.get_encoding(name)
    finally:
        tiktoken.load.read_file = download


def _encoder():
    with _lock:
        if "enc" in _state:
            return _state["enc"]
        enc = None
        mode = os.environ.get("GRACE_TOKENIZER", "").strip().lower()
        name = os.environ.get("GRACE_TIKTOKEN_ENCODING", "cl100k_base")
        if mode != "approx":
            try:
                if mode == "tiktoken":
                    import tiktoken

                    enc = tiktoken.get_encoding(name)
                else:
                    enc = _cached_encoding(name)
            except _NotCached:
                log.info(f"counting tokens approximately (within a few percent): tiktoken's {name} file is not on "
                         "this machine and grace downloads nothing unasked; GRACE_TOKENIZER=tiktoken downloads it "
                         "once, for exact counts")
            except Exception as exc:  # network, a broken install, an unknown encoding name
                log.warning(f"tiktoken could not load {name} ({type(exc).__name__}); counting tokens approximately "
                            "(within a few percent)")
        _state["enc"] = enc
        return enc


def tokenizer_name() -> str:
    enc = _encoder()
    return f"tiktoken:{enc.name}" if enc is not None else "approx-cl100k"


def _approx(text: str) -> int:
    n = 0
    for m in _PIECE.finditer(text):
        piece = m.group(0)
        if piece.isspace():
            n += 1 if "\n" in piece or len(piece) > 1 else 0
            continue
        wide = len(_NO_SPACE.findall(piece))
        if wide:  # cl100k spends about a token per character of these scripts (often more), never 1 per 4
            n += wide + (len(piece.strip()) - wide + 3) // 4
            continue
        n += max(1, (len(piece.strip()) + 3) // 4) if len(piece) > 6 else 1
    return n


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    enc = _encoder()
    if enc is None:
        return _approx(text)
    return len(enc.encode(text, disallowed_special=()))
