"""Text clean-up shared by the loaders: template tags, Markdown link noise, whitespace, titles.

Handbooks written for static-site generators (Jekyll, Eleventy) carry Liquid
tags. Some hide text (``{% comment %}``), some are markup around real text
(``{% alert %}``), some stand for a value a reader would see (a Slack channel
name). Dropping them blindly loses meaning, so each kind is handled.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right

_BLOCK_DROP = re.compile(r"\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}", re.S)
_SLACK = re.compile(r"\{%-?\s*slack_channel\s+[\"']([^\"']+)[\"']\s*-?%\}")
_TAG = re.compile(r"\{%-?.*?-?%\}", re.S)
_OUTPUT = re.compile(r"\{\{-?.*?-?\}\}", re.S)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_EMPTY_LINK = re.compile(r"\[([^\]]+)\]\(\s*\)")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M)
_HTML_TAG = re.compile(r"</?(?:div|span|br|p|section|details|summary|img|a|sup|sub|strong|em|b|i|u)\b[^>]*>", re.I)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_MANY_BLANK = re.compile(r"\n{3,}")
_TRAILING_WS = re.compile(r"[ \t]+\n")
_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")


def _slack(m: re.Match) -> str:
    return "#" + m.group(1) + " on Slack"


def strip_templates(text: str) -> str:
    text = _BLOCK_DROP.sub("", text)
    text = _SLACK.sub(_slack, text)
    text = _TAG.sub("", text)
    return _OUTPUT.sub("", text)


class Shifts:
    """Where a place in a text after substitutions was before them: a loader reads a page with its templates taken
    out and says where each section is in the file as written."""

    def __init__(self) -> None:
        self._passes: list[tuple[list[int], list[tuple[int, int, int]]]] = []  # per pass: out starts, (start, end, len)

    def sub(self, pattern: re.Pattern, repl, text: str) -> str:
        """``pattern.sub(repl, text)`` (``repl`` a string without groups, or a function), remembering each edit."""
        edits: list[tuple[int, int, int]] = []

        def record(m: re.Match) -> str:
            new = repl(m) if callable(repl) else repl
            edits.append((m.start(), m.end(), len(new)))
            return new

        out = pattern.sub(record, text)
        if edits:
            starts, delta = [], 0
            for a, b, n in edits:
                starts.append(a + delta)
                delta += n - (b - a)
            self._passes.append((starts, edits))
        return out

    def before(self, at: int) -> int:
        """The place in the original text of place ``at`` of the substituted one (a place inside a replacement:
        where the replaced text started)."""
        for starts, edits in reversed(self._passes):
            k = bisect_right(starts, at) - 1
            if k >= 0:
                a, b, n = edits[k]
                at = a if at < starts[k] + n else b + at - starts[k] - n
        return at


def strip_templates_mapped(text: str) -> tuple[str, Shifts]:
    """:func:`strip_templates`, and the :class:`Shifts` back to ``text``."""
    shifts = Shifts()
    if "{" not in text:
        return text, shifts
    text = shifts.sub(_BLOCK_DROP, "", text)
    text = shifts.sub(_SLACK, _slack, text)
    text = shifts.sub(_TAG, "", text)
    return shifts.sub(_OUTPUT, "", text), shifts


def _link(m: re.Match) -> str:
    label, url = m.group(1).strip(), m.group(2).strip()
    if url.startswith(("http://", "https://", "mailto:")) and url.removeprefix("mailto:") not in label:
        return f"{label} ({url.removeprefix('mailto:')})"
    return label


def clean_markdown(text: str) -> str:
    """Readable Markdown for a model: no images, no template or HTML noise, links kept as text."""
    text = strip_templates(text)
    text = _HTML_COMMENT.sub("", text)
    text = _IMAGE.sub("", text)
    text = _EMPTY_LINK.sub(r"\1", text)
    text = _LINK.sub(_link, text)
    if "]:" in text:  # the substring tests skip a regex pass over text that cannot match (most text)
        text = _REF_DEF.sub("", text)
    text = _HTML_TAG.sub("", text)
    return tidy(text)


# titles: a link keeps its text, markup goes, code spans and backslash escapes stay literal
_T_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_T_CODE = re.compile(r"(`+)(.+?)\1")
_T_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)|!\[([^\]]*)\]\[[^\]]*\]")
_T_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)|\[([^\]]+)\]\[[^\]]*\]")
_T_AUTOLINK = re.compile(r"<((?:https?://|mailto:)[^<>\s]+)>", re.I)
_T_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
_T_URL_IN_PARENS = re.compile(r"\s*\(\s*(?:https?://|mailto:|www\.)(?:[^()\s]|\([^()\s]*\))*\s*\)", re.I)
_T_STARS = re.compile(r"\*+(?=\S)|(?<=\S)\*+|~~")  # a lone " * " is arithmetic, not emphasis
_T_UNDERSCORE = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")
_SLOT = "\uE000{}\uE001"
_T_SLOT = re.compile("\uE000(\\d+)\uE001")


def clean_title(text: str, *, decoded: bool = False) -> str:
    """A heading or page title as a reader sees it: no entities, link targets or inline markup.

    Titles become breadcrumbs and heading paths (which article IDs are tied to), so
    ``[Phishing](https://...)`` must read ``Phishing`` and ``Logging in &amp; Networks``
    ``Logging in & Networks``. Bodies keep their links (they are content); titles do
    not. ``decoded``: the text comes from an HTML parser that has already decoded
    entities, so decoding again would turn a literal ``&amp;copy`` into a symbol.
    """
    kept: list[str] = []

    def keep(literal: str) -> str:
        kept.append(literal)
        return _SLOT.format(len(kept) - 1)

    s = _HTML_COMMENT.sub("", text)
    s = _T_ESCAPE.sub(lambda m: keep(m.group(1)), s)  # \* is a literal star, not emphasis
    s = _T_CODE.sub(lambda m: keep(m.group(2).strip()), s)
    s = _T_IMAGE.sub("", s)
    s = _T_LINK.sub(lambda m: m.group(1) or m.group(2), s)
    s = _T_AUTOLINK.sub(r"\1", s)
    s = _T_TAG.sub("", s)
    s = _T_URL_IN_PARENS.sub("", s)
    s = _T_STARS.sub("", s)
    s = _T_UNDERSCORE.sub("", s)
    if not decoded:
        s = html.unescape(s)
    s = _T_SLOT.sub(lambda m: kept[int(m.group(1))], s)
    s = " ".join(s.split())
    return s or " ".join(text.split())


def tidy(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    if "\t" in text or " \n" in text:
        text = _TRAILING_WS.sub("\n", text)
    if "\t" in text or "  " in text:
        text = _INNER_SPACES.sub(" ", text)
    if "\n\n\n" in text:
        text = _MANY_BLANK.sub("\n\n", text)
    return text.strip()
