"""The tree the viewer draws a KB article's Markdown from (issue 47): bold is bold, HTML stays text, only http(s) and
mailto links keep an address, an image is its alt text; and nothing but the whitelisted tags and strings."""

from __future__ import annotations

from harness.viewer.markdown_tree import TAGS, markdown_tree


def _walk(nodes):
    for n in nodes:
        yield n
        if isinstance(n, list):
            yield from _walk(n[2:] if n[0] == "a" else n[1:])


def test_bold_lists_headings_and_code_become_elements():
    text = ("# Receipts\n**Lost receipts.** File a *declaration*.\n\n    code <b>\n\n- one\n- two\n\n"
            "1. first\n\n`inline`")
    assert markdown_tree(text) == [
        ["h4", "Receipts"], ["p", ["strong", "Lost receipts."], " File a ", ["em", "declaration"], "."],
        ["pre", ["code", "code <b>"]], ["ul", ["li", "one"], ["li", "two"]], ["ol", ["li", "first"]],
        ["p", ["code", "inline"]]]


def test_html_is_text_and_unsafe_links_lose_their_address():
    text = ("<script>window.__pwned=1</script>\n\nSee <img src=x onerror=alert(1)> [run](javascript:alert(1)), "
            "[data](data:text/html,<b>x</b>), [ok](https://example.org/a?b=1) and [mail](mailto:hr@example.org) "
            "![logo](https://tracker.example/p.png)")
    tree = markdown_tree(text)
    assert tree[0] == ["p", "<script>window.__pwned=1</script>"]
    links = [n for n in _walk(tree) if isinstance(n, list) and n[0] == "a"]
    assert [n[1] for n in links] == ["https://example.org/a?b=1", "mailto:hr@example.org"]
    strings = "".join(n for n in _walk(tree) if isinstance(n, str))
    assert "<img src=x onerror=alert(1)>" in strings and "javascript:alert(1)" in strings and "logo" in strings
    assert "tracker.example" not in str(tree)  # the image: its alt text, never its address


def test_only_whitelisted_tags_and_strings_whatever_the_input():
    text = ("| a | **b** |\n|---|---|\n| 1 | ~~2~~ |\n\n> quoted\n\n---\n\nline  \nbreak\n\n<div onclick=x>raw</div>\n\n"
            "### deep\n\n###### deeper\n\n```js\nfence()\n```")
    tree = markdown_tree(text)
    for n in _walk(tree):
        assert isinstance(n, str) or (isinstance(n, list) and n[0] in TAGS), n
    tags = {n[0] for n in _walk(tree) if isinstance(n, list)}
    assert {"table", "th", "td", "s", "blockquote", "hr", "br", "h6", "pre"} <= tags
    assert markdown_tree("") == [] and markdown_tree("plain") == [["p", "plain"]]
