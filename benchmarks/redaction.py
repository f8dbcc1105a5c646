"""How well does ``--redact-pii`` find personal data, and how often does it blank out ordinary handbook text?

Two measures, per type (the patterns; person names, which depend on the optional extra, with ``--names``):

- recall on ``tests/data/pii_spellings.jsonl``: real-world spellings of phone
  numbers, IBANs, cards, national IDs, emails and IP addresses, per country of
  grace's languages; a row counts as found when a span of its type covers
  exactly the value, separators included. Rows marked ``"split": "heldout"``
  were written after the detectors were tuned on the others and are shown
  apart; rows with ``"pii": null`` are ordinary numbers (dates, amounts,
  postcodes, IDs, near misses that fail a checksum) where nothing may be found;
- false positives on real handbooks: the TTS handbook and the Helvia playbook
  from the shared data beside the repository (skipped, and said, when absent),
  and the handbooks shipped with grace's retrieval benchmarks (French, German,
  English). Every find there was read once: those that really are a value of
  their type (an office's phone number, a team mailbox) are listed by hash in
  ``tests/data/pii_handbook_reviewed.tsv``; any other find counts as a false
  positive, and the script prints it so it can be read.

Person names (``--names``, needs ``grace-eval[pii]``) are measured apart, the way
``--redact-pii`` reads them: each handbook page is one call of the real
redactor, and every ``PERSON`` placeholder in it is counted. The handbooks name
few people, so a find there is a false positive unless it is in the reviewed
list; the table gives them per 10,000 words, per handbook, with the part the
name rules were tuned on (grace's sample, the TTS handbook) apart from the
held-out rest, and for the French and German handbooks also as if names were
read in every language (they are read in English text only). Recall is
measured on ``tests/data/pii_names.jsonl``: sentences that name people, all
written after the rules were set.

    python benchmarks/redaction.py             # the table (also as Markdown, for the README)
    python benchmarks/redaction.py --show      # every handbook find with its context
    python benchmarks/redaction.py --review    # print the reviewed list's rows for the current finds
    python benchmarks/redaction.py --names [--show] [--only sample]   # person names: false positives per 10k words
    python benchmarks/redaction.py --phrasings   # person names in many phrasings, with false-positive twins
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.privacy.detectors import find_patterns, resolve  # noqa: E402
from harness.prompts.languages import TEMPLATE_LANGUAGES as TEXT_LANGUAGES  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "pii_spellings.jsonl"
NAMES = ROOT / "tests" / "data" / "pii_names.jsonl"
PHRASINGS = ROOT / "tests" / "data" / "pii_names_phrasings.jsonl"  # written by benchmarks/names_phrasings.py
REVIEWED = ROOT / "tests" / "data" / "pii_handbook_reviewed.tsv"
SHARED = ROOT.parent / "shared" / "data"
TYPES = ("PHONE", "IBAN", "CARD", "NATIONAL_ID", "EMAIL", "IP")
_PARAGRAPH = re.compile(r"\n\s*\n")  # what the redactor looks at one at a time


# --- the corpus ----------------------------------------------------------------------------------------------------

def load_corpus(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def found_exactly(row: dict) -> bool:
    """The row's value is one span of its type, separators included."""
    return any(s.kind == row["type"] and s.value == row["pii"] for s in resolve(find_patterns(row["text"])))


def false_finds(row: dict) -> list[tuple[str, str]]:
    return [(s.kind, s.value) for s in resolve(find_patterns(row["text"]))]


@dataclass
class CorpusScore:
    found: Counter = field(default_factory=Counter)  # (type, split) -> rows found
    rows: Counter = field(default_factory=Counter)  # (type, split) -> positive rows
    negatives: int = 0
    negative_hits: list[dict] = field(default_factory=list)
    misses: list[dict] = field(default_factory=list)
    countries: Counter = field(default_factory=Counter)


