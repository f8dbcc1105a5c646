"""Write ``tests/data/pii_names_phrasings.jsonl``: people named in many phrasings, each beside a sentence of the same
shape that names none.

Why a generated set: the sentences a redactor was tuned on say little about the
ones it was not (issue 45: "Contact Jean-Pierre Martin or Sofia Rossi" reached the
systems while "Please contact ..." was caught). This set is written apart from
the detector, from templates crossed with lists of people and of capitalised
things, and nothing here reads grace's code or its list of given names:

- templates put a slot where a name goes in real handbook and chat text: first
  word of a sentence or a question, after a verb ("contact", "ask"), after a
  preposition ("to", "by", "with"), in a list ("X or Y", "X, Y and Z", "X; Y;
  Z"), a possessive ("X's manager"), an apposition, a sign-off, a parenthesis, a
  field ("Document owner: X"), a greeting;
- people are written in many forms: a given name and a surname of many origins,
  compound given names (two words, or hyphenated: "Mary-Kate", "Eun-ji"), surnames
  with particles ("van der", "di", "dos", "Le", "bin", "al-"), apostrophes and
  capitals inside ("O'Connor", "McAllister", "D'Angelo"), letters outside
  Latin-1 ("Łukasz", "Dvořáková"), a middle initial. Half the given names were
  chosen because they are rare in name lists (Yoruba, Igbo, Zulu, Basque,
  Frisian...), so a detector that looks names up in a list is measured where the
  list ends; the benchmark says which rows' given names its list holds;
- every template is filled as often with things that are not people, the false-positive twins:
  departments, policies, places, streets, months, holidays, products, and the
  hard ones that start with a given name or read like a person ("Per Diem",
  "Milton Keynes", "Alice Springs", "Victoria Line", "Harvey Nichols", one-word
  places such as "Florence" and "Jordan").

Templates, people and things are split in two halves (``"split": "dev"`` and
``"heldout"``): dev rows are dev templates filled with dev people and things,
held-out rows the other halves, so a figure on the held-out rows is one on
phrasings and names nobody looked at while changing the detector. The issue's
own sentences are not in the set (its tests hold them).

Each row: ``text``; ``people``: ``[{"name", "start", "end", "form", "given"}]``
(the name as written and its offsets; ``given`` the given-name part); ``things``:
the same for the non-names of a twin; ``template``, ``position``, ``split``.

    python benchmarks/names_phrasings.py             # rewrites the file (deterministic: the same file every time)
    python benchmarks/names_phrasings.py --check     # exit 1 when the file differs from what this script writes
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "pii_names_phrasings.jsonl"
SEED = 45

# (given name, surname, form): the person is written "given surname"
PEOPLE = [
    # a given name and a surname
    ("Kwame", "Asante", "plain"), ("Siobhan", "Gallagher", "plain"), ("Dmitri", "Volkov", "plain"),
    ("Aylin", "Demir", "plain"), ("Mateusz", "Kowalczyk", "plain"), ("Hiroshi", "Tanaka", "plain"),
    ("Fatima", "Haddad", "plain"), ("Emeka", "Okafor", "plain"), ("Ingrid", "Lindqvist", "plain"),
    ("Lucía", "Fernández", "plain"), ("Minh", "Nguyen", "plain"), ("Rahul", "Mehta", "plain"),
    ("Ioana", "Popescu", "plain"), ("Wouter", "Jansen", "plain"), ("Zeynep", "Arslan", "plain"),
    ("Niamh", "Brennan", "plain"), ("Tariq", "Rahman", "plain"), ("Leilani", "Kahale", "plain"),
    ("Ximena", "Castillo", "plain"), ("Kenji", "Watanabe", "plain"), ("Omar", "Benali", "plain"),
    ("Hauke", "Petersen", "plain"), ("Catalina", "Vargas", "plain"), ("Grace", "Whitfield", "plain"),
    ("Will", "Harding", "plain"), ("June", "Okoro", "plain"), ("Mark", "Sutherland", "plain"),
    # given names rare in name lists
    ("Oluwaseun", "Adeyemi", "rare given name"), ("Chidi", "Nwosu", "rare given name"),
    ("Nkechi", "Eze", "rare given name"), ("Tendai", "Moyo", "rare given name"),
    ("Folake", "Balogun", "rare given name"), ("Themba", "Khumalo", "rare given name"),
    ("Sipho", "Ndlovu", "rare given name"), ("Lindiwe", "Mahlangu", "rare given name"),
    ("Bongani", "Sithole", "rare given name"), ("Oksana", "Kovalenko", "rare given name"),
    ("Ainhoa", "Etxeberria", "rare given name"), ("Maialen", "Agirre", "rare given name"),
    ("Tjitske", "Hoekstra", "rare given name"), ("Avraham", "Levinson", "rare given name"),
    ("Ananya", "Iyer", "rare given name"), ("Sanjay", "Kulkarni", "rare given name"),
    ("Vikram", "Reddy", "rare given name"), ("Deepika", "Nair", "rare given name"),
    ("Haruto", "Kobayashi", "rare given name"), ("Thuy", "Tran", "rare given name"),
    ("Huong", "Pham", "rare given name"), ("Xochitl", "Ramírez", "rare given name"),
    ("Tevita", "Fifita", "rare given name"), ("Chinonso", "Obi", "rare given name"),
    ("Babajide", "Ogunleye", "rare given name"), ("Temitope", "Adebayo", "rare given name"),
    # compound given names: two words or hyphenated
    ("Mary-Kate", "Donnelly", "hyphenated given name"), ("Jean-Luc", "Moreau", "hyphenated given name"),
    ("Marie-Claire", "Dubois", "hyphenated given name"), ("Hans-Peter", "Schneider", "hyphenated given name"),
    ("Karl-Heinz", "Becker", "hyphenated given name"), ("Lee-Ann", "Fraser", "hyphenated given name"),
    ("Jo-Anne", "Whitaker", "hyphenated given name"), ("Eun-ji", "Park", "hyphenated given name"),
    ("Seo-yeon", "Choi", "hyphenated given name"), ("Jan-Willem", "Bakker", "hyphenated given name"),
    ("Anna-Lena", "Vogel", "hyphenated given name"), ("Marie-Ève", "Gagnon", "hyphenated given name"),
    ("Anne Marie", "Duval", "two-word given name"), ("Ana Sofia", "Pereira", "two-word given name"),
    ("Maria José", "Gutiérrez", "two-word given name"), ("Mary Ellen", "Walsh", "two-word given name"),
    ("Gian Luca", "Ferraro", "two-word given name"), ("José Luis", "Navarro", "two-word given name"),
    ("Juan Carlos", "Ortega", "two-word given name"), ("Pier Paolo", "Lombardi", "two-word given name"),
    # surnames with particles, apostrophes, inner capitals
    ("Pieter", "van der Linden", "particle"), ("Luca", "di Stefano", "particle"),
    ("Joana", "da Costa", "particle"), ("Rafael", "dos Santos", "particle"),
    ("Friedrich", "von Alvensleben", "particle"), ("Isabel", "de la Fuente", "particle"),
    ("Willem", "van Houten", "particle"), ("Chiara", "della Valle", "particle"),
    ("Yann", "Le Goff", "particle"), ("Ahmad", "bin Yusof", "particle"),
    ("Sanne", "ter Horst", "particle"), ("Noura", "El Amrani", "particle"),
    ("Khalid", "al-Farsi", "particle"), ("Marco", "De Luca", "particle"),
    ("Sean", "O'Sullivan", "apostrophe or inner capital"), ("Aoife", "O'Connor", "apostrophe or inner capital"),
    ("Connor", "McAllister", "apostrophe or inner capital"), ("Fiona", "MacLeod", "apostrophe or inner capital"),
    ("Gianni", "D'Angelo", "apostrophe or inner capital"), ("Renée", "LeBlanc", "apostrophe or inner capital"),
    ("Kayleigh", "O\u2019Donnell", "apostrophe or inner capital"),
    # letters outside Latin-1, middle initials, three words
    ("Łukasz", "Nowak", "letters outside Latin-1"), ("Šárka", "Dvořáková", "letters outside Latin-1"),
    ("Ştefan", "Ionescu", "letters outside Latin-1"), ("Đorđe", "Petrović", "letters outside Latin-1"),
    ("Grzegorz", "Wiśniewski", "letters outside Latin-1"), ("Agnieszka", "Zielińska", "letters outside Latin-1"),
    ("Maya", "R. Chen", "middle initial"), ("Thomas", "J. Okafor", "middle initial"),
    ("Oliver", "James Whitcombe", "middle name"), ("Elena", "Sofia Marchetti", "middle name"),
]

# capitalised things that are not people, the twins' fillers; the first of each pair starts with a word that is
# also a given name, or reads like a person, where one could be found
THINGS = [
    "Human Resources", "Per Diem", "Payroll Services", "Milton Keynes", "Remote Work Policy", "Alice Springs",
    "Victoria Station", "Harvey Nichols", "Baker Street", "Charlotte Street", "Rua Augusta", "Elizabeth Line",
    "Microsoft Teams", "Victoria Line", "Google Drive", "Florence Office", "Jira Service Desk", "Jordan Valley",
    "Facilities Management", "Austin Campus", "Head Office", "Georgia Tech", "Travel Desk", "Sofia Airport",
    "Annual Leave", "Lincoln Center", "Sick Leave", "Chase Bank", "Parental Leave", "Royal Mail", "Open Enrollment",
    "Christian Aid", "Expense Policy", "Major Incident Review", "Benefits Hub", "Summer Hours", "Power BI",
    "Golden Gate Park", "Workday Learning", "May Bank Holiday", "Lotus Notes", "Easter Monday", "Good Friday",
    "Mark Complete", "Adobe Acrobat", "Rose Garden", "New York", "Hope Street", "São Paulo", "Carolina Room",
    "Den Haag", "Dell Latitude", "Costa Rica", "Ford Transit", "Monte Carlo", "Sterling Lounge", "Santa Clara",
    "Paris Orly", "Apple Pay", "London Bridge", "Oracle Cloud", "June Offsite", "Zoom Rooms", "August Bonus",
    "Slack Connect", "Ivy League", "Outlook Calendar", "Amber Alert", "Bamboo HR", "Holly Hill",
    "Payroll", "Florence", "Finance", "Jordan", "Procurement", "Victoria", "Security", "Sofia", "Legal", "Austin",
]

# (id, position, template): {A}, {B}, {C} are the slots
TEMPLATES = [
    ("t01", "first word", "{A} approves every travel request above 1,000 EUR."),
    ("t02", "question, after an auxiliary", "Can {A} claim the per diem for a day trip?"),
    ("t03", "after a verb", "Please contact {A} about the per diem."),
    ("t04", "list: X or Y, after a first-word verb", "Contact {A} or {B} about the relocation allowance."),
    ("t05", "after a preposition", "Send the signed form to {A} before the end of May."),
    ("t06", "list: X, Y and Z, first words", "{A}, {B} and {C} sit on the expenses panel."),
    ("t07", "possessive", "Ask {A}'s manager before you book the flight."),
    ("t08", "after a preposition (by)", "Overtime must be approved by {A} in advance."),
    ("t09", "apposition", "Our payroll lead, {A}, answers questions on Tuesdays."),
    ("t10", "question, after an auxiliary", "Does {A} still handle parking permits?"),
    ("t11", "sign-off line", "Kind regards,\n{A}\nOffice of the Treasurer"),
    ("t12", "after a preposition (with)", "New starters meet with {A} on their first day."),
    ("t13", "after a verb (thanks to)", "Thanks to {A} for updating the remote work guide."),
    ("t14", "in parentheses", "The on-call engineer (currently {A}) resets passwords."),
    ("t15", "field value", "Document owner: {A}"),
    ("t16", "two clauses", "If {A} is away, ask {B}."),
    ("t17", "after a preposition (to), mid-sentence", "I spoke to {A} yesterday and the per diem is 45 EUR."),
    ("t18", "question, after a verb", "Who replaces {A} during parental leave?"),
    ("t19", "possessive, first word; after a preposition", "{A}'s team handles visa letters for {B}."),
    ("t20", "list: X, Y or Z", "Forward receipts to {A}, {B} or {C}."),
    ("t21", "after a preposition, first words", "According to {A}, the car allowance was raised in June."),
    ("t22", "list after a colon, semicolons", "Mentors this year: {A}; {B}; {C}."),
    ("t23", "question, after a verb", "Why did {A} reject my expense claim?"),
    ("t24", "list with parentheses", "Escalate to {A} (finance) or {B} (human resources)."),
    ("t25", "list: X and Y, after a preposition", "Training sessions are run by {A} and {B} every Thursday."),
    ("t26", "question, after a verb (is)", "Is {A} the right contact for badge access?"),
    ("t27", "two past participles", "Written by {A}, reviewed by {B}."),
    ("t28", "greeting", "Hi {A}, can you approve my leave for August?"),
]
HELD_OUT_FROM = "t17"  # templates from here on are the held-out half
FILLS = 7  # sentences with people per template
TWINS = 5  # sentences with things per template
_SLOT = re.compile(r"\{([ABC])\}")


def fill(template: str, values: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """The template with its slots filled in order, and each value's offsets."""
    out, spans, at = [], [], 0
    for m, value in zip(_SLOT.finditer(template), values, strict=True):
        out.append(template[at:m.start()])
        start = sum(map(len, out))
        out.append(value)
        spans.append((start, start + len(value)))
        at = m.end()
    out.append(template[at:])
    return "".join(out), spans


