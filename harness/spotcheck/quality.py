"""Answer quality, GroUSE-style: relevancy, completeness, faithfulness (1-5) and usefulness (yes/no).

Support of each claim says nothing of an answer that is faithful but misses
half of what the question needs, pads itself with other topics, or refuses
though its gold article holds the answer. GroUSE (a meta-evaluation benchmark
for grounded-QA judges) grades those on separate scales, and grace follows it:
one call per checked answer (``grace spotcheck run --quality``), in which the
judge sees the question, the gold article (the one the gold set names, or none
for a must-refuse question), the articles shown to the model, and the answer.

* relevancy: how far the whole answer addresses the question (``null`` when it
  says the articles do not answer);
* completeness: how much of what the question needs from the gold article is in
  the answer (``null`` when there is no gold article);
* faithfulness: each statement in the article it cites, unchanged (``null`` for
  a bare refusal);
* usefulness: for a refusal that adds related information, whether it helps.

``null`` is a grade, not a failure: it is how the judge says "does not apply",
and GroUSE's *positive acceptance* (answer when the gold article holds the
answer) and *negative rejection* (refuse when there is none) are read from the
nulls: a refusal (relevancy null) with a gold article (completeness not null)
failed to accept; an answer (relevancy not null) without one (completeness
null) failed to reject. The meta-eval (:func:`run_quality_meta_eval`) holds
hand-written cases for each of GroUSE's seven failure modes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.clock import now
from harness.core.errors import GraceError
from harness.core.json_text import json_objects
from harness.prompts.template_files import SectionTemplate, builtin_in_language, find_template, split_sections
from harness.providers.base import RetrievedArticle
from harness.runner.calls import CallSettings, Prompted, PromptJob, PromptStats
from harness.stats.wilson import wilson_interval

TEMPLATES_DIR = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "quality.v1"
KIND = "grace-spotcheck-quality"
SCORES = ("relevancy", "completeness", "faithfulness")
CASES = Path(__file__).parent / "quality_cases.jsonl"
MODES = ("incomplete_answer", "irrelevant_information", "unfaithful_answer", "wrong_citation",
         "useless_information", "positive_acceptance", "negative_rejection")
_SECTION = re.compile(r"^=== (\w+) ===\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*(question|gold|retrieved|answer)\s*\}\}")
STRICT = ('Reply with only one JSON object and nothing else (no code fence, no text before or after it), with the keys '
          '"answer_refuses", "relevancy", "completeness", "faithfulness" and "usefulness" (each grade a number from 1 '
          'to 5, true/false for usefulness, or null where it does not apply).')
# The keys in the prompt's order, each justification before its grade: a server that builds a grammar from the
# schema (llama.cpp) writes them in the schema's order, so an order unlike the prompt's had a small model write
# every justification first. A grade is 1 to 5 or null: with only "integer", SmolLM2-135M through llama.cpp gave
# "faithfulness": 49, which no reader can take. Said as anyOf(enum, null): llama.cpp's schema-to-grammar reads a type
# list (["integer", "null"]) before an enum beside it and drops the enum; OpenAI's strict mode wants a type each.
_KEYS = ["answer_refuses", "relevancy_justification", "relevancy", "completeness_justification", "completeness",
         "faithfulness_justification", "faithfulness", "usefulness_justification", "usefulness"]
_TYPES = {"answer_refuses": {"type": "boolean"}, "usefulness": {"type": ["boolean", "null"]},
          **{f"{k}_justification": {"type": "string"} for k in (*SCORES, "usefulness")},
          **{k: {"anyOf": [{"type": "integer", "enum": [1, 2, 3, 4, 5]}, {"type": "null"}]} for k in SCORES}}
SCHEMA = {"title": "answer_quality", "type": "object", "additionalProperties": False, "required": _KEYS,
          "properties": {k: _TYPES[k] for k in _KEYS}}


@dataclass(frozen=True)
class QualityTemplate(SectionTemplate):
    placeholder = _PLACEHOLDER

    def grade(self, question: str, gold: Sequence[Any], shown: Sequence[Any], answer: str) -> list[dict[str, str]]:
        def block(arts: Sequence[Any]) -> str:
            return "\n\n".join(f"[ID: {a.id}] {a.title}\n{a.text.strip()}" for a in arts)

        from harness.prompts.languages import note

        return self._messages("grade", {"question": question, "gold": block(gold) or note(self.language, "no_gold"),
                                        "retrieved": block(shown) or note(self.language, "none"), "answer": answer})


def load_quality_template(spec: str | None = None, language: str | None = None) -> QualityTemplate:
    """A built-in name (``quality.v1``) or a path to a template file; with neither, ``quality.v1`` in ``language``."""
    path = find_template(spec or builtin_in_language(DEFAULT_TEMPLATE, TEMPLATES_DIR, language), TEMPLATES_DIR,
                         "quality template")
    text = path.read_text(encoding="utf-8")
    sections = split_sections(text, _SECTION)
    if not all(f"{{{{{p}}}}}" in sections.get("grade", "").replace(" ", "") for p in ("question", "gold", "answer")):
        raise GraceError(f"quality template {path.stem}: needs '=== grade ===' with {{{{question}}}}, {{{{gold}}}} and "
                         "{{answer}} (see templates/quality.v1.txt)")
    return QualityTemplate.from_text(path.stem, text, sections)


@dataclass(frozen=True)
class Grades:
    refuses: bool | None
    relevancy: int | None
    completeness: int | None
    faithfulness: int | None
    usefulness: bool | None
    justifications: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"answer_refuses": self.refuses, "relevancy": self.relevancy, "completeness": self.completeness,
                "faithfulness": self.faithfulness, "usefulness": self.usefulness, "justifications": self.justifications}


def _grade(value: Any) -> int | None | bool:
    """1-5, ``None`` for null, ``False`` for something unreadable."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("null", "none", "n/a", "")):
        return None
    try:
        n = round(float(value))
    except (TypeError, ValueError):
        return False
    return n if 1 <= n <= 5 else False


