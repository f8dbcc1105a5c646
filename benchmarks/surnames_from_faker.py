"""Write ``harness/privacy/surnames.txt``: the surnames of Faker's person providers, one word a line.

Why a list of surnames: a capitalised pair that starts with a given name is a
person's name or a thing's ("Sofia Rossi", "Victoria Line"), and the second word
tells them apart when it is a surname: :mod:`harness.privacy.name_runs` takes such
a pair without asking the name model when its last word is one. Faker's lists are
the same source as ``given_names.txt`` (MIT-licensed, 63 locales); an entry of
several words keeps its last when the words before it are particles ("van der
Veen" gives "Veen"); only Latin script, as the name rules read it.

Needs Faker, which grace does not depend on: run it in a throwaway environment::

    python -m venv /tmp/faker && /tmp/faker/bin/pip install faker==40.54.0
    /tmp/faker/bin/python benchmarks/surnames_from_faker.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "harness" / "privacy" / "surnames.txt"
PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "dos", "das", "du", "le", "la", "ter",
             "ten", "bin", "ibn", "al", "el", "los", "las", "zu", "y"}


def latin(word: str) -> bool:
    return all(c in "-'\u2019" or (c.isalpha() and "LATIN" in unicodedata.name(c, "")) for c in word)


def surnames() -> set[str]:
    import faker
    import faker.providers.person as person

    out = set()
    for mod in pkgutil.iter_modules(person.__path__):
        provider = getattr(importlib.import_module(f"faker.providers.person.{mod.name}"), "Provider", None)
        for attr in dir(provider) if provider else ():
            if not ((attr.startswith("last_name") and not attr.endswith("_formats")) or attr == "last_romanized_names"):
                continue
            values = getattr(provider, attr)
            if callable(values) or not isinstance(values, (list, tuple, dict)):
                continue
            for entry in values:
                words = str(entry).split()
                if words and all(w.lower() in PARTICLES for w in words[:-1]) and words[-1][:1].isupper() \
                        and latin(words[-1]) and len(words[-1]) > 1:
                    out.add(words[-1])
    print(f"Faker {faker.VERSION}: {len(out)} surnames", file=sys.stderr)
    return out


def main() -> int:
    import faker

    names = sorted(surnames())
    head = (f"# Surnames: the last names of every locale of Faker {faker.VERSION}'s person providers written in Latin "
            "script (and the\n# romanised ones of Chinese and Japanese), one word a line; written by "
            "benchmarks/surnames_from_faker.py. Faker is\n# MIT-licensed, (c) 2012 Daniele Faraglia "
            "(https://github.com/joke2k/faker). harness.privacy.name_runs takes a pair that\n# starts with a given "
            "name for a person's name without the name model when it ends with one.\n")
    OUT.write_text(head + "".join(n + "\n" for n in names), encoding="utf-8")
    print(f"{OUT}: {len(names)} surnames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
