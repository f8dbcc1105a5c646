"""Which language a KB (and each of its articles) is written in, and how each language is cut into search terms.

Every stage that reads words needs the language: the retrievers stem and drop
stop words, lint looks for phrases that lean on other text, token counts
differ for scripts without spaces, and the answer prompt and refusal sentence
should be the KB's. The language is detected once, at build, with py3langid
(a maintained fork of langid.py: 97 languages, its model ships inside the
package, numpy only, no download) or named with ``--language``, and recorded in
the manifest (``language``, and ``languages`` with article counts) and, for a
KB that mixes languages, on each article.

Search terms (:func:`terms`): words of two or more letters, lower-cased, stop
words dropped, Snowball-stemmed (PyStemmer) for the languages in
:data:`SNOWBALL`. Scripts written without spaces between words (Chinese,
Japanese kana and kanji, Thai, Lao, Khmer, Burmese) have no word boundaries to
find, so each run of them becomes its overlapping character bigrams (a
one-character run stays one term): the usual baseline for CJK retrieval, and
needs no segmenter. English keeps exactly the terms it had before languages were
recorded (the stop list of bm25f and bm25, the English stemmer), so no English
KB's rankings move.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from harness.core.citation_text import ANY_ID_MARKER

DEFAULT_LANGUAGE = "en"  # a KB that records no language was built before languages were: English, as it was read
# ISO 639-1 -> Snowball algorithm in PyStemmer
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish",
}
# scripts written without spaces between words: Hiragana/Katakana, CJK ideographs, Thai, Lao, Burmese, Khmer
NO_SPACE = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"
BIGRAM_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my"})
_HAS_NO_SPACE = re.compile(f"[{NO_SPACE}]")
# what is not the answer's words: links, code and its citation markers (any spelling of "[ID: 17]")
_NOT_WORDS = re.compile(r"https?://\S+|`[^`]*`|" + ANY_ID_MARKER.pattern, re.IGNORECASE)
_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s's and scikit-learn's pattern: what English always used
_SURFACE = re.compile(rf"[{NO_SPACE}]|(?:(?![{NO_SPACE}])[^\W_])+")  # letters and digits of any script
_WORD_OR_RUN = re.compile(rf"[{NO_SPACE}]+|(?:(?![{NO_SPACE}])\w){{2,}}")
# question and function words that still carry meaning in a policy question: kept out of the English stop list
MEANINGFUL_EN = frozenset("""off out up down over under above below against between during after before until
again further once few more most own same only very no nor not all any both each other some than too""".split())
# bm25s ships no Greek list: the common function words, written with and without accents (accents are kept in terms)
_GREEK_STOP = """ο η το οι τα του της των τον την τους τις ένας μια ένα ενός μιας και κι ή να θα δεν μη μην σε στο στη στην
στον στα στις στους από για με ως προς κατά μετά χωρίς ότι πως που πού τι ποιος ποια ποιο αν αλλά όμως είναι ήταν
έχει έχω έχουν είμαι εγώ εσύ αυτός αυτή αυτό αυτοί αυτές αυτά μου σου του μας σας τους επί υπό έως όπως όταν εδώ εκεί""".split()


def fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


# the question and helper words a question is built from, which NLTK's lists (made for documents) leave in:
# "comment", "quand", "faut" match every page that explains anything, and crowd out the question's topic words
QUESTION_WORDS = {
    "fr": "comment quand où pourquoi quel quelle quels quelles combien faut peut peuvent puis dois doit doivent "
          "est-ce lequel laquelle lesquels faire fait",
    "de": "wie was wann wo warum welche welcher welches welchen wer wen wem kann können muss müssen darf dürfen "
          "soll sollte sollen ich mein meine",
    "es": "cómo como cuándo cuando dónde donde por qué cuál cuáles cuánto cuántos puedo puede debo debe hay",
    "pt": "como quando onde porque por que qual quais quanto quantos posso pode devo deve",
    "it": "come quando dove perché quale quali quanto quanti posso può devo deve",
    "nl": "hoe wanneer waar waarom welke wie wat kan kunnen moet moeten mag",
    "el": "πώς πως πότε πού γιατί ποιος ποια ποιο ποιες πόσο πόσες πόσα μπορώ μπορεί πρέπει",
}


@lru_cache(maxsize=1)
def _stop_lists():
    """bm25s's ``stopwords`` module (plain lists) loaded alone: ``import bm25s.stopwords`` runs the package's
    ``__init__`` first, which imports scipy.sparse (0.09 s on every ``grace score``)."""
    import importlib.util

    spec = importlib.util.find_spec("bm25s")
    path = Path(next(iter(spec.submodule_search_locations))) / "stopwords.py"
    module_spec = importlib.util.spec_from_file_location("grace_bm25s_stopwords", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=64)
def stop_words(language: str) -> frozenset[str]:
    """The stop list of ``language`` (empty where none is known): bm25s's NLTK lists, English less MEANINGFUL_EN."""
    lists = _stop_lists()

    if language == "en":
        return frozenset(lists.STOPWORDS_EN_PLUS) - MEANINGFUL_EN
    if language == "el":
        greek = _GREEK_STOP + QUESTION_WORDS["el"].split()
        return frozenset(greek) | frozenset(fold(w) for w in greek)
    names = {"fr": "FRENCH", "de": "GERMAN", "nl": "DUTCH", "es": "SPANISH", "pt": "PORTUGUESE", "it": "ITALIAN",
             "da": "DANISH", "no": "NORWEGIAN", "sv": "SWEDISH", "ru": "RUSSIAN", "tr": "TURKISH", "zh": "CHINESE",
             "ko": "KOREAN"}
    words = getattr(lists, f"STOPWORDS_{names[language]}", ()) if language in names else ()
    return frozenset(w.lower() for w in words) | frozenset(QUESTION_WORDS.get(language, "").split())


