"""Who is who in a team's web app: one secret key per named person, kept hashed, checked on every request.

The server's ``--host`` token keeps strangers out; it does not tell teammates apart. A team
session (``grace annotate --team``, ``grace annotations review --team``, ``grace kb curate
--reviewers``) therefore gives every person it names (labellers, reviewers, curators) a key of
their own: 32 random bytes, shown once (in the personal link the command prints) and stored
only as its SHA-256 in the session's key file, so the file tells nobody a key. A request
carries its key (``?cred=``, which the pages' ``common.js`` adds to every call, or the
``X-Grace-Key`` header); the person is the one whose key it is, never a name in the URL or
the body: a name that disagrees with the key is refused (403), and so is a request naming a
person who holds a key without it. A key is compared with :func:`hmac.compare_digest`.

What this does not do: encrypt. Over plain HTTP beyond localhost a key travels in clear
text, as the token does; use an SSH tunnel or a TLS proxy in front (the label-gold guide says
how). A lost key is replaced (``--new-key NAME``), which stops the old one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from http import HTTPStatus
from pathlib import Path

from pydantic import BaseModel, Field

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text, read_text_checked
from harness.web.server import Rejected


class Forbidden(Rejected):
    """A request without the key of the person it acts as, or with a key that is nobody's (403)."""

    status = HTTPStatus.FORBIDDEN


class KeyRecord(BaseModel):
    """One person's key, as stored: its hash only."""

    sha256: str = Field(description="SHA-256 of the key, hex: the key itself is never stored.")
    issued_at: str = Field(description="When it was issued, ISO 8601 UTC.")


class KeyFile(BaseModel):
    """A team session's key file: person -> their key's hash."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    keys: dict[str, KeyRecord] = Field(default_factory=dict, description="Person -> their key, hashed.")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class Credentials:
    """The keys of one team session (its key file: one reader and writer, this class)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        if path.exists():
            try:
                self.file = KeyFile.model_validate(json.loads(read_text_checked(path)))
            except (ValueError, TypeError) as exc:
                raise GraceError(f"{path}: not a key file grace wrote ({str(exc).splitlines()[0]}); delete it and "
                                 "start again to issue every person a new key (the old links stop working)") from None
        else:
            self.file = KeyFile()

    def holds(self, name: str) -> bool:
        return name in self.file.keys

    def names(self) -> list[str]:
        """Who holds a key."""
        return sorted(self.file.keys)

    def issue(self, names: list[str], again: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
        """A new key for each of ``names`` without one, and for each of ``again`` (the old one stops working);
        returns name -> key, the only time a key is seen. Written before it is returned."""
        unknown = [n for n in again if n not in names]
        if unknown:
            raise GraceError(f"--new-key {', '.join(unknown)}: not a person of this session ({', '.join(names)})")
        with self._lock:
            new = {n: secrets.token_urlsafe(32) for n in names if n not in self.file.keys or n in again}
            if not new:
                return {}
            at = now()
            for n, key in new.items():
                self.file.keys[n] = KeyRecord(sha256=_digest(key), issued_at=at)
            atomic_write_text(self.path, self.file.model_dump_json(indent=2) + "\n")
            return new

    def owner(self, key: str) -> str | None:
        """Whose key ``key`` is (every stored hash compared, in constant time each), or None."""
        given = _digest(key)
        found = None
        for name, rec in self.file.keys.items():
            if hmac.compare_digest(given, rec.sha256):
                found = name
        return found

    def person(self, named: str | None, key: str | None) -> str:
        """The person a request acts as: the key's owner (``named``, when given, must be them); with no key, the
        name (a team open to anyone), unless that person holds a key. Anything else is refused (403)."""
        named = (named or "").strip()
        if key:
            owner = self.owner(key)
            if owner is None:
                raise Forbidden("this link's key is no one's (replaced, or mistyped): open the link the session "
                                "printed for you, or ask who started it for a new one (--new-key NAME)")
            if named and named != owner:
                raise Forbidden(f"this is {owner}'s key: it cannot act as {named!r}")
            return owner
        if named in self.file.keys:
            raise Forbidden(f"{named} signs in with their own link (its key): open the link the session printed "
                            f"for {named}; a name alone acts as nobody here")
        return named


def personal_link(url: str, name: str, key: str | None, page: str = "") -> str:
    """``url`` (the server's, perhaps with its ``?token=``) opened at ``page`` as ``name`` with their ``key``."""
    base, _, query = url.partition("?")
    params = [p for p in (query, f"who={name}", f"cred={key}" if key else "") if p]
    return f"{base}{page}?{'&'.join(params)}"
