"""``grace export RUN --to inspect``: one inspect_ai eval log per model, built and written by inspect_ai itself.

inspect_ai's eval log is the results format other tools read (``inspect view``, lighteval, viewers that bundle it),
so a grace run is handed over in it, built from inspect_ai's own classes (``EvalLog``, ``EvalSample``, ``Score``,
``ModelOutput``) and written by its own ``write_eval_log``: never JSON of ours shaped like theirs, which would drift
from the format the day inspect_ai changes it.

What maps to what: a model of the run is one log (task ``grace/<gold set>``); a question asked is an
``EvalSample`` (id = question_id, epoch = repeat + 1, input = the question, target = the gold article IDs or
``REFUSE``, messages = the prompt the model was shown, retrieved articles included, then its answer); the outcome is
the ``citation`` score (``C`` for correct and correct_refusal, ``I`` for every other outcome, as grace counts them),
with the cited and gold IDs in its metadata; a failed call is also the sample's error, its kind and message (inspect
view marks it). A system is shown what it received, never grace's prompt in its place: an ``http:`` system the
request grace sent, a ``python:`` system the request object it was called with, an imported log the question
(:func:`_asked`); what a system retrieved for itself is the sample's ``system_retrieved`` metadata.

The logs of one export are written to temporary files and renamed into place only once all are written, so a
failed export leaves no partial log; a file name is kept short whatever the model's name (:func:`file_name`). The
log's results are report.json's figures copied, never recomputed, so inspect view shows grace's accuracy and CI to
the digit.

Model output is hostile: every log says ``ViewerConfig(trust_content=False)``, so inspect view shows answers as plain
text (no markdown, links or media), whatever they hold.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.core.files import temp_path_for
from harness.core.hashing import json_hash, text_hash
from harness.exports import Exported, ExportFailed
from harness.exports.tracking import check_options, gold_set_name, run_params
from harness.run_folder.exports_log import masked
from harness.run_folder.report import Report
from harness.run_folder.run_dir import RunDir
from harness.run_folder.run_records import ModelEntry, RunInfo
from harness.scoring.outcomes import HITS, LABEL_FREE, REFUSALS, REFUSE
from harness.viewer.question import why
from kb_builder.gold import MUST_REFUSE

SCORER = "citation"
INSTALL = "pip install 'grace-eval[inspect]'"
OPTIONS = {"format": "eval (inspect's default, what inspect view lists) or json"}
# report.json's figures a log's results carry, as (metric name, the ModelReport.record() key)
FIGURES = [("accuracy", "accuracy"), ("ci95_low", "ci_low"), ("ci95_high", "ci_high"),
           ("strict_accuracy", "strict_accuracy"), ("refusal_calibration", "refusal_calibration"),
           ("invalid_citation_rate", "invalid_citation_rate"), ("unshown_citation_rate", "unshown_citation_rate"),
           ("error_count", "error_count"), ("cost_usd", "cost_total_usd"),
           ("cost_per_1k_questions_usd", "cost_per_1k_questions_usd"), ("latency_p50_ms", "latency_p50_ms")]
SPOT_FIGURES = ("hallucination_rate", "groundedness")


def export(run: RunDir, dest: str | None, options: dict[str, Any]) -> Exported:
    """Write ``<dest>/<created>_grace-<gold>_<model>_<id>.eval`` for each model of the scored run ``run``.

    ``dest`` defaults to ``RUN/inspect``. File names are stable for a run (the run's start time, the task, the
    model, an ID from the run and model), so exporting again replaces the logs instead of adding copies, and they
    follow inspect's own pattern, so ``inspect view`` lists and sorts them like its own logs.
    """
    check_options(options, OPTIONS, "inspect")
    fmt = str(options.get("format", "eval"))
    if fmt not in ("eval", "json"):
        raise GraceError(f"inspect export: format {fmt!r}: use {OPTIONS['format']}")
    log_api = _inspect_log()
    from harness.exports.table import question_table, responses_file, table_notes

    report = run.read_report()
    info = run.read_run_info()
    table = question_table(run)
    notes = table_notes(table)
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        rows.setdefault(row["model"], []).append(row)
    sent = _as_sent(responses_file(run, report))
    articles, language = _articles(info.kb.path if info else report.kb.path, info.kb.kb_hash if info else report.kb.hash,
                                   notes)
    prompt = _prompt(info, notes)
    if info is not None and info.redaction is not None:
        notes.append("the run redacted personal data from its prompts (--redact-pii): the samples show the articles "
                     "and questions unredacted")
    out = Path(dest) if dest else run.path / "inspect"
    exported = Exported(target="inspect", location=str(out), notes=notes)
    models = [m.model for m in report.ranked()] + [m for m in report.failed_models if m not in report.models]
    written: list[tuple[Path, Path]] = []  # (temp file, its final name): renamed only once every log is written
    try:
        out.mkdir(parents=True, exist_ok=True)
        for model in models + sorted(set(rows) - set(models)):
            entry = next((m for m in info.models if m.name == model), None) if info else None
            asked = _asked(entry, info, prompt, articles, language, notes)
            log = eval_log(model, rows.get(model, []), report, info, articles, asked, sent)
            path = out / f"{file_name(log)}.{fmt}"
            written.append((temp_path_for(path), path))
            log_api.write_eval_log(log, str(written[-1][0]), format=fmt)
            exported.models += 1
            exported.rows += len(log.samples or [])
            exported.ids[model] = str(path)
        placed: list[Path] = []  # logs this export put where none was: taken back if another cannot be placed
        try:
            for tmp, path in written:
                new = not path.exists()
                os.replace(tmp, path)
                placed += [path] if new else []
        except OSError:
            for path in placed:
                path.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ExportFailed(f"{out}: cannot write the Inspect logs ({exc.strerror or exc}); none was written, so give "
                           "another --dest, or free the disk, and export again") from None
    finally:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
    notes.append(f"open them with: inspect view --log-dir {out}")
    exported.notes = list(dict.fromkeys(notes))
    return exported


def _inspect_log() -> Any:
    try:
        import inspect_ai.log as log_api
    except ImportError:
        raise GraceError(f"exporting to inspect needs inspect_ai, which is not installed: {INSTALL}") from None
    return log_api


def eval_log(model: str, rows: list[dict[str, Any]], report: Report, info: RunInfo | None,
             articles: dict[str, tuple[str, str]], asked: Any, sent: dict[tuple[str, str, int], AsSent]) -> Any:
    """One model's ``EvalLog``: its spec (task, model, dataset, the run's settings), a sample per question and
    repeat, report.json's figures as the results; status ``error`` for a model whose every call failed.

    ``asked(question, question_id, repeat, shown IDs, row as sent)`` gives what the model or system received; ``sent`` holds each
    response row's own record of it (:func:`_as_sent`)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalError, EvalLog, EvalSpec, EvalStats, HeadlineMetric
    from inspect_ai.model import GenerateConfig, ModelUsage
    from inspect_ai.viewer import ViewerConfig

    from harness.core.version import __version__

    entry = next((m for m in info.models if m.name == model), None) if info else None
    name = f"{entry.provider}/{entry.model}" if entry and model == f"{entry.provider}:{entry.model}" else model
    params = run_params(report, info)
    settings = {k: params.get(k) for k in ("k", "template", "retriever", "output_mode", "repeats")}
    created = info.started_at if info else report.created_at
    run_id = json_hash([created, report.gold.hash, report.kb.hash], 22)
    task_id = json_hash([run_id, model], 22)
    generation = dict(entry.params) if entry else {}
    config = GenerateConfig(**{k: v for k, v in generation.items() if k in GenerateConfig.model_fields})
    repeats = info.config.repeats if info else max([m.repeats for m in report.models.values()] or [1])
    samples = [_sample(row, name, articles, asked, sent.get((model, row["question_id"], int(row["repeat"]))))
               for row in rows]
    usage = ModelUsage()
    for s in samples:
        usage = usage + s.model_usage.get(name, ModelUsage())
    failed = report.failed_models.get(model)
    spec = EvalSpec(
        eval_id=task_id, run_id=run_id, created=created, task=f"grace/{gold_set_name(report)}", task_id=task_id,
        task_version=report.gold.hash, task_args=settings,
        dataset=EvalDataset(name=gold_set_name(report), location=report.gold.path, samples=report.gold.n_questions,
                            sample_ids=list(dict.fromkeys(r["question_id"] for r in rows))),
        model=name, model_generate_config=config, model_base_url=entry.endpoint if entry else None,
        model_args={"grace_model": model, **({"provider": entry.provider, "model": entry.model} if entry else {})},
        config=EvalConfig(epochs=repeats, epochs_reducer=["mean"] if repeats > 1 else None),
        packages={"grace": __version__},
        metadata={"grace": {**params, "model": model, "report_created_at": report.created_at}},
        viewer=ViewerConfig(trust_content=False),  # model output is hostile: inspect view shows it as plain text
        headline_metric=HeadlineMetric(scorer=SCORER, metric="accuracy"),
    )
    return EvalLog(
        status="error" if failed else "success", eval=spec, plan=_plan(settings, params, generation, config),
        results=_results(report, model, len(samples)),
        stats=EvalStats(started_at=created, completed_at=(info.finished_at if info else None) or report.created_at,
                        model_usage={name: usage} if usage.total_tokens else {}),
        error=EvalError(message=f"{model}: {failed.reason}", traceback="", traceback_ansi="") if failed else None,
        samples=samples,
    )


