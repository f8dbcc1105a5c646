"""The gold workflows: ``grace gold generate`` (draft gold questions from a KB for a person to review) and
``grace annotations migrate`` (keep a gold set valid after its KB was curated)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotations.migrate import GoldMigration
from harness.workflows.calls import ModelCalls

if TYPE_CHECKING:
    from rich.console import Console

    from kb_builder.store import KB

__all__ = ["GoldDraft", "GoldMigration", "generate_gold", "migrate_gold"]


@dataclass
class GoldDraft:
    """A draft written (``result``: an ``annotations.generate.GenerateResult``; None after a dry run, which printed
    its estimate), and with ``redact_pii`` what was redacted (``redaction``) and where its counts went."""

    result: Any = None
    redaction: Any = None  # harness.privacy.redactor.RedactionRecord
    redaction_file: Path | None = None


def generate_gold(kb: str | Path | KB, model: str, out: str | Path, *, per_article: int = 3, refusals: int = 0, k: int = 10,
                  labeler: str | None = None, template: str | None = None, seed: int = 0, dry_run: bool = False,
                  force: bool = False, calls: ModelCalls | None = None, console: Console | None = None) -> GoldDraft:
    """Write ``per_article`` questions per article (and ``refusals`` must_refuse ones) with ``model``, each checked by
    ``labeler`` (default: ``model``) against its top-``k`` articles, into the draft CSV ``out``
    (``grace gold generate``). ``calls`` apply to both models. A dry run prints the estimate on ``console``."""
    from annotations.generate import generate_draft

    calls = calls or ModelCalls()
    if isinstance(kb, str | Path):
        from kb_builder.loader import load_kb

        kb = load_kb(kb)
    redactor = calls.redactor(console)
    result = generate_draft(kb, model, out, per_article=per_article, refusals=refusals, k=k, labeler=labeler,
                            dry_run=dry_run, concurrency=calls.concurrency, max_attempts=calls.max_attempts,
                            prices=calls.prices, read_cache=calls.read_cache, seed=seed, template=template,
                            console=console, options=calls.options, force=force, redactor=redactor)
    if result is None or redactor is None:
        return GoldDraft(result)
    from harness.privacy.redactor import write_record

    return GoldDraft(result, redactor.record(), write_record(out, redactor))


def migrate_gold(gold: str | Path, kb: str | Path, out: str | Path, *, suggestions: str | Path | None = None,
                 force: bool = False) -> GoldMigration:
    """Rewrite gold CSV ``gold`` for the curated KB ``kb`` into ``out`` (``grace annotations migrate``): labels of
    merged articles move to the surviving ID; labels of split articles are taken off for relabelling, with both
    parts suggested in ``suggestions`` (default: ``OUT.relabel.csv``, which ``grace annotate --suggestions`` reads).
    Returns a ``GoldMigration`` (``.moved``, ``.relabel``, ``.unknown``, ``.suggestions``)."""
    from annotations.migrate import migrate_gold as _migrate
    from annotations.migrate import suggestions_path
    from harness.core.outputs import check_output_file
    from kb_builder.loader import load_kb
    from kb_builder.store import kb_files

    gold, out = Path(gold), Path(out)
    sugg = Path(suggestions) if suggestions is not None else suggestions_path(out)
    inputs: dict[str, Path | list[Path]] = {"gold CSV": gold, "KB": kb_files(kb)}
    check_output_file(out, inputs, force=force)
    check_output_file(sugg, {**inputs, "new gold CSV": out}, force=force, option="--suggestions")
    return _migrate(gold, load_kb(kb), out, sugg)
