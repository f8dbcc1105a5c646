"""The one-pass reading of the common answer shape gives exactly what the full reading gives.

``read_markers`` reads an answer holding only ``[n]``-style markers and ending with a "Sources:" list of
``[n] reference`` lines in one pass, with source-list blocks and entry lines remembered between answers (the scorer
reads a million answers); every other answer takes the full reading. Here both readings are compared, field by
field, on a large corpus of generated answers: the common shape and its near misses (a link, a footnote, a
definition, a fence, CRLF, a bullet entry, an entry on the heading line, blank lines in the list, duplicates, ranges,
unlisted numbers) and hostile strings.
"""

from __future__ import annotations

import random

from harness.scoring.markers import MAX_MARKERS, MAX_RANGE, read_markers

WORDS = "leave policy days annual the a of to must sick pay bonus 10% travel receipt 3.5".split()
RARE = "m² mc² é Πηγές 中文 \"quoted words of a claim\" (see above) [draft] a[0] x]y [ ] Sources: ~~~ `x`".split()
REFS = ("section-1/doc-1.html#heading-2", "https://intranet.example.com/handbook/a.html#b", "Document 3 > Heading 1",
        "chunk-12345", "`code.md`", "<https://x.example/y>", "\"A quote of the article\"", "**bold.pdf**",
        "- dash first", ": colon first", "[Pay policy](https://x.example/pay)", "doc (1).pdf", "", "   ",
        "x" * 300, "a [1] inside", "ref with trailing spaces   ")
HEADINGS = ("Sources:", "Sources", "**Sources:**", "## References", "Quellen:", "Πηγές:", "SOURCES:", "Source:",
            "Sources: [1] inline.html", "Sources: a.html; b.html", "Bibliography", "Sources say so", "Notes:",
            "  Sources:", "Références :", "Fuentes:")
MARKERS = ("[{n}]", "[{n}]", "[{n}, {m}]", "[{n}-{m}]", "[{n} and {m}]", "[doc{n}]", "[Source {n}]", "[^{n}]",
           "【{n}†source】", "【{n}†file.pdf】", "¹", "<sup>{n}</sup>", "[{n}](https://x.example/{n})", "[[{n}]](u)",
           "[{n}]:", "[1-500]", "[0]", "[999]", "[{n};{m}]", "`[{n}]`", "[{n}](", "[1000]", "[{n}0000]", "[0{n}]")
ENTRIES = ("[{n}] {ref}", "[{n}] {ref}", "[{n}] {ref}", "[{n}]: {ref}", "{n}. {ref}", "({n}) {ref}", "- {ref}",
           "[^{n}]: {ref}", "  [{n}] {ref}", "[{n}]{ref}", "[{n}] - {ref}", "[{n}, {m}] {ref}", "[{n}]",
           "    continued line", "")
HOSTILE = ("[" * 3000, "]" * 3000, "[1]" * (MAX_MARKERS + 5), "[1" + ", 1" * 200 + "]", "\n" * 500 + "Sources:",
           "Sources:\n" + "\n".join(f"[{i}] r{i}" for i in range(1, MAX_MARKERS + 3)), "```\n[1]\n", "~~~\n[1] a",
           *(f"See [1500], [{n}] and [1999-2001].\n\nSources:\n" + "\n".join(f"[{i}] r{i}" for i in range(1, n + 1))
             for n in (1500, MAX_MARKERS, MAX_MARKERS + 1)),
           "Sources:\r\n[1] a.html\r\n", "a\u2028[1]\u2029Sources:\u2028[1] b", "\x00[1]\x00\nSources:\n[1] \x00",
           f"[1-{MAX_RANGE + 2}]", "[1]\n\nSources:\n[1] a\n\n[2] b", "Sources:\n[1] a", "[1]\nSources:\n",
           "text [1].\nSources:\n[1] a.html\nSources:\n[1] b.html", "é" * 1000 + " [2]\n\nSources:\n[2] é")


def _answer(rng: random.Random) -> str:
    n_refs = rng.choice((1, 1, 2, 3, 4))
    pieces = []
    for _ in range(rng.randint(0, 4)):
        sentence = " ".join(rng.choice(RARE) if rng.random() < 0.03 else rng.choice(WORDS)
                            for _ in range(rng.randint(1, 12)))
        for _ in range(rng.choice((0, 1, 1, 2))):
            n = rng.randint(1, n_refs + 1)
            marker = rng.choice(MARKERS[:3] * 6 + MARKERS).format(n=n, m=rng.randint(1, n_refs + 2))
            sentence = f"{sentence}{rng.choice(('', ' '))}{marker}" if rng.random() < 0.7 else f"{marker} {sentence}"
        pieces.append(sentence + rng.choice((".", ".", "!", "", "?", ".\n", "\n\n", " ")))
    text = " ".join(pieces)
    if rng.random() < 0.85:
        lines = [rng.choice(HEADINGS[:1] * 10 + HEADINGS)]
        for n in range(1, n_refs + 1):
            ref = rng.choice(REFS[:2] * 8 + REFS)
            lines.append(rng.choice(ENTRIES[:1] * 30 + ENTRIES).format(n=rng.choice((n,) * 12 + (1, 9)), m=n + 1,
                                                                        ref=ref))
        text += rng.choice(("\n\n", "\n", " ", "\n\n\n", "\n  \n")) + "\n".join(lines)
    return text + rng.choice(("", "", "\n", "  ", "\n\n", "\t"))


def test_the_one_pass_reading_agrees_with_the_full_reading_on_a_varied_and_hostile_corpus():
    rng = random.Random(39)
    corpus = [_answer(rng) for _ in range(20_000)] + list(HOSTILE)
    corpus += [t[: rng.randint(0, len(t))] for t in corpus[:3000]]  # cut anywhere, as a max_tokens stop does
    plain = 0
    for text in corpus:
        citations = rng.choice((None, None, [], ["a.html"], ["1", "2"], ["x.html", "y.html", "z.html"], [""]))
        fast, full = read_markers(text, citations), read_markers(text, citations, fast=False)
        assert fast == full, text
        plain += bool(fast.sources) and all(s.origin == "list" for s in fast.sources) and "](" not in text
        # the blocks and lines remembered from an answer change nothing on the next read of the same answer
        assert read_markers(text, citations) == full, text
    # the corpus exercises the one-pass reading, not only the full one it falls back to
    assert plain > len(corpus) // 3