def _plan(settings: dict[str, Any], params: dict[str, Any], generation: dict[str, Any], config: Any) -> Any:
    """grace's pipeline as inspect's plan (its Task tab): retrieve k articles, then generate with the template."""
    from inspect_ai.log import EvalPlan, EvalPlanStep

    retrieve = {k: params.get(k) for k in ("retriever", "rerank", "k", "kb_path", "kb_hash") if k in params}
    generate = {k: params.get(k) for k in ("template", "template_hash", "output_mode") if k in params}
    return EvalPlan(name="grace", steps=[EvalPlanStep(solver="grace/retrieve", params=retrieve),
                                         EvalPlanStep(solver="grace/generate", params={**generate, **generation})],
                    config=config)


def _results(report: Report, model: str, total: int) -> Any:
    """report.json's figures for the model, as the ``citation`` score's metrics: copied, so they match exactly."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    m = report.models.get(model)
    if m is None:
        return None
    record = m.record()
    figures: dict[str, Any] = {metric: record.get(key) for metric, key in FIGURES}
    if m.citations is not None:  # a model read as references: its citation figures too (a GRACE model's log as it was)
        figures.update({k: v for k, v in record.items() if k.startswith("citation_") or k == "cit_correct"})
    spot = report.spotcheck.models.get(model) if report.spotcheck else None
    figures.update({f: getattr(spot, f, None) for f in SPOT_FIGURES} if spot is not None else {})
    metrics = {k: EvalMetric(name=k, value=v) for k, v in figures.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    return EvalResults(
        total_samples=total, completed_samples=total - m.error_count,
        scores=[EvalScore(name=SCORER, scorer=SCORER, scored_samples=total, unscored_samples=0, metrics=metrics,
                          metadata={"source": "grace report.json", "rank": m.rank,
                                    "significance_group": m.significance_group, "outcomes": m.outcomes})],
        metadata={"leaderboard": report.leaderboard},
    )


def _sample(row: dict[str, Any], model: str, articles: dict[str, tuple[str, str]], asked: Any,
            sent: AsSent | None) -> Any:
    """One question asked once: what the model or system received and its answer as a chat, the outcome as the
    ``citation`` score, a failed call's kind and message as the sample's error."""
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, Score

    outcome = row["outcome"]
    error = (sent.error if sent is not None and sent.error is not None else row.get("error"))
    cited, gold, judged = list(row["cited_ids"] or []), list(row["gold_ids"] or []), list(row["retrieved_ids"] or [])
    # what grace showed (the response row's own list); what the scorer judged against may be the system's retrieval
    shown = sent.shown if sent is not None and sent.shown is not None else judged
    system = sent.system if sent is not None else None
    question = row.get("question") or f"(question {row['question_id']}: its text is not known, see the notes)"
    refused = outcome in REFUSALS
    seconds = row["latency_ms"] / 1000 if row.get("latency_ms") is not None else None
    tin, tout = row.get("input_tokens"), row.get("output_tokens")
    usage = None if tin is None and tout is None else ModelUsage(
        input_tokens=tin or 0, output_tokens=tout or 0, total_tokens=(tin or 0) + (tout or 0),
        total_cost=row.get("cost_usd"))
    given, messages = asked(question, row["question_id"], int(row["repeat"]), shown, sent)
    output = ModelOutput(model=model, usage=usage, time=seconds)
    if error is None:  # a failed call has no answer: no assistant turn, and the sample's error says why
        reply = ChatMessageAssistant(content=row.get("response") or "", model=model, source="generate")
        messages.append(reply)
        output = ModelOutput(model=model, choices=[ChatCompletionChoice(
            message=reply, stop_reason="max_tokens" if row.get("truncated") else "stop")], usage=usage, time=seconds)
    ids = {"cited_ids": cited, "gold_ids": gold, "outcome": outcome, "strict_outcome": row.get("strict_outcome"),
           "gold_rank": row.get("gold_rank")}
    spot = {k: v for k, v in row.items() if k.startswith("spot_") and v is not None}
    value = CORRECT if outcome in HITS else NOANSWER if outcome in LABEL_FREE else INCORRECT
    because = why(outcome, cited, refused, bool(row.get(MUST_REFUSE)), gold, judged, error)
    titled = [{"rank": n, "id": i, "title": articles.get(i, ("",))[0]} for n, i in enumerate(shown, 1)]
    own = {"system_retrieved": [{"rank": n, "id": i, "title": articles.get(i, ("",))[0]}
                                for n, i in enumerate(system, 1)]} if system is not None else {}
    return EvalSample(
        id=row["question_id"], epoch=int(row["repeat"]) + 1, input=given,
        target=[REFUSE] if row.get(MUST_REFUSE) else gold, messages=messages, output=output,
        scores={SCORER: Score(value=value, answer=", ".join(cited) or (REFUSE if refused else ""),
                              explanation=f"{outcome}: {because}", metadata={**ids, **spot})},
        metadata={**ids, "category": row.get("category"), MUST_REFUSE: row.get(MUST_REFUSE), "retrieved": titled,
                  **own, "cached": row.get("cached"), "truncated": row.get("truncated"),
                  "cost_usd": row.get("cost_usd")},
        model_usage={model: usage} if usage is not None else {}, total_time=seconds, working_time=seconds,
        uuid=json_hash([model, row["question_id"], row["repeat"], row.get("response")], 22),
        error=EvalError(message=f"the call failed: {error_text(error)}", traceback=because, traceback_ansi=because)
        if error is not None else None,
    )


@dataclass
class AsSent:
    """What a response row says was sent and came back, beyond the question table: the articles grace showed
    (``shown``), what a system retrieved for itself (``system``), the failed call's error (kind and message)."""

    shown: list[str] | None
    scores: list[float]
    system: list[str] | None
    error: Any


