"""A bot whose every sentence is copied from the chunk or article it cites, run by ``grace run`` (issue 46).

The support check must call such a bot supported, whatever way it cites. Like a shipped help-desk bot, it chunks a
handbook's source files itself (sections at ``##``-``####`` or ``<h2>``, capped at 220 words), gives each chunk a
URL on the handbook's site with the heading's anchor, and copies sentences from its chunks in the bot's own plain
reading of the markup. It answers 1 to 3 sentences, each from a chunk of its own, in one of three citation styles,
each a model of the run:

* ``grace``: GRACE's ``[ID: n]`` (the sentences copied from the KB article it cites): before the full stop, after
  it, a single ``[ID: n].`` closing the answer, and inline markers with a closing ``[ID: n].`` as well; read as
  GRACE reads a prompt (one citation, by KB ID), and again as references (``grace-refs``);
* ``footnotes``: ``[1]`` markers (before or after the full stop) and a ``Sources:`` list of the chunks' links;
* ``links``: a link after the sentence, ``… notice. (see [About PPL](url))``, ``… notice. See [About PPL](url).``
  or ``… notice ([About PPL](url)).``

Truth is computed apart from grace: a sentence is copied when its words, in order, are words of the article its
citation resolves to (lower case, letters and digits). Only such sentences are used; :func:`build_copied_run`
reports how many chunk sentences were left out because their chunk's URL lands on an article without them (a
mapping matter, not the support check's).
"""

from __future__ import annotations

import html
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

SITE = "https://handbook.example.org/"
REWRITE = f"{SITE}="
MODELS = ("grace", "grace-refs", "footnotes", "links")
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_HTML_HEADING = re.compile(r"<h2[^>]*>(.*?)</h2>", re.S)
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_LIQUID = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.S)
_TAG = re.compile(r"<[^>]+>")
_EMPHASIS = re.compile(r"\*\*|__|`|(?<![\w*])[*_](?=\S)|(?<=\S)[*_](?![\w*])")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])")
_WORD = re.compile(r"[^\W_]+")
_CAP = 220


def words(text: str) -> str:
    """Text as the truth compares it: its words in order, lower case, padded."""
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def slug(heading: str) -> str:
    """The anchor a site generator makes of a heading (kramdown/GitHub style)."""
    return "-".join(re.sub(r"[^\w\s-]", "", heading.casefold()).split())


def plain_lines(markup: str) -> list[str]:
    """The bot's plain reading of a section: one line per paragraph or list item, links as their text, no
    emphasis, tags, Liquid, tables or headings."""
    text = html.unescape(_TAG.sub("\n", _LIQUID.sub("", _LINK.sub(r"\1", markup))))
    out = []
    for line in text.split("\n"):
        if "|" in line or line.lstrip().startswith("#"):
            continue
        line = " ".join(_EMPHASIS.sub("", _ITEM.sub("", line)).split())
        if line:
            out.append(line)
    return out


def sentences(lines: list[str]) -> list[str]:
    """Sentences a bot copies: 6 to 40 words, ending in a full stop, one sentence each (none the splitter left
    whole: "for days. “I’d like ...", "9:00 a.m. to 3:30 p.m.")."""
    return [s for line in lines for s in _SENTENCE.split(line)
            if 6 <= len(s.split()) <= 40 and s.endswith(".") and not re.search(r"[.!?]\W*\s", s)]


@dataclass(frozen=True)
class Chunk:
    id: str
    url: str
    title: str
    sentences: tuple[str, ...]


def chunks(handbook: Path) -> list[Chunk]:
    """The bot's own index: each section of each page, capped at 220 words (a longer one is cut into parts that
    keep the section's URL)."""
    out: list[Chunk] = []
    for path in sorted(handbook.rglob("*")):
        if path.suffix not in (".md", ".html"):
            continue
        page = path.relative_to(handbook).with_suffix("").as_posix()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            parts = _HTML_HEADING.split(text)
            sections = [(_TAG.sub("", h).strip(), body) for h, body in zip(parts[1::2], parts[2::2], strict=False)]
        else:
            parts = re.split(r"^#{2,4}[ \t]+(.+?)[ \t#]*$", _FRONT_MATTER.sub("", text), flags=re.M)
            sections = list(zip(parts[1::2], parts[2::2], strict=False))
        for heading, body in sections:
            title = _LINK.sub(r"\1", _LIQUID.sub("", heading)).strip()
            part: list[str] = []
            for s in [*sentences(plain_lines(body)), None]:
                if s is None or part and sum(len(x.split()) for x in part) + len(s.split()) > _CAP:
                    if part:
                        out.append(Chunk(f"c-{len(out) + 1:05d}", f"{SITE}{page}#{slug(title)}", title, tuple(part)))
                    part = []
                if s is not None:
                    part.append(s)
    return out


@dataclass(frozen=True)
class Copied:
    sentence: str
    article: str  # the KB article the citation resolves to, holding the sentence
    reference: str  # the chunk's URL (references), or "" (a GRACE answer cites the article's ID)
    title: str


def copied_sentences(kb_dir: Path, handbook: Path) -> tuple[list[Copied], list[Copied], int]:
    """(sentences copied from chunks, resolved through their URL; sentences copied from KB articles; chunk
    sentences left out because their chunk's URL lands on no article holding them)."""
    import grace
    from kb_builder.loader import load_kb

    kb = load_kb(kb_dir)
    texts = {a.id: words(a.text) for a in kb.articles}
    index = chunks(handbook)
    found = grace.resolve_references(kb, [c.url for c in index], rewrites=[REWRITE])
    from_chunks, left_out = [], 0
    for chunk, res in zip(index, found, strict=True):
        for s in chunk.sentences:
            holding = [a for a in res.articles if words(s) in texts[a]]
            if holding:
                from_chunks.append(Copied(s, holding[0], chunk.url, chunk.title))
            else:
                left_out += 1
    from_articles = [Copied(s, a.id, "", a.title) for a in kb.articles for s in sentences(plain_lines(a.text))
                     if words(s) in texts[a.id]]
    return from_chunks, from_articles, left_out


