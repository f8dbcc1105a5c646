"""A KB article's Markdown as a tree of whitelisted elements and strings, which the viewer's page builds as nodes.

Article text is Markdown (``grace kb build`` keeps emphasis, lists, tables and links): shown as written, a reader
sees ``**Lost receipts.**``. It is also untrusted, and the viewer never sets innerHTML. So the Markdown is parsed
here, by markdown-it-py (the parser ``grace kb build`` reads Markdown documents with) with raw HTML off, a
``<script>`` or ``<img onerror>`` in an article being text like any other; its syntax tree becomes nested lists,
``[tag, *children]``, of the tags in :data:`TAGS` and plain strings, and the page makes each element with
``graceUI.el`` (``harness/viewer/static/view.js``, ``mdNodes``), text always in text nodes. A link is
``["a", href, *children]`` and keeps its address only when it is http(s) or mailto (markdown-it already refuses
``javascript:`` and ``data:``); an image is its alt text, so a page loads nothing from elsewhere.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# the elements a tree may hold: the page checks them again before it makes one
TAGS = frozenset({"p", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "hr", "br", "strong", "em", "s",
                  "code", "a", "table", "thead", "tbody", "tr", "th", "td"})
LINK_SCHEMES = ("http://", "https://", "mailto:")
# an article's headings sit under the page's h3 (the article's title): # is h4, ## h5, deeper h6
_HEADING = {"h1": "h4", "h2": "h5"}
_BLOCKS = {"paragraph": "p", "bullet_list": "ul", "ordered_list": "ol", "list_item": "li", "blockquote": "blockquote",
           "strong": "strong", "em": "em", "s": "s", "table": "table", "thead": "thead", "tbody": "tbody",
           "tr": "tr", "th": "th", "td": "td"}

Node = str | list[Any]


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def markdown_tree(text: str) -> list[Node]:
    """``text``'s blocks as the page's tree: a list of ``[tag, *children]`` lists and strings."""
    from markdown_it.tree import SyntaxTreeNode

    if not text:
        return []
    return _children(SyntaxTreeNode(_parser().parse(text)))


def _children(node: Any) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        out.extend(_node(child))
    return out


def _node(n: Any) -> list[Node]:
    kind = n.type
    if kind in ("text", "html_inline", "html_block"):  # raw HTML is off: what reaches here is text
        return [n.content] if n.content else []
    if kind == "inline":
        return _children(n)
    if kind == "softbreak":
        return ["\n"]
    if kind == "hardbreak":
        return [["br"]]
    if kind == "hr":
        return [["hr"]]
    if kind == "code_inline":
        return [["code", n.content]]
    if kind in ("code_block", "fence"):
        return [["pre", ["code", n.content.rstrip("\n")]]]
    if kind == "heading":
        return [[_HEADING.get(n.tag, "h6"), *_children(n)]]
    if kind == "image":  # its alt text: the page loads nothing from elsewhere
        return _children(n)
    if kind == "link":
        href = str(n.attrs.get("href") or "")
        inner = _children(n)
        return [["a", href, *inner]] if href.lower().startswith(LINK_SCHEMES) else inner
    if kind == "paragraph" and n.hidden:  # a tight list's item: its text without a paragraph around it
        return _children(n)
    tag = _BLOCKS.get(kind)
    return [[tag, *_children(n)]] if tag in TAGS else _children(n)
