"""The phrases by which an article leans on text it does not hold, per language, for ``grace kb lint``.

Three kinds, each a pattern per language (ISO 639-1):

* ``leans``: a reference to text elsewhere ("as mentioned above", "comme indiqué
  ci-dessus", "wie oben beschrieben", "όπως αναφέρθηκε παραπάνω");
* ``opens``: a body opening on "This policy" (and its kin) whose title does not
  say which: the antecedent was in the text before the cut;
* ``announces``: a body ending on "the following:" with nothing following.

An article is checked with its own language's patterns and the English ones
(English phrases turn up in every KB). A language with no entry is checked in
English only; adding one is adding its three patterns here and a planted-article
test (docs/how-to/languages.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Phrases:
    leans: re.Pattern[str]
    opens: re.Pattern[str]  # group 1: the noun, looked for in the title
    announces: re.Pattern[str]


def _rx(text: str, anchored: str = "") -> re.Pattern[str]:
    return re.compile(anchored + text, re.IGNORECASE)


_RULES: dict[str, tuple[str, str, str]] = {
    "en": (
        r"\b(?:as (?:mentioned|described|noted|explained|shown|stated|discussed|outlined|listed) "
        r"(?:above|below|earlier|before|previously|in the previous \w+)"
        r"|see (?:above|below|the (?:previous|next|section|table|list) (?:above|below)?)"
        r"|(?:above|below)[- ]mentioned|the (?:previous|preceding) (?:section|page|chapter|paragraph|article)"
        r"|(?:in|from) the (?:section|table|list|paragraph) (?:above|below))\b",
        r"(?:this|these|those|such) (policy|policies|section|process|procedure|rules?|steps|"
        r"requirements?|guidance|list|table)\b",  # "this page" is the article itself
        r"\b(?:the following|as follows|below)\s*:?\s*$",
    ),
    "fr": (
        r"\b(?:comme (?:indiqu|mentionn|pr[ée]cis|d[ée]crit|expliqu|vu|[ée]voqu|pr[ée]sent|d[ée]taill|not)\w* "
        r"(?:ci-dessus|ci-dessous|plus haut|plus bas|pr[ée]c[ée]demment|auparavant|dans la section pr[ée]c[ée]dente)"
        r"|voir (?:ci-dessus|ci-dessous|plus haut|plus bas)|susmentionn\w*|pr[ée]cit[ée]\w*"
        r"|(?:mentionn|indiqu|cit|d[ée]crit)\w* ci-dessus"
        r"|(?:la|le) (?:section|partie|chapitre|paragraphe|tableau|page) pr[ée]c[ée]dente?)\b",
        r"(?:cette|ces|ce|cet) (politique|proc[ée]dure|section|r[èe]gles?|[ée]tapes|d[ée]marche|processus|liste|"
        r"tableau|dispositif)\b",
        r"\b(?:(?:les?|la) suivante?s?|suivants?|ci-dessous|comme suit)\s*:?\s*$",
    ),
    "de": (
        r"\b(?:wie (?:oben|unten|bereits|zuvor|vorher|eingangs) (?:\w+ )?(?:beschrieben|erw[äa]hnt|genannt|erl[äa]utert|"
        r"dargestellt|angegeben|aufgef[üu]hrt|ausgef[üu]hrt)|siehe (?:oben|unten)"
        r"|(?:oben|unten) ?(?:genannt|aufgef[üu]hrt|beschrieben|erw[äa]hnt|stehend)\w*|vorstehend\w*"
        r"|im (?:vorherigen|vorigen|vorangehenden) (?:abschnitt|kapitel|absatz))\b",
        r"(?:diese[rsmn]?) (richtlinie|regel|regeln|regelung|abschnitt|verfahren|prozess|schritte|liste|tabelle|"
        r"vorgaben)\b",
        r"\b(?:folgende[nrs]?|wie folgt|nachstehend\w*)\s*:?\s*$",
    ),
    "es": (
        r"\b(?:como se (?:indica|indic[óo]|menciona|mencion[óo]|describe|explica|ha (?:indicado|mencionado|descrito)) "
        r"(?:arriba|anteriormente|m[áa]s arriba|a continuaci[óo]n|m[áa]s abajo)|v[ée]ase (?:arriba|m[áa]s abajo)"
        r"|(?:mencionad|citad|indicad)[oa]s? (?:anteriormente|arriba)|la secci[óo]n anterior)\b",
        r"(?:esta|este|estas|estos) (pol[íi]tica|normas?|secci[óo]n|procedimiento|proceso|pasos|lista|tabla)\b",
        r"\b(?:(?:los|las) siguientes|siguientes?|a continuaci[óo]n)\s*:?\s*$",
    ),
    "pt": (
        r"\b(?:como (?:indicado|mencionado|descrito|referido|explicado) (?:acima|anteriormente|abaixo)"
        r"|ver (?:acima|abaixo)|supracitad[oa]s?|(?:acima|anteriormente) (?:mencionad|referid)[oa]s?"
        r"|a se(?:c)?[çc][ãa]o anterior)\b",
        r"(?:esta|este|estas|estes|essa|esse) (pol[íi]tica|regras?|se(?:c)?[çc][ãa]o|procedimento|processo|passos|"
        r"lista|tabela)\b",
        r"\b(?:(?:os|as) seguintes|seguintes?|a seguir)\s*:?\s*$",
    ),
    "it": (
        r"\b(?:come (?:indicato|menzionato|descritto|spiegato|detto|riportato) (?:sopra|in precedenza|sotto|pi[ùu] avanti)"
        r"|vedi (?:sopra|sotto)|(?:sopra|sotto)citat[oaie]|la sezione precedente)\b",
        r"(?:questa|questo|queste|questi) (politica|regol[ae]|sezione|procedura|processo|passaggi|elenco|tabella)\b",
        r"\b(?:(?:i|le) seguenti|seguenti|come segue|di seguito)\s*:?\s*$",
    ),
    "nl": (
        r"\b(?:zoals (?:hierboven|hieronder|eerder|reeds|al) (?:\w+ )?(?:vermeld|beschreven|aangegeven|genoemd|uitgelegd)"
        r"|zie (?:hierboven|hieronder)|bovengenoemde?|bovenstaande?|voornoemde?"
        r"|(?:de|het) vorige (?:sectie|paragraaf|hoofdstuk))\b",
        r"(?:dit|deze) (beleid|regels?|sectie|procedure|proces|stappen|lijst|tabel)\b",
        r"\b(?:de volgende|het volgende|als volgt|hieronder)\s*:?\s*$",
    ),
    "el": (
        r"(?:όπως (?:αναφέρθηκε|αναφέρεται|περιγράφεται|περιγράφηκε|εξηγήθηκε|σημειώθηκε|προαναφέρθηκε) "
        r"(?:παραπάνω|προηγουμένως|ανωτέρω|πιο πάνω|παρακάτω)|βλ(?:έπε|\.) (?:παραπάνω|παρακάτω)"
        r"|προαναφερθ\w+|(?:στην|την) προηγούμενη (?:ενότητα|παράγραφο|σελίδα))",
        r"(?:αυτή η|αυτός ο|αυτό το|αυτές οι|αυτά τα|η παρούσα) (πολιτική|διαδικασία|ενότητα|κανόνας|κανόνες|"
        r"βήματα|λίστα|πίνακας)",
        r"(?:τα ακόλουθα|τις ακόλουθες|τους ακόλουθους|ως εξής|παρακάτω)\s*:?\s*$",
    ),
}
LANGUAGES = tuple(_RULES)


@lru_cache(maxsize=32)
def phrases(language: str) -> list[Phrases]:
    """The patterns to check an article in ``language`` with: its own (where known), then English."""
    out = []
    for code in dict.fromkeys([language, "en"]):
        if code in _RULES:
            leans, opens, announces = _RULES[code]
            out.append(Phrases(_rx(leans), _rx(opens, "^"), _rx(announces)))
    return out
