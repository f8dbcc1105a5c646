"""A scored, spot-checked run of the sample benchmark for the export tests (MLflow, W&B): built once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_grace

MODELS = ("baseline:threshold", "baseline:top1")


def build_sample_run(root: Path) -> Path:
    """The sample benchmark answered by two baselines, scored and spot-checked (the lexical judge, 10 answers)."""
    with pytest.MonkeyPatch.context() as mp:  # a module fixture: conftest's per-test cache folder is not set yet
        mp.setenv("GRACE_CACHE_DIR", str(root / "cache"))
        assert run_grace("kb", "build", SAMPLE / "handbook", "--out", root / "kb")[0] == 0
        code, out = run_grace("run", "--kb", root / "kb", "--gold", SAMPLE / "gold.csv", "--model", MODELS[1],
                              "--model", MODELS[0], "--out", root / "run")
        assert code == 0, out
        code, out = run_grace("spotcheck", "run", root / "run", "--kb", root / "kb", "--judge", "baseline:lexical",
                              "--sample", "10")
        assert code == 0, out
    return root / "run"
