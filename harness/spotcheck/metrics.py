"""Per-model spot-check rates with bootstrap confidence intervals.

* groundedness: supported segments / segments, pooled over the checked answers;
* hallucination rate among hits: answers with at least one unsupported segment;
* hallucination risk: the share of questions NOT answered both correctly and
  faithfully, ``1 - accuracy x (1 - hallucination rate)``. Accuracy also counts
  correct refusals, which hold no claim to check, so the correction applies to
  the correct-citation share only: ``1 - (refusals_ok + answers_ok x (1 - h))``;
  with no must-refuse questions the two are the same.

The bootstrap resamples answers (all segments of an answer go together, since
they share a model's habits) and, independently, the run's outcome counts for
accuracy; the risk interval carries both uncertainties. The hallucination rate,
a share of answers, gets Wilson's score interval instead (a bootstrap of 30
faithful answers says [0%, 0%]; Wilson's [0%, 11.4%]). With judge repeats,
each answer contributes its mean over repeats, and the per-repeat groundedness
shows the judge's own run-to-run spread.

In ``--mode claims`` the unit is the atomic claim: faithfulness is supported
claims / claims (the groundedness formula over claims; a ``partial`` claim is
not supported, and its share is reported beside), and the hallucination rate
counts answers with at least one ``unsupported`` claim. Coverage (both modes)
is, per answer, the share of the retrieved articles that hold the answer (gold
articles among those shown) that the answer cites; averaged over the answers
that were shown at least one. Under GRACE's one-article contract an answer
needs only one of several such articles, so coverage below 1 there is no fault:
read it where the gold lists articles that each hold part of the answer.

No interval from a handful: below :data:`MIN_ANSWERS_FOR_CI` checked answers
(answers with every segment judged; the bootstrap's unit) no CI is computed or
shown, since resampling one or two answers gives "100% [100, 100]", a certainty
the data do not have. Every figure is printed with its n (:func:`figure`):
"100.0% (n=1, too few for an interval)".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.stats.wilson import wilson_interval

MIN_ANSWERS_FOR_CI = 10  # checked answers below which no confidence interval is computed or shown
RISK_FORMULA = ("1 - (correct_refusal_rate + correct_answer_rate x (1 - hallucination_rate)); "
                "equals 1 - accuracy x (1 - hallucination_rate) when no question must be refused")


@dataclass
class AnswerResult:
    key: tuple[str, str, int]
    n_segments: int
    supported: list[int]  # per judge repeat: segments (claims) judged supported
    hallucinated: list[bool]  # per judge repeat: at least one segment (claim) unsupported
    partial: list[int] = field(default_factory=list)  # claims mode, per judge repeat: claims judged partial
    coverage: float | None = None  # cited share of the retrieved articles that hold the answer; None: none shown


def coverage(cited: tuple[str, ...], expected: tuple[str, ...], retrieved: tuple[str, ...]) -> float | None:
    """Of the retrieved articles that hold the answer (gold articles among those shown), the share the answer cites."""
    holding = set(expected) & set(retrieved)
    if not holding:
        return None
    return len(holding & set(cited)) / len(holding)


def _ci(values, alpha: float = 0.05) -> list[float] | None:
    import numpy as np

    if values is None or len(values) == 0:
        return None
    lo, hi = np.nanpercentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [round(float(lo), 6), round(float(hi), 6)]


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def figure(value: float | None, ci: list[float] | None, n: int) -> str:
    """A rate as printed everywhere: "75.0% [60.2, 88.1] (n=40)", or "100.0% (n=1, too few for an interval)"."""
    if value is None:
        return f"- (n={n})"
    text = f"{100 * value:.1f}%"
    if ci:
        return f"{text} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] (n={n})"
    if n < MIN_ANSWERS_FOR_CI:
        return f"{text} (n={n}, too few for an interval)"
    return f"{text} (n={n})"


def displayed(block: dict[str, Any]) -> dict[str, str]:
    """The rates of a model block, each with its n: what the terminal, spotcheck.json and notes show (claims mode
    adds faithfulness and the partial share; coverage is there when an answer was shown a gold article)."""
    keys = ["groundedness", "hallucination_rate", "hallucination_risk"]
    keys += [k for k in ("faithfulness", "partial_rate") if k in block]
    out = {key: figure(block.get(key), block.get(f"{key}_ci95"), block.get(f"{key}_n") or block.get("n") or 0)
           for key in keys}
    if "coverage" in block:
        out["coverage"] = figure(block.get("coverage"), block.get("coverage_ci95"), block.get("coverage_n") or 0)
    return out


def model_metrics(answers: list[AnswerResult], n: int, correct: int, correct_refusal: int,
                  bootstrap: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Point estimates and 95% CIs for one model; ``n`` and the counts are over all its scored responses.

    The CIs are None below :data:`MIN_ANSWERS_FOR_CI` checked answers (the
    risk's, when nothing was answered correctly, below that many responses).
    """
    import numpy as np

    k = len(answers)
    pc = correct / n if n else None
    pr = correct_refusal / n if n else None
    seg = np.array([a.n_segments for a in answers], dtype=np.float64)
    sup = np.array([np.mean(a.supported) for a in answers], dtype=np.float64) if k else np.zeros(0)
    hal = np.array([np.mean(a.hallucinated) for a in answers], dtype=np.float64) if k else np.zeros(0)
    g = float(sup.sum() / seg.sum()) if seg.sum() else None
    h = float(hal.mean()) if k else None
    risk = None
    if pc is not None and pr is not None and (h is not None or correct == 0):
        risk = 1 - (pr + pc * (1 - (h or 0.0)))
    repeats = len(answers[0].supported) if k else 0
    per_repeat = [_r(sum(a.supported[r] for a in answers) / seg.sum()) if seg.sum() else None for r in range(repeats)]
    out: dict[str, Any] = {
        "n": k, "n_segments": int(seg.sum()), "n_unsupported_segments": _r(float(seg.sum() - sup.sum())),
        "accuracy": _r(None if pc is None else pc + pr), "correct_answer_rate": _r(pc),
        "groundedness": _r(g), "groundedness_ci95": None,
        "hallucination_rate": _r(h), "hallucination_rate_ci95": None,
        "hallucination_risk": _r(risk), "hallucination_risk_ci95": None,
        "groundedness_per_repeat": per_repeat,
        "groundedness_spread": (_r(max(per_repeat) - min(per_repeat))  # type: ignore[type-var]
                                if len(per_repeat) > 1 and None not in per_repeat else None),
        # the n behind each figure: checked answers (the risk's, when no answer was correct: responses)
        "groundedness_n": k, "hallucination_rate_n": k, "hallucination_risk_n": k if correct else n,
        "ci_min_answers": MIN_ANSWERS_FOR_CI,
        "ci_note": None,
    }
    enough = k >= MIN_ANSWERS_FOR_CI
    basis, count = ("checked answer", k) if correct else ("response", n)
    if count < MIN_ANSWERS_FOR_CI:
        out["ci_note"] = (f"{count} {basis}{'' if count == 1 else 's'}: too few for an interval "
                          f"(at least {MIN_ANSWERS_FOR_CI} needed)")
    if bootstrap <= 0 or not n:
        out["display"] = displayed(out)
        return out
    rng = np.random.default_rng(seed)
    if k and enough:
        idx = rng.integers(0, k, size=(bootstrap, k))
        seg_b = seg[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            g_b = np.where(seg_b > 0, sup[idx].sum(axis=1) / np.where(seg_b > 0, seg_b, 1), np.nan)
        h_b = hal[idx].mean(axis=1)
        out["groundedness_ci95"] = _ci(g_b) if g is not None else None
        # a share of answers (one at least partly unsupported or not): Wilson's interval, as accuracy's; the
        # resamples h_b still carry it into the risk's
        out["hallucination_rate_ci95"] = wilson_interval(h, k)
    else:
        h_b = np.zeros(bootstrap)
    if risk is not None and (enough if correct else n >= MIN_ANSWERS_FOR_CI):
        draws = rng.multinomial(n, [pc, pr, max(0.0, 1 - pc - pr)], size=bootstrap) / n
        out["hallucination_risk_ci95"] = _ci(1 - (draws[:, 1] + draws[:, 0] * (1 - h_b)))
    out["display"] = displayed(out)
    return out


def claim_figures(answers: list[AnswerResult], bootstrap: int = 2000, seed: int = 0) -> dict[str, Any]:
    """What ``--mode claims`` adds to :func:`model_metrics`: faithfulness (its groundedness, over claims), the
    partial share, and coverage (any mode), each with its n and, from :data:`MIN_ANSWERS_FOR_CI` answers, a CI."""
    import numpy as np

    k = len(answers)
    claims = np.array([a.n_segments for a in answers], dtype=np.float64)
    partial = np.array([np.mean(a.partial) if a.partial else 0.0 for a in answers], dtype=np.float64)
    cov = np.array([a.coverage for a in answers if a.coverage is not None], dtype=np.float64)
    out: dict[str, Any] = {
        "n_claims": int(claims.sum()), "n_partial_claims": _r(float(partial.sum())),
        "partial_rate": _r(partial.sum() / claims.sum()) if claims.sum() else None, "partial_rate_ci95": None,
        "coverage": _r(float(cov.mean())) if len(cov) else None, "coverage_ci95": None, "coverage_n": int(len(cov)),
    }
    rng = np.random.default_rng(seed + 7)
    if bootstrap > 0 and k >= MIN_ANSWERS_FOR_CI and claims.sum():
        idx = rng.integers(0, k, size=(bootstrap, k))
        den = claims[idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["partial_rate_ci95"] = _ci(np.where(den > 0, partial[idx].sum(axis=1) / np.where(den > 0, den, 1), np.nan))
    if bootstrap > 0 and len(cov) >= MIN_ANSWERS_FOR_CI:
        out["coverage_ci95"] = _ci(cov[rng.integers(0, len(cov), size=(bootstrap, len(cov)))].mean(axis=1))
    out["coverage_display"] = figure(out["coverage"], out["coverage_ci95"], out["coverage_n"])
    return out


def model_differences(groundedness: dict[str, float | None], spread: dict[str, float | None]) -> list[dict[str, Any]]:
    """Every pair's groundedness difference next to the larger judge spread of the two: smaller is noise."""
    names = [m for m, g in groundedness.items() if g is not None]
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            diff = abs(groundedness[a] - groundedness[b])  # type: ignore[operator]
            noise = max((s for s in (spread.get(a), spread.get(b)) if s is not None), default=None)
            out.append({"a": a, "b": b, "groundedness_difference": round(diff, 6), "judge_spread": noise,
                        "within_judge_noise": None if noise is None else diff <= noise})
    return out
