"""A model's serving figures: what its questions took of its endpoint's time, from run.json's attempts.

A self-hosted model costs its servers' hours, not tokens, so a leaderboard of local models needs the time per
1,000 questions, the answer tokens written per second and the server-seconds its calls took, with a price per
server-hour where one is given (:func:`harness.runner.pricing.server_cost`). Each command that asked models records
for each what its endpoint did (``run.json["attempts"][i]["counts"]``: the calls it answered, the span of its calls,
the answer tokens, its replicas); the figures add them up over every command, so a resumed run counts every
call once. The same record says when more calls were sent at once than its server works on: a warning, since
the time its calls spent in that queue is not the model's.
"""

from __future__ import annotations

from harness.providers.base import is_local_url
from harness.run_folder.report import Report, Serving
from harness.run_folder.run_records import RunInfo
from harness.runner.pricing import server_cost

_HOW = {"props": "as its /props says", "measured": "measured", "server timings": "from its own timings"}


def add_serving(report: Report, info: RunInfo) -> None:
    """Each ranked model's ``serving`` block, and a warning per model whose calls outnumbered its server's slots."""
    attempts = info.past_attempts()
    for entry in info.models:
        for replica in entry.replicas or ():
            if replica.dropped:  # the terminal said so as it happened; the report is what a team reads later
                report.warnings.append(
                    f"{entry.name}: replica {replica.url} was dropped ({replica.dropped}); the other replicas "
                    f"answered its questions")
        model = report.models.get(entry.name)
        counts = [a.counts[entry.name] for a in attempts if entry.name in a.counts]
        timed = [c for c in counts if c.answered and c.busy_s]
        if model is None or not timed:
            continue
        calls = sum(c.answered or 0 for c in timed)
        busy = sum(c.busy_s or 0.0 for c in timed)
        server_s = sum((c.busy_s or 0.0) * max(1, len(c.replicas or ())) for c in timed)
        tokens = sum(c.output_tokens or 0 for c in timed)
        last = timed[-1]
        cost = server_cost(server_s, entry.price_server_hour)
        model.serving = Serving(
            self_hosted=entry.price_server_hour is not None or is_local_url(entry.endpoint),
            calls=calls, busy_s=round(busy, 3), servers=max(1, len(last.replicas or ())), server_s=round(server_s, 3),
            time_per_1k_questions_s=round(busy / calls * 1000, 3),
            output_tokens_per_s=round(tokens / busy, 3) if tokens else None,
            concurrency=last.concurrency, server_slots=last.server_slots, slots_from=last.slots_from,
            price_server_hour=entry.price_server_hour, cost_usd=cost,
            cost_per_1k_questions_usd=None if cost is None else round(cost / calls * 1000, 8))
        if last.server_slots and last.concurrency and last.server_slots < last.concurrency:
            queued = model.latency.queued_p50_ms
            wait = "" if queued is None else f" (a call's median wait: {queued / 1000:.1f} s)"
            sent = (f"sent {last.server_slots} at a time instead of {last.concurrency}"
                    if last.slots_from == "props" else f"{last.concurrency} were sent at once")
            report.warnings.append(
                f"{entry.name}: its server works on {last.server_slots} request(s) at a time "
                f"({_HOW.get(last.slots_from or '', last.slots_from)}), and {sent}: the others waited in a queue"
                f"{wait}. Its latency is the model's own time per call, that queue left out; the time per 1,000 "
                f"questions is at this concurrency (--concurrency {last.server_slots} sends no more than it serves)")
