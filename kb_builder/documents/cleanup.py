"""Text clean-up shared by the loaders: template tags, Markdown link noise, whitespace.

Handbooks written for static-site generators (Jekyll, Eleventy) carry Liquid
tags. Some hide text (``{% comment %}``), some are markup around real text
(``{% alert %}``), some stand for a value a reader would see (a Slack channel
name). Dropping them blindly loses meaning, so each kind is handled.
"""

from __future__ import annotations

import re

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


def strip_templates(text: str) -> str:
    text = _BLOCK_DROP.sub("", text)
    text = _SLACK.sub(lambda m: "#" + m.group(1) + " on Slack", text)
    text = _TAG.sub("", text)
    return _OUTPUT.sub("", text)


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
    text = _REF_DEF.sub("", text)
    text = _HTML_TAG.sub("", text)
    return tidy(text)


def tidy(text: str) -> str:
    text = _TRAILING_WS.sub("\n", text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " "))
    text = _INNER_SPACES.sub(" ", text)
    return _MANY_BLANK.sub("\n\n", text).strip()
