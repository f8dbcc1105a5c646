"""How long does one label take to save in a team session (``grace annotate --team``)? Target: under 250 ms for
600 questions and three people with overlap 2, on 2 cores.

Every save rewrites the person's file, then the team's gold (every question's status from every person's labels)
and answers with the team's progress and agreement (``annotations.agreement.compare_records`` over everyone's
labels), so its cost grows with questions x people. This times saves through the app's API (no HTTP, no browser)
once everyone has labelled half of their questions, and prints the median and the slowest.

    python benchmarks/perf/bench_team_labels.py                        # 600 questions, 3 people, overlap:2
    python benchmarks/perf/bench_team_labels.py --questions 2000 --people 5 --assign overlap:3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=600)
    ap.add_argument("--people", type=int, default=3)
    ap.add_argument("--assign", default="overlap:2")
    ap.add_argument("--articles", type=int, default=200)
    ap.add_argument("--saves", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-team-") as tmp:
        run(Path(tmp), args)


def run(root: Path, args: argparse.Namespace) -> None:
    from annotations.team import TeamSession
    from annotations.team_app import TeamApp
    from kb_builder.loader import load_kb

    kb_dir = root / "kb"
    kb_dir.mkdir()
    (kb_dir / "articles.jsonl").write_text("".join(
        json.dumps({"id": str(i), "title": f"Policy {i}", "text": f"Policy {i} says what to do about topic {i}."}) + "\n"
        for i in range(1, args.articles + 1)), encoding="utf-8")
    (root / "q.csv").write_text("question_id,question\n" + "".join(
        f"q{i},What does policy {i % args.articles + 1} say?\n" for i in range(args.questions)), encoding="utf-8")
    kb = load_kb(kb_dir)
    people = [f"p{i}" for i in range(args.people)]
    team = TeamSession.open(kb, root / "team", questions=root / "q.csv", people=",".join(people), rule=args.assign)
    app = TeamApp(team, kb.retriever(), k=10)
    keys = team.new_keys  # each person's key, as their printed link carries it: a save is checked against it

    def label(who: str, qid: str, n: int) -> None:
        app.post("/api/label", {"question_id": qid, "status": "labelled",
                                "expected_citations": [str(n % args.articles + 1)]}, keys[who])

    for who in people:  # everyone half done
        mine = team.assigned(who)
        for n, qid in enumerate(mine[: len(mine) // 2]):
            label(who, qid, n + (n % 7 == 0 and who == people[-1]))
    times = []
    mine = team.assigned(people[0])
    for n, qid in enumerate(mine[len(mine) // 2:][: args.saves]):
        t0 = time.perf_counter()
        label(people[0], qid, n)
        times.append(time.perf_counter() - t0)
    team.close()
    print(f"{args.questions} questions, {args.people} people, {args.assign}: one save "
          f"{statistics.median(times) * 1000:.0f} ms median, {max(times) * 1000:.0f} ms slowest ({len(times)} saves)")


if __name__ == "__main__":
    main()
