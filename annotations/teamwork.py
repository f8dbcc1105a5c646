"""What every team session shares, whatever the team labels: gold labels (:mod:`annotations.team`) or spot-check
verdicts (:mod:`annotations.review_team`).

One team folder, one writer (the plan file's lock); a roster and the reviewers who decide,
each with their own key (``keys.json``, :mod:`harness.web.credentials`): a request acts as
the owner of its key, never as a name it gives; who is given which items (:func:`assign`,
:func:`rebalance` when the roster changes); one file per person (``labels/NAME.csv``, written
by that person's own session, so nobody's label overwrites another's); an item's status from
the labels of the people given it (``agreed``, ``disagree``, ``skipped``, ``open``, or
``adjudicated`` once decided, ``reopened`` when a label changed since); the reviewer's queue;
and a decision with its reason, made through :func:`harness.web.decisions.decide` on what the
page showed (``seen``: each label and the decision so far), so a stale or second decision is
refused (409). The two kinds differ only in what an item and a label are, which each subclass
says; the web side (:class:`TeamWebApp`) routes each request to its person the same way for
both, and one page script (``static/adjudicate.js``) draws either queue from the ``kind`` the
queue carries.
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
from harness.web.credentials import Credentials
from harness.web.decisions import decide

RULES = ("all", "share", "overlap:N")
KEYS = "keys.json"  # each named person's key, hashed (harness.web.credentials)
ANYONE = "any"  # --team any: no roster, anyone who names themself labels every item
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
STATUSES = ("agreed", "adjudicated", "disagree", "reopened", "skipped", "open")
TO_DECIDE = ("disagree", "reopened")  # what waits in the reviewer's queue
DECISION = "@decision"  # the decision so far, in a queue item's ``seen`` (no person is named with an @)

K = TypeVar("K", bound=Hashable)  # an item's key: a question ID, a claim's (model, question, repeat, segment)
S = TypeVar("S")  # one person's session
P = TypeVar("P", bound=BaseModel)  # the plan
T = TypeVar("T")


class PersonRejected(Rejected):
    """A request naming nobody, someone not on the roster, or an item not given to them (400)."""


class NotYourRole(PersonRejected):
    """A person acting outside their role: a labeller deciding, someone reading the reviewers' queue (403)."""

    status = HTTPStatus.FORBIDDEN


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