def _body(s: Copied) -> str:
    return s.sentence[:-1]  # without its full stop


def grace_answer(rng: random.Random, picked: list[Copied]) -> str:
    """GRACE's ``[ID: n]``: before the full stop, after it, one closing the answer, or inline and closing."""
    form = rng.randrange(4)
    if form == 0:
        return " ".join(f"{_body(s)} [ID: {s.article}]." for s in picked)
    if form == 1:
        return " ".join(f"{s.sentence} [ID: {s.article}]" for s in picked)
    if form == 2:  # one article, cited once at the end, as the grounded prompt asks
        same = [s for s in picked if s.article == picked[0].article]
        return " ".join(s.sentence for s in same) + f"\n\n[ID: {picked[0].article}]."
    return " ".join(f"{_body(s)} [ID: {s.article}]." for s in picked) + f"\n\n[ID: {picked[-1].article}]."


def footnote_answer(rng: random.Random, picked: list[Copied]) -> str:
    after = rng.random() < 0.5
    body = " ".join(f"{s.sentence}[{n}]" if after else f"{_body(s)} [{n}]." for n, s in enumerate(picked, 1))
    listed = "\n".join(f"[{n}] [{s.title}]({s.reference})" if n % 2 else f"[{n}] {s.reference}"
                       for n, s in enumerate(picked, 1))
    return f"{body}\n\nSources:\n{listed}"


def link_answer(rng: random.Random, picked: list[Copied]) -> str:
    out = []
    for s in picked:
        link = f"[{s.title}]({s.reference})"
        form = rng.randrange(3)
        out.append(f"{s.sentence} (see {link})" if form == 0 else f"{s.sentence} See {link}." if form == 1
                   else f"{_body(s)} ({link}).")
    return " ".join(out)


def answers(from_chunks: list[Copied], from_articles: list[Copied], n: int, seed: int = 46) -> dict[str, dict]:
    """Per model, ``n`` answers by question ID: 1 to 3 sentences, each from a chunk (an article) of its own."""
    rng = random.Random(seed)

    def pick(pool: list[Copied]) -> list[Copied]:
        out: list[Copied] = []
        want = rng.randint(1, 3)
        while len(out) < want:
            s = rng.choice(pool)
            if all(s.article != o.article for o in out):
                out.append(s)
        return out

    grace_ones = {f"q{i:03d}": pick(from_articles) for i in range(n)}
    chunk_ones = {f"q{i:03d}": pick(from_chunks) for i in range(n)}
    texts = {m: {} for m in MODELS}
    for q, picked in grace_ones.items():
        texts["grace"][q] = texts["grace-refs"][q] = grace_answer(rng, picked)
    for q, picked in chunk_ones.items():
        texts["footnotes"][q] = footnote_answer(rng, picked)
        texts["links"][q] = link_answer(rng, picked)
    return {"answers": texts, "sentences": {"grace": grace_ones, "chunks": chunk_ones}}


_BOT = '''
"""One model of the copied-sentence bot: its answers, written beforehand per question."""
import json
from pathlib import Path

ANSWERS = json.loads((Path(__file__).parent / "{name}.json").read_text(encoding="utf-8"))


def answer(request):
    return ANSWERS[request.question_id]
'''


def build_copied_run(root: Path, handbook: Path, n: int = 40) -> tuple[Path, Path, dict]:
    """``root/kb`` built from ``handbook``, and the run ``root/run`` of the four models by ``grace run`` (``n``
    questions); returns (run, kb, what was written: answers, sentences, left_out)."""
    from tests.conftest import run_grace, write

    root.mkdir(parents=True, exist_ok=True)
    kb = root / "kb"
    code, out = run_grace("kb", "build", handbook, "--out", kb, "--no-lint")
    assert code == 0, out
    from_chunks, from_articles, left_out = copied_sentences(kb, handbook)
    made = answers(from_chunks, from_articles, n)
    made["left_out"] = left_out
    lines = ["question_id,question,expected_answer,expected_citations,must_refuse,notes"]
    lines += [f"{q},What does the handbook say (case {q})?,,{picked[0].article},false,"
              for q, picked in made["sentences"]["grace"].items()]
    write(root / "gold.csv", "\n".join(lines) + "\n")
    toml = ""
    for model in MODELS:
        (root / f"{model}.json").write_text(json.dumps(made["answers"][model]), encoding="utf-8")
        (root / f"{model.replace('-', '_')}.py").write_text(_BOT.replace("{name}", model), encoding="utf-8")
        toml += f'[[models]]\nspec = "python:{root / model.replace("-", "_")}.py:answer"\nname = "{model}"\n\n'
        if model == "grace":  # GRACE's reading of a prompt's answer (a python: system reads references by default)
            toml += '[models.citations]\nscoring = "single"\nreads = "ids"\n\n'
        else:
            toml += f'[models.citations]\nscoring = "multi"\nreads = "references"\nrewrite = {{"{SITE}" = ""}}\n\n'
    write(root / "board.toml", toml)
    run = root / "run"
    code, out = run_grace("run", "--kb", kb, "--gold", root / "gold.csv", "--config", root / "board.toml",
                          "--out", run, "--no-cache")  # the answers are this bot's, whatever an earlier one said
    assert code == 0, out
    return run, kb, made