def _as_sent(path: Path) -> dict[tuple[str, str, int], AsSent]:
    """(model, question ID, repeat) -> the row's :class:`AsSent`, the last row of each (as the scorer keeps it)."""
    from harness.run_folder.responses import iter_response_lines

    out: dict[tuple[str, str, int], AsSent] = {}
    for row in iter_response_lines(path, hint="; fix the line, then export again"):
        try:
            key = (str(row["model"]).strip(), str(row["question_id"]).strip(), int(row.get("repeat") or 0))
        except (KeyError, TypeError, ValueError):
            continue  # the question table refuses such a row, with its line
        error = row.get("error")
        scores = row.get("retrieval_scores")
        out[key] = AsSent(shown=_id_list(row.get("retrieved_ids")),
                          scores=[float(x) for x in scores if isinstance(x, int | float)] if isinstance(scores, list)
                          else [],
                          system=_id_list(row.get("system_retrieved")),
                          error=error if error not in (None, False) else None)
    return out


def _id_list(value: Any) -> list[str] | None:
    return [str(i) for i in value] if isinstance(value, list) else None


def error_text(error: Any) -> str:
    """A failed call as ``kind: message`` (an imported log's error is its message alone); secrets of a URI masked."""
    if isinstance(error, dict):
        kind, message = str(error.get("kind") or "error"), str(error.get("message") or "")
        return masked(f"{kind}: {message}" if message else kind) or kind
    return masked(str(error)) or "error"