@lru_cache(maxsize=64)
def stemmer(language: str) -> Callable[[list[str]], list[str]] | None:
    """PyStemmer's Snowball ``stemWords`` for ``language``; None where Snowball has no stemmer for it."""
    if language not in SNOWBALL:
        return None
    try:
        import Stemmer
    except ImportError:  # PyStemmer is a dependency; a broken install still searches, unstemmed
        return None
    return Stemmer.Stemmer(SNOWBALL[language]).stemWords


def words(text: str) -> list[str]:
    """Lower-cased words of two or more characters; a run of a script without spaces stays one piece here."""
    text = text.lower()
    if _HAS_NO_SPACE.search(text) is None:
        return _WORD.findall(text)
    return _WORD_OR_RUN.findall(text)


def surface_words(text: str) -> list[str]:
    """Every word of ``text`` as written: lower-cased, unstemmed, stop words and one-letter words kept, a
    character at a time in a script without spaces. For verbatim comparisons (a question copying its article)."""
    return _SURFACE.findall(text.lower())


def bigrams(run: str) -> list[str]:
    """A run of a script without spaces as its overlapping character pairs (one character: itself)."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str, language: str, stop: frozenset[str] | None = None) -> list[str]:
    """Search terms of ``text`` read as ``language``: stop words out, Snowball stems, bigrams for no-space scripts."""
    stop = stop_words(language) if stop is None else stop
    ws = [w for w in words(text) if w not in stop]
    if not any(_HAS_NO_SPACE.match(w) for w in ws):
        stem = stemmer(language)
        return stem(ws) if stem else ws
    plain = [w for w in ws if not _HAS_NO_SPACE.match(w)]
    stem = stemmer(language)
    stems = iter(stem(plain) if stem and plain else plain)
    out: list[str] = []
    for w in ws:
        if _HAS_NO_SPACE.match(w):
            out.extend(bigrams(w))
        else:
            out.append(next(stems))
    return out


def term_spans(text: str, language: str, stop: frozenset[str] | None = None) -> list[tuple[int, int, str]]:
    """:func:`terms` with where each one stands in ``text``: ``(start, end, term)``, a bigram spanning its two
    characters. For the annotation pages, which mark the words a search matched by what retrieval reads."""
    stop = stop_words(language) if stop is None else stop
    low = text.lower()
    pattern = _WORD if _HAS_NO_SPACE.search(low) is None else _WORD_OR_RUN
    found = [(m.start(), m.end(), w) for m in pattern.finditer(low) if (w := m.group()) not in stop]
    if len(low) != len(text):  # a letter lower-cased into two ("İ": "i" and a dot): back to the text's offsets
        at = [i for i, c in enumerate(text) for _ in c.lower()] + [len(text)]
        found = [(at[a], at[b], w) for a, b, w in found]
    stem = stemmer(language)
    if pattern is _WORD:  # no script without spaces: every piece is a word
        return [(a, b, t) for (a, b, _), t in zip(found, stem([w for *_, w in found]), strict=True)] if stem else found
    plain = [w for _, _, w in found if not _HAS_NO_SPACE.match(w)]
    stems = iter(stem(plain) if stem and plain else plain)
    out: list[tuple[int, int, str]] = []
    for a, b, w in found:
        if not _HAS_NO_SPACE.match(w):
            out.append((a, b, next(stems)))
        elif b - a < 2:
            out.append((a, b, w))
        else:
            out.extend((a + i, a + i + 2, w[i : i + 2]) for i in range(b - a - 1))
    return out


def query_terms(text: str, languages: Iterable[str]) -> list[str]:
    """A question's terms for a KB in ``languages``: each language's reading, a term counted once per reading that
    gives it (a one-language KB: exactly :func:`terms`). A question may be asked in any of a mixed KB's languages."""
    langs = list(dict.fromkeys(languages)) or [DEFAULT_LANGUAGE]
    if len(langs) == 1:
        return terms(text, langs[0])
    seen: list[str] = []
    for lang in langs:
        seen.extend(dict.fromkeys(terms(text, lang)))
    return list(dict.fromkeys(seen))


