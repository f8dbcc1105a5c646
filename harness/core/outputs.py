"""Where a command may write: never over one of its own inputs, never over an existing file unasked.

Gold labels are the most expensive thing a grace user owns, and one slip of
``-o`` (``annotations audit GOLD.csv ... -o GOLD.csv``) used to replace them with
a five-line suspects file. Every command that writes a file names its output
and its inputs here before it does any work:

- an output that is one of the inputs (the same path, or the same file through
  a link) is refused, ``--force`` or not; a folder input is named by the files
  the command reads in it (``kb_files``, ``RunDir.data_files``);
- an output file that already exists is refused unless ``force``; when forced,
  the previous version is kept beside it as ``NAME.bak``;
- an output *folder* may not be an input folder, and no input may sit in it
  under a name the command writes there;
- a command that writes several files into a folder (:class:`OwnedFolder`,
  ``grace view --export DIR``) lists them with their hashes in a manifest in
  that folder; written again (``force``), it replaces or removes only the files
  on that list, keeps one the user has edited since (or any other file at a
  name it writes) as ``NAME.bak``, leaves every other file alone, and refuses a
  symbolic link that leads out of the folder.

Files a command owns inside its run folder (``scores.jsonl``, ``report.html``)
are not named here: rewriting them is the command's job.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from harness.core.errors import GraceError

log = logging.getLogger("grace")

# what each input is called in a message -> its path, or the files read in it (a KB's, a run folder's)
Inputs = Mapping[str, "str | Path | Iterable[str | Path] | None"]


def _items(inputs: Inputs) -> list[tuple[str, Path]]:
    out = []
    for name, value in inputs.items():
        if value is None:
            continue
        for p in [value] if isinstance(value, str | Path) else value:
            out.append((name, Path(p)))
    return out


def same_file(a: Path, b: Path) -> bool:
    """One file (or folder) under two names: the same resolved path, or the same inode through a hard link."""
    try:
        if a.resolve() == b.resolve():
            return True
    except OSError:
        pass
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def keep_backup(path: Path) -> Path | None:
    """Copy ``path`` to ``NAME.bak`` beside it (replacing an older backup); ``None`` when there is no file."""
    path = Path(path)
    if not path.is_file():
        return None
    bak = backup_path(path)
    tmp = bak.with_name(f".{bak.name}.tmp")
    try:
        shutil.copy2(path, tmp)
        os.replace(tmp, bak)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise GraceError(f"{path}: cannot keep a backup of it before writing ({exc.strerror or exc}); "
                         "nothing was written") from None
    return bak


def check_output_file(out: str | Path, inputs: Inputs, *, force: bool = False, owned: bool = False,
                      option: str = "--out") -> Path | None:
    """Refuse ``out`` when it is an input, or exists and ``force`` is off; return the backup made when forced.

    ``owned``: the file is the command's own (a run folder's ``calibration.json``,
    a gold file the annotation app resumes), so an existing one is no reason to stop.
    Call it before any work (a model call, a parse of every source): the user
    learns of a wrong ``-o`` at once, not after paying for an hour of calls.
    """
    out = Path(out)
    for name, path in _items(inputs):
        if same_file(out, path):
            alias = "" if out.absolute() == path.absolute() else f" ({path}, the same file)"
            raise GraceError(f"{option} {out} is the {name}{alias} this command reads: writing there would "
                             f"destroy it; give {option} a new file")
    if out.is_dir():
        raise GraceError(f"{option} {out} is a folder; give a file path")
    if out.exists() and not owned:
        if not force:
            raise GraceError(f"{option} {out} already exists; give a new file, or add --force to replace it "
                             f"(the old one is kept as {backup_path(out).name})")
        bak = keep_backup(out)
        log.warning(f"replacing {out}; the previous version is kept as {bak}")
        return bak
    return None


def check_output_folder(out: str | Path, inputs: Inputs, writes: Iterable[str], *, option: str = "--out") -> None:
    """Refuse an output folder that is a file, is an input, or holds an input under a name it writes."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise GraceError(f"{option} {out} is a file; give a folder (it is created if missing)")
    names = set(writes)
    for name, path in _items(inputs):
        if same_file(out, path):
            raise GraceError(f"{option} {out} is the {name}, which this command reads; give another folder")
        if path.is_file() and path.name in names and same_file(path.parent, out):
            raise GraceError(f"the {name} {path} is where this command writes its {path.name}; move it out of "
                             f"{out}, or give {option} another folder")


