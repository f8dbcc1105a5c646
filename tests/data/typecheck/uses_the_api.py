"""Calls of ``import grace`` as a user's script writes them, for a type checker
(tests/grace/test_grace_package.py runs mypy on this file): every call and result here is typed from grace's
own signatures, so it passes only while mypy sees them. Nothing runs it; it is only read."""

from __future__ import annotations

from pathlib import Path

import grace


def first_run(kb: Path, gold: Path, out: Path) -> float | None:
    result: grace.RunResult = grace.run(kb, gold, ["baseline:top1", "baseline:threshold"], out=out, repeats=2)
    if not result.ok:
        raise SystemExit(f"{result.errors} calls failed")
    run: grace.Run = grace.load_run(out)
    board: grace.Leaderboard = run.leaderboard
    best: grace.LeaderboardRow = board.rows[0]
    return best.accuracy


def rescore(responses: str, gold: str, kb: str) -> list[str]:
    run = grace.score(responses, gold, kb, "rescored", seed=1, bootstrap=500)
    written: dict[str, Path] = grace.report(run.path)
    return [row.model for row in run.leaderboard] + sorted(written)


def spot(run: str) -> grace.Spotcheck:
    try:
        return grace.spotcheck_run(run, "baseline:lexical", calls=grace.ModelCalls(concurrency=4))
    except grace.GraceError as exc:
        raise SystemExit(str(exc)) from exc
