"""The KB folder: the one owner of its file names, their paths and its lock.

A KB folder holds what ``grace kb build``, ``grace kb index`` and curation write::

    articles.jsonl            the articles: the contract (a folder with only this file is a valid KB)
    manifest.json             derived from the articles: hash, counts, embedder, retired IDs (kb_records.Manifest)
    retired.jsonl             the articles a rebuild removed, with their titles: what a stale gold label cited
    curation.jsonl            every curation action a person took (curation_records.CurationEdit), appended
    curation.jsonl.torn       a last action cut off mid-write, set aside (it never took effect)
    curation_conflicts.jsonl  the actions the last build could not re-apply (curation_records.CurationConflict)
    curation_review.jsonl     a team's changes waiting for, or decided by, a reviewer (``grace kb curate --reviewers``)
    curation_keys.json        a curation team's personal keys, hashed (harness.web.credentials)
    curation_proposals.jsonl  the model proposals ``grace kb curate`` was asked for, and what became of each
    embeddings/, index/       derived data (vectors, the bm25f index), rebuilt when missing
    .curation.lock            the one-writer lock: curation and ``grace kb build``

Every other module asks a :class:`KbDir` for these paths, so each name is spelled
here only, as :class:`harness.run_folder.run_dir.RunDir` does for a run folder. Each file
keeps one reader and one writer: the articles and the manifest
(:mod:`kb_builder.store`), the curation log and its conflicts
(:mod:`kb_builder.curation_records`), the retired log (here), the change requests
(:mod:`harness.kb_curate.change_requests`) and the proposals (:mod:`harness.kb_curate.proposal_store`). Why a module at the
bottom of the KB builder, below those readers and writers rather than above them
with the loader (:func:`kb_builder.loader.load_kb`): they all resolve their
paths through it, and the loader uses them, so the owner of the names must import
none of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from harness.core.clock import now
from harness.core.errors import GraceError, where
from harness.core.locks import FileLock
from kb_builder.kb_records import Article

ARTICLES = "articles.jsonl"
MANIFEST = "manifest.json"
RETIRED = "retired.jsonl"
CURATION = "curation.jsonl"
TORN_SUFFIX = ".torn"  # curation.jsonl.torn: a torn last action, set aside
CONFLICTS = "curation_conflicts.jsonl"
REVIEW = "curation_review.jsonl"
PROPOSALS = "curation_proposals.jsonl"
KEYS = "curation_keys.json"
EMBEDDINGS = "embeddings"
INDEX = "index"
LOCK = ".curation.lock"


class KbDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def of(cls, path: str | Path) -> KbDir:
        """The KB folder a path names: the folder itself, or its ``articles.jsonl``."""
        path = Path(path)
        return cls(path.parent if path.name == ARTICLES else path)

    def __repr__(self) -> str:
        return f"KbDir({str(self.path)!r})"

    # -- names ---------------------------------------------------------------
    @property
    def articles(self) -> Path:
        return self.path / ARTICLES

    @property
    def manifest(self) -> Path:
        return self.path / MANIFEST

    @property
    def retired(self) -> Path:
        return self.path / RETIRED

    @property
    def curation(self) -> Path:
        return self.path / CURATION

    @property
    def torn_curation(self) -> Path:
        return self.path / (CURATION + TORN_SUFFIX)

    @property
    def conflicts(self) -> Path:
        return self.path / CONFLICTS

    @property
    def curation_review(self) -> Path:
        return self.path / REVIEW

    @property
    def curation_keys(self) -> Path:
        return self.path / KEYS

    @property
    def proposals(self) -> Path:
        return self.path / PROPOSALS

    @property
    def embeddings(self) -> Path:
        return self.path / EMBEDDINGS

    @property
    def index(self) -> Path:
        return self.path / INDEX

    def has_articles(self) -> bool:
        """A KB folder: it holds an articles file (all a KB needs; the rest is derived)."""
        return self.articles.is_file()

    def files(self) -> list[Path]:
        """The files of the KB: inputs no command's output may replace."""
        return [self.articles, self.manifest]

    # -- one writer ------------------------------------------------------------
    def lock(self) -> FileLock:
        """The one-writer lock of a KB folder: curation (the web app, ``grace kb edit``) and ``grace kb build``."""
        return FileLock(self.path / LOCK, f"{self.path}: another grace is writing this KB (grace kb curate, grace kb "
                        "edit or grace kb build)", "wait for it to finish or close it, then try again")

    # -- retired.jsonl ---------------------------------------------------------
    def append_retired(self, gone: Iterable[Article]) -> None:
        """Keep removed articles' titles so a stale gold label can be explained later."""
        stamp = now()
        with self.retired.open("a", encoding="utf-8") as fh:
            for a in gone:
                fh.write(json.dumps({"id": a.id, "title": a.title, "source": a.source, "retired_at": stamp},
                                    ensure_ascii=False) + "\n")

    def retired_titles(self) -> dict[str, str]:
        """Article ID -> title of every article a rebuild removed (none recorded: empty)."""
        path = self.retired
        if not path.exists():
            return {}
        titles: dict[str, str] = {}
        for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                titles[str(data["id"])] = str(data.get("title", ""))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise GraceError(f"{where(path, n)}: expected a JSON object with id and title") from None
        return titles
