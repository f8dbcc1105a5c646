"""The refusal sentence in each language grace has answer templates for, and how a template's language is found.

The answer prompt asks for one exact sentence when no article answers; a
French employee should get it in French, and the scorer must know it in every
language (:mod:`harness.scoring.refusal` reads it from here). A built-in
template for language ``xx`` is ``templates/<name>.xx.txt`` (``grounded-inline.v1.fr.txt``)
and says ``# language: xx`` in its header; the English ones have no suffix.
"""

from __future__ import annotations

import re

REFUSALS = {
    "en": "I don't have enough information to answer this question.",
    "fr": "Je n'ai pas assez d'informations pour répondre à cette question.",
    "de": "Ich habe nicht genügend Informationen, um diese Frage zu beantworten.",
    "es": "No tengo suficiente información para responder a esta pregunta.",
    "pt": "Não tenho informações suficientes para responder a esta pergunta.",
    "it": "Non ho informazioni sufficienti per rispondere a questa domanda.",
    "nl": "Ik heb niet genoeg informatie om deze vraag te beantwoorden.",
    "el": "Δεν έχω αρκετές πληροφορίες για να απαντήσω σε αυτή την ερώτηση.",
}
TEMPLATE_LANGUAGES = tuple(REFUSALS)
_HEADER = re.compile(r"^#\s*language:\s*([a-z]{2})\s*$", re.MULTILINE)


def template_language(text: str) -> str:
    """The ``# language: xx`` a template declares in its header comments; English when it declares none."""
    head = text.split("===", 1)[0]
    m = _HEADER.search(head)
    return m.group(1) if m else "en"


def refusal_sentence(language: str | None) -> str:
    """The refusal sentence in ``language``; English for a language without one."""
    return REFUSALS.get(language or "en", REFUSALS["en"])