def _articles(path: str, kb_hash: str, notes: list[str]) -> tuple[dict[str, tuple[str, str]], str]:
    """Article ID -> (title, text) from the run's KB, and its language; none (the logs show IDs only, and a note
    says so) when the KB is no longer where the run found it."""
    from kb_builder.loader import load_kb

    try:
        kb = load_kb(path, write_missing=False)
    except (GraceError, OSError) as exc:
        notes.append(f"KB not readable ({exc}): the samples show the retrieved articles' IDs only")
        return {}, "en"
    if kb.kb_hash != kb_hash:
        notes.append(f"KB {path} changed since the run (hash {kb.kb_hash}, the run's {kb_hash}): the samples show "
                     "today's article titles and texts, not necessarily what the model was shown")
    return {a.id: (a.title, a.text) for a in kb.articles}, kb.manifest.language or "en"


def _prompt(info: RunInfo | None, notes: list[str]) -> Any:
    """(question, shown IDs, articles) -> the chat grace sends a model, as role/content dicts: the run's template
    rendered again when it is the one the run used (same hash), so a sample shows the exact prompt; else the
    articles and the question."""
    from harness.prompts import RetrievedArticle, load_template

    template = None
    if info is not None and len(info.templates) == 1 and info.config.output_mode in ("inline", "json"):
        name, sha = next(iter(info.templates.items()))
        try:
            template = load_template(name, info.config.output_mode)
        except GraceError:
            template = None
        template = template if template is not None and template.sha256.startswith(sha) else None
    told: list[bool] = []

    def render(question: str, shown: list[str], articles: dict[str, tuple[str, str]],
               scores: list[float] | None = None) -> list[dict[str, str]]:
        if template is None and not told:
            told.append(True)
            notes.append("the run's prompt template is not known as it was used: each sample shows the retrieved "
                         "articles and the question, not the exact prompt")
        arts = [RetrievedArticle(i, *articles.get(i, ("", "")), 0.0) for i in shown]
        if template is not None:
            return template.render(question, arts)
        block = "\n\n".join(f"[ID: {a.id}] {a.title}\n{a.text}".strip() for a in arts)
        return [{"role": "user", "content": f"{block}\n\n{question}".strip()}]

    return render


