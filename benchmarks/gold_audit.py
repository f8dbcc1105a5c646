"""How well do consensus suggestions and the gold audit work? Figures on the bundled sample benchmark.

A seeded panel of simulated models (harness.testing.panel: per-model accuracy,
mistakes aimed at each article's nearest neighbour, some refusals) answers the
sample gold set; labels are planted on near-duplicate articles; then the audit
and the suggestions are measured against the truth, over several seeds:

- audit: recall (planted labels flagged) and precision (flags that are planted
  errors; per-question rules only, near-duplicate pair rows counted apart);
- suggestions: coverage (questions with a usable suggestion) and accuracy on them.

    python benchmarks/gold_audit.py                   # 5 models, 8 planted errors, seeds 0-9
    python benchmarks/gold_audit.py --models 3 --planted 12 --seeds 20

This is a simulation, said plainly: real models' errors are more correlated than
the panel's, which makes real consensus somewhat less reliable than shown here.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=5, help="Simulated models, accuracies spread 0.9 down to 0.7.")
    ap.add_argument("--planted", type=int, default=8, help="Labels moved to a near-duplicate article per seed.")
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()

    from annotations.suggest import consensus
    from harness.scoring.label_audit import audit
    from harness.scoring.votes import votes_from_responses
    from harness.testing.panel import plant_label_errors, simulate_panel
    from kb_builder.build import build_kb
    from kb_builder.gold import read_gold
    from kb_builder.loader import load_kb

    sample = ROOT / "benchmarks" / "sample"
    with tempfile.TemporaryDirectory() as tmp:
        build_kb(sample / "handbook", Path(tmp) / "kb")
        kb = load_kb(Path(tmp) / "kb")
    gold = read_gold(sample / "gold.csv")
    truth = {q.question_id: "REFUSE" if q.must_refuse else ";".join(sorted(q.expected_citations)) for q in gold}
    accs = [round(0.9 - 0.2 * i / max(1, args.models - 1), 3) for i in range(args.models)]
    tp = fp = planted_n = pairs = covered = right = 0
    for seed in range(args.seeds):
        votes = votes_from_responses(simulate_panel(kb, gold, accs, seed=seed), kb.by_id)
        bad, planted = plant_label_errors(kb, gold, args.planted, seed=seed)
        suspects = audit(bad, votes, {a.id: a.title for a in kb.articles})
        flagged = {s.question_id for s in suspects if s.kind != "near_duplicates"}
        pairs += sum(s.kind == "near_duplicates" for s in suspects)
        tp, fp, planted_n = tp + len(flagged & planted), fp + len(flagged - planted), planted_n + len(planted)
        usable = [s for s in consensus(gold, votes, "sim") if s.usable]
        covered += len(usable)
        right += sum(s.suggested == truth[s.question_id] for s in usable)
    n = len(gold) * args.seeds
    print(f"sample benchmark: {len(gold)} questions, {len(kb.articles)} articles; {args.models} simulated models "
          f"(accuracy {accs[0]}..{accs[-1]}), {args.seeds} seeds")
    print(f"audit: {planted_n} planted errors, {tp} flagged -> recall {tp / planted_n:.1%}; "
          f"{fp} false flags -> precision {tp / max(1, tp + fp):.1%} ({fp / args.seeds:.1f} per gold set); "
          f"{pairs} near-duplicate pair rows")
    print(f"suggestions: {covered}/{n} covered ({covered / n:.1%}), {right / max(1, covered):.1%} of them right")


if __name__ == "__main__":
    main()