def check_inside(folder: str | Path, rel: str, *, option: str = "--out") -> Path:
    """``folder/rel``; refused when it, or a folder on the way to it, is a symbolic link that leads out of ``folder``.

    A command writes into the folder it is given and nowhere else: a ``DIR/data`` that links to
    ``/home/me/data`` would have it replace (or remove) files there. A link that stays inside is followed.
    """
    folder = Path(folder)
    root = folder.resolve()
    path = folder
    for part in PurePosixPath(rel).parts:
        path = path / part
        if not path.is_symlink():
            continue
        target = path.resolve()
        if not target.is_relative_to(root):
            raise GraceError(f"{option} {folder}: {path} is a symbolic link to {target}, outside {folder}; grace "
                             f"writes only inside the folder it is given and will not follow it. Remove the link "
                             f"(rm {path}; what it points to is kept), or give {option} another folder")
    return folder / rel


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _safe_rel(rel: Any) -> str | None:
    """A manifest's file name as a plain relative path (``data/x.js``), or None for anything else (``../x``)."""
    if not isinstance(rel, str) or not rel or "\\" in rel:
        return None
    parts = PurePosixPath(rel).parts
    if PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") for p in parts):
        return None
    return "/".join(parts)


@dataclass
class FolderWrite:
    """What :meth:`OwnedFolder.write` did, each a path in the folder."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # files an earlier write made that this one does not
    backups: list[Path] = field(default_factory=list)  # NAME.bak kept of a file that was not this command's as is


class OwnedFolder:
    """A folder a command writes several files into, with a manifest (``DIR/<manifest>``) of the files it wrote.

    The manifest maps each file's path (relative, ``/``-separated) to the SHA-256 of what was written. Writing
    again replaces or removes only a file on that list whose bytes are still the ones written; a listed file the
    user has edited since, and any file at a name the command writes that is not on the list, is first kept as
    ``NAME.bak`` (as :func:`check_output_file` keeps a replaced file). Nothing else in the folder is touched.
    While a write is under way the manifest lists both the earlier and the new hashes, so an interrupted write
    leaves every file it made recognisable as its own.
    """

    SCHEMA_VERSION = 1

    def __init__(self, out: str | Path, manifest: str, *, written_by: str, option: str = "--out"):
        self.out, self.manifest, self.written_by, self.option = Path(out), manifest, written_by, option

    def check(self, names: Iterable[str], force: bool) -> None:
        """Before any work: a folder that is not empty needs ``force``; no name written may lead out of it."""
        out = self.out
        if out.exists() and not out.is_dir():
            raise GraceError(f"{self.option} {out} is a file; give a folder (it is created if missing)")
        if out.is_dir() and any(out.iterdir()) and not force:
            raise GraceError(f"{self.option} {out} is a folder that is not empty; give a new folder, or add --force "
                             f"to write into it (only the files an earlier {self.written_by} wrote there, listed "
                             f"in {self.manifest}, are replaced or removed; any other file at a name it writes is "
                             "kept as NAME.bak; nothing else is touched)")
        for name in [*names, self.manifest]:
            check_inside(out, name, option=self.option)

    def owned(self) -> tuple[dict[str, set[str]], bool]:
        """The files the manifest lists (path -> the hashes that are the command's own), and whether there is
        a manifest of this command's at all (a file of that name that is not one is the user's)."""
        path = self.out / self.manifest
        if not path.is_file():
            return {}, False
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}, False
        if not isinstance(data, dict) or data.get("written_by") != self.written_by \
                or not isinstance(data.get("files"), dict):
            return {}, False
        out: dict[str, set[str]] = {}
        for rel, hashes in data["files"].items():
            rel = _safe_rel(rel)
            if rel is None or rel == self.manifest:
                continue
            hashes = [hashes] if isinstance(hashes, str) else hashes if isinstance(hashes, list) else []
            out[rel] = {h for h in hashes if isinstance(h, str)}
        return out, True

    def _leaves(self, rel: str) -> bool:
        try:
            check_inside(self.out, rel, option=self.option)
        except GraceError:
            return True
        return False

    def write(self, files: Mapping[str, str], meta: Mapping[str, Any] | None = None) -> FolderWrite:
        """Write ``files`` (path -> text, UTF-8), remove the earlier write's files it no longer has, and record
        the new list in the manifest. Refuses (before writing anything) a name that is a link out of the folder,
        a folder where a file goes, or a file where a folder goes."""
        from harness.core.files import atomic_write_text

        out, done = self.out, FolderWrite()
        data = {}
        for rel, text in files.items():
            name = _safe_rel(rel)
            if name is None or name != rel or name == self.manifest:
                raise ValueError(f"not a plain relative file name: {rel!r}")
            path = check_inside(out, rel, option=self.option)
            if path.is_dir():
                raise GraceError(f"{self.option} {out}: {path} is a folder where this command writes a file; move "
                                 f"it, or give {self.option} another folder")
            for parent in list(PurePosixPath(rel).parents)[:-1]:
                if (out / parent).is_symlink() and not (out / parent).exists():
                    raise GraceError(f"{self.option} {out}: {out / parent} is a symbolic link to "
                                     f"{(out / parent).resolve()}, which does not exist; remove the link "
                                     f"(rm {out / parent}), or give {self.option} another folder")
                if (out / parent).exists() and not (out / parent).is_dir():
                    raise GraceError(f"{self.option} {out}: {out / parent} is a file where this command keeps a "
                                     f"folder; move it, or give {self.option} another folder")
            raw = text.encode("utf-8")
            data[rel] = (text, hashlib.sha256(raw).hexdigest())
        manifest = check_inside(out, self.manifest, option=self.option)
        owned, have_manifest = self.owned()
        out.mkdir(parents=True, exist_ok=True)
        if manifest.exists() and not have_manifest:
            done.backups.append(keep_backup(manifest))
            log.warning(f"{manifest} is not a manifest of {self.written_by}: kept as {done.backups[-1].name}")
        # first the list of every hash that is ours, old and new: an interrupted write leaves nothing unknown
        during = {rel: sorted(hashes) for rel, hashes in owned.items()}
        for rel, (_, digest) in data.items():
            during[rel] = sorted({*during.get(rel, []), digest})
        self._write_manifest(during, meta, writing=True)
        for rel, (text, digest) in data.items():
            path = out / rel
            if path.is_file():
                now = _sha256(path)
                if now == digest:
                    continue  # already these bytes
                if now not in owned.get(rel, ()):  # the user's file, or one the user edited since
                    done.backups.append(keep_backup(path))
                    log.warning(f"{path} is not as an earlier {self.written_by} wrote it (your file, or edited "
                                f"since): kept as {done.backups[-1].name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            done.written.append(path)
        for rel, hashes in owned.items():
            path = out / rel
            if rel in data or self._leaves(rel) or path.is_symlink() or not path.is_file():
                continue
            if _sha256(path) in hashes:
                path.unlink()
                done.removed.append(path)
            else:  # the user edited it since: kept, under the name of a backup
                bak = backup_path(path)
                os.replace(path, bak)
                done.backups.append(bak)
                log.warning(f"{path}: an earlier {self.written_by} wrote it and this one does not, but it was "
                            f"edited since: kept as {bak.name}")
        self._write_manifest({rel: digest for rel, (_, digest) in data.items()}, meta)
        return done

    def _write_manifest(self, files: Mapping[str, Any], meta: Mapping[str, Any] | None, *,
                        writing: bool = False) -> None:
        from harness.core.files import atomic_write_text

        body = {"schema_version": self.SCHEMA_VERSION, "written_by": self.written_by, **(meta or {}),
                "writing": writing, "files": dict(sorted(files.items()))}
        atomic_write_text(self.out / self.manifest, json.dumps(body, indent=1) + "\n")