def parse_grades(text: str | None) -> Grades | None:
    """The judge's reply -> grades; ``None`` unless every key is there and readable."""
    for obj in json_objects(text):
        low = {str(k).lower(): v for k, v in obj.items()}
        if not all(k in low for k in (*SCORES, "usefulness")):
            continue
        grades = [_grade(low[k]) for k in SCORES]
        if any(g is False for g in grades):
            continue
        use = low["usefulness"]
        if isinstance(use, str):
            use = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(use.strip().lower())
        refuses = low.get("answer_refuses")
        return Grades(refuses if isinstance(refuses, bool) else None, *grades,  # type: ignore[arg-type]
                      use if isinstance(use, bool) else None,
                      {k: str(low.get(f"{k}_justification") or "") for k in (*SCORES, "usefulness")})
    return None


# --- the calls ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QualityItem:
    key: Any  # the caller's: an answer key, or a case id
    question: str
    gold: tuple[RetrievedArticle, ...]
    shown: tuple[RetrievedArticle, ...]
    answer: str


def grade_answers(judge: Any, template: QualityTemplate, items: list[QualityItem], settings: CallSettings,
                  stats: PromptStats) -> dict[Any, dict[str, Any]]:
    """One grading call per item (unreadable replies asked once more, stricter, never cached); key -> row."""
    from harness.spotcheck.claims import ClaimsJudged, _ask

    who = Prompted(judge.spec, judge.provider, KIND, template.sha256, SCHEMA,
                   accept=lambda c: parse_grades(c.text) is not None)
    jobs = []
    for i, it in enumerate(items):
        arts = list({a.id: a for a in it.gold + it.shown}.values())
        payload = json.dumps({"question": it.question, "answer": it.answer, "gold": [a.id for a in it.gold]},
                             ensure_ascii=False)
        jobs.append(PromptJob(f"quality:{i}", payload, template.grade(it.question, it.gold, it.shown, it.answer),
                              arts, payload=it))
    tally = ClaimsJudged({}, stats)
    done = _ask(who, jobs, lambda j, c: parse_grades(c.text) is not None, STRICT, settings, stats, "answer quality",
                tally)
    out = {}
    for job, res in done.values():
        it: QualityItem = job.payload
        g = parse_grades(res.completion.text) if res.completion is not None else None
        out[it.key] = {**(g.as_dict() if g else {}), "readable": g is not None,
                       "error": res.error.message if res.error else (None if g else "no readable grades, asked twice"),
                       "cached": res.cached, "cost_usd": res.cost_usd, "template": template.name,
                       "template_hash": template.sha256, "judge": judge.spec.name,
                       "created_at": now()}
    return out


