"""The citation text rules are written once (issue 46): GRACE's ``[ID: x]`` marker, the sentence end a citation is
attached by, and the folding two texts are compared by live in harness/core/citation_text.py. Before, the marker
was written five ways, the sentence end three (markers, citation reading, segmentation) and the folding twice,
kept equal by hand. This scans the source tree for a second definition."""

from __future__ import annotations

import re

import pytest

from harness.core import citation_text as ct
from tests.conftest import ROOT

HOME = ROOT / "harness" / "core" / "citation_text.py"
# the fake API server is a stand-in for a provider, not grace: it reads its scripted "[ID: x]" its own way
EXEMPT = {ROOT / "harness" / "testing" / "api_formats.py"}
SECOND_DEFINITIONS = {
    # a regex of the marker: an escaped bracket before ID ("\[ID:", "\[\s*ID")
    "the [ID: x] marker": re.compile(r"\\\[(?:\\s\*)?ID"),
    # a sentence end read ahead of the punctuation ("[.!?](?=", "[.!?\u2026...](?="): where a citation's sentence ends
    "the sentence end": re.compile(r"\[\.!\\?[^\]]*\]\(\?="),
    # the comparison form of text: NFKC and case folding together
    "the text folding": re.compile(r"normalize\(\s*\"NFKC\".*\.casefold\(\)"),
}
# a fold of its own purpose, not citation text: the audit log's question dedupe drops punctuation character by
# character (its own documented form, cached per question)
ALLOWED = {("the text folding", ROOT / "harness" / "run_folder" / "audit_log.py")}


def _sources():
    for top in ("harness", "kb_builder", "annotations"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != HOME and path not in EXEMPT:
                yield path


def test_no_module_but_citation_text_defines_a_citation_text_rule():
    found = [(rule, str(path.relative_to(ROOT)), n, line.strip())
             for path in _sources()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for rule, pattern in SECOND_DEFINITIONS.items()
             if pattern.search(line) and (rule, path) not in ALLOWED]
    assert found == []


def test_the_scan_finds_each_rule_where_it_is_defined():
    """The scan is not vacuous: each pattern finds the one definition in the home module."""
    home = HOME.read_text(encoding="utf-8")
    for rule, pattern in SECOND_DEFINITIONS.items():
        assert pattern.search(home), rule


@pytest.mark.parametrize(("text", "ends"), [
    ("It is 25 days. Then", [13]), ("v1.2 is out.", [11]), ("Yes!\nNo", [3, 4]), ("休假。 然后", [2]), ("休假。然后", []),
    ("It ends here", []),
])
def test_the_sentence_end(text, ends):
    assert [m.start() for m in ct.SENTENCE_END.finditer(text)] == ends


def test_the_canonical_marker_and_the_folding():
    assert ct.CANONICAL.findall("See [ID: 4] and [ID: 4, 5] and [ID:6]") == ["4", "4, 5"]
    assert [ct.is_canonical_id(x) for x in ("4", "4, 5", "uid-kb-7")] == [True, False, True]
    assert ct.ANY_ID_MARKER.sub("", "A [id: 4]. B [ ID: 5 ]") == "A . B "
    assert ct.folded_words("The L\uff14  Target\u2014is 10%!") == ["the", "l4", "target", "is", "10"]
    assert ct.fold("  Annual\u00a0Leave ") == "annual leave"
