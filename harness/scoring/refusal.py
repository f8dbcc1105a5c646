"""Is a response a refusal?

The prompt asks for one exact sentence (:data:`REFUSAL_SENTENCE`); the strict
reading accepts only that. Real models paraphrase it ("the provided articles do
not contain...", "I cannot find any information about X in the provided
articles", "No document seems to precisely answer your question"), so the lenient
reading also accepts the common paraphrases, with straight or curly apostrophes.

The paraphrases are anchored on phrases about the *provided material* or on a
first-person "I cannot find / answer", never on a bare "not" or "no", so an
answer such as "you do not need a form [ID: 5]" is not taken for a refusal.

Generic declines, about what the model can do rather than what the articles
say ("As an AI assistant, I don't have the ability to verify...", "I'm not able
to provide...", "I am unable to help with...", "I don't have access to real-time
information", "I don't know"), are refusals only when the response cites
nothing: "As an AI I cannot see your balance, but new staff get 25 days [ID: 4]"
answers from article 4. They too are anchored on a first-person "I" (or "as an
AI ... I") followed by the negation, so "you cannot carry over more than 5 days"
is not one.

An answer that opens by stating its verdict ("The answer is no, you are not
allowed to ...", "The short answer is yes: ...") has answered, whatever it adds
about what the articles leave out ("... the provided articles do not mention
any exception"): only the exact refusal sentence still makes it a refusal. The
opening is matched at the start of the text or of a JSON answer field, and
"the answer is not in the articles" is not such an opening.

All patterns are compiled once into two alternations (with and without the
generic declines); a cheap substring pre-check skips the regex for the many
answers that contain no negation at all.

The other languages grace has answer templates for (French, German, Spanish,
Portuguese, Italian, Dutch, Greek) are read by :mod:`harness.scoring.refusal_languages`:
their exact sentences count for both readings, their paraphrases for the lenient one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness.scoring.refusal_languages import EXACT, is_paraphrase, sentence_search

REFUSAL_SENTENCE = "I don't have enough information to answer this question."

_A = "['\u2019\u2018\u02bc`]"  # an apostrophe, straight or curly
_NOT = rf"(?:\s+not|n{_A}t)"
_CANT = rf"(?:cannot|can\s+not|can{_A}t|could\s+not|couldn{_A}t|was\s+unable\s+to|am\s+unable\s+to|am\s+not\s+able\s+to|was\s+not\s+able\s+to|did\s+not|didn{_A}t|do\s+not|don{_A}t)"
_I_CANT = rf"\bI(?:\s+{_CANT}|{_A}m\s+(?:unable|not\s+able)\s+to)"
_NOUN = r"(?:articles?|documents?|context|information|sources?|texts?|passages?|materials?|excerpts?|snippets?|knowledge\s+base|kb)"
_SRC = (  # starts at a word boundary: without it every position inside a word tries all three alternatives
    r"\b(?:"
    rf"(?:(?:the|these|those|any\s+of\s+the)\s+)?(?:provided|given|supplied|available|retrieved|above|attached|following|listed)\s+(?:\w+\s+)?{_NOUN}"
    r"|(?:the|these|those|any\s+of\s+the)\s+(?:articles?|context|passages?|excerpts?|snippets?|knowledge\s+base|kb)"
    r"|(?:the\s+)?(?:articles?|documents?|context|information|sources?|passages?)\s+(?:provided|given|supplied|above|listed)"
    r")"
)
_VERB = r"(?:contain|include|provide|mention|cover|address|answer|specify|say|state|discuss|describe|give|offer|have|detail|explain|indicate|list)"
_PART = r"(?:mentioned|covered|addressed|specified|provided|included|available|found|stated|discussed|described|given|listed|detailed|explained|answered)"
_INFO = r"(?:information|details?|data|mention|reference|answer|evidence|content|context)"

_PATTERNS = [
    # I don't have enough / sufficient / any information (about X)
    rf"\bI\s+(?:do{_NOT}|did{_NOT})\s+have\s+(?:enough|sufficient|adequate|any|the\s+(?:necessary|required|relevant)|relevant|specific)\s+(?:\w+\s+){{0,2}}?(?:information|context|details|data)",
    r"\bI\s+lack\s+(?:the\s+)?(?:enough|sufficient|necessary|required|relevant)?\s*(?:information|context|details)",
    # there is not enough information / insufficient information to answer
    r"\b(?:not\s+enough|insufficient)\s+(?:\w+\s+)?(?:information|context|details)\s+(?:\w+\s+){0,3}?(?:to\s+(?:answer|determine|respond|say)|in|within|provided)\b",
    # the provided articles do not contain / don't mention / contain no / are insufficient: one pattern, so the
    # costly source phrase is tried once per position, not three times
    rf"{_SRC}\s+(?:(?:\w+\s+)?(?:do|does|did){_NOT}\s+(?:\w+\s+)?{_VERB}"
    r"|(?:contains?|includes?|provides?|has|have|offers?|gives?)\s+no\b"
    r"|(?:is|are|was|were|seems?|appears?)\s+(?:to\s+be\s+)?(?:insufficient|not\s+sufficient|not\s+enough)\b)",
    # X is not mentioned in the provided articles
    rf"\b(?:is|are|was|were){_NOT}\s+(?:\w+\s+)?{_PART}\s+(?:\w+\s+){{0,2}}?(?:in|by|within|from)\s+{_SRC}",
    # I cannot find any information about X (in the provided articles)
    rf"{_I_CANT}\s+(?:find|locate|identify|see)\s+(?:(?:any|the|specific|relevant|enough|clear|direct|explicit)\s+)*(?:\w+\s+)?{_INFO}",
    # I cannot answer this question / I'm unable to determine
    rf"{_I_CANT}\s+(?:\w+\s+)?(?:answer|determine|provide\s+(?:an?\s+|the\s+)?(?:answer|response))\b",
    rf"\b(?:cannot|can{_A}t|could\s+not|couldn{_A}t)\s+be\s+(?:answered|determined)\b",
    # No document seems to precisely answer your question / none of the articles address
    r"\bno\s+(?:\w+\s+){0,2}?(?:documents?|articles?|sources?|passages?|excerpts?)\s+(?:\w+\s+){0,3}?(?:answers?|address(?:es)?|contains?|covers?|mentions?|provides?|seems?|appears?|match(?:es)?|discuss(?:es)?|specif(?:y|ies)|relates?|(?:is|are)\s+relevant)\b",
    r"\bnone\s+of\s+(?:the|these|those)\s+(?:\w+\s+)?(?:articles?|documents?|sources?|passages?|excerpts?|snippets?)\s+(?:\w+\s+){0,2}?(?:answers?|address(?:es)?|contains?|covers?|mentions?|provides?|seems?|appears?|includes?|discuss(?:es)?|specif(?:y|ies)|is|are|has|have)\b",
    # there is no information about X in the provided articles
    rf"\bthere(?:\s+is|{_A}s)\s+no\s+(?:\w+\s+)?{_INFO}\s+(?:\w+\s+){{0,10}}?(?:in|within|from)\s+{_SRC}",
]
_I_UNABLE = rf"\bI(?:\s+(?:cannot|can\s+not|can{_A}t|am\s+(?:unable|not\s+able)\s+to)|{_A}m\s+(?:unable|not\s+able)\s+to)"
_DONT = rf"(?:do{_NOT}|did{_NOT})"
_AI = r"(?:an?\s+)?(?:AI|artificial\s+intelligence|(?:large\s+)?language\s+model|LLM|chatbot|virtual\s+assistant)"
# Generic declines: counted only when the response cites nothing (see the module docstring)
_DECLINES = [
    # As an AI (assistant / language model), I don't have / cannot / am not able to ...
    rf"\bas\s+{_AI}(?:[\s-]+\w+){{0,3}}?\s*,?\s+I(?:\s+{_CANT}|\s+have\s+no|\s+lack|{_A}m\s+(?:unable|not\s+able))\b",
    # I don't have the ability / means to ...; I have no way to ...; I lack the ability to ...
    rf"\bI\s+{_DONT}\s+have\s+(?:the\s+|any\s+)?(?:ability|capability|capacity|means|authority|permission|tools?)\s+to\b",
    r"\bI\s+(?:have\s+no|lack\s+(?:the|any))\s+(?:way|ability|means|capability|access)\s+(?:to|of)\b",
    # I don't have access to real-time information / your records
    rf"\bI\s+{_DONT}\s+have\s+(?:direct\s+)?access\s+to\s+(?:[\w-]+\s+){{0,3}}?(?:information|data|details|records|databases?|systems?|internet|files?|accounts?)\b",
    # I'm not able to provide / I am unable to help with / I can't verify
    rf"{_I_UNABLE}\s+(?:\w+\s+)?(?:help|assist|provide|verify|confirm|access|browse|check|look\s+up|give|offer|share)\b",
    # I don't know. / I don't know the answer / who ... (not "I don't know the exact date, but ...")
    rf"\bI\s+{_DONT}\s+know(?:\s*(?:[.!,;]|$)|\s+(?:the\s+answer|that|this|for\s+sure|who|what|when|where|whether|if|how|why|which)\b)",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_STATES_ANSWER = re.compile(  # "The answer is no, ..." at the start of the text or of {"answer": "..."}
    r"""\s*(?:\{\s*["']?(?:answer|response|final_answer|text|reply)["']?\s*:\s*["']?)?[\s*_"'\u201c]*"""
    r"the\s+(?:short\s+|simple\s+|direct\s+|quick\s+)?answer\s+is\s*:?[\s*_\"'\u201c]*(?:yes|no)\b",
    re.IGNORECASE,
)
_REFUSAL_OR_DECLINE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS + _DECLINES), re.IGNORECASE)
_holds_exact = sentence_search((REFUSAL_SENTENCE, *EXACT))  # the template languages' sentences


