"""How fast is ``--redact-pii``? Paragraphs per second through the redactor, with and without person names.

A run with ``--redact-pii`` redacts every prompt before it is sent: the patterns
read every paragraph, and person names (``grace-eval[pii]``) read the capitalised
words of every English paragraph and ask the spaCy model about those the words
leave open. This times one :class:`harness.privacy.Redactor` on generated
handbook paragraphs (seeded: prose with capitalised things, names in many
phrasings, emails and phone numbers), each paragraph one call, as a question's
article would be:

- ``cold``: every paragraph new (the work a run does the first time it sees an article);
- ``warm``: the same calls again, answered from the redactor's memo (the same
  article in the prompt of another question is looked at once);
- ``one long paragraph``: ``--long`` sentences on one line (a log or a page
  pasted into a question), with an email, a phone number and a person in each,
  one call: the time must grow with the text, not with its square.

It prints the seconds to load the name finder, and per pass the paragraphs per
second, milliseconds per paragraph and words per second, for the patterns alone
and with names; the best of ``--rounds`` fresh redactors.

    python benchmarks/perf/bench_redaction.py [--paragraphs 2000] [--rounds 2] [--long 10000]
    python benchmarks/perf/bench_redaction.py --root /tmp/grace-main   # time another checkout's harness
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

WORDS = ("leave policy employee manager request approval days annual travel expense receipt claim reimbursement "
         "office security laptop password remote work contract benefits pension training budget portal review "
         "deadline team project account onboarding access badge the a of to in for and is are within after before "
         "must should can your with on by").split()
THINGS = ["Human Resources", "Remote Work Policy", "Victoria Station", "Microsoft Teams", "Travel Desk", "Head Office",
          "Annual Leave", "Expense Policy", "Google Drive", "New York", "Payroll Services", "Easter Monday"]
PEOPLE = ["Maria Fernandes", "Jean-Pierre Martin", "Sofia Rossi", "Priya Natarajan", "Pieter van der Berg",
          "Sean O'Neill", "Anne Marie Duval", "Kwame Mensah", "Łukasz Nowak", "Hiroshi Tanaka"]
PHRASES = ["Contact {p} about the {w}.", "{p} approves every {w} request.", "Ask {p}'s manager first.",
           "Send the form to {p} or {q}.", "Can {p} sign the {w}?", "Write to {e} or call +44 20 7946 0958."]


def paragraph(rng: random.Random, n: int) -> str:
    """About 60 words of handbook prose, with capitalised things and, one paragraph in two, people."""
    out = []
    for _ in range(6):
        words = [rng.choice(WORDS) for _ in range(8)]
        words[rng.randrange(8)] = rng.choice(THINGS)
        out.append(" ".join(words).capitalize() + ".")
    if n % 2 == 0:
        out.insert(rng.randrange(len(out)), rng.choice(PHRASES).format(
            p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), w=rng.choice(WORDS), e=f"staff{n}@larkspur-example.com"))
    out.append(f"Reference {n}.")  # every paragraph new
    return " ".join(out)


def timed(redactor, calls: list[list[dict]]) -> float:
    t0 = time.perf_counter()
    for messages in calls:
        redactor.redact(messages)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paragraphs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--long", type=int, default=10000, help="Sentences of the one long paragraph (0: none).")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                    help="The grace checkout whose harness is timed (default: this one).")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.root))
    from harness.privacy import Redactor, make_redactor
    from harness.privacy.names import load_name_finder

    rng = random.Random(45)
    texts = [paragraph(rng, n) for n in range(args.paragraphs)]
    calls = [[{"role": "user", "content": t}] for t in texts]
    words = sum(len(t.split()) for t in texts)
    t0 = time.perf_counter()
    finder, note = load_name_finder()
    load = time.perf_counter() - t0
    print(f"harness from {args.root}; {len(texts):,} paragraphs, {words:,} words; name finder loaded in {load:.1f} s"
          + (f" ({note})" if note else ""))
    print()
    print("| redactor | pass | paragraphs/s | ms per paragraph | words/s |")
    print("| --- | --- | --- | --- | --- |")
    for label, make in (("patterns only", lambda: Redactor()), ("with person names", lambda: make_redactor(True))):
        if label != "patterns only" and finder is None:
            print(f"| {label} | - | skipped: {note} | | |")
            continue
        best = {"cold": float("inf"), "warm": float("inf")}
        for _ in range(args.rounds):
            if finder is not None:
                finder.find.cache_clear()  # a fresh finder's cache: the cold pass reads every paragraph
            redactor = make()
            best["cold"] = min(best["cold"], timed(redactor, calls))
            best["warm"] = min(best["warm"], timed(redactor, calls))
        for which, secs in best.items():
            print(f"| {label} | {which} | {len(texts) / secs:,.0f} | {1000 * secs / len(texts):.2f} | "
                  f"{words / secs:,.0f} |")
        if args.long:
            line = " ".join(f"Item {i}: write to staff{i}@larkspur-example.com, call +44 20 7946 {i % 10000:04d} or "
                            f"ask {PEOPLE[i % len(PEOPLE)]}." for i in range(args.long))
            secs = timed(make(), [[{"role": "user", "content": line}]])
            print(f"| {label} | one long paragraph ({len(line) / 1e6:.2f} MB) | {1 / secs:.3f} | {1000 * secs:,.0f} | "
                  f"{len(line.split()) / secs:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