def quality_figures(rows: list[dict[str, Any]], bootstrap: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Per model: the mean of each 1-5 grade over the answers it applies to, the share of useful refusals, each with
    its n and, from ``MIN_ANSWERS_FOR_CI`` graded answers, a CI (the grades' a bootstrap's, the share's Wilson's);
    unreadable gradings counted apart."""
    import numpy as np

    from harness.spotcheck.metrics import MIN_ANSWERS_FOR_CI, _ci

    good = [r for r in rows if r.get("readable")]
    rng = np.random.default_rng(seed + 11)
    out: dict[str, Any] = {"n": len(good), "n_unreadable": len(rows) - len(good),
                           "n_refusals": sum(r.get("answer_refuses") is True for r in good)}
    for key in (*SCORES, "usefulness"):
        vals = np.array([float(r[key]) for r in good if r.get(key) is not None], dtype=np.float64)
        out[key] = round(float(vals.mean()), 4) if len(vals) else None
        out[f"{key}_n"] = int(len(vals))
        if bootstrap <= 0 or len(vals) < MIN_ANSWERS_FOR_CI:
            out[f"{key}_ci95"] = None
        elif key == "usefulness":  # yes or no: a share, Wilson's interval as accuracy's (the grades are means)
            out[f"{key}_ci95"] = wilson_interval(out[key], len(vals))
        else:
            out[f"{key}_ci95"] = _ci(vals[rng.integers(0, len(vals), size=(bootstrap, len(vals)))].mean(axis=1))
    return out


# --- meta-eval: GroUSE's seven failure modes ----------------------------------------------------------------------

@dataclass(frozen=True)
class QualityCase:
    id: str
    failure_mode: str
    question: str
    gold: tuple[RetrievedArticle, ...]
    shown: tuple[RetrievedArticle, ...]
    answer: str
    expect: dict[str, str]  # grade -> condition: "==5", "<5", ">=4", "<=2", "null", "not null", "yes", "no"
    note: str = ""


def load_quality_cases(path: Path | None = None) -> list[QualityCase]:
    from harness.spotcheck.meta_eval import read_cases

    def build(d: dict[str, Any]) -> QualityCase:
        arts = {a["id"]: RetrievedArticle(str(a["id"]), a.get("title", ""), a["text"], 0.0) for a in d["articles"]}
        return QualityCase(str(d["id"]), str(d["failure_mode"]), d["question"],
                           tuple(arts[i] for i in d.get("gold") or []), tuple(arts[i] for i in d["shown"]),
                           d["answer"], dict(d["expect"]), d.get("note", ""))

    return read_cases(path or CASES, build, "a quality case needs id, failure_mode, question, articles, gold, "
                                            "shown, answer and expect")


def meets(value: Any, condition: str) -> bool:
    c = condition.strip()
    if c == "null":
        return value is None
    if c == "not null":
        return value is not None
    if c in ("yes", "no"):
        return value is (c == "yes")
    if value is None or isinstance(value, bool):
        return False
    for op in ("<=", ">=", "==", "<", ">"):
        if c.startswith(op):
            x = float(c[len(op):])
            return {"<=": value <= x, ">=": value >= x, "==": value == x, "<": value < x, ">": value > x}[op]
    raise GraceError(f"unknown condition {condition!r} (use ==N, <N, <=N, >N, >=N, null, not null, yes, no)")


def run_quality_meta_eval(judge: Any, template: QualityTemplate, cases: list[QualityCase],
                          settings: CallSettings) -> dict[str, Any]:
    """Every case graded; a case passes when each grade meets its expected condition. Pass rate per failure mode."""
    stats = PromptStats()
    items = [QualityItem(c.id, c.question, c.gold, c.shown, c.answer) for c in cases]
    got = grade_answers(judge, template, items, settings, stats)
    rows = []
    for c in cases:
        g = got[c.id]
        failed = [k for k, cond in c.expect.items() if not (g.get("readable") and meets(g.get(k), cond))]
        rows.append({"id": c.id, "failure_mode": c.failure_mode, "expect": c.expect,
                     "got": {k: g.get(k) for k in (*SCORES, "usefulness", "answer_refuses")},
                     "passed": not failed, "failed_on": failed, "unreadable": not g.get("readable"),
                     "error": g.get("error")})
    from harness.spotcheck.meta_eval import per_failure_mode

    per_mode = per_failure_mode(rows, MODES)
    passed = sum(r["passed"] for r in rows)
    return {"template": template.name, "template_hash": template.sha256, "cases": len(rows), "passed": passed,
            "pass_rate": round(passed / len(rows), 6) if rows else None,
            "unreadable": sum(r["unreadable"] for r in rows), "per_mode": per_mode,
            "failures": [r for r in rows if not r["passed"]], "calls": stats.as_dict()}