def rebalance(question_ids: list[str], before: dict[str, list[str]], acted: dict[str, set[str]], people: list[str],
              rule: str) -> dict[str, list[str]]:
    """The assignment after a roster change: each question keeps whoever already labelled (or skipped) it, on the
    roster or not (a label given stays its person's and counts); the places left to reach ``N`` per question go to
    the people of the roster with the fewest questions (among equals, whoever had it before), so the load evens out
    and a newcomer takes over unlabelled questions. Someone removed keeps only the questions they labelled."""
    n = parse_rule(rule)
    if n == 0:
        return {}
    if n > len(people):
        raise GraceError(f"--assign {rule} gives each question to {n} people, but the team would have {len(people)} "
                         f"({', '.join(people)}); keep more people on --team")
    had = {p: set(q) for p, q in before.items()}
    keep: dict[str, list[str]] = {}
    load = dict.fromkeys(people, 0)
    for qid in question_ids:  # the labels given stay: their people keep those questions
        keep[qid] = [p for p in had if qid in had[p] and qid in acted.get(p, set())]
        for p in keep[qid]:
            if p in load:
                load[p] += 1
    for qid in question_ids:  # the rest to the least loaded, whoever had it before first among equals
        for _ in range(n - len(keep[qid])):
            p = min((p for p in people if p not in keep[qid]),
                    key=lambda p: (load[p], qid not in had.get(p, set()), people.index(p)))
            keep[qid].append(p)
            load[p] += 1
    out: dict[str, list[str]] = {p: [] for p in [*people, *(p for p in had if p not in people)]}
    for qid in question_ids:
        for p in keep[qid]:
            out[p].append(qid)
    return {p: q for p, q in out.items() if q or p in people}


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
        self._decisions: dict[K, int] = {}  # decisions made on each item since this start: part of what a page saw
        self._lock = threading.RLock()
        self._writer = SingleWriter(folder / self.plan_name, self.command)
        self.credentials = Credentials(folder / KEYS)
        self.new_keys: dict[str, str] = {}  # the keys issued by this start: printed once, never stored

    def issue_keys(self, again: list[str] | None = None) -> dict[str, str]:
        """A key for every person the plan names (labellers and reviewers) who has none yet, and a new one for each
        of ``again`` (``--new-key``); kept in :attr:`new_keys` for the command to print once."""
        named = list(dict.fromkeys([*(self.roster or []), *self.plan.reviewers]))
        self.new_keys = self.credentials.issue(named, again or [])
        return self.new_keys

    # -- people ------------------------------------------------------------------------------------

    @property
    def roster(self) -> list[str] | None:
        """Who gives labels; None: anyone who names themself."""
        return self.plan.people

    def check_person(self, who: Any, *, reviewer: bool = False) -> str:
        """The person a request names, or a clear error: nobody, a bad name, someone not on the roster."""
        who = who.strip() if isinstance(who, str) else ""
        if not who:
            if self.credentials.names():
                raise PersonRejected("name yourself: open your own link, the one the session printed for you (it "
                                     "holds your key)")
            raise PersonRejected("name yourself: open the page with ?who=YOUR_NAME (or pick your name on it)")
        if not NAME.match(who) or who == ANYONE:
            raise PersonRejected(f"{who!r} is not a usable name: letters, digits, '.', '_' or '-', up to 40")
        reviewers = self.plan.reviewers
        if reviewer and reviewers:
            if who not in reviewers:
                raise NotYourRole(f"{who!r} is not a reviewer of {self.team_word} ({', '.join(reviewers)})")
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
    def status_of(decided: bool, labels: Iterable[str], all_acted: bool, *, open_team: bool = False,
                  reopened: bool = False, majority_of: int = 0) -> str:
        """``adjudicated``, or ``reopened`` when a label changed since the decision and the labels still differ;
        ``disagree`` (the ``labels`` people gave differ), unless ``majority_of`` (the people given the item, under
        the rule ``--agree majority``) is set and, everyone having acted, more than half of them gave one label;
        once everyone given the item acted (``all_acted``), ``agreed`` (one label) or ``skipped`` (none); before,
        ``open``. In an open team a label nobody contradicts is agreed at once."""
        labels = list(labels)
        distinct = set(labels)
        if decided and reopened and len(distinct) > 1:
            return "reopened"
        if decided:
            return "adjudicated"
        if len(distinct) > 1:
            if majority_of and all_acted and 2 * max(labels.count(v) for v in distinct) > majority_of:
                return "agreed"
            return "disagree"
        if not all_acted:
            return "agreed" if distinct and open_team else "open"
        return "agreed" if distinct else "skipped"

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
            if st in (*TO_DECIDE, "adjudicated"):
                items.append(self.queue_item(key, st, rows) | {"seen": self.seen(key, rows)})
        items.sort(key=lambda it: it["status"] not in TO_DECIDE)  # the undecided first
        return {"kind": self.kind, "items": items, "to_decide": sum(it["status"] in TO_DECIDE for it in items)}

    def seen(self, key: K, rows: dict[str, dict[K, Any]]) -> dict[str, str]:
        """What a decision on ``key`` is made on: each label given, and the decision so far (who decided what, and
        how many decisions this start has seen), so a second decision sent on the same page is refused."""
        d = self.decided.get(key)
        mark = "" if d is None else f"{self.decision_label(d)} by {self.decision_by(d)} (#{self._decisions.get(key, 0)})"
        return {**_acted(self.shown(key, rows)), DECISION: mark}

    def decision_label(self, decision: Any) -> str:
        raise NotImplementedError

    def decision_by(self, decision: Any) -> str:
        raise NotImplementedError

    def decided_on(self, key: K) -> dict[str, str] | None:
        """The labels the decision on ``key`` was made on, when known (None: not decided, or not recorded)."""
        return None

    def reopened(self, key: K, rows: dict[str, dict[K, Any]]) -> bool:
        """A label of ``key`` changed since the reviewer decided it: the decision no longer answers the labels."""
        on = self.decided_on(key)
        return on is not None and on != _acted(self.shown(key, rows))

    def queue_item(self, key: K, status: str, rows: dict[str, dict[K, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def decide(self, key: K, seen: Any, what: str, record: Callable[[dict[str, dict[K, Any]]], T]) -> T:
        """Record a reviewer's decision on ``key`` (``record`` makes it from the labels now and stores it in
        :attr:`decided`), then write the decisions and the result: through :func:`harness.web.decisions.decide`,
        so only when ``seen`` (the queue item's, as the page showed it) is still the state (else 409)."""
        rows: dict[str, dict[K, Any]] = {}

        def now() -> dict[str, str]:
            rows.update(self.current())
            return self.seen(key, rows)

        def made() -> T:
            out = record(rows)
            self._decisions[key] = self._decisions.get(key, 0) + 1
            self._write_decisions([self.decided[k] for k in self.keys() if k in self.decided])
            self.write_result()
            return out

        return decide(self._lock, f"the {self.kind} of {what}", seen, now, made)

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

    Every request acts as the owner of its key (``?cred=KEY``, which the shared ``common.js``
    adds to each call of a page opened with a personal link; a ``who`` that disagrees is
    refused, 403); in a team open to anyone, a person without a key names themself
    (``?who=NAME``). The team checks the person and routes the request to their own app, so
    each person's page is the one-person page, saving to their file. Under
    ``api`` (``/api`` or ``/api/review``): ``state`` without a name asks the page to pick one,
    ``team`` the team's progress, ``queue`` and ``adjudicate`` the reviewer's, ``label`` a person's."""

    api: ClassVar[str]
    team: Team
    keyed = True  # the server hands a POST's key to post(): the person is whose key it is

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
        """What the page opened without a name gets: the team, to pick a name from, and who signs in with their
        own link instead (a name alone is nobody for them)."""
        return {"need_person": True, "team": self.team.summary(), "keyed": self.team.credentials.names()}

    def team_get(self, path: str, who: str) -> dict[str, Any] | None:
        """A route of this kind of team only (None: not one)."""
        return None

    def person(self, named: Any, key: str | None) -> str:
        """Who a request acts as: the owner of its key (a name that disagrees is refused, 403); with no key, the
        name it gives, unless that person holds a key (then 403: a name alone is nobody)."""
        return self.team.credentials.person(named if isinstance(named, str) else "", key)

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        who = self.person((query.get("who") or [""])[0], (query.get("cred") or [""])[0] or None)
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

    def post(self, path: str, body: Any, key: str | None = None) -> dict | None:
        if not isinstance(body, dict):
            raise PersonRejected("expected a JSON object")
        who = self.person(body.get("who"), key)
        if path == f"{self.api}/adjudicate":  # what the page showed: checked by the one decide (harness.web.decisions)
            return self.adjudicate(who, body, body.get("seen"))
        if path != f"{self.api}/label":
            return None
        return self.label(self.team.check_person(who), body)

    def adjudicate(self, who: str, body: dict[str, Any], seen: Any) -> dict[str, Any]:
        raise NotImplementedError

    def label(self, who: str, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError
