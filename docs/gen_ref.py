"""Generate the file-format reference (``reference/files.md``) from the code's own typed models.

Each file grace reads or writes has one pydantic model (or dataclass) that its writer and its readers use.
This module renders each into a table of fields, types, defaults and descriptions, so the reference cannot
drift from the code. A description is the field's ``Field(description=...)`` when it has one, else the
comment on the field's line (or the comment lines just above it) in the class's source.

Used two ways:

- as a MkDocs hook (``hooks:`` in mkdocs.yml): ``on_files`` puts the page, rendered afresh, on the site;
- as a script: ``python docs/gen_ref.py`` prints the page (``--check`` exits 1 if a model cannot be found),
  ``--write`` writes both pages into docs/reference/, where they are committed so that links to them work on the
  code host too (tests/docs/test_docs.py fails when a committed page is behind the code).

It writes the Python API page too (``reference/python-api.md``): one mkdocstrings block per name of
``grace.__all__``, found where it is defined, so the page follows the code when a function moves.

A model is found by its class name (``FORMATS`` below), first in its usual module, then anywhere in grace's
packages, so moving a class to another module does not break the reference; renaming one does, loudly.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import io
import re
import sys
import textwrap
import tokenize
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "kb_builder", "annotations")
PAGE = "reference/files.md"
API_PAGE = "reference/python-api.md"


@dataclass(frozen=True)
class Format:
    path: str  # the file as a user sees it
    group: str
    model: str  # the class name
    module: str  # where it usually lives (searched first)
    about: str  # one sentence: who writes it, what one record is


FORMATS: tuple[Format, ...] = (
    Format("KB/articles.jsonl", "Knowledge base", "Article", "kb_builder.kb_records",
           "One line per article. Written by `grace kb build`; a hand-written file with `id`, `title`, `text` is a valid KB. "
           "An optional `audience` lists the groups that may see the article (permissions)."),
    Format("KB/manifest.json", "Knowledge base", "Manifest", "kb_builder.kb_records",
           "What the KB is and how it was built. Written by `grace kb build` and `grace kb index`."),
    Format("KB/curation.jsonl", "Knowledge base", "CurationEdit", "kb_builder.curation_records",
           "One line per curation action (retitle, new text, split, merge, mark distinct, undo), appended as it is "
           "taken. Written by `grace kb edit` and `grace kb curate`; `grace kb build` re-applies it after a rebuild."),
    Format("KB/curation_conflicts.jsonl", "Knowledge base", "CurationConflict", "kb_builder.curation_records",
           "One line per curation action the last `grace kb build` could not re-apply, because the text it was "
           "made on changed. Written by `grace kb build`; removed by a build with no conflicts."),
    Format("KB/curation_review.jsonl", "Knowledge base", "ChangeRequest", "harness.kb_curate.change_requests",
           "One line per change a team's curator proposed and per decision on it (the last line of a change is its "
           "state). Written by `grace kb curate --reviewers`; an approved change is applied to `curation.jsonl`."),
    Format("KB/curation_proposals.jsonl", "Knowledge base", "StoredProposal", "harness.kb_curate.proposal_store",
           "One line per model proposal `grace kb curate` was asked for and per decision on it (the last line of a "
           "proposal is its state), so an open proposal is back after a restart. Written by `grace kb curate`."),
    Format("GOLD.csv", "Gold set", "GoldQuestion", "kb_builder.gold",
           "One row per gold question. `expected_citations` holds article IDs separated by `;`; `must_refuse` is "
           "`true` or `false`; optional `groups` (the asking user's groups, separated by `;`: permissions) and "
           "`category` (accuracy per category) and `citations_needed` (`any`, the default: any one listed article "
           "answers; `all`: an answer must cite every one); extra columns are kept."),
    Format("SUBSET.draw.json", "Gold set", "DrawRecord", "kb_builder.gold_draw",
           "The random subset of questions drawn for humans to label, recorded so a prediction-powered score can "
           "check that the human labels are that draw. Written by `grace annotations sample` beside `SUBSET.csv`."),
    Format("TEAM/team.json", "Gold set", "TeamPlan", "annotations.team",
           "Who labels which questions in a team's labelling session, fixed at its first start. Written by "
           "`grace annotate --team` in its `--out` folder, beside `labels/NAME.csv` (one annotation file per person), "
           "`adjudications.csv` (the reviewer's decisions) and `gold.csv` (the team's gold)."),
    Format("RUN/run.json", "Run folder", "RunInfo", "harness.run_folder.run_records",
           "What the rows on file were asked with, per model. Written by `grace run`."),
    Format("RUN/responses.jsonl", "Run folder", "ResponseRecord", "harness.run_folder.run_records",
           "One line per call. Written by `grace run`; `grace score` accepts any file with at least "
           "`question_id`, `model` and `response`."),
    Format("RUN/batches.jsonl", "Run folder", "BatchEntry", "harness.run_folder.batches",
           "One line per batch sent to a provider's batch API (`grace run --batch`)."),
    Format("RUN/scores.jsonl", "Run folder", "ScoreLine", "harness.run_folder.scores",
           "One line per response, read strictly and leniently. Written by `grace score` and at the end of `grace run`."),
    Format("RUN/report.json", "Run folder", "Report", "harness.run_folder.report",
           "Every figure of the leaderboard. Written by `grace score`; read by `grace report`, `grace gate`, "
           "`grace view` and `grace.load_run`."),
    Format("RUN/exports.jsonl", "Run folder", "ExportRecord", "harness.run_folder.exports_log",
           "One line per export attempt, won or lost. Appended by `grace export` and `grace run --log-to`; "
           "`grace export RUN --retry` reads it to try the failed ones again."),
    Format("LOGS.jsonl", "Production logs", "AuditRecord", "harness.run_folder.audit_log",
           "One line per answer your deployed system gave, under grace's field names (other names through "
           "`--map` or `--mapping`). Written by your system; read by `grace import-logs`."),
    Format("RUN/malformed.jsonl", "Production logs", "LogProblem", "harness.run_folder.audit_log",
           "One line per log line that was not imported, with its line number and why. Written by `grace import-logs`."),
    Format("RUN/unmatched.jsonl", "Production logs", "UnmatchedRecord", "harness.run_folder.audit_log",
           "One line per log record no gold question matched, by ID or by text. Written by "
           "`grace import-logs --gold`."),
    Format("RUN/spotcheck.json", "Spot-check", "SpotcheckFile", "harness.spotcheck.spotcheck_records",
           "The spot-check's figures per model. Written by `grace spotcheck run`."),
    Format("RUN/spotcheck/judgements.jsonl", "Spot-check", "JudgementRecord", "harness.spotcheck.spotcheck_records",
           "One line per judged segment or claim, appended as the judge answers (an interrupted spot-check resumes)."),
    Format("RUN/spotcheck/citation_support.jsonl", "Spot-check", "CitationSentenceRecord",
           "harness.spotcheck.spotcheck_records",
           "One line per cited sentence of a model that cites several sources: own, other or none, each citation's "
           "status and each cited article's verdict. Written by `grace spotcheck run`."),
    Format("RUN/calibration.json", "Spot-check", "CalibrationFile", "harness.spotcheck.spotcheck_records",
           "The judge against human labels. Written by `grace spotcheck calibrate`."),
    Format("RUN/spotcheck_team/review_team.json", "Spot-check", "ReviewTeamPlan", "annotations.review_team",
           "Who reviews a spot-check together and who decides their disagreements. Written by `grace annotations "
           "review --team` in its team folder, beside `labels/NAME.csv` (each person's verdicts), `adjudications.csv` "
           "and `human.csv` (the team's labels; all in the review CSV's columns)."),
    Format("compare.json", "Comparisons", "Comparison", "harness.scoring.run_comparison",
           "Two runs question by question. Written by `grace compare --json FILE`."),
    Format("board.json", "Comparisons", "Board", "harness.scoring.run_board",
           "One leaderboard across run folders of one gold set: a row per model of each run, named by what sets "
           "its run apart, with a paired test between every two rows. Written by `grace report RUN_A RUN_B "
           "--out BOARD.json`; `grace.combine_runs()` returns it."),
    Format("trend.json", "Comparisons", "Trend", "harness.reports.trend",
           "Each model's accuracy across the runs of one gold set, with each significant change. Written by "
           "`grace report --trend RUNS --format json`; `grace.trend()` returns it."),
)


# -- finding the classes ---------------------------------------------------------------------------


def find_class(fmt: Format) -> type:
    """The class named ``fmt.model``: in ``fmt.module`` if it is still there, else wherever grace defines it."""
    candidates = [fmt.module]
    pattern = re.compile(rf"^class {re.escape(fmt.model)}\b", re.M)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if pattern.search(path.read_text(encoding="utf-8")):
                candidates.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    for module in dict.fromkeys(candidates):
        try:
            cls = getattr(importlib.import_module(module), fmt.model, None)
        except ImportError:
            continue
        if isinstance(cls, type) and getattr(cls, "__module__", "") == module:
            return cls
    raise LookupError(f"{fmt.path}: no class {fmt.model} in {', '.join(PACKAGES)}; update FORMATS in docs/gen_ref.py")


def _is_model(kind: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(kind, type) and (issubclass(kind, BaseModel) or dataclasses.is_dataclass(kind))


def nested_models(cls: type) -> dict[str, type]:
    """Every model reachable from ``cls``'s fields, by class name, in order of first use."""
    found: dict[str, type] = {}

    def walk(kind: Any) -> None:
        if _is_model(kind):
            if kind.__name__ in found:
                return
            found[kind.__name__] = kind
            for hint in _hints(kind).values():
                walk(hint)
        for arg in typing.get_args(kind):
            walk(arg)

    walk(cls)
    return found


