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
# The few words grace itself writes into a judge's prompt (a segment's citations, an empty block): in the
# template's language, so a French prompt is French throughout.
NOTES = {
    "en": {"cites": "cites {ids}", "cites_nothing": "cites nothing", "no_gold": "none: no article holds the answer",
           "none": "none", "nothing_verified": "nothing in this answer was verified"},
    "fr": {"cites": "cite {ids}", "cites_nothing": "ne cite rien", "no_gold": "aucun : aucun article ne contient la "
           "réponse", "none": "aucun", "nothing_verified": "rien dans cette réponse n'a été vérifié"},
    "de": {"cites": "zitiert {ids}", "cites_nothing": "zitiert nichts", "no_gold": "keiner: kein Artikel enthält die "
           "Antwort", "none": "keiner", "nothing_verified": "nichts in dieser Antwort wurde bestätigt"},
    "es": {"cites": "cita {ids}", "cites_nothing": "no cita nada", "no_gold": "ninguno: ningún artículo contiene la "
           "respuesta", "none": "ninguno", "nothing_verified": "nada de esta respuesta se ha verificado"},
    "pt": {"cites": "cita {ids}", "cites_nothing": "não cita nada", "no_gold": "nenhum: nenhum artigo contém a "
           "resposta", "none": "nenhum", "nothing_verified": "nada nesta resposta foi verificado"},
    "it": {"cites": "cita {ids}", "cites_nothing": "non cita nulla", "no_gold": "nessuno: nessun articolo contiene la "
           "risposta", "none": "nessuno", "nothing_verified": "nulla in questa risposta è stato verificato"},
    "nl": {"cites": "citeert {ids}", "cites_nothing": "citeert niets", "no_gold": "geen: geen artikel bevat het "
           "antwoord", "none": "geen", "nothing_verified": "niets in dit antwoord is geverifieerd"},
    "el": {"cites": "παραπέμπει στο {ids}", "cites_nothing": "δεν παραπέμπει πουθενά", "no_gold": "κανένα: κανένα "
           "άρθρο δεν περιέχει την απάντηση", "none": "κανένα", "nothing_verified": "τίποτα σε αυτή την απάντηση δεν "
           "επαληθεύτηκε"},
}
_HEADER = re.compile(r"^#\s*language:\s*([a-z]{2})\s*$", re.MULTILINE)


def template_language(text: str) -> str:
    """The ``# language: xx`` a template declares in its header comments; English when it declares none."""
    head = text.split("===", 1)[0]
    m = _HEADER.search(head)
    return m.group(1) if m else "en"


def refusal_sentence(language: str | None) -> str:
    """The refusal sentence in ``language``; English for a language without one."""
    return REFUSALS.get(language or "en", REFUSALS["en"])


def note(language: str | None, key: str, **values: str) -> str:
    """One of :data:`NOTES` in ``language`` (English where grace has none), in parentheses: ``(cites 3, 7)``."""
    return "(" + NOTES.get(language or "en", NOTES["en"])[key].format(**values) + ")"