def score_corpus(rows: list[dict]) -> CorpusScore:
    sc = CorpusScore()
    for r in rows:
        split = r.get("split", "tuned")
        if r["pii"] is None:
            sc.negatives += 1
            if false_finds(r):
                sc.negative_hits.append(r)
            continue
        sc.rows[r["type"], split] += 1
        sc.countries[r["type"], r["country"]] += 1
        if found_exactly(r):
            sc.found[r["type"], split] += 1
        else:
            sc.misses.append(r)
    return sc


# --- the handbooks -------------------------------------------------------------------------------------------------

def _strings(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k != "bodyPreview":  # the first characters of "body" again
                yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)
    elif isinstance(x, str):
        yield x


def handbooks(shared: Path | None = None) -> tuple[list[tuple[str, list[tuple[str, str]]]], list[str]]:
    """[(handbook, [(file, text)])] and the reasons any of them was skipped."""
    out, skipped = [], []
    base = shared or SHARED
    tts = base / "tts-handbook"
    if tts.exists():
        out.append(("TTS handbook (en)", [(str(p.relative_to(tts)), p.read_text(encoding="utf-8"))
                                         for p in sorted(tts.rglob("*.md"))]))
    else:
        skipped.append(f"{tts} is absent (shared data set not available on this machine)")
    helvia = base / "helvia-playbook-rag"
    if helvia.exists():
        strings = list(dict.fromkeys(_strings(json.loads((helvia / "map.json").read_text(encoding="utf-8")))))
        with (helvia / "dataset.csv").open(encoding="utf-8", newline="") as fh:
            queries = [r["query"] for r in csv.DictReader(fh)]
        out.append(("Helvia playbook (en)", [("map.json", "\n\n".join(strings)), ("dataset.csv", "\n\n".join(queries))]))
    else:
        skipped.append(f"{helvia} is absent (shared data set not available on this machine)")
    for name, folder in (("etalab guides (fr)", "etalab-fr"), ("Berlin open data (de)", "berlin-opendata-de"),
                         ("Clef handbook (en)", "clef-en")):
        pages = ROOT / "benchmarks" / "external" / folder / "pages"
        out.append((name, [(str(p.relative_to(pages)), p.read_text(encoding="utf-8"))
                           for p in sorted(pages.rglob("*.md"))]))
    sample = ROOT / "benchmarks" / "sample" / "handbook"
    out.append(("grace's sample handbook (en)", [(p.name, p.read_text(encoding="utf-8"))
                                                  for p in sorted(sample.rglob("*.md"))]))
    return out, skipped