def _asked(entry: ModelEntry | None, info: RunInfo | None, prompt: Any, articles: dict[str, tuple[str, str]],
           language: str, notes: list[str]) -> Any:
    """(question, question ID, repeat, shown IDs, the row as sent) -> (the sample's input, its messages): what this model
    or system received, never grace's prompt for one that was not sent it.

    - a model: grace's prompt (the template with the articles shown);
    - an ``http:`` system: the request grace sent (method, URL, and the body its ``[models.http]`` template made:
      the question, and grace's articles or prompt only when the template sends them; headers left out);
    - a ``python:`` system: the request object it was called with (question, grace's articles, grace's prompt as
      ``messages``, k, language, repeat), as JSON;
    - an imported log: the question, as the log recorded it (grace sent nothing).
    """
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    provider = entry.provider if entry is not None else None
    imported = info is not None and (info.imported is not None or info.config.output_mode == "imported")
    if provider == "logs" or (provider is None and imported):
        notes.append("imported from a production log: each sample's input is the question as the log recorded it "
                     "(grace sent nothing); what the system retrieved is in its metadata (system_retrieved)")

        def from_log(question: str, qid: str, repeat: int, shown: list[str], sent: AsSent | None
                     ) -> tuple[Any, list[Any]]:
            return question, [ChatMessageUser(content=question)]

        return from_log

    if provider == "http":
        from harness.providers.http_system import DEFAULT_BODY, fill

        table = (entry.options.get("http") if entry is not None else None) or {"url": entry.model if entry else ""}
        body_template = table.get("body", DEFAULT_BODY)
        method, url_template = str(table.get("method") or "POST"), str(table.get("url") or entry.model)
        notes.append(f"{entry.name}: an http: system; each sample's input is the request grace sent it (the body "
                     "its [models.http] template made; headers left out), not grace's prompt")

        def to_http(question: str, qid: str, repeat: int, shown: list[str], sent: AsSent | None
                    ) -> tuple[Any, list[Any]]:
            from urllib.parse import quote

            values, texts = _placeholders(question, qid, shown, sent, articles, prompt)
            url = fill(url_template, values, {k: quote(v, safe="") for k, v in texts.items()})
            text = f"{method} {masked(url)}"
            if method != "GET":
                text += "\n\n" + json.dumps(fill(body_template, values, texts), ensure_ascii=False, indent=2)
            return text, [ChatMessageUser(content=text)]

        return to_http

    if provider == "python":
        notes.append(f"{entry.name}: a python: system; each sample's input is the request it was called with "
                     "(question, grace's articles and prompt, k, language, repeat), not a prompt it was sent")
        k = info.config.k if info is not None else None

        def to_python(question: str, qid: str, repeat: int, shown: list[str], sent: AsSent | None
                      ) -> tuple[Any, list[Any]]:
            values, _ = _placeholders(question, qid, shown, sent, articles, prompt)
            request = {"question_id": qid, "question": question, "articles": values["articles"],
                       "messages": values["messages"], "k": k if k is not None else len(shown),
                       "language": language, "repeat": repeat}
            text = json.dumps(request, ensure_ascii=False, indent=2)
            return text, [ChatMessageUser(content=text)]

        return to_python

    def to_model(question: str, qid: str, repeat: int, shown: list[str], sent: AsSent | None
                 ) -> tuple[Any, list[Any]]:
        return question, [kinds[m["role"]](content=m["content"]) for m in prompt(question, shown, articles)]

    return to_model