def is_strict_refusal(text: str) -> bool:
    """The prompt's exact sentence, verbatim (straight apostrophe; any template language's), anywhere in the response."""
    return _holds_exact(text)


def is_refusal(text: str, *, cites: bool = False, languages: Iterable[str] | None = None) -> bool:
    """The exact sentence (any template language's) or a common paraphrase of it (English, and the other
    ``languages``: all when None); also a generic decline unless the response ``cites``."""
    return is_strict_refusal(text) or is_lenient_refusal(text, cites=cites, languages=languages)


def is_lenient_refusal(text: str, *, cites: bool = False, languages: Iterable[str] | None = None) -> bool:
    """What the lenient reading adds to the strict one: a paraphrase, or a generic decline unless the response
    ``cites``. The scorer, which has just asked :func:`is_strict_refusal`, asks this rather than
    :func:`is_refusal`, so a million answers are not searched twice for eight exact sentences."""
    low = text.lower()
    if (languages is None or languages) and is_paraphrase(text, languages, low=low):
        return True
    # "no" also covers not, none and cannot; chained `in` tests beat any() over a tuple.
    # Every generic decline has one of these too ("don't", "cannot", "not able", "unable", "have no", "lack").
    if not ("no" in low or "n't" in low or "n\u2019t" in low or "unable" in low or "lack" in low
            or "insufficient" in low or "n\u2018t" in low or "n\u02bct" in low or "n`t" in low):
        return False
    if _STATES_ANSWER.match(text):
        return False
    return (_REFUSAL if cites else _REFUSAL_OR_DECLINE).search(text) is not None
