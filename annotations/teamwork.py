"""What every team session shares, whatever the team labels: gold labels (:mod:`annotations.team`) or spot-check
verdicts (:mod:`annotations.review_team`).

One team folder, one writer (the plan file's lock); a roster and the reviewers who decide;
who is given which items (:func:`assign`); one file per person (``labels/NAME.csv``, written
by that person's own session, so nobody's label overwrites another's); an item's status from
the labels of the people given it (``agreed``, ``disagree``, ``skipped``, ``open``, or
``adjudicated`` once decided); the reviewer's queue of disagreements; and a decision with its
reason, refused (409) when the labels it was made on changed since the page showed them. The
two kinds differ only in what an item and a label are, which each subclass says; the web side
(:class:`TeamWebApp`) routes each request to its person the same way for both, and one page
script (``static/adjudicate.js``) draws either queue from the ``kind`` the queue carries.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Hashable, Iterable
from http import HTTPStatus
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from annotations.single_writer import SingleWriter
from harness.core.clock import now as now  # the team apps take their clock from here
from harness.core.errors import GraceError
from harness.core.files import read_text_checked
from harness.web import Rejected

RULES = ("all", "share", "overlap:N")
ANYONE = "any"  # --team any: no roster, anyone who names themself labels every item
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
STATUSES = ("agreed", "adjudicated", "disagree", "skipped", "open")

K = TypeVar("K", bound=Hashable)  # an item's key: a question ID, a claim's (model, question, repeat, segment)
S = TypeVar("S")  # one person's session
P = TypeVar("P", bound=BaseModel)  # the plan
T = TypeVar("T")


class PersonRejected(Rejected):
    """A request naming nobody, someone not on the roster, or an item not given to them (400)."""


class StaleDecision(Rejected):
    """A reviewer's decision on labels that changed since the page showed them (409: reload and decide again)."""

    status = HTTPStatus.CONFLICT


# -- names and the assignment -------------------------------------------------------------------------


def check_name(name: str, what: str = "--team") -> str:
    name = (name or "").strip()
    if not NAME.match(name) or name == ANYONE:
        raise GraceError(f"{what}: {name!r} is not a usable name: letters, digits, '.', '_' or '-', up to 40, "
                         f"not {ANYONE!r}")
    return name


def parse_names(text: str | None, what: str) -> list[str] | None:
    """``alice,bob`` -> the names, checked and unique; ``None`` or empty -> ``None``. Names that differ only in case
    (``alice,ALICE``) are refused: their files (``labels/alice.csv``, ``labels/ALICE.csv``) are one file on a disk
    that ignores case (macOS, Windows), where one person's labels would overwrite the other's."""
    if not text or not text.strip():
        return None
    names = [check_name(n, what) for n in text.split(",") if n.strip()]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise GraceError(f"{what}: {', '.join(dup)} named twice")
    one_spelling({what: names})
    return names


def one_spelling(named: dict[str, list[str]]) -> None:
    """Refuse two spellings of one name across the options (``--team alice --reviewers Alice``): one person's
    label file and session each, whatever the disk. The same spelling in two options is one person."""
    seen: dict[str, tuple[str, str]] = {}
    for what, names in named.items():
        for name in names:
            first = seen.setdefault(name.lower(), (name, what))
            if first[0] != name:
                where = what if first[1] == what else f"{first[1]} and {what}"
                raise GraceError(f"{where}: {first[0]!r} and {name!r} differ only in case; a disk that ignores case "
                                 f"(macOS, Windows) keeps one label file for both (labels/{name}.csv), so one "
                                 "person's labels would overwrite the other's: spell each name one way")


def parse_rule(rule: str) -> int:
    """``all`` -> 0 (everyone), ``share`` -> 1, ``overlap:N`` -> N; anything else a clear error."""
    text = (rule or "").strip().lower()
    if text == "all":
        return 0
    if text == "share":
        return 1
    m = re.fullmatch(r"overlap:(\d+)", text)
    if not m:
        raise GraceError(f"--assign must be one of {', '.join(RULES)} (e.g. overlap:2), got {rule!r}")
    n = int(m.group(1))
    if n < 1:
        raise GraceError(f"--assign {rule}: each question needs at least one person")
    return n


