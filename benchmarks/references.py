"""How well the reference resolver (kb_builder.references) maps a system's own references onto KB articles.

Builds the sample KB (benchmarks/sample/handbook) and, when present, the TTS handbook
(/work/shared/data/tts-handbook/pages), makes references of each kind a shipped bot prints (source path, heading
anchor, URL, title, a quoted sentence, a few words cut from an article), each with the article it must map to, and
some that must stay unmapped (pages not in the KB, another site's page of a KB document's name, unknown headings,
too-short quotes, bare numbers, text from no article), then prints per kind: mapped right / mapped wrong / unmapped. The quote threshold is chosen on the
sample; TTS is held out. Usage: python benchmarks/references.py [--tts PATH]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kb_builder.references import Resolver, slug  # noqa: E402

TTS = Path("/work/shared/data/tts-handbook/pages")


def sentences_of(articles) -> list[str]:
    return [s.strip() for a in articles for s in re.split(r"(?<=[.!?])\s+", a.text) if len(s.split()) >= 8]


def references(articles, rng: random.Random, foreign: list[str]) -> list[tuple[str, str, str | None]]:
    """(kind, reference, expected article ID or None for must-stay-unmapped), built from the KB's records."""
    out: list[tuple[str, str, str | None]] = []
    per_doc = defaultdict(list)
    for a in articles:
        if a.source:
            per_doc[a.source].append(a)
    last = Counter(re.sub(r"\s*\(part \d+ of \d+\)$", "", a.heading_path[-1]).casefold()
                   for a in articles if a.heading_path)
    texts = [_words(a.title + " " + a.text) for a in articles]
    titles = Counter(" ".join(a.title.casefold().split()) for a in articles)
    for source, arts in per_doc.items():
        stem = source.rsplit(".", 1)[0]
        single = len(arts) == 1
        out.append(("source path", source, arts[0].id if single else None))
        out.append(("URL", f"https://handbook.example.com/{stem}/", arts[0].id if single else None))
        # another site's page of the same name (every site has an /about): never this KB's document
        out.append(("URL of another site, same page name", f"https://other.example.org/{stem.rsplit('/', 1)[-1]}",
                    None))
        for a in arts:
            if not a.heading_path:
                continue
            h = re.sub(r"\s*\(part \d+ of \d+\)$", "", a.heading_path[-1])
            unique = sum(1 for b in arts if b.heading_path and
                         re.sub(r"\s*\(part \d+ of \d+\)$", "", b.heading_path[-1]) == h) == 1
            want = a.id if unique else None
            out.append(("source#heading", f"{source}#{h}", want))
            out.append(("URL#anchor", f"https://handbook.example.com/{source}#{slug(h)}", want))
            out.append(("URL of another site, same page name", f"https://other.example.org/{source.rsplit('/', 1)[-1]}"
                        f"#{slug(h)}", None))
    for a in articles:
        out.append(("title", a.title, a.id if titles[" ".join(a.title.casefold().split())] == 1 else None))
        if a.heading_path:
            h = re.sub(r"\s*\(part \d+ of \d+\)$", "", a.heading_path[-1])
            if last[h.casefold()] == 1 and not a.title.casefold().startswith(h.casefold()) \
                    and titles[" ".join(h.casefold().split())] == 0:
                out.append(("title", h, a.id))
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", a.text) if len(s.split()) >= 8]
        if sentences:
            s = rng.choice(sentences)
            # a quote is the article's only if its words occur in no other article
            own = sum(_words(s) in t for t in texts) == 1
            out.append(("quote", s, a.id if own else None))
            # a quote a bot retyped: one word in every eight changed (its other 3-word runs still the article's)
            ws = s.split()
            for i in range(3, len(ws), 8):
                ws[i] = "zzword"
            out.append(("retyped quote", " ".join(ws), a.id if own else None))
        words = a.text.split()
        if len(words) >= 30:
            i = rng.randrange(0, len(words) - 12)
            cut = " ".join(words[i:i + 10])
            out.append(("quote", f'"{cut}"', a.id if sum(_words(cut) in t for t in texts) == 1 else None))
            short = " ".join(re.findall(r"\w+", " ".join(words[i:i + 3]))[:3])
            if " ".join(short.casefold().split()) not in titles and short.casefold() not in last:
                out.append(("short quote (3 words)", short, None))
    # must stay unmapped: pages not in the KB, unknown headings, bare numbers, text from no article
    for source in list(per_doc)[:10]:
        out.append(("not in the KB", f"{source.rsplit('.', 1)[0]}-archive.html", None))
        out.append(("not in the KB", f"{source}#No such heading here", None))
    for n in ("1", "2", "17", "[3]"):
        out.append(("not in the KB", n, None))
    out.append(("not in the KB", "https://elsewhere.example.org/careers/open-roles.html", None))
    out.append(("not in the KB", "The quarterly town hall is streamed to every office in the company.", None))
    for s in rng.sample(foreign, min(100, len(foreign))):  # sentences of another KB: the quote must stay unmapped
        if not any(_words(s) in t for t in texts):
            out.append(("quote from another KB", s, None))
    return out


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


