"""Token counting with tiktoken, and an honest fallback when it cannot load.

tiktoken downloads its BPE files on first use. On an offline machine that fails,
so grace falls back to an approximation (cl100k's pre-tokeniser pattern, long
pieces split every 4 characters) and says so once. Budgets then hold to within a
few percent on English prose, which is what a split budget needs.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from functools import lru_cache

_PIECE = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+", re.UNICODE)
_lock = threading.Lock()
_state: dict[str, object] = {}


def _encoder():
    with _lock:
        if "enc" in _state:
            return _state["enc"]
        enc = None
        if os.environ.get("GRACE_TOKENIZER", "") != "approx":
            try:
                import tiktoken

                enc = tiktoken.get_encoding(os.environ.get("GRACE_TIKTOKEN_ENCODING", "cl100k_base"))
            except Exception as exc:  # network, missing cache, broken install: all mean "approximate"
                print(
                    f"grace: tiktoken encoding unavailable ({type(exc).__name__}); "
                    "counting tokens approximately (set TIKTOKEN_CACHE_DIR to a folder holding the encoding "
                    "files for exact counts)",
                    file=sys.stderr,
                )
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
        n += max(1, (len(piece.strip()) + 3) // 4) if len(piece) > 6 else 1
    return n


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    enc = _encoder()
    if enc is None:
        return _approx(text)
    return len(enc.encode(text, disallowed_special=()))