def assign(question_ids: list[str], people: list[str], rule: str) -> dict[str, list[str]]:
    """Each question to ``N`` consecutive people of the roster in turn (``share``: one), so everyone gets the same
    number, give or take one, and every question has ``N`` labels (what Fleiss' kappa over an overlap needs). With
    ``overlap:2`` among three people every pair shares a third of the questions; with more people only some pairs
    share questions (the pairwise kappas shown are theirs)."""
    n = parse_rule(rule)
    if n == 0:
        return {}
    if n > len(people):
        raise GraceError(f"--assign {rule} gives each question to {n} people, but the team has {len(people)} "
                         f"({', '.join(people)}); name more people in --team or ask for fewer per question")
    out: dict[str, list[str]] = {p: [] for p in people}
    for i, qid in enumerate(question_ids):
        start = i * n
        for j in range(n):
            out[people[(start + j) % len(people)]].append(qid)
    return out


# -- the plan file ------------------------------------------------------------------------------------


def read_plan(path: Path, model: type[P], what: str) -> P:
    try:
        return model.model_validate(json.loads(read_text_checked(path)))
    except (ValueError, TypeError) as exc:
        raise GraceError(f"{path}: not a {what} grace wrote ({str(exc).splitlines()[0]}); "
                         "restore it or start another --out folder") from None


def check_same(folder: Path, said: Iterable[tuple[str, list[str] | str | None, list[str] | str | None]]) -> None:
    """Each (option, given on this start, saved at the first) must match: a restart must not give people other
    items or let others decide."""
    for option, given, saved in said:
        if given != saved:
            raise GraceError(f"{folder} was started with {option} {_shown(saved) or '(none)'}, not "
                             f"{_shown(given) or '(none)'}: resume without {option} (or the same), or start another "
                             "--out folder (a restart must not give people other questions)")


def _shown(value: list[str] | str | None) -> str:
    return ANYONE if value is None else ",".join(value) if isinstance(value, list) else value


def num(x: float | None) -> float | None:
    """A kappa for JSON: NaN (every label the same) is null, which a browser can parse."""
    return None if x is None or math.isnan(x) else round(x, 4)


def article(kb: Any, article_id: str) -> dict[str, Any]:
    """An article as the queue shows it beside the labels (its text cut at 4000 characters)."""
    art = kb.by_id.get(article_id) if kb is not None else None
    if art is None:
        return {"id": article_id, "in_kb": False, "title": "", "breadcrumb": [], "text": "", "cut": False}
    return {"id": art.id, "in_kb": True, "title": art.title, "breadcrumb": [p for p in art.heading_path or [] if p],
            "text": art.text[:4000], "cut": len(art.text) > 4000}


# -- the team ---------------------------------------------------------------------------------------