def halves(items: list, rng: random.Random) -> tuple[list, list]:
    """The items shuffled and dealt into two halves (every other one), so each half holds every kind."""
    items = list(items)
    rng.shuffle(items)
    return items[0::2], items[1::2]


def rows() -> list[dict]:
    rng = random.Random(SEED)
    by_form: dict[str, list] = {}
    for person in PEOPLE:
        by_form.setdefault(person[2], []).append(person)
    people = {"dev": [], "heldout": []}
    for form in by_form.values():  # every form in both halves
        dev, held = halves(form, rng)
        people["dev"] += dev
        people["heldout"] += held
    dev_things, held_things = halves(THINGS, rng)
    things = {"dev": dev_things, "heldout": held_things}
    out = []
    for split in ("dev", "heldout"):
        pool, tpool = list(people[split]), list(things[split])
        rng.shuffle(pool)
        rng.shuffle(tpool)
        p_at = t_at = 0
        for tid, position, template in TEMPLATES:
            if (tid >= HELD_OUT_FROM) != (split == "heldout"):
                continue
            slots = len(_SLOT.findall(template))
            for _ in range(FILLS):
                chosen = [pool[(p_at + i) % len(pool)] for i in range(slots)]
                p_at += slots
                text, spans = fill(template, [f"{g} {s}" for g, s, _ in chosen])
                out.append({"text": text, "people": [{"name": text[a:b], "start": a, "end": b, "form": form,
                                                      "given": g} for (g, _, form), (a, b) in zip(chosen, spans, strict=True)],
                            "things": [], "template": tid, "position": position, "split": split})
            for _ in range(TWINS):
                chosen = [tpool[(t_at + i) % len(tpool)] for i in range(slots)]
                t_at += slots
                text, spans = fill(template, chosen)
                out.append({"text": text, "people": [], "things": [{"name": text[a:b], "start": a, "end": b}
                                                                  for a, b in spans],
                            "template": tid, "position": position, "split": split})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="Only say whether the file is what this script writes.")
    args = ap.parse_args(argv)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows())
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'as generated' if same else 'differs from what this script writes'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    written = rows()
    print(f"{args.out}: {len(written)} sentences, {sum(len(r['people']) for r in written)} people named in "
          f"{sum(bool(r['people']) for r in written)}, {sum(bool(r['things']) for r in written)} twins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
