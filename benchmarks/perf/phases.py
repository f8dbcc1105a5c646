"""Where a ``grace`` command's wall time goes, phase by phase: run any grace command under this launcher.

    python benchmarks/perf/phases.py run --kb KB --gold GOLD -m openai:bench --out RUN
    python benchmarks/perf/phases.py score RUN/responses.jsonl --gold GOLD --kb KB

It wraps the functions that mark each phase (config, KB load, gold, retrieval,
planning, the calls, the SDK import inside them, scoring, reports) wherever the
checkout has them, runs the command as ``grace`` would, and prints one line per
phase to stderr at exit: seconds, and when it started. Nothing in grace itself
is changed, so it times an older checkout too (``PYTHONPATH=/old/checkout``).
What is left between phases (imports, argument parsing, writing run.json,
printing) shows as "other"; the interpreter's own start and exit are outside
(compare with the process's wall time).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.abc
import sys
import time

T0 = time.perf_counter()
SPANS: list[tuple[str, float, float]] = []
FIRST_ONLY = {"SDK import (first client)"}  # later calls return the module already imported

# (phase, module, attribute); a missing one is skipped (another checkout, another command)
PHASES = [
    ("config", "harness.runner.config", "resolve_models"),
    ("KB load", "kb_builder.store", "load_kb"),
    ("gold", "kb_builder.gold", "read_gold"),  # checkouts before GoldSet
    ("gold", "kb_builder.gold", "load_gold"),
    ("retrieval", "harness.runner.session", "retrieve_all"),
    ("planning", "harness.runner.session", "plan_jobs"),
    ("calls (engine)", "harness.runner.session", "run_engine"),  # checkouts before the rename
    ("calls (engine)", "harness.runner.session", "run_calls"),
    ("SDK import (first client)", "harness.providers.base", "require_sdk"),
    ("scoring", "harness.scoring.score_run", "score_responses"),
    ("scoring", "harness.scoring", "score_responses"),
    ("reports", "harness.reports", "write_reports"),
    ("responses compacted", "harness.run_folder.responses", "compact_responses"),
    ("rows described (run.json)", "harness.runner.session", "describe_rows"),
    ("leaderboard printed", "harness.reports.terminal", "print_leaderboard"),
]


def _wrap(label: str, owner: object, name: str) -> None:
    f = getattr(owner, name)
    if getattr(f, "_phase_wrapped", False):
        return

    @functools.wraps(f)
    def timed(*args, **kwargs):
        if label in FIRST_ONLY and any(s[0] == label for s in SPANS):
            return f(*args, **kwargs)
        t = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            SPANS.append((label, t - T0, time.perf_counter() - t))

    timed._phase_wrapped = True  # type: ignore[attr-defined]
    setattr(owner, name, timed)


def _report() -> None:
    end = time.perf_counter() - T0
    spans = sorted(SPANS, key=lambda x: x[1])
    totals: dict[str, float] = {}
    starts: dict[str, float] = {}
    inside: dict[str, str] = {}
    covered, last_end, outer = 0.0, 0.0, ""
    for label, start, secs in spans:
        totals[label] = totals.get(label, 0.0) + secs
        starts.setdefault(label, start)
        if start >= last_end:  # not inside an earlier phase: counts towards the covered time
            covered += secs
            last_end, outer = start + secs, label
        elif label != outer:
            inside.setdefault(label, outer)
    print(f"phases of 'grace {' '.join(sys.argv[1:3])} ...' ({end:.2f} s from start-up to exit):", file=sys.stderr)
    for label, secs in sorted(totals.items(), key=lambda kv: starts[kv[0]]):
        where = f" (partly inside {inside[label]})" if label in inside else ""
        print(f"  {label:<26} {secs:6.3f} s  from {starts[label]:6.3f}{where}", file=sys.stderr)
    print(f"  {'other':<26} {end - covered:6.3f} s  (imports, parsing, run.json, printing)", file=sys.stderr)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wrap a phase's function when its module is first imported, so the launcher itself imports nothing early
    (importing every phase's module up front would move their import time out of the command being timed)."""

    def __init__(self) -> None:
        self.wanted: dict[str, list[tuple[str, str]]] = {}
        for label, module, attr in PHASES:
            self.wanted.setdefault(module, []).append((label, attr))

    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201 - the import system's signature
        if name not in self.wanted:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run_module, wanted = spec.loader.exec_module, self.wanted[name]

        def exec_module(module):  # noqa: ANN001, ANN202
            run_module(module)
            for label, attr in wanted:
                if hasattr(module, attr):
                    _wrap(label, module, attr)

        spec.loader.exec_module = exec_module
        return spec


def main() -> None:
    sys.meta_path.insert(0, _WrapOnImport())
    atexit.register(_report)
    sys.argv = ["grace", *sys.argv[1:]]
    from harness.cli import app

    (getattr(app, "entry", None) or app.main)()


if __name__ == "__main__":
    main()