def _hints(cls: type) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=False)
    except Exception:  # noqa: BLE001 - a forward reference this page cannot resolve: fall back to no nesting
        return {}
    return {name: hints[name] for name, _ in _field_pairs(cls) if name in hints}


def _field_pairs(cls: type) -> list[tuple[str, str]]:
    """(attribute name, key in the file) per field, in declaration order; a pydantic alias is the file's key."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.name) for f in dataclasses.fields(cls)]
    return [(name, field.alias or name) for name, field in cls.model_fields.items() if not field.exclude]


def _field_names(cls: type) -> list[str]:
    """The keys as the file spells them."""
    return [key for _, key in _field_pairs(cls)]


# -- descriptions from the source ------------------------------------------------------------------


def source_comments(cls: type) -> dict[str, str]:
    """Field name -> the comment on its line, or the comment lines just above it, in ``cls`` or the grace class
    that declares the field (a dataclass inherits its base's fields, and their comments are in the base's source).

    A model made at run time (pydantic's ``create_model``) has no source: its comments are those of the model it
    copies its fields from (:func:`_made_from`), so a figure is described once, where it is declared."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is cls or klass.__module__.split(".")[0] in PACKAGES:
            own = _own_comments(klass)
            if own is None and klass is cls and (origin := _made_from(cls)) is not None:
                own = source_comments(origin)
            out.update(own or {})
    return out


def _made_from(cls: type) -> type | None:
    """The first model of ``cls``'s module whose fields include all of ``cls``'s: what a class made at run time
    was made from (``report.SpotcheckModel`` from ``ModelSpot``)."""
    mine = {attr for attr, _ in _field_pairs(cls)}
    for value in vars(sys.modules[cls.__module__]).values():
        if value is not cls and _is_model(value) and mine <= {attr for attr, _ in _field_pairs(value)}:
            return value
    return None


def _own_comments(cls: type) -> dict[str, str] | None:
    """None when the class has no source to read."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return None
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    lines = source.splitlines()
    out: dict[str, str] = {}
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        text = comments.get(node.end_lineno or node.lineno, "")
        if not text:
            above, line = [], node.lineno - 1
            while line >= 1 and lines[line - 1].strip().startswith("#"):
                above.insert(0, comments.get(line, ""))
                line -= 1
            text = " ".join(above)
        if text and not text.lower().startswith(("noqa", "type:")):
            out[node.target.id] = text
    return out


# -- types from the JSON schema --------------------------------------------------------------------


def schema_of(cls: type) -> dict[str, Any]:
    from pydantic import BaseModel, TypeAdapter

    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return cls.model_json_schema()
    return TypeAdapter(cls).json_schema()


def type_text(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "const" in prop:
        return f'`"{prop["const"]}"`' if isinstance(prop["const"], str) else f"`{prop['const']}`"
    if "enum" in prop:
        return " | ".join(f'`"{v}"`' if isinstance(v, str) else f"`{v}`" for v in prop["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in prop:
            return " | ".join(dict.fromkeys(type_text(p) for p in prop[key]))
    kind = prop.get("type")
    if kind == "array":
        if "prefixItems" in prop:
            return "[" + ", ".join(type_text(p) for p in prop["prefixItems"]) + "]"
        return f"list[{type_text(prop.get('items', {}))}]"
    if kind == "object":
        extra = prop.get("additionalProperties")
        return f"dict[str, {type_text(extra)}]" if isinstance(extra, dict) and extra else "object"
    if isinstance(kind, list):
        return " | ".join(kind)
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "null"}.get(kind, "any")


def _anchor(name: str) -> str:
    return name.lower()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _has_factory(cls: type, name: str) -> bool:
    if dataclasses.is_dataclass(cls):
        return any(f.name == name and f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(cls))
    return cls.model_fields[name].default_factory is not None


def _default(prop: dict[str, Any], required: bool, factory: bool = False) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return "empty" if factory else ""
    value = prop["default"]
    if value is None:
        return "null"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`" if not isinstance(value, (list, dict)) or len(str(value)) < 40 else "…"


def field_rows(cls: type, schema: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(key in the file, type, default, description) of each field the model's table shows, in file order."""
    comments = source_comments(cls)
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    rows = []
    for attr, key in _field_pairs(cls):
        if key not in props:
            continue
        prop = props[key]
        about = (prop.get("description") or comments.get(attr, "")).replace("``", "`")
        rows.append((key, type_text(prop), _default(prop, key in required, _has_factory(cls, attr)), about))
    return rows


def model_table(cls: type, schema: dict[str, Any]) -> list[str]:
    rows = ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    rows += [f"| `{key}` | {_cell(kind)} | {default} | {_cell(about)} |"
             for key, kind, default, about in field_rows(cls, schema)]
    extra = getattr(cls, "model_config", {}).get("extra") if not dataclasses.is_dataclass(cls) else None
    note = {"allow": "Keys this grace does not know are kept.",
            "forbid": "A key this grace does not know is refused."}.get(extra or "", "")
    return rows + ([f"\n{note}"] if note else [])


def _doc(cls: type) -> str:
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")  # its own docstring, never BaseModel's
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return ""  # the dataclass's generated signature, not a description
    return doc.replace(":class:", "").replace(":func:", "").replace("``", "`")


def section_models(cls: type, seen: set[str]) -> list[tuple[type, dict[str, Any]]]:
    """The tables of ``cls``'s file: ``cls`` and the models its fields use, each with its JSON schema, in order of
    first use. A model in ``seen`` (already shown under an earlier file) is left out; the others are added to it."""
    schema = schema_of(cls)
    defs = schema.get("$defs", {})
    out = []
    for name, kind in nested_models(cls).items():
        if name in seen:
            continue
        seen.add(name)
        sub = schema if kind is cls else defs.get(name)
        if sub is not None:
            out.append((kind, sub))
    return out


def render() -> str:
    out = ["# File formats", "",
           "Every file grace reads or writes, field by field. This page is generated from the typed models the",
           "code itself reads and writes them with (`docs/gen_ref.py`), so it is always the current version.",
           "For the rules around the files (ordering, resume, what each count means), see",
           "[Run-folder files in detail](../report-schema.md). What `grace export` writes for other tools",
           "(`RUN/results.parquet`, Inspect logs, MLflow and W&B runs) is in those tools' own formats: see",
           "[Send results to Inspect, MLflow, W&B or a data frame](../how-to/export-results.md).", ""]
    out += ["| file | model | what one record is |", "| --- | --- | --- |"]
    found = [(fmt, find_class(fmt)) for fmt in FORMATS]
    out += [f"| `{fmt.path}` | [{cls.__name__}](#{_anchor(cls.__name__)}) | {_cell(fmt.about)} |" for fmt, cls in found]
    seen: set[str] = set()
    group = ""
    for fmt, cls in found:
        if fmt.group != group:
            group = fmt.group
            out += ["", f"## {group}"]
        out += ["", f"### `{fmt.path}`", "", fmt.about, ""]
        for kind, sub in section_models(cls, seen):
            name, where = kind.__name__, f"`{kind.__module__}.{kind.__qualname__}`"
            # the class name alone: its natural anchor (#curationedit) is the same on the site and the code host
            out += ["", f"#### {name}", "", f"Defined in {where}.", ""]
            doc = _doc(kind)
            if doc:
                out += [doc, ""]
            out += model_table(kind, sub)
    return "\n".join(out) + "\n"


# -- the Python API page ---------------------------------------------------------------------------


def api_objects() -> list[tuple[str, str]]:
    """(public name, where it is defined) for every name of ``import grace``, in ``grace.__all__``'s order."""
    import grace

    out = []
    for name in grace.__all__:
        obj = getattr(grace, name)
        if not hasattr(obj, "__qualname__"):  # __version__
            continue
        out.append((name, f"{obj.__module__}.{obj.__qualname__}"))
    return out


def render_api() -> str:
    """The Python API page: one mkdocstrings block per public name, each rendered from its docstring."""
    out = ["# Python API reference", "",
           "`import grace` gives every name below. Each `grace` command is",
           "one call of this API;",
           "[Use grace from Python](../how-to/python-api.md) shows them at work. This page is generated from",
           "`grace.__all__` and each name's docstring.", ""]
    out += ["| name | defined in |", "| --- | --- |"]
    # names, not links: the anchors are mkdocstrings' (the site's contents list them), which the code host lacks
    out += [f"| `grace.{name}` | `{path.rsplit('.', 1)[0]}` |" for name, path in api_objects()]
    for _, path in api_objects():
        out += ["", f"::: {path}", "    options:", "      show_root_full_path: false", "      heading_level: 2",
                "      filters: [\"!^_\"]"]
    return "\n".join(out) + "\n"


# -- the MkDocs hook -------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for path, content in ((PAGE, render()), (API_PAGE, render_api())):
        committed = files.get_file_from_path(path)
        if committed is not None:  # the committed copy, for the code host; the site gets the page as the code is now
            files.remove(committed)
        files.append(File.generated(config, path, content=content))
    return files


def write_pages() -> None:
    """``--write``: the committed copies of the generated pages, brought up to the code."""
    for path, content in ((PAGE, render()), (API_PAGE, render_api())):
        (ROOT / "docs" / path).write_text(content, encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    try:
        page = render()
    except LookupError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    if "--write" in sys.argv:
        write_pages()
    elif "--check" not in sys.argv:
        sys.stdout.write(page)