def _placeholders(question: str, qid: str, shown: list[str], sent: AsSent | None,
                  articles: dict[str, tuple[str, str]], prompt: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """What a system's request was filled from (as :class:`harness.providers.http_system.HttpSystem` fills it):
    values (JSON) and texts (inside a longer string), from the articles grace showed and its prompt."""
    scores = list(sent.scores) if sent is not None else []
    scores += [0.0] * (len(shown) - len(scores))
    arts = [{"id": i, "title": articles.get(i, ("", ""))[0], "text": articles.get(i, ("", ""))[1], "score": s}
            for i, s in zip(shown, scores, strict=False)]
    messages = prompt(question, shown, articles)
    values = {"question": question, "question_id": qid, "articles": arts, "messages": messages}
    block = "\n\n".join(f"[ID: {a['id']}] {a['title']}\n{a['text']}" for a in arts)
    texts = {"question": question, "question_id": qid, "articles": block,
             "messages": json.dumps(messages, ensure_ascii=False)}
    return values, texts


PART_BYTES = 60  # a name part (task, model) longer than this is cut: a file name must stay under 255 bytes


def file_name(log: Any) -> str:
    """``<created>_<task>_<model>_<id>``: inspect's own pattern (``INSPECT_EVAL_LOG_FILE_PATTERN`` with
    ``{model}``), each part cleaned as inspect cleans it (``_ / : +`` -> ``-``), and any other character a file
    name cannot safely hold too. A part longer than ``PART_BYTES`` (a 300-character model name) is cut, with 8 hex
    digits of its full text's hash, so the name stays short and the same for the same model; the full name is in
    the log (its ``eval.model``)."""
    def clean(text: str) -> str:
        text = re.sub(r"[^\w.\-]", "-", str(text).replace("_", "-"), flags=re.UNICODE)
        if len(text.encode("utf-8")) <= PART_BYTES:
            return text
        head = text.encode("utf-8")[:PART_BYTES - 9].decode("utf-8", "ignore")
        return f"{head}-{text_hash(text, 8)}"

    return "_".join(clean(p) for p in (log.eval.created, log.eval.task, log.eval.model, log.eval.task_id))