def evaluate(resolver: Resolver, refs) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for kind, ref, want in refs:
        got = resolver.resolve(ref)
        if want is None:
            table[kind]["unmapped (right)" if not got.mapped else "mapped wrong"] += 1
        elif not got.mapped:
            table[kind]["unmapped"] += 1
        else:
            table[kind]["mapped right" if got.articles == (want,) else "mapped wrong"] += 1
    return table


def show(name: str, table: dict[str, Counter]) -> None:
    print(f"\n{name}")
    print("| kind | references | mapped right | unmapped as it must | mapped wrong | unmapped |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total = Counter()
    for kind, c in sorted(table.items()):
        total.update(c)
        print(f"| {kind} | {sum(c.values())} | {c['mapped right']} | {c['unmapped (right)']} | {c['mapped wrong']} "
              f"| {c['unmapped']} |")
    n = sum(total.values())
    right = total["mapped right"] + total["unmapped (right)"]
    print(f"| all | {n} | {total['mapped right']} | {total['unmapped (right)']} | {total['mapped wrong']} "
          f"| {total['unmapped']} |")
    print(f"right: {right / n:.1%} ({right}/{n}); wrong: {total['mapped wrong']}")


def build(source: Path, out: Path):
    import grace

    return grace.build_kb(source, out).kb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tts", type=Path, default=TTS)
    args = parser.parse_args()
    rng = random.Random(39)
    with tempfile.TemporaryDirectory() as tmp:
        sample = build(ROOT / "benchmarks/sample/handbook", Path(tmp) / "sample")
        print("quote threshold on the sample (min words, min 3-gram overlap): right / wrong over the quote kinds")
        tts = build(args.tts, Path(tmp) / "tts") if args.tts.is_dir() else None
        refs = references(sample.articles, rng, sentences_of(tts.articles) if tts else [])
        for words in (3, 4, 6, 8):
            for overlap in (0.3, 0.4, 0.5, 0.6, 0.8):
                t = evaluate(Resolver(sample.articles, min_quote_words=words, min_quote_overlap=overlap),
                             [r for r in refs if "quote" in r[0]])  # quote, changed quote, short quote
                c = sum(t.values(), Counter())
                print(f"  {words} words, {overlap:.0%}: right {c['mapped right'] + c['unmapped (right)']}, "
                      f"wrong {c['mapped wrong']}, unmapped {c['unmapped']}")
        show(f"sample KB ({len(sample.articles)} articles)", evaluate(Resolver(sample.articles), refs))
        site_rule(sample.articles, refs)
        if tts is None:
            print(f"\nTTS handbook: skipped ({args.tts} is absent)")
            return
        tts_refs = references(tts.articles, rng, sentences_of(sample.articles))
        show(f"TTS handbook, held out ({len(tts.articles)} articles)", evaluate(Resolver(tts.articles), tts_refs))
        site_rule(tts.articles, tts_refs)


def site_rule(articles, refs) -> None:
    """The URL kinds again with the rewrite rule a team whose bot prints its own site's URLs gives (the site's
    prefix read as the KB's root): a root-level document's URL maps only so."""
    from kb_builder.references import read_rewrites

    urls = [r for r in refs if r[0].startswith("URL")]
    if "rewrites" not in Resolver.__dataclass_fields__:
        return
    c = sum(evaluate(Resolver(articles, rewrites=read_rewrites(["https://handbook.example.com/="])), urls).values(),
            Counter())
    print(f"URL kinds with the rule https://handbook.example.com/ = \"\": {len(urls)} references, right "
          f"{c['mapped right'] + c['unmapped (right)']}, wrong {c['mapped wrong']}, unmapped {c['unmapped']}")


if __name__ == "__main__":
    main()
