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
  under a name the command writes there.

Files a command owns inside its run folder (``scores.jsonl``, ``report.html``)
are not named here: rewriting them is the command's job.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

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