class Team(Generic[K, S]):
    """A team folder, open: one session per person, the reviewer's decisions, what they add up to.

    A subclass says what an item is (:meth:`keys`, :meth:`queue_item`), what each person gave
    (:meth:`current`, :meth:`shown`), how a person's session opens (:meth:`_open_person`) and how
    decisions and the result are written (:meth:`_write_decisions`, :meth:`write_result`)."""

    plan_name: ClassVar[str]  # the plan file: its lock is the folder's one writer
    command: ClassVar[str]  # named when another server holds the folder
    kind: ClassVar[str]  # what the queue holds, for the page: "labels" or "verdicts"
    team_word: ClassVar[str]  # "this session's team" / "this review team", in a refusal
    anyone_decides: ClassVar[bool] = False  # no reviewers named: anyone named decides (else anyone on the team)

    def __init__(self, folder: Path, plan: Any):
        self.folder, self.plan = folder, plan
        self.adjudications_file = folder / "adjudications.csv"
        self.sessions: dict[str, S] = {}
        self.decided: dict[K, Any] = {}
        self._lock = threading.RLock()
        self._writer = SingleWriter(folder / self.plan_name, self.command)

    # -- people ------------------------------------------------------------------------------------

    @property
    def roster(self) -> list[str] | None:
        """Who gives labels; None: anyone who names themself."""
        return self.plan.people

    def check_person(self, who: Any, *, reviewer: bool = False) -> str:
        """The person a request names, or a clear error: nobody, a bad name, someone not on the roster."""
        who = who.strip() if isinstance(who, str) else ""
        if not who:
            raise PersonRejected("name yourself: open the page with ?who=YOUR_NAME (or pick your name on it)")
        if not NAME.match(who) or who == ANYONE:
            raise PersonRejected(f"{who!r} is not a usable name: letters, digits, '.', '_' or '-', up to 40")
        reviewers = self.plan.reviewers
        if reviewer and reviewers:
            if who not in reviewers:
                raise PersonRejected(f"{who!r} is not a reviewer of {self.team_word} ({', '.join(reviewers)})")
        elif not (reviewer and self.anyone_decides) and self.roster is not None and who not in self.roster + reviewers:
            raise PersonRejected(f"{who!r} is not on {self.team_word} ({', '.join(self.roster + reviewers)}); "
                                 "pick your name, or ask who started it to add you to --team")
        twin = next((p for p in self._people() if p.lower() == who.lower() and p != who), None)
        if twin is not None:  # anyone who names themself: Alice after alice would write alice's file on macOS
            raise PersonRejected(f"{who!r} differs from {twin!r}, already on {self.team_word}, only in case; both "
                                 f"would write one label file on a disk that ignores case: name yourself {twin!r}")
        return who

    def _people(self) -> list[str]:
        """Everyone known to the folder: the roster, the reviewers, the sessions open and the label files written."""
        with self._lock:
            known = [*(self.roster or []), *self.plan.reviewers, *self.sessions]
        labels = self.folder / "labels"
        return known + ([p.stem for p in labels.glob("*.csv")] if labels.is_dir() else [])

    def person(self, who: str) -> S:
        """``who``'s own session (opened on first use), writing ``labels/WHO.csv``."""
        with self._lock:
            s = self.sessions.get(who)
            if s is None:
                (self.folder / "labels").mkdir(exist_ok=True)
                s = self.sessions[who] = self._open_person(who, self.folder / "labels" / f"{who}.csv")
            return s

    def _open_person(self, who: str, path: Path) -> S:
        raise NotImplementedError

    # -- what the team has done --------------------------------------------------------------------

    def keys(self) -> list[K]:
        """Every item, in the set's order."""
        raise NotImplementedError

    def current(self) -> dict[str, dict[K, Any]]:
        """Person -> item -> what they gave, read from their sessions now."""
        raise NotImplementedError

    def shown(self, key: K, rows: dict[str, dict[K, Any]]) -> dict[str, str]:
        """Person -> the label they gave ``key``, as the queue shows it (the stale check compares these)."""
        raise NotImplementedError

    def status(self, key: K, rows: dict[str, dict[K, Any]]) -> str:
        raise NotImplementedError

    @staticmethod
    def status_of(decided: bool, labels: set[str], all_acted: bool, *, open_team: bool = False) -> str:
        """``adjudicated``; ``disagree`` (the ``labels`` people gave differ); once everyone given the item acted
        (``all_acted``), ``agreed`` (one label) or ``skipped`` (none); before, ``open``. In an open team a label
        nobody contradicts is agreed at once."""
        if decided:
            return "adjudicated"
        if len(labels) > 1:
            return "disagree"
        if not all_acted:
            return "agreed" if labels and open_team else "open"
        return "agreed" if labels else "skipped"

    def summary(self, who: str | None = None, rows: dict[str, dict[K, Any]] | None = None) -> dict[str, Any]:
        """The team's progress (and agreement), as every page shows it beside a person's own."""
        raise NotImplementedError

    def counts(self, rows: dict[str, dict[K, Any]]) -> dict[str, int]:
        statuses = [self.status(k, rows) for k in self.keys()]
        return {s: statuses.count(s) for s in STATUSES}

    # -- the reviewer's queue ------------------------------------------------------------------------

    def queue(self) -> dict[str, Any]:
        """Every item people disagree on (then those decided): each label with who gave it, the articles."""
        rows = self.current()
        items = []
        for key in self.keys():
            st = self.status(key, rows)
            if st in ("disagree", "adjudicated"):
                items.append(self.queue_item(key, st, rows))
        items.sort(key=lambda it: it["status"] != "disagree")  # the undecided first
        return {"kind": self.kind, "items": items, "to_decide": sum(it["status"] == "disagree" for it in items)}

    def queue_item(self, key: K, status: str, rows: dict[str, dict[K, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def decide(self, key: K, seen: dict[str, str] | None, what: str, record: Callable[[dict[str, dict[K, Any]]], T],
               ) -> T:
        """Record a reviewer's decision on ``key`` (``record`` makes it from the labels now and stores it in
        :attr:`decided`), then write the decisions and the result. ``seen`` (person -> label, as the page showed
        them): when any changed since, the decision is refused (409), never made on labels nobody saw."""
        with self._lock:
            rows = self.current()
            shown = self.shown(key, rows)
            if seen is not None and _acted(shown) != _acted(seen):
                raise StaleDecision(f"the {self.kind} of {what} changed since you opened it (now: "
                                    + ", ".join(f"{p} {v}" for p, v in shown.items()) + "); reload and decide again")
            out = record(rows)
            self._write_decisions([self.decided[k] for k in self.keys() if k in self.decided])
            self.write_result()
            return out

    def _write_decisions(self, decided: list[Any]) -> None:
        raise NotImplementedError

    def write_result(self) -> Any:
        """Rewrite what the labels and decisions add up to (the gold, the human labels)."""
        raise NotImplementedError

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()  # type: ignore[attr-defined]
        self._writer.release()


def _acted(labels: dict[str, str]) -> dict[str, str]:
    return {p: v for p, v in labels.items() if v != "unlabelled"}


# -- the web side -----------------------------------------------------------------------------------


class TeamWebApp(Generic[S]):
    """A :class:`harness.web.WebApp` for a team: one single-person app per person, sharing what they can.

    Every request names its person (``?who=NAME``, which the shared ``common.js`` adds to each
    call of a page opened with it); the team checks the name and routes the request to that
    person's own app, so each person's page is the one-person page, saving to their file. Under
    ``api`` (``/api`` or ``/api/review``): ``state`` without a name asks the page to pick one,
    ``team`` the team's progress, ``queue`` and ``adjudicate`` the reviewer's, ``label`` a person's."""

    api: ClassVar[str]
    team: Team

    def __init__(self) -> None:
        self.apps: dict[str, Any] = {}
        self._app_lock = threading.Lock()

    @property
    def post_paths(self) -> tuple[str, ...]:
        return (f"{self.api}/label", f"{self.api}/adjudicate")

    def app(self, who: str) -> Any:
        with self._app_lock:
            app = self.apps.get(who)
            if app is None:
                app = self.apps[who] = self._make_app(who, next(iter(self.apps.values()), None))
            return app

    def _make_app(self, who: str, shared: Any) -> Any:
        raise NotImplementedError

    def unnamed(self) -> dict[str, Any]:
        """What the page opened without a name gets: the team, to pick a name from."""
        return {"need_person": True, "team": self.team.summary()}

    def team_get(self, path: str, who: str) -> dict[str, Any] | None:
        """A route of this kind of team only (None: not one)."""
        return None

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        who = (query.get("who") or [""])[0]
        if path == f"{self.api}/state" and not who:  # the page asks its person to name themself
            return self.unnamed()
        if path == f"{self.api}/team":
            return self.team.summary(self.team.check_person(who) if who else None)
        if path == f"{self.api}/queue":
            reviewer = self.team.check_person(who, reviewer=True)
            return self.team.queue() | {"reviewer": reviewer, "team": self.team.summary(reviewer)}
        extra = self.team_get(path, who)
        if extra is not None:
            return extra
        who = self.team.check_person(who)
        data = self.app(who).get(path, query)
        if path == f"{self.api}/state" and data is not None:
            data["team"] = self.team.summary(who)
        return data

    def post(self, path: str, body: Any) -> dict | None:
        if not isinstance(body, dict):
            raise PersonRejected("expected a JSON object")
        if path == f"{self.api}/adjudicate":
            seen = body.get("seen")
            if seen is not None and (not isinstance(seen, dict) or not all(isinstance(v, str) for v in seen.values())):
                raise PersonRejected(f"seen must map each person to the {self.team.kind[:-1]} the page showed")
            return self.adjudicate(body, seen)
        if path != f"{self.api}/label":
            return None
        return self.label(self.team.check_person(body.get("who")), body)

    def adjudicate(self, body: dict[str, Any], seen: dict[str, str] | None) -> dict[str, Any]:
        raise NotImplementedError

    def label(self, who: str, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError
