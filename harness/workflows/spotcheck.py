"""The spot-check workflows of ``grace spotcheck``: fact-check a run's answers, calibrate the judge, test the judge.

Each takes the judge as ``PROVIDER:MODEL`` (``baseline:lexical`` offline) and its
calls as one :class:`~harness.workflows.calls.ModelCalls`; what to check is a
:class:`~harness.spotcheck.pipeline.SpotcheckOptions`. The command line prints
what these return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.workflows.calls import ModelCalls

if TYPE_CHECKING:
    from rich.console import Console

    from harness.spotcheck.judge_calls import Judge
    from harness.spotcheck.pipeline import SpotcheckOptions

__all__ = ["MetaEval", "Spotcheck", "SpotcheckOptions", "calibrate_judge", "meta_eval_judge", "spotcheck_run"]


def __getattr__(name: str) -> Any:
    if name == "SpotcheckOptions":  # what to check, defined with the pipeline that reads it
        from harness.spotcheck.pipeline import SpotcheckOptions

        return SpotcheckOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Spotcheck:
    """A spot-check done (``result``: spotcheck.json's content) or, on a dry run, priced (``estimates``)."""

    judge: Judge
    result: dict[str, Any] | None = None
    estimates: list[Any] | None = None

    def failure(self) -> str | None:
        """Why the spot-check failed as a whole (the judge gave no usable verdict at all), or None."""
        spot = self.result
        if spot is None:
            return None
        asked = sum(v["n_verdicts"] + v["n_failed_calls"] + (v.get("n_extraction_failed") or 0)
                    for v in spot["models"].values())
        readable = sum(v["n_verdicts"] - v["n_unreadable"] for v in spot["models"].values())
        if asked and not readable:
            return (f"the judge {spot['judge']['name']} gave no usable verdict for any of the {asked} segment(s) it "
                    f"was asked about ({spot['judge_calls']['errors']} call(s) failed); run the same command again "
                    "to retry")
        return None


@dataclass
class MetaEval:
    """The judge on cases with known verdicts: ``result`` (per failure mode; ``result["quality"]`` unless skipped)."""

    judge: Judge
    result: dict[str, Any] = field(default_factory=dict)

    def failure(self) -> str | None:
        r = self.result
        if r["cases"] and r["unreadable"] == r["cases"]:
            return f"the judge {self.judge.spec.name} gave no readable verdict on any of the {r['cases']} cases"
        return None


def _judge(judge: str, template: str | None, calls: ModelCalls, mode: str = "segments",
               ready: bool = True) -> Judge:
    """The judge (see :func:`harness.runner.model_options.ready_model`), with the template ``template`` names;
    without one, none yet: :func:`spotcheck` takes ``mode``'s built-in one (``claims.v1``, ``judge.v1``) in the KB's
    language once it has read the KB (:meth:`Judge.in_language`)."""
    from harness.spotcheck.judge_calls import Judge, mode_template
    from harness.spotcheck.judge_prompt import make_judge as _make

    spec, provider = _make(judge, calls.options, calls.prices, ready=ready)
    return Judge(spec, provider, mode_template(mode, template) if template else None)


def _progress(console: Any) -> Callable[[str, int, int], None] | None:
    """One ``label: done/total judge calls`` line, rewritten in place, on a terminal console."""
    if console is None or not console.is_terminal:
        return None

    def show(label: str, done: int, total: int) -> None:
        console.file.write(f"\r{label}: {done}/{total} judge calls" + ("\n" if done == total else ""))
        console.file.flush()

    return show


def spotcheck_run(run: str | Path, judge: str, *, kb: str | Path | None = None, template: str | None = None,
              options: SpotcheckOptions | None = None, calls: ModelCalls | None = None, dry_run: bool = False,
              console: Console | None = None) -> Spotcheck:
    """Fact-check the correct-citation answers of a scored ``run`` with ``judge`` (``grace spotcheck run``).

    ``options`` say what is checked (sample, mode, scope, quality, ...); ``kb`` defaults to the one report.json
    names. Writes ``RUN/spotcheck.json`` and the review CSV; with ``dry_run`` calls nothing and returns the
    estimates. ``console`` (a Rich console) shows progress on a terminal.
    """
    from harness.spotcheck.pipeline import SpotcheckOptions, estimate_spotcheck, run_spotcheck

    options, calls = options or SpotcheckOptions(), calls or ModelCalls()
    made = _judge(judge, template, calls, options.mode, ready=not dry_run)
    calls.check()
    settings = calls.settings(progress=_progress(console), redactor=calls.redactor(console))
    kb_dir = Path(kb) if kb is not None else None
    if dry_run:
        return Spotcheck(made, estimates=estimate_spotcheck(Path(run), kb_dir, made, options, settings))
    return Spotcheck(made, result=run_spotcheck(Path(run), kb_dir, made, options, settings, console))


def calibrate_judge(human_csv: str | Path, judge_json: str | Path, *, console: Console | None = None) -> dict[str, Any]:
    """The judge's verdicts (``judge_json``: a spotcheck.json) against human labels (``human_csv``), written next
    to the spot-check (``grace spotcheck calibrate``): kappa, agreement, the disagreements."""
    from harness.core.outputs import check_output_file
    from harness.run_folder.run_dir import RunDir
    from harness.spotcheck.calibration import calibrate

    human_csv, judge_json = Path(human_csv), Path(judge_json)
    check_output_file(RunDir(judge_json.parent).calibration, {"human labels": human_csv, "judge verdicts": judge_json},
                      owned=True, option="the calibration file")
    return calibrate(human_csv, judge_json, console)


def meta_eval_judge(judge: str, *, template: str | None = None, mode: str = "claims", cases: str | Path | None = None,
                    quality_cases: str | Path | None = None, quality: bool = True, out: str | Path | None = None,
                    force: bool = False, calls: ModelCalls | None = None, console: Console | None = None,
                    citations: bool | None = None, citation_cases: str | Path | None = None) -> MetaEval:
    """Run ``judge`` on hand-written cases with known verdicts (``grace spotcheck meta-eval``): its pass rate per
    failure mode on the support cases; with ``quality``, on GroUSE's answer-quality cases; with ``citations``
    (default: in claims mode, or when ``citation_cases`` are given), its own / other / none labels on the
    multi-citation cases (``result["citations"]``, with kappa); written to ``out`` as JSON when given."""
    import json

    from harness.core.files import atomic_write_text
    from harness.core.outputs import check_output_file
    from harness.spotcheck.meta_eval import load_cases, run_meta_eval

    out, calls = (Path(out) if out is not None else None), calls or ModelCalls()
    if out is not None:
        check_output_file(out, {"cases file": cases, "quality cases file": quality_cases,
                                "citation cases file": citation_cases}, force=force)
    made = _judge(judge, template, calls, mode).in_language(mode, None)  # the cases are English
    settings = calls.settings(progress=_progress(console))
    result = run_meta_eval(made, load_cases(Path(cases) if cases is not None else None), settings)
    if quality:
        from harness.spotcheck.quality import load_quality_cases, load_quality_template, run_quality_meta_eval

        result["quality"] = run_quality_meta_eval(made, load_quality_template(), load_quality_cases(
            Path(quality_cases) if quality_cases is not None else None), settings)
    if citations if citations is not None else (mode == "claims" or citation_cases is not None):
        from harness.spotcheck.citation_support import load_citation_cases, run_citation_meta_eval
        from harness.spotcheck.claims import ClaimsTemplate, load_claims_template

        support = made.template if isinstance(made.template, ClaimsTemplate) else load_claims_template()
        result["citations"] = {"template": support.name, "template_hash": support.sha256, **run_citation_meta_eval(
            made, support, load_citation_cases(Path(citation_cases) if citation_cases is not None else None),
            settings)}
    if out is not None:
        atomic_write_text(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return MetaEval(made, result)