def char_ngrams(text: str, language: str, n: int = 4) -> list[str]:
    """``text`` as the character ``n``-grams of its words (stop words out, accents folded, each word padded with
    ``_``), for the ``char4`` retriever; a run of a script without spaces gives its bigrams, as in :func:`terms`.

    Overlapping pieces match what stemming misses: German compounds ("Urlaubsantrag" shares "urla", "rlau"... with
    "Urlaub beantragen"), inflections Snowball leaves apart, spelling slips. Character 4-grams are the classic choice
    for European languages (McNamee and Mayfield, 2004).
    """
    stop = stop_words(language)
    out: list[str] = []
    for w in words(text):
        if w in stop:
            continue
        if _HAS_NO_SPACE.match(w):
            out.extend(bigrams(w))
        else:
            out.extend(_grams(w, n))
    return out


@lru_cache(maxsize=1 << 18)
def _grams(word: str, n: int) -> tuple[str, ...]:
    padded = f"_{fold(word)}_"
    return (padded,) if len(padded) <= n else tuple(padded[i : i + n] for i in range(len(padded) - n + 1))


def query_ngrams(text: str, languages: Iterable[str]) -> list[str]:
    """A question's distinct n-grams in each of the KB's languages' readings (only the stop lists differ): a
    word's grams count once, as a long question repeating a word should not outweigh its other words."""
    seen: dict[str, None] = {}
    for lang in dict.fromkeys(languages) or [DEFAULT_LANGUAGE]:
        seen.update(dict.fromkeys(char_ngrams(text, lang)))
    return list(seen)


# -- detection -------------------------------------------------------------------------------------------------------
MIN_DETECT_CHARS = 40  # shorter texts (a stub, a title) take the KB's language: detectors guess on a few words
MIXED_SHARE = 0.1  # a second language this share of the articles (and at least MIXED_MIN of them) makes a mixed KB
MIXED_MIN = 3


@lru_cache(maxsize=1)
def _identifier():
    """py3langid's identifier over its model's arrays, unpacked once into grace's cache and memory-mapped.

    The package ships its 68 MB model LZMA-compressed: unpacking it took 0.36 s on
    every command that detected one language (``grace score`` meeting one
    ambiguous answer), more than the whole scoring of the sample benchmark.
    Memory-mapped, the unpacked arrays cost nothing to open and only the pages a
    text touches are read. A cache that cannot be written means the package's own
    (slow) load each time, never a failure.
    """
    try:
        from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
    except ImportError:
        return None
    import numpy as np

    from harness.core.files import cache_dir

    packed = MODEL_DIR / MODEL_FILE
    stat = packed.stat()
    folder = cache_dir() / "models" / f"py3langid-{stat.st_size}-{int(stat.st_mtime)}"
    if not (folder / _DONE).exists():
        _unpack(packed, folder)
    try:
        a = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        # the detector walks its automaton a byte at a time: a memoryview's item is a plain int, a memmap's a numpy
        # scalar made each time (0.7 -> 0.4 us a byte; a KB build detects every article)
        return LanguageIdentifier(a["ptc"], a["pc"], a["classes"].tolist(), memoryview(a["nextmove"]),
                                  a["out_feat"].tolist(), tk_row=a["nextmove_row"].tolist())
    except (OSError, ValueError, KeyError):  # no cache, or a damaged one
        return LanguageIdentifier.from_model_file(packed)


_ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")
_DONE = "complete"  # written last: a folder without it was cut short and is unpacked again


def _unpack(packed, folder) -> None:
    """Unpack into a folder of this process's own, then rename it into place: several processes (scoring workers
    spawned at once) may unpack into one empty cache, and writing the arrays in place truncated files another
    process had memory-mapped, which killed it with SIGBUS."""
    import lzma
    import os
    import shutil
    import tempfile

    import numpy as np

    own = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        shutil.rmtree(own, ignore_errors=True)
        own.mkdir(parents=True)
        with tempfile.TemporaryFile(suffix=".npz") as tmp:
            with lzma.open(packed) as src:
                shutil.copyfileobj(src, tmp, length=1 << 20)
            tmp.seek(0)
            with np.load(tmp, allow_pickle=False) as data:
                for name in _ARRAYS:
                    np.save(own / f"{name}.npy", data[name], allow_pickle=False)
        (own / _DONE).write_text("ok\n")
        if folder.exists() and not (folder / _DONE).exists():  # cut short by an earlier version: moved aside
            stale = folder.with_name(f".{folder.name}.{os.getpid()}.stale")
            os.rename(folder, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(own, folder)
    except (OSError, ValueError, KeyError):
        pass  # another process's copy landed first (it is complete), or a read-only or full cache: the caller
        #       loads what is there, else falls back to the package's own load
    finally:
        shutil.rmtree(own, ignore_errors=True)


def detect(text: str) -> str | None:
    """The ISO 639-1 code of ``text``'s language, or None when it is too short to tell (or py3langid is absent)."""
    text = _NOT_WORDS.sub(" ", text or "")
    if len(text.strip()) < MIN_DETECT_CHARS and not _HAS_NO_SPACE.search(text):
        return None
    ident = _identifier()
    if ident is None:
        return None
    lang, _ = ident.classify(text[:4000])
    return lang


def is_known(code: str) -> bool:
    """A language grace can read: a Snowball stemmer, a bigram script, or any two-letter code (stop words only)."""
    return bool(re.fullmatch(r"[a-z]{2}", code or ""))


def assign(texts: list[str], forced: str | None = None) -> tuple[str, list[str], dict[str, int]]:
    """(the KB's language, each text's language, article count per language) for a KB of ``texts``.

    ``forced`` (``--language``) sets every article. Otherwise each text is
    detected; a text too short to tell, or in a language fewer than
    ``MIXED_SHARE`` of the articles share (a page of English tool names in a
    French handbook), takes the majority language, so only a KB that really mixes
    languages is read as mixed.
    """
    if forced:
        return forced, [forced] * len(texts), {forced: len(texts)}
    found = [detect(t) for t in texts]
    counts = Counter(x for x in found if x)
    if not counts:
        return DEFAULT_LANGUAGE, [DEFAULT_LANGUAGE] * len(texts), {DEFAULT_LANGUAGE: len(texts)}
    main = counts.most_common(1)[0][0]
    n = len(texts)
    keep = {lang for lang, c in counts.items() if lang == main or (c >= MIXED_MIN and c / n >= MIXED_SHARE)}
    langs = [x if x in keep else main for x in found]
    return main, langs, dict(Counter(langs).most_common())


def describe(code: str) -> str:
    """What grace does with a language, for messages and the README table."""
    how = []
    how.append("Snowball stemmer" if code in SNOWBALL else "no stemmer")
    how.append("stop words" if stop_words(code) else "no stop words")
    if code in BIGRAM_LANGUAGES:
        how.append("character bigrams")
    return ", ".join(how)
