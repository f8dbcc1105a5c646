"""The run's progress bar: one line per model with calls to make (calls done, errors, cache hits, tokens and cost);
the models a resumed run has nothing left to ask are named once above it, not shown as an empty bar (``0/1``)."""

from __future__ import annotations

import time
from typing import Any

from harness.prompts import Template
from harness.run_folder.run_dir import RunDir
from harness.runner.engine import RunPlan
from harness.runner.session import RunSettings, run_calls

EVERY_S = 0.1  # a model's progress line is redrawn at most this often


def run_with_progress(plans: list[RunPlan], template: Template, kb_hash: str, run: RunDir, settings: RunSettings,
                      console: Any = None) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    asking = [p for p in plans if len(p.jobs)]
    done = [p.spec.name for p in plans if not len(p.jobs)]
    if done and console is not None:  # Text: a model's name is never read as markup
        console.print(Text(f"{', '.join(done)}: every call on file, nothing left to ask"), highlight=False)
    width = max(len(p.spec.name) for p in asking) if asking else 10
    columns = [TextColumn(f"{{task.description:<{min(width, 30)}}}"), BarColumn(bar_width=16), MofNCompleteColumn(),
               TextColumn("{task.fields[info]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False, disable=not asking) as bar:
        tasks = {id(p): bar.add_task(p.spec.name[:30], total=len(p.jobs), completed=0, info="") for p in asking}

        last: dict[int, float] = {}

        def update(plan: RunPlan) -> None:
            """Called after every call; redraws a model's line at most every ``EVERY_S`` (and at its last call), so a
            million calls do not cost a million redraws."""
            if id(plan) not in tasks:
                return
            st, now = plan.stats, time.monotonic()
            if now - last.get(id(plan), 0.0) < EVERY_S and st.done < st.total:
                return
            last[id(plan)] = now
            cost = f"${st.cost_usd:.4f}" + ("" if st.cost_known else "+?")
            info = f"err {st.errors}  cached {st.cached}  tok {st.input_tokens + st.output_tokens:,}  {cost}"
            if plan.batch:
                info += f"  batch: {st.batch_state or 'no open batch'}"
            bar.update(tasks[id(plan)], completed=st.done, info=info)

        try:
            run_calls(plans, template, kb_hash, run, settings, on_update=update)
        finally:
            last.clear()
            for p in plans:  # the figures as the calls left them
                update(p)
