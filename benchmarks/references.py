"""How well the reference resolver (kb_builder.references) maps a system's own references onto KB articles.

Two parts. First (``--foreign-only`` runs it alone), references made by a chunking that is not grace's: a help-desk
bot's own chunker (benchmarks/sample/bots/handbook_bot.py) over the TTS handbook and the Helvia playbook (its
articles assembled into pages), each heading's anchor as three site generators make it, each page's URL, each
chunk's URL and text, and a 30-word quote of each chunk; the truth is the set of articles holding the text each
points to, found by shared text (benchmarks/shared_text.py, apart from grace's code). The rule for a text over two
articles is chosen on TTS; Helvia is held out. Second, references built from each KB's own records (the sample KB and
TTS): paths, URLs, titles, quoted sentences, a few words cut from an article, and some that must stay unmapped (pages
not in the KB, another site's page of a KB document's name, too-short quotes, bare numbers, text from no article);
the quote threshold is chosen on the sample. Usage: python benchmarks/references.py [--tts PATH] [--helvia PATH]
[--foreign-only]
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

SHARED = ROOT.parent / "shared" / "data"
TTS = SHARED / "tts-handbook" / "pages"
HELVIA = SHARED / "helvia-playbook-rag" / "map.json"


def sentences_of(articles) -> list[str]:
    return [s.strip() for a in articles for s in re.split(r"(?<=[.!?])\s+", a.text) if len(s.split()) >= 8]


def references(articles, rng: random.Random, foreign: list[str]) -> list[tuple[str, str, str | tuple[str, ...] | None]]:
    """(kind, reference, expected article ID, or the page's IDs, or None for must-stay-unmapped), built from the KB's
    records. A heading's anchor is measured against the text it leads to (foreign_references)."""
    out: list[tuple[str, str, str | tuple[str, ...] | None]] = []
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
        page = tuple(a.id for a in arts)  # a page maps to its articles
        out.append(("source path", source, page))
        out.append(("URL", f"https://handbook.example.com/{stem}/", page))
        # another site's page of the same name (every site has an /about): never this KB's document
        out.append(("URL of another site, same page name", f"https://other.example.org/{stem.rsplit('/', 1)[-1]}",
                    None))
        for a in arts:
            if a.heading_path:
                h = re.sub(r"\s*\(part \d+ of \d+\)$", "", a.heading_path[-1])
                out.append(("URL of another site, same page name", f"https://other.example.org/"
                            f"{source.rsplit('/', 1)[-1]}#{slug(h)}", None))
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
            table[kind]["mapped right" if got.articles == (want if isinstance(want, tuple) else (want,))
                        else "mapped wrong"] += 1
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
    parser.add_argument("--helvia", type=Path, default=HELVIA)
    parser.add_argument("--foreign-only", action="store_true", help="only the references of a chunking not grace's")
    args = parser.parse_args()
    rng = random.Random(39)
    if args.foreign_only:
        foreign_main(args)
        return
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


# ---------------------------------------------------------------- references made by a chunking that is not grace's
#
# A bot's own chunker (benchmarks/sample/bots/handbook_bot.py: sections at ##-####, at most 220 words) makes the
# references: every heading's anchor on the site (by one of three generators' rules, each written here, apart from
# grace's), every page's URL, every chunk's URL and text, and a 30-word quote from each chunk. The truth is the set
# of articles holding the text each points to, found by shared text (benchmarks/shared_text.py). A resolution is
# right when it names exactly that set (unmapped when no article holds the text), partial when it names some of it
# and nothing else, outside when it names an article not in it.


def _bot():
    import importlib.util

    spec = importlib.util.spec_from_file_location("handbook_bot", ROOT / "benchmarks/sample/bots/handbook_bot.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def kramdown_slug(text: str) -> str:
    """kramdown's auto_ids (Jekyll without GFM input): leading non-letters dropped, ASCII letters, digits, spaces
    and hyphens kept, spaces as hyphens."""
    s = re.sub(r"^[^a-zA-Z]+", "", text)
    s = re.sub(r"[^a-zA-Z0-9 -]", "", s).replace(" ", "-").lower()
    return s or "section"


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc slugify (MkDocs): accents folded to ASCII, punctuation dropped, runs of spaces and
    hyphens one hyphen."""
    import unicodedata

    s = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    s = re.sub(r"[^\w\s-]", "", s).strip().lower()
    return re.sub(r"[-\s]+", "-", s)


def site_anchors(texts: list[str], rule: str, github) -> list[str]:
    """Each heading's anchor on a page by one generator: its slug, numbered when the page has it already."""
    slug, sep = {"github": (github, "-"), "kramdown": (kramdown_slug, "-"), "mkdocs": (mkdocs_slug, "_")}[rule]
    seen: set[str] = set()
    out = []
    for t in texts:
        base = anchor = slug(t)
        n = 0
        while anchor in seen:
            n += 1
            anchor = f"{base}{sep}{n}"
        seen.add(anchor)
        out.append(anchor)
    return out


def foreign_references(folder: Path, articles, site: str, rng: random.Random, prefix: str
                       ) -> list[tuple[str, str, frozenset[str]]]:
    """(kind, reference, the articles holding the text it points to) for every page of ``folder``."""
    from shared_text import Page

    bot = _bot()
    by_page: dict[str, list] = defaultdict(list)
    for a in articles:
        by_page[a.source].append(a)
    chunks = defaultdict(list)
    for c in bot.chunk_pages(folder, prefix, site):
        chunks[c.page].append(c)
    out: list[tuple[str, str, frozenset[str]]] = []
    rules = ("github", "kramdown", "mkdocs")
    for n, path in enumerate(sorted(folder.rglob("*.md"))):
        page = path.relative_to(folder).as_posix()
        raw, body = bot.read_page(path)
        text = Page.of(raw, [(a.id, a.text) for a in by_page.get(page, [])])
        url = bot.page_url(page, site)
        out.append(("page URL", url, frozenset(text.held(body, len(raw)))))
        heads = bot.headings(raw, body)
        rule = rules[n % len(rules)]  # each page as one site generator makes its anchors
        anchors = site_anchors([h.text for h in heads], rule, bot.github_slug)
        led = {}  # the bot's own anchor (github's rule, or an explicit {#id}) -> the articles it leads to
        for i, h in enumerate(heads):
            held = frozenset(text.held(*bot.led_to(raw, heads, i)))
            led[h.anchor] = held
            if h.level >= 2:
                explicit = h.anchor if bot._EXPLICIT.search(raw[h.start:raw.find("\n", h.start)]) else None
                out.append((f"heading anchor ({rule})", f"{url}#{explicit or anchors[i]}", held))
        for c in chunks.get(page, []):
            out.append(("chunk URL", c.url, led[c.url.partition("#")[2]] if "#" in c.url else
                        frozenset(text.held(body, len(raw)))))
            out.append(("chunk text", c.text, frozenset(text.held(c.start, c.end))))
            kept = bot.kept_words(raw, c.start, c.end)
            if len(kept) >= 30:
                i = rng.randrange(0, len(kept) - 29)
                a, b = kept[i][0], kept[i + 29][1]
                out.append(("30-word quote", bot.shown(raw[a:b]), frozenset(text.held(a, b))))
    return out


def judge(resolver: Resolver, refs) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for kind, ref, truth in refs:
        got = set(resolver.resolve(ref).articles)
        if not got:
            table[kind]["right" if not truth else "unmapped"] += 1
        elif got == truth:
            table[kind]["right"] += 1
        elif not truth:  # no article shares text with what it points to (a section of template tags only)
            table[kind]["unchecked"] += 1
        elif got <= truth:
            table[kind]["partial"] += 1
        else:
            table[kind]["outside"] += 1
    return table


def show_foreign(name: str, table: dict[str, Counter]) -> None:
    print(f"\n{name}")
    print("| kind | references | right article or set | partial (within the set) | outside | unmapped | mapped, no "
          "shared text to check |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    total = Counter()
    for kind, c in sorted(table.items()):
        total.update(c)
        print(f"| {kind} | {sum(c.values()):,} | {c['right']:,} | {c['partial']:,} | {c['outside']:,} | {c['unmapped']:,} "
              f"| {c['unchecked']:,} |")
    n = sum(total.values())
    print(f"| **all** | **{n:,}** | **{total['right']:,}** | **{total['partial']:,}** | **{total['outside']:,}** "
          f"| **{total['unmapped']:,}** | **{total['unchecked']:,}** |")
    print(f"right {total['right'] / n:.1%}, outside {total['outside'] / n:.2%} (and {total['unchecked'] / n:.2%} mapped "
          "where no article shares text with what it points to)")


def helvia_pages(map_json: Path, out: Path) -> Path:
    """The Helvia playbook's articles assembled into a handbook: one page per source document, each article a
    ``##`` section of its title followed by its body, in the documents' row order."""
    import json

    data = json.loads(map_json.read_text(encoding="utf-8"))
    rows: dict[str, dict] = {}
    for topic in data["topics"]:
        for a in topic["articles"]:
            rows.setdefault(a["rowRef"], a)
    pages: dict[str, list[str]] = defaultdict(list)
    for a in sorted(rows.values(), key=lambda a: (a["file"], a["row"])):
        pages[a["source"]].append(f"## {a['title']}\n\n{a['body'].strip()}\n")
    out.mkdir(parents=True, exist_ok=True)
    for source, parts in pages.items():
        name = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")
        (out / f"{name}.md").write_text(f"# {source}\n\n" + "\n".join(parts), encoding="utf-8")
    return out


def foreign_main(args) -> None:
    from kb_builder.references import read_rewrites

    sys.path.insert(0, str(ROOT / "benchmarks"))
    rng = random.Random(46)
    with tempfile.TemporaryDirectory() as tmp:
        handbooks = []
        if args.tts.is_dir():
            handbooks.append(("TTS handbook", args.tts, "https://handbook.tts.gsa.gov/", "tts"))
        else:
            print(f"TTS handbook: skipped ({args.tts} is absent)")
        if args.helvia.is_file():
            handbooks.append(("Helvia playbook", helvia_pages(args.helvia, Path(tmp) / "helvia"),
                              "https://playbook.helvia.example/", "hv"))
        else:
            print(f"Helvia playbook: skipped ({args.helvia} is absent)")
        for n, (name, folder, site, prefix) in enumerate(handbooks):
            kb = build(folder, Path(tmp) / prefix)
            refs = foreign_references(folder, kb.articles, site, rng, prefix)
            rules = read_rewrites([f"{site}="])
            if n == 0 and "min_quote_run" in Resolver.__dataclass_fields__:
                print(f"quote rule on the {name} (chosen here; the next handbook is held out): the run an article "
                      "must hold to be one of several a text overlaps")
                texts = [r for r in refs if r[0] in ("chunk text", "30-word quote")]
                for run, share in ((2, 0.9), (4, 0.9), (6, 0.9), (8, 0.9), (12, 0.9), (4, 0.8), (4, 1.01)):
                    c = sum(judge(Resolver(kb.articles, rewrites=rules, min_quote_run=run, elsewhere_share=share),
                                  texts).values(), Counter())
                    print(f"  {run} 3-word runs, unmapped when another page holds {share:.0%}: right {c['right']}, "
                          f"partial {c['partial']}, outside {c['outside']}, unmapped {c['unmapped']}")
            show_foreign(f"{name} ({len(kb.articles):,} articles), references of the bot's chunking",
                         judge(Resolver(kb.articles, rewrites=rules), refs))


if __name__ == "__main__":
    main()
