"""The trend workflows of ``grace report --trend``: a model's accuracy across the runs of one gold set, as figures,
an SVG chart, a PNG (the ``png`` extra) or JSON."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: numpy and the scorer are not every command's to load
    from harness.reports.trend import Trend, TrendSource
    from harness.scoring.run_comparison import RunHits

__all__ = ["Trend", "trend", "write_trend"]

FORMATS = ("svg", "png", "json")


def trend(paths: Sequence[str | Path], *, gold: str | None = None, metric: str = "accuracy",
          category: str | None = None, models: Sequence[str] = ()) -> Trend:
    """Each model's accuracy (``metric="strict_accuracy"``: strict accuracy) with its 95% CI across the runs under
    ``paths`` (run folders, or folders holding them), in time order, on every question or on one gold ``category``.

    Runs are grouped by the gold set they were scored against; the trend is of ``gold`` (a gold hash or its
    prefix), by default the set with the most runs, and names the runs it leaves out. Each point says whether the
    model's change since its previous run is significant by ``grace compare``'s rule (McNemar exact, p < 0.05).
    """
    from harness.reports.trend import build_trend

    return build_trend(_sources(paths), gold=gold, metric=metric, category=category,
                       models=list(models) or None)


def write_trend(paths: Sequence[str | Path], out: str | Path | None = None, *, format: str | None = None,
                gold: str | None = None, metric: str = "accuracy", category: str | None = None,
                models: Sequence[str] = ()) -> tuple[Path, Trend]:
    """Write the trend of the runs under ``paths`` as ``format`` (svg, png or json; default: ``out``'s extension,
    else svg) to ``out`` (default ``trend.FORMAT`` in the first of ``paths``); returns the file and the trend.

    PNG needs the ``png`` extra (``pip install 'grace-eval[png]'``): without it a ``GraceError`` says so, and
    SVG still works."""
    import os

    from harness.core.errors import GraceError
    from harness.core.files import disk_error, temp_path_for
    from harness.reports.trend import svg_to_png, trend_chart

    target = Path(out) if out is not None else None
    ext = target.suffix.lower().lstrip(".") if target is not None else ""
    fmt = (format or (ext if ext in FORMATS else "svg")).lower()
    if fmt not in FORMATS:
        raise GraceError(f"--format {fmt}: a trend is written as {', '.join(FORMATS)}")
    if target is None:
        target = Path(paths[0] if paths else ".") / f"trend.{fmt}"
    elif ext in FORMATS and ext != fmt:
        raise GraceError(f"--out {target} ends in .{ext} but --format is {fmt}: give one of them, or make them agree")
    if target.is_dir():
        raise GraceError(f"--out {target} is a folder; give a file name, e.g. {target / ('trend.' + fmt)}")
    result = trend(paths, gold=gold, metric=metric, category=category, models=models)
    if fmt == "json":
        data = (result.model_dump_json(indent=1) + "\n").encode("utf-8")
    else:
        svg = trend_chart(result)
        if svg is None:
            raise GraceError("no model has a figure in these runs: nothing to draw")
        data = svg_to_png(svg) if fmt == "png" else svg.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path_for(target)
    try:  # written whole, then renamed: a chart is never half there
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise disk_error(target, exc) from None
    return target, result


def _sources(paths: Sequence[str | Path]) -> list[TrendSource]:
    """The runs under ``paths``, as the trend reads them: reports now, scores and gold categories when needed."""
    from harness.core.errors import GraceError
    from harness.reports.trend import TrendSource
    from harness.run_folder.run_dir import RunDir
    from harness.viewer.runs import find_runs, run_ids

    found = find_runs([Path(p) for p in paths])
    out = []
    for rid, path in zip(run_ids(found), found, strict=True):
        folder = RunDir(path)
        report, damaged = None, None
        if folder.report.exists():
            try:
                report = folder.read_report()
            except GraceError as exc:  # left out with its problem named; the other runs still make the trend
                damaged = str(exc)
        info = folder.read_run_info()
        when = (info.started_at if info else None) or (report.created_at if report else None)
        out.append(TrendSource(rid, path, report, when, _hits_reader(path), _categories_reader(path, report),
                               damaged))
    return out


def _hits_reader(path: Path) -> Callable[[bool], RunHits | None]:
    def read(strict: bool) -> RunHits | None:
        from harness.scoring.run_comparison import read_hits

        return read_hits(path, strict=strict) if (path / "scores.jsonl").exists() else None

    return read


def _categories_reader(path: Path, report: Any) -> Callable[[], dict[str, str]]:
    def read() -> dict[str, str]:
        from harness.core.errors import GraceError
        from harness.viewer.build import recorded_path
        from kb_builder.gold import read_gold

        gold = recorded_path(report.gold.path if report else None, path)
        if gold is None or gold.is_dir():
            raise GraceError(f"{path}: its gold file ({report.gold.path if report else '?'}) is not found, and a "
                             "category's trend needs each question's category; run from the folder the run was "
                             "started in")
        return {g.question_id: g.category for g in read_gold(gold) if g.category}

    return read


def __getattr__(name: str) -> Any:
    if name == "Trend":
        from harness.reports.trend import Trend

        return Trend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
