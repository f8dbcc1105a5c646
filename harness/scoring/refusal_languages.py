"""Refusals in the languages grace has answer templates for (French, German, Spanish, Portuguese, Italian, Dutch,
Greek), beside the English reading of :mod:`harness.scoring.refusal`.

The exact sentence of each language's template (:data:`harness.prompts.languages.REFUSALS`,
straight or curly apostrophe) is a strict refusal. The lenient reading also
takes the common paraphrases, built like the English ones: anchored on a
first person who lacks the information or cannot answer ("je ne peux pas
répondre", "ich kann diese Frage nicht beantworten", "δεν μπορώ να απαντήσω"),
or on the *provided* articles not containing it ("les articles fournis ne
mentionnent pas", "keiner der Artikel", "ninguno de los artículos"), never on a
bare negation, so "Non, vous ne pouvez pas reporter plus de 5 jours [ID: 3]"
stays an answer. ``tests/harness/prompts/test_language_prompts.py`` checks each language's
sentence and paraphrases, and that none of the sample benchmark's answers,
translated into each language, reads as a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from harness.prompts.languages import REFUSALS

_A = "['\u2019\u2018\u02bc`]"  # an apostrophe, straight or curly
# each language's own exact sentence, also with a curly apostrophe (English is refusal.py's)
EXACT = tuple(dict.fromkeys(s2 for code, s in REFUSALS.items() if code != "en"
                            for s2 in (s, s.replace("'", "\u2019"))))

_PARAPHRASES = {
    "fr": [
        rf"\bje n{_A}ai pas (?:assez|suffisamment) d{_A}informations?",
        r"\bje ne (?:peux|pourrai|suis pas en mesure de|saurais) (?:pas )?(?:\w+ )?(?:répondre|déterminer|trouver)",
        rf"\bje ne (?:trouve|vois) (?:pas|aucune?) (?:d{_A})?(?:informations?|mentions?|réponses?|éléments?)",
        r"\b(?:articles?|documents?|sources?|extraits?|textes?) (?:fourni|disponible|proposé|donné|transmis)e?s?"
        r"(?: ci-dessus)?,? (?:ne )?(?:\w+ )?(?:contiennent|mentionnent|précisent|abordent|traitent|indiquent|couvrent|"
        r"répondent|permettent|donnent)\w* (?:pas|aucune?)",
        r"\baucun(?:e)? des (?:articles?|documents?|sources?|extraits?) (?:\w+ ){0,2}?ne (?:répond|mentionne|traite|aborde|"
        r"contient|précise|indique)",
        rf"\b(?:il n{_A}y a|je n{_A}ai trouvé) aucune (?:information|mention|indication)",
        rf"\bpas (?:assez|suffisamment) d{_A}informations? pour répondre",
    ],
    "de": [
        r"\bich habe (?:nicht (?:genügend|genug|ausreichend(?:e)?)|keine (?:ausreichenden|genügenden)) informationen",
        r"\bich (?:kann|konnte) (?:\w+ ){0,6}?(?:nicht (?:beantworten|finden|sagen|feststellen)|keine (?:informationen|"
        r"angaben|antwort|hinweise))",
        r"\b(?:bereitgestellten|vorliegenden|angegebenen|verfügbaren|gegebenen|obigen|genannten) (?:artikel|dokumente|"
        r"quellen|informationen|texte|unterlagen) (?:\w+ ){0,3}?(?:enthalten|nennen|erwähnen|beantworten|beschreiben|"
        r"geben|liefern) (?:\w+ ){0,3}?(?:nicht|keine)",
        r"\bkeine[rs]? der (?:artikel|dokumente|quellen|texte) (?:\w+ ){0,3}?(?:beantwortet|enthält|erwähnt|behandelt|nennt)",
        r"\b(?:nicht genügend|nicht genug|unzureichende|keine ausreichenden) informationen,? um",
        r"\bes (?:gibt|liegen) keine (?:informationen|angaben|hinweise) (?:zu|über|dazu|darüber|in|vor)",
    ],
    "es": [
        r"\bno (?:tengo|dispongo de) (?:la )?(?:suficiente|información suficiente|datos suficientes|suficientes datos)",
        r"\bno (?:puedo|es posible|soy capaz de) (?:\w+ )?(?:responder|contestar|determinar|encontrar)",
        r"\bno (?:encuentro|he encontrado|encontré) (?:ninguna |ningún )?(?:información|datos|menci[óo]n|referencia)",
        r"\b(?:artículos|documentos|fuentes|textos) (?:proporcionados|facilitados|disponibles|anteriores|dados|"
        r"suministrados) no (?:\w+ )?(?:contienen|mencionan|incluyen|especifican|abordan|responden|indican|tratan)",
        r"\bninguno de los (?:artículos|documentos|textos|fragmentos) (?:\w+ ){0,2}?(?:responde|menciona|contiene|trata|aborda)",
        r"\bno hay (?:suficiente |ninguna )?información (?:sobre|acerca|en los|suficiente|para responder)",
    ],
    "pt": [
        r"\bnão tenho (?:informações|informação|dados) suficientes",
        r"\bnão (?:consigo|posso|é possível|sou capaz de) (?:\w+ )?(?:responder|determinar|encontrar)",
        r"\bnão (?:encontrei|encontro) (?:nenhuma |nenhum )?(?:informaç|dados|menç|referência)",
        r"\b(?:artigos|documentos|textos|fontes) (?:fornecidos|disponibilizados|disponíveis|apresentados|acima) não "
        r"(?:\w+ )?(?:contêm|contem|mencionam|incluem|especificam|abordam|respondem|indicam|tratam)",
        r"\bnenhum dos (?:artigos|documentos|textos) (?:\w+ ){0,2}?(?:responde|menciona|contém|trata|aborda)",
        r"\bnão há (?:informações|informação|dados) (?:sobre|suficientes|nos|acerca)",
    ],
    "it": [
        r"\bnon (?:ho|dispongo di) (?:informazioni|dati|elementi) sufficienti",
        r"\bnon (?:posso|sono in grado di|riesco a) (?:\w+ )?(?:rispondere|determinare|trovare)",
        r"\bnon (?:trovo|ho trovato) (?:alcuna |nessuna |alcun |nessun )?(?:informazion|riferiment|menzion|dato)",
        r"\b(?:articoli|documenti|testi|fonti) (?:forniti|disponibili|sopra|indicati|riportati) non (?:\w+ )?"
        r"(?:contengono|menzionano|includono|specificano|trattano|rispondono|indicano)",
        r"\bnessuno degli (?:articoli|documenti) (?:\w+ ){0,2}?(?:risponde|menziona|contiene|tratta)",
        r"\bnon ci sono (?:informazioni|dati) (?:sufficienti|su|nei|negli|riguardo)",
    ],
    "nl": [
        r"\bik heb (?:niet genoeg|onvoldoende) informatie",
        r"\bik kan (?:\w+ ){0,6}?niet (?:beantwoorden|vinden|bepalen|zeggen)",
        r"\bik (?:kan|vind) geen (?:informatie|antwoord|vermelding)",
        r"\b(?:gegeven|verstrekte|beschikbare|aangeleverde|bovenstaande) (?:artikelen|documenten|bronnen|teksten) "
        r"(?:\w+ ){0,3}?(?:bevatten|noemen|vermelden|beantwoorden|behandelen) (?:\w+ ){0,3}?(?:niet|geen)",
        r"\bgeen van de (?:artikelen|documenten|bronnen|teksten)",
        r"\ber is (?:geen|onvoldoende) informatie (?:over|in|beschikbaar|om)",
    ],
    "el": [
        r"δεν έχω (?:αρκετές|επαρκείς|τις απαραίτητες|καμία) πληροφορίες",
        r"δεν (?:μπορώ|είμαι σε θέση) να (?:απαντήσω|βρω|προσδιορίσω|εντοπίσω)",
        r"δεν (?:βρίσκω|βρήκα|εντόπισα) (?:καμία |καμιά |καμία σχετική )?(?:πληροφορ|αναφορ|απάντηση)",
        r"(?:παρεχόμενα|διαθέσιμα|δοθέντα|παραπάνω) (?:άρθρα|έγγραφα|κείμενα) δεν (?:περιέχουν|αναφέρουν|περιλαμβάνουν|"
        r"καλύπτουν|απαντούν|διευκρινίζουν)",
        r"κανένα από τα (?:άρθρα|έγγραφα|κείμενα)",
        r"δεν υπάρχουν (?:αρκετές |επαρκείς )?πληροφορίες (?:για|σχετικά|στα)",
    ],
}
LANGUAGES = tuple(_PARAPHRASES)
# every paraphrase of a language holds one of its words here: a language's patterns run only on a text that does
# (as substrings of the lower-cased text: "pas" alone would let every "password" through, and English's "no" is left
# out of Spanish's, which are matched by their own words), so an English answer costs a few substring tests
_GATES = {
    "fr": (" pas ", " pas.", " pas,", " pas d", "aucun"),
    "de": ("nicht", "kein", "unzureichend"),
    "es": ("no tengo", "no dispongo", "no puedo", "no es posible", "no soy", "no encuentro", "no he ", "no encontr",
           "no hay", "s no ", "ningun", "ningún"),
    "pt": ("não", "nenhum"),
    "it": ("non ", "nessun"),
    "nl": ("niet", "geen", "onvoldoende"),
    "el": ("δεν", "κανένα"),
}
_COMPILED = {code: (_GATES[code], re.compile("|".join(f"(?:{p})" for p in ps), re.IGNORECASE))
             for code, ps in _PARAPHRASES.items()}


# Every refusal sentence says "information" ("information", "informations", "Informationen", "información", ...
# "πληροφορίες"): one search for the shared part of the word rules out every sentence that holds it, so most
# answers cost one search instead of nine (a sentence holding neither key would be searched for in every answer).
# An ASCII answer (str.isascii reads a flag) cannot hold a sentence with an accent or in Greek.
_KEYS = ("nforma", "πληροφορ")


def _by_key(sentences: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    keyed = tuple((key, tuple(s for s in sentences if key in s)) for key in _KEYS)
    unkeyed = tuple(s for s in sentences if not any(key in s for key in _KEYS))
    return tuple((key, found) for key, found in keyed if found) + tuple(("", (s,)) for s in unkeyed)


def sentence_search(sentences: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of whether a text holds one of ``sentences`` verbatim, searching for their keys first."""
    every, ascii_only = _by_key(sentences), _by_key(tuple(s for s in sentences if s.isascii()))

    def holds(text: str) -> bool:
        # loops, not any(genexpr): the scorer asks this of every one of a million answers
        for key, group in ascii_only if text.isascii() else every:
            if key in text:
                for sentence in group:
                    if sentence in text:
                        return True
        return False

    return holds


def is_paraphrase(text: str, languages: Iterable[str] | None = None, *, low: str | None = None) -> bool:
    """A common paraphrase of the refusal sentence in one of ``languages`` (default: all of :data:`LANGUAGES`).

    The scorer names the question's language: reading every answer to an English
    question for seven languages' paraphrases made scoring a million answers 60% slower.
    ``low``: ``text.lower()``, when the caller has it already.
    """
    for code in LANGUAGES if languages is None else languages:
        found = _COMPILED.get(code)
        if found is not None:
            gates, rx = found
            if low is None:
                low = text.lower()
            if any(g in low for g in gates) and rx.search(text) is not None:
                return True
    return False
