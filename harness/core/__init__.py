"""grace's shared core: errors, safe file writing, JSONL reading, hashing and the version.

Every package (``kb_builder``, ``harness``, ``annotations``) imports these from
here, so a message, a hash or a write behaves the same wherever it happens.
Nothing here imports a feature package.
"""

from harness.core.errors import GraceError, WorkFailed, where
from harness.core.files import JsonlAppender, atomic_write_text, disk_error, spreadsheet_safe, spreadsheet_unsafe
from harness.core.hashing import canonical_json, file_hash, json_hash, normalise, normalise_url, text_hash
from harness.core.jsonl import iter_jsonl
from harness.core.version import __version__

__all__ = [
    "GraceError", "JsonlAppender", "__version__", "atomic_write_text", "canonical_json", "disk_error", "file_hash",
    "WorkFailed", "iter_jsonl", "json_hash", "normalise", "normalise_url", "spreadsheet_safe", "spreadsheet_unsafe",
    "text_hash", "where",
]