def review_key(kind: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\t{value}".encode()).hexdigest()[:16]


def load_reviewed(path: Path = REVIEWED) -> set[str]:
    """Hashes of the handbook finds read and judged real values of their type."""
    if not path.exists():
        return set()
    return {line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


@dataclass
class Find:
    handbook: str
    file: str
    kind: str
    value: str
    context: str


def scan(books: list[tuple[str, list[tuple[str, str]]]]) -> tuple[list[Find], int, int, float]:
    """Every find in the handbooks (paragraph by paragraph, as the redactor reads a prompt), the words and the
    bytes read, and the seconds it took."""
    finds, words, size = [], 0, 0
    t0 = time.perf_counter()
    for book, files in books:
        for name, text in files:
            words += len(text.split())
            size += len(text.encode("utf-8"))
            for para in _PARAGRAPH.split(text):
                for s in resolve(find_patterns(para)):
                    ctx = para[max(0, s.start - 50):s.end + 30].replace("\n", " ")
                    finds.append(Find(book, name, s.kind, s.value, ctx))
    return finds, words, size, time.perf_counter() - t0


# --- person names --------------------------------------------------------------------------------------------------

TUNED_ON = ("grace's sample handbook (en)", "TTS handbook (en)", "Clef handbook (en)")  # read while the rules were set
_PERSON = re.compile(r"<PERSON_\d+>")


@dataclass
class NameScore:
    handbook: str
    words: int
    finds: list[Find]
    everywhere: int | None = None  # finds with names read in every language (non-English handbooks)


def name_finds(redactor, handbook: str, files: list[tuple[str, str]]) -> list[Find]:
    """Each page is one call of the redactor, as a prompt would be; every PERSON placeholder is a find."""
    out = []
    for name, text in files:
        done = redactor.redact([{"role": "user", "content": text}])
        sent = done.messages[0]["content"]
        for m in _PERSON.finditer(sent):
            ctx = sent[max(0, m.start() - 50):m.end() + 30].replace("\n", " ")
            out.append(Find(handbook, name, "PERSON", done.restore[m.group()], ctx))
    return out


def sample_articles() -> list[tuple[str, str]]:
    """The sample handbook as prompts hold it: the articles of its KB (its HTML pages too), one call each."""
    import tempfile

    import grace

    with tempfile.TemporaryDirectory() as tmp:
        grace.build_kb(ROOT / "benchmarks" / "sample" / "handbook", Path(tmp) / "kb")
        rows = [json.loads(line) for line in (Path(tmp) / "kb" / "articles.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(f"article {r['id']}", f"[ID: {r['id']}] {r['title']}\n{r['text']}") for r in rows]


def score_names(books: list[tuple[str, list[tuple[str, str]]]], everywhere: bool = True) -> list[NameScore]:
    """Every handbook's names as ``--redact-pii`` finds them; with ``everywhere``, a non-English one's also as if
    names were read in every language (the figure that keeps them off there)."""
    from harness.privacy import make_redactor

    redactor = make_redactor(True)
    if redactor.names is None:
        raise SystemExit(f"--names: {redactor.names_note}")
    every = make_redactor(True)
    every.names = replace(redactor.names, languages=frozenset(TEXT_LANGUAGES))
    out = []
    for book, files in books:
        if book.startswith("grace's sample"):
            files = sample_articles()
        words = sum(len(text.split()) for _, text in files)
        sc = NameScore(book, words, name_finds(redactor, book, files))
        if everywhere and not book.endswith("(en)"):
            sc.everywhere = len(name_finds(every, book, files))
        out.append(sc)
        print(f"names read: {book}", file=sys.stderr, flush=True)
    return out


def name_recall(path: Path = NAMES) -> tuple[int, int, list[dict]]:
    """(names found whole, names, rows with a miss or a false find) on the names corpus: each row's ``names``
    must each be inside a PERSON placeholder, and nothing else may be."""
    from harness.privacy import make_redactor

    redactor = make_redactor(True)
    found = total = 0
    bad = []
    for row in load_corpus(path):
        done = redactor.redact([{"role": "user", "content": row["text"]}])
        people = [v for k, v in done.restore.items() if k.startswith("<PERSON_")]
        hit = [n for n in row["names"] if any(n in p for p in people)]
        extra = [p for p in people if not any(p in n or n in p for n in row["names"])]
        found, total = found + len(hit), total + len(row["names"])
        if len(hit) < len(row["names"]) or extra:
            bad.append({**row, "found": people})
    return found, total, bad


# --- names in many phrasings, and their false-positive twins ---------------------------------------------------------

def redacted_ranges(text: str, sent: str) -> list[tuple[int, int]]:
    """The ranges of ``text`` that ``sent`` (``text`` redacted) replaced by a placeholder: the text between two
    placeholders is found in order, so the gaps are what was taken out."""
    from harness.privacy.redactor import PLACEHOLDER

    pieces = PLACEHOLDER.sub("\0", sent).split("\0")
    if not text.startswith(pieces[0]):
        raise ValueError(f"{sent!r} is not a redaction of {text!r}")
    out, at = [], len(pieces[0])
    for n, piece in enumerate(pieces[1:], 1):
        nxt = len(text) - len(piece) if n == len(pieces) - 1 else text.find(piece, at + 1)
        if nxt <= at or (not piece and n < len(pieces) - 1) or text[nxt:nxt + len(piece)] != piece:
            raise ValueError(f"{sent!r} is not a redaction of {text!r}")
        out.append((at, nxt))
        at = nxt + len(piece)
    return out


@dataclass
class Phrasing:
    """One sentence of the phrasings set as ``--redact-pii`` sent it."""

    row: dict
    sent: str
    removed: list[tuple[int, int]]
    people: list[str]  # per planted person: "whole" (no letter left), "part" (some letters left), "missed"
    beyond: list[str]  # redacted words outside every planted person: a false find (the twin's, or a word beside a name)


def score_phrasings(rows: list[dict], redactor=None) -> list[Phrasing]:
    """Each sentence one call of the redactor, as a prompt would be."""
    if redactor is None:
        from harness.privacy import make_redactor

        redactor = make_redactor(True)
    out = []
    for row in rows:
        text = row["text"]
        sent = redactor.redact([{"role": "user", "content": text}]).messages[0]["content"]
        removed = redacted_ranges(text, sent)
        covered = {i for a, b in removed for i in range(a, b)}
        outcome = []
        for p in row["people"]:
            letters = [i for i in range(p["start"], p["end"]) if text[i].isalnum()]
            hit = sum(i in covered for i in letters)
            outcome.append("whole" if hit == len(letters) else "part" if hit else "missed")
        inside = {i for p in row["people"] for i in range(p["start"], p["end"])}
        beyond = [text[a:b] for a, b in removed if any(i not in inside and text[i].isalnum() for i in range(a, b))]
        out.append(Phrasing(row, sent, removed, outcome, beyond))
    return out


def _given_listed(person: dict) -> bool:
    """Whether grace's list of given names holds every word of the person's given name."""
    from harness.privacy.name_runs import given_names

    return all(part[:1].upper() + part[1:] in given_names() for part in re.split(r"[\s-]+", person["given"]))


def _surname_listed(person: dict) -> bool:
    """Whether grace's list of surnames holds the last word of the person's name."""
    from harness.privacy.name_runs import surnames

    return person["name"].split()[-1] in surnames()


def phrasings_table(scored: list[Phrasing]) -> list[str]:
    """Recall (people whose every letter was taken out) and false finds, dev and held-out apart, then per form of
    name and for given names in grace's list or not."""
    def recall(items: list[str]) -> str:
        return f"{items.count('whole')}/{len(items)} ({100 * items.count('whole') / len(items):.0f}%)" if items else "-"

    def people(pick) -> list[str]:
        return [o for s in scored for p, o in zip(s.row["people"], s.people, strict=True) if pick(s, p)]

    lines = ["| part | sentences naming people | people: removed whole | a part left | missed | "
             "sentences with a word beside a name redacted | twins | twins with a find |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for split in ("dev", "heldout", None):
        mine = [s for s in scored if split is None or s.row["split"] == split]
        named = [s for s in mine if s.row["people"]]
        twins = [s for s in mine if not s.row["people"]]
        outcomes = [o for s in named for o in s.people]
        lines.append(f"| {split or 'all'} | {len(named)} | {recall(outcomes)} | {outcomes.count('part')} | "
                     f"{outcomes.count('missed')} | {sum(bool(s.beyond) for s in named)} | {len(twins)} | "
                     f"{sum(bool(s.beyond) for s in twins)} |")
    lines += ["", "| form of the name | people | removed whole, dev | removed whole, held out |", "| --- | --- | --- | --- |"]
    forms = list(dict.fromkeys(p["form"] for s in scored for p in s.row["people"]))
    for form in forms:
        lines.append(f"| {form} | {len(people(lambda s, p, f=form: p['form'] == f))} | "
                     f"{recall(people(lambda s, p, f=form: p['form'] == f and s.row['split'] == 'dev'))} | "
                     f"{recall(people(lambda s, p, f=form: p['form'] == f and s.row['split'] == 'heldout'))} |")
    for listed, given in ((True, True), (False, True), (True, False), (False, False)):
        test, label = (_given_listed, "given name") if given else (_surname_listed, "surname")
        where = "`given_names.txt`" if given else "`surnames.txt`"
        lines.append(f"| {label} {'in' if listed else 'not in'} {where} | "
                     f"{len(people(lambda s, p, k=listed, f=test: f(p) == k))} | "
                     f"{recall(people(lambda s, p, k=listed, f=test: f(p) == k and s.row['split'] == 'dev'))} | "
                     f"{recall(people(lambda s, p, k=listed, f=test: f(p) == k and s.row['split'] == 'heldout'))} |")
    return lines


def names_table(scores: list[NameScore], reviewed: set[str]) -> list[str]:
    lines = ["| handbook | part | words | PERSON finds: real / false | false per 10,000 words | "
             "if read in every language: finds per 10,000 words |", "| --- | --- | --- | --- | --- | --- |"]
    parts = {"tuning": [0, 0, 0], "held out": [0, 0, 0]}  # words, false, real
    for sc in scores:
        false = sum(review_key(f.kind, f.value) not in reviewed for f in sc.finds)
        part = "tuning" if sc.handbook in TUNED_ON else "held out"
        parts[part][0] += sc.words
        parts[part][1] += false
        parts[part][2] += len(sc.finds) - false
        every = "-" if sc.everywhere is None else f"{1e4 * sc.everywhere / sc.words:.1f} ({sc.everywhere})"
        lines.append(f"| {sc.handbook} | {part} | {sc.words:,} | {len(sc.finds) - false} / {false} | "
                     f"{1e4 * false / sc.words:.2f} | {every} |")
    for part, (words, false, real) in parts.items():
        if words:
            lines.append(f"| all, {part} | | {words:,} | {real} / {false} | {1e4 * false / words:.2f} | |")
    return lines


# --- the table -----------------------------------------------------------------------------------------------------

def table(sc: CorpusScore, finds: list[Find], reviewed: set[str], words: int) -> list[str]:
    false = Counter(f.kind for f in finds if review_key(f.kind, f.value) not in reviewed)
    real = Counter(f.kind for f in finds if review_key(f.kind, f.value) in reviewed)
    lines = ["| type | countries | recall, tuned rows | recall, held-out rows | handbook finds: real / false | "
             "false per 1,000 words |", "| --- | --- | --- | --- | --- | --- |"]

    def pct(t: str, split: str) -> str:
        n = sc.rows[t, split]
        return f"{sc.found[t, split]}/{n} ({100 * sc.found[t, split] / n:.0f}%)" if n else "-"

    for t in TYPES:
        countries = sorted({c for (k, c) in sc.countries if k == t and c != "any"})
        per_k = 1000 * false[t] / words if words else 0.0
        lines.append(f"| {t} | {', '.join(countries) or 'any'} | {pct(t, 'tuned')} | {pct(t, 'heldout')} | "
                     f"{real[t]} / {false[t]} | {per_k:.3f} |")
    tot_rows = sum(sc.rows.values())
    tot_found = sum(sc.found.values())
    lines.append(f"| all | | {sum(v for (t, s), v in sc.found.items() if s == 'tuned')}/"
                 f"{sum(v for (t, s), v in sc.rows.items() if s == 'tuned')} | "
                 f"{sum(v for (t, s), v in sc.found.items() if s == 'heldout')}/"
                 f"{sum(v for (t, s), v in sc.rows.items() if s == 'heldout')} | {sum(real.values())} / "
                 f"{sum(false.values())} | {1000 * sum(false.values()) / words if words else 0:.3f} |")
    lines.append("")
    lines.append(f"{tot_found}/{tot_rows} spellings found; ordinary numbers with a find: "
                 f"{len(sc.negative_hits)}/{sc.negatives}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--show", action="store_true", help="Print every handbook find with its context.")
    ap.add_argument("--review", action="store_true",
                    help="Print a reviewed-list row (hash, type, where) for every handbook find, to be read and pasted.")
    ap.add_argument("--no-handbooks", action="store_true", help="The corpus only.")
    ap.add_argument("--names", action="store_true",
                    help="Person names instead (needs grace-eval[pii]): false positives per 10,000 words, and recall.")
    ap.add_argument("--phrasings", action="store_true",
                    help="Person names in many phrasings and their twins only (needs grace-eval[pii]): "
                         f"recall and false finds on {PHRASINGS.name}.")
    ap.add_argument("--only", help="With --names: the handbooks whose name holds this text.")
    ap.add_argument("--shared", type=Path, default=SHARED, help=f"The shared data sets (default {SHARED}).")
    args = ap.parse_args(argv)
    if args.names:
        return main_names(args)
    if args.phrasings:
        return main_phrasings(args)

    sc = score_corpus(load_corpus(args.corpus))
    books, skipped = ([], []) if args.no_handbooks else handbooks(args.shared)
    for reason in skipped:
        print(f"skipped: {reason}", file=sys.stderr)
    finds, words, size, secs = scan(books)
    reviewed = load_reviewed()
    print(f"corpus: {sum(sc.rows.values())} spellings of personal data, {sc.negatives} ordinary numbers "
          f"({args.corpus.name})")
    for book, files in books:
        print(f"handbook: {book}, {len(files)} file(s)")
    print(f"handbooks read: {words:,} words, {size / 1e6:.2f} MB in {secs:.2f} s")
    print()
    for line in table(sc, finds, reviewed, words):
        print(line)
    for r in sc.misses:
        print(f"missed [{r.get('split', 'tuned')}] {r['type']} {r['country']}: {r['text']!r} (want {r['pii']!r}; "
              f"found {false_finds(r)})")
    for r in sc.negative_hits:
        print(f"false find [{r.get('split', 'tuned')}] {r['country']} ({r.get('note', '')}): {r['text']!r} -> "
              f"{false_finds(r)}")
    for f in finds:
        key = review_key(f.kind, f.value)
        if key not in reviewed:
            print(f"false positive (not in {REVIEWED.name}) {f.handbook} {f.file}: {f.kind} {f.value!r} in "
                  f"{f.context!r}")
        elif args.show:
            print(f"find {f.handbook} {f.file}: {f.kind} {f.value!r} in {f.context!r}")
        if args.review:
            print(f"{key}\t{f.kind}\t{f.handbook}: {f.file}")
    return 0


def main_phrasings(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    scored = score_phrasings(load_corpus(PHRASINGS))
    print(f"names in many phrasings ({PHRASINGS.name}, {len(scored)} sentences, each one call) in "
          f"{time.perf_counter() - t0:.1f} s")
    print()
    for line in phrasings_table(scored):
        print(line)
    print()
    for s in scored:
        if any(o != "whole" for o in s.people) or s.beyond:
            kept = [p["name"] for p, o in zip(s.row["people"], s.people, strict=True) if o != "whole"]
            print(f"[{s.row['split']} {s.row['template']}] {s.row['text']!r} -> {s.sent!r}"
                  + (f"; left: {kept}" if kept else "") + (f"; false: {s.beyond}" if s.beyond else ""))
    return 0


def main_names(args: argparse.Namespace) -> int:
    books, skipped = ([], []) if args.no_handbooks else handbooks(args.shared)
    for reason in skipped:
        print(f"skipped: {reason}", file=sys.stderr)
    books = [(b, f) for b, f in books if not args.only or args.only.lower() in b.lower()]
    t0 = time.perf_counter()
    scores = score_names(books)
    secs = time.perf_counter() - t0
    reviewed = load_reviewed()
    found, total, bad = name_recall()
    print(f"person names: {sum(s.words for s in scores):,} words of handbooks read in {secs:.0f} s, each page one call")
    print()
    for line in names_table(scores, reviewed):
        print(line)
    print()
    print(f"recall on {NAMES.name}: {found}/{total} names found whole; rows with a miss or a false find: {len(bad)}")
    for row in bad:
        print(f"  {row['text']!r}: want {row['names']}, found {row['found']}")
    for sc in scores:
        for f in sc.finds:
            if review_key(f.kind, f.value) not in reviewed:
                print(f"false positive (not in {REVIEWED.name}) {f.handbook} {f.file}: {f.value!r} in {f.context!r}")
            elif args.show:
                print(f"find {f.handbook} {f.file}: {f.value!r} in {f.context!r}")
            if args.review:
                print(f"{review_key(f.kind, f.value)}\t{f.kind}\t{f.handbook}: {f.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
