"""One labelling session for a team (``grace annotate --team``): who labels what, their labels, agreement, gold.

A team folder holds the plan (``team.json``: the roster, the reviewers, the assignment rule
and the questions each person was given, fixed at the first start so a restart gives nobody
other questions), the questions (``questions.csv``), one annotation file per person
(``labels/NAME.csv``, written by that person's :class:`AnnotationSession`, so two people never
write one file and ``grace annotations agree labels/*.csv`` reads exactly what the page
shows), the reviewer's decisions (``adjudications.csv``) and the gold they add up to
(``gold.csv``, rewritten after every label and decision). Every file is written
write-then-rename; a killed server loses nothing saved.

Assignment rules: ``all`` (everyone labels every question), ``share`` (each question to one
person, in turn) and ``overlap:N`` (each question to N people, in turn, so every pair of
people shares questions to measure agreement on). A question is gold when the people given
it agree (every one of them has labelled or skipped it, and the labels are one), or when a
reviewer decided it; where labels differ it waits in the reviewer's queue.
"""

from __future__ import annotations

import copy
import json
import math
import re
import threading
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from annotations.agreement import Comparison, compare_records, strength
from annotations.labels import LabelRecord, read_labels, render_csv
from annotations.single_writer import SingleWriter
from annotations.state import AnnotationSession, question_records
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text, read_text_checked
from harness.web import Rejected
from kb_builder.gold import EXPECTED_CITATIONS, ID_SEP, MUST_REFUSE, QUESTION, QUESTION_ID, split_ids

if TYPE_CHECKING:
    from kb_builder.store import KB

RULES = ("all", "share", "overlap:N")
ANYONE = "any"  # --team any: no roster, anyone who names themself labels every question
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


class PersonRejected(Rejected):
    """A request naming nobody, someone not on the roster, or a question not given to them (400)."""


class StaleDecision(Rejected):
    """A reviewer's decision on labels that changed since the page showed them (409: reload and decide again)."""

    status = HTTPStatus.CONFLICT


class TeamPlan(BaseModel):
    """``team.json``: who labels which questions, fixed at a team folder's first start."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    people: list[str] | None = Field(description="The roster, in order; null: anyone who names themself (--team any).")
    reviewers: list[str] = Field(default_factory=list, description="Who may decide disagreements; empty: anyone named.")
    assign: str = Field(description="The assignment rule: all, share or overlap:N.")
    questions: list[str] = Field(description="Every question ID, in the questions file's order.")
    assignment: dict[str, list[str]] = Field(
        default_factory=dict, description="Person -> the question IDs given to them (empty with the rule all).")


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


def check_name(name: str, what: str = "--team") -> str:
    name = (name or "").strip()
    if not NAME.match(name) or name == ANYONE:
        raise GraceError(f"{what}: {name!r} is not a usable name: letters, digits, '.', '_' or '-', up to 40, "
                         f"not {ANYONE!r}")
    return name


def parse_names(text: str | None, what: str) -> list[str] | None:
    """``alice,bob`` -> the names, checked and unique; ``None`` or empty -> ``None``."""
    if not text or not text.strip():
        return None
    names = [check_name(n, what) for n in text.split(",") if n.strip()]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise GraceError(f"{what}: {', '.join(dup)} named twice")
    return names


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _num(x: float) -> float | None:
    """A kappa for JSON: NaN (every label the same) is null, which a browser can parse."""
    return None if math.isnan(x) else round(x, 4)


class TeamSession:
    """A team's folder open for labelling: one :class:`AnnotationSession` per person, the decisions, the gold."""

    def __init__(self, folder: Path, kb: KB, plan: TeamPlan):
        self.folder, self.kb, self.plan = folder, kb, plan
        self.questions_file = folder / "questions.csv"
        self.adjudications_file = folder / "adjudications.csv"
        self.gold_file = folder / "gold.csv"
        self.sessions: dict[str, AnnotationSession] = {}
        self.adjudications: dict[str, LabelRecord] = {}
        self.base: list[LabelRecord] = []
        self.extra_columns: list[str] = []
        self._assigned_sets: dict[str, set[str]] | None = None
        self._lock = threading.RLock()
        self._writer = SingleWriter(folder / "team.json", "'grace annotate --team'")

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def open(cls, kb: KB, folder: str | Path, *, questions: str | Path | None = None, people: str | None = None,
             reviewers: str | None = None, rule: str | None = None) -> TeamSession:
        """Start a team folder (``questions``, ``people``: ``a,b,c`` or ``any``, ``rule``) or resume one; given
        again on a resume they must match what the folder was started with."""
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise GraceError(f"{folder}: a team session writes a folder (labels per person, the gold); "
                             "give --out a folder name, not a file")
        plan_file = folder / "team.json"
        roster = None if people is None or people.strip().lower() == ANYONE else parse_names(people, "--team")
        revs = parse_names(reviewers, "--reviewers") or []
        if plan_file.exists():
            plan = _read_plan(plan_file)
            _check_same(plan, folder, roster if people is not None else plan.people, revs if reviewers else plan.reviewers,
                        rule or plan.assign)
        else:
            if questions is None:
                raise GraceError(f"{folder} is not a team folder yet: give --questions Q.csv to start one")
            if people is None:
                raise GraceError("give --team alice,bob,carol (the roster) or --team any (no roster)")
            rule = rule or "all"
            if parse_rule(rule) and roster is None:
                raise GraceError(f"--assign {rule} gives questions to named people: list them in --team (a,b,c)")
            assign([], roster or [], rule)  # a rule the roster cannot meet: said before anything is written
            plan = TeamPlan(people=roster, reviewers=revs, assign=rule, questions=[])
        folder.mkdir(parents=True, exist_ok=True)
        team = cls(folder, kb, plan)
        team._writer.acquire()
        try:
            team._load(questions)
        except BaseException:
            team.close()
            raise
        return team

    def _load(self, questions: str | Path | None) -> None:
        fresh = not self.plan.questions
        if fresh:  # the questions, as an annotation file every person's session starts from
            records, cols = question_records(questions)
            atomic_write_text(self.questions_file, render_csv(records, cols))
            self.plan.questions = [r.question_id for r in records]
            self.plan.assignment = assign(self.plan.questions, self.plan.people or [], self.plan.assign)
            atomic_write_text(self.folder / "team.json", self.plan.model_dump_json(indent=2) + "\n")
        elif questions is not None:
            from kb_builder.gold import read_questions

            given = [q.question_id for q in read_questions(questions)]
            if given != self.plan.questions:
                raise GraceError(f"{questions} does not hold the questions {self.folder} was started with "
                                 f"({len(self.plan.questions)}); resume without --questions, or start another folder")
        self.base, self.extra_columns = read_labels(self.questions_file)
        if self.adjudications_file.exists():
            decided, _ = read_labels(self.adjudications_file)
            self.kb.check_cited(decided, self.adjudications_file)
            self.adjudications = {r.question_id: r for r in decided}
        for name in self.plan.people or []:
            self.person(name)
        for path in sorted((self.folder / "labels").glob("*.csv")):  # an open team: who has labelled before
            if NAME.match(path.stem):
                self.person(path.stem)
        self.write_gold()

    # -- people ------------------------------------------------------------------------------------

    def check_person(self, who: str | None, *, reviewer: bool = False) -> str:
        """The person a request names, or a clear error: nobody, a bad name, someone not on the roster."""
        who = (who or "").strip()
        if not who:
            raise PersonRejected("name yourself: open the page with ?who=YOUR_NAME (or pick your name on it)")
        if not NAME.match(who) or who == ANYONE:
            raise PersonRejected(f"{who!r} is not a usable name: letters, digits, '.', '_' or '-', up to 40")
        known = (self.plan.people or []) + self.plan.reviewers
        if reviewer:
            if self.plan.reviewers and who not in self.plan.reviewers:
                raise PersonRejected(f"{who!r} is not a reviewer of this session ({', '.join(self.plan.reviewers)})")
        elif self.plan.people is not None and who not in known:
            raise PersonRejected(f"{who!r} is not on this session's team ({', '.join(known)}); "
                                 "pick your name, or ask who started it to add you to --team")
        return who

    def person(self, who: str) -> AnnotationSession:
        """``who``'s session (opened on first use), walking the questions given to them."""
        with self._lock:
            s = self.sessions.get(who)
            if s is None:
                (self.folder / "labels").mkdir(exist_ok=True)
                s = AnnotationSession.open(self.kb, self.folder / "labels" / f"{who}.csv", questions=self.questions_file,
                                           annotator=who)
                s.view = self.assigned(who)
                self.sessions[who] = s
            return s

    def assigned(self, who: str) -> list[str]:
        if self.plan.people is None or not self.plan.assignment:
            return [] if self.plan.people is not None and who not in self.plan.people else list(self.plan.questions)
        return list(self.plan.assignment.get(who, []))

    def given_to(self, qid: str) -> list[str]:
        """Who was given question ``qid`` (an open team: everyone who has a file)."""
        if self.plan.people is not None and self.plan.assignment:
            return [p for p in self.plan.people if qid in self._sets()[p]]
        return list(self.sessions) if self.plan.people is None else list(self.plan.people)

    def _sets(self) -> dict[str, set[str]]:
        if self._assigned_sets is None:  # the plan is fixed once loaded
            self._assigned_sets = {p: set(q) for p, q in self.plan.assignment.items()}
        return self._assigned_sets

    def check_given(self, who: str, qid: str) -> None:
        if qid not in set(self.assigned(who)):
            raise PersonRejected(f"question {qid!r} is not one of {who}'s ({len(self.assigned(who))} given)")

    # -- what the team has done ------------------------------------------------------------------------

    def _rows(self) -> dict[str, dict[str, LabelRecord]]:
        with self._lock:
            sessions = dict(self.sessions)
        return {p: {r.question_id: r for r in s.snapshot()} for p, s in sessions.items()}

    def comparison(self, rows: dict[str, dict[str, LabelRecord]] | None = None) -> tuple[Comparison | None, str]:
        """The agreement ``grace annotations agree labels/*.csv`` gives now, or None and why there is none yet."""
        rows = self._rows() if rows is None else rows
        people = [p for p in rows if any(r.status == "labelled" for r in rows[p].values())]
        if len(people) < 2:
            return None, "agreement needs labels from two people"
        try:
            return compare_records(people, [self.folder / "labels" / f"{p}.csv" for p in people],
                                   [list(rows[p].values()) for p in people]), ""
        except GraceError as exc:
            return None, str(exc)

    def status(self, qid: str, rows: dict[str, dict[str, LabelRecord]]) -> str:
        """``adjudicated``, ``disagree`` (labels differ), ``agreed`` (everyone given it acted, one label),
        ``skipped`` (everyone skipped it) or ``open`` (waiting for someone)."""
        if qid in self.adjudications:
            return "adjudicated"
        given = self.given_to(qid)
        recs = [rows[p][qid] for p in given if p in rows and qid in rows[p]]
        labels = {r.label for r in recs if r.label is not None}
        if len(labels) > 1:
            return "disagree"
        acted = len(recs) == len(given) and all(r.status in ("labelled", "skipped") for r in recs)
        if not given or not acted:
            return "agreed" if labels and self.plan.people is None else "open"
        return "agreed" if labels else "skipped"

    def summary(self, who: str | None = None, rows: dict[str, dict[str, LabelRecord]] | None = None) -> dict:
        """The team's progress and agreement, as the page shows them beside a person's own."""
        rows = self._rows() if rows is None else rows
        statuses = [self.status(q, rows) for q in self.plan.questions]
        people = []
        for p in self.plan.people if self.plan.people is not None else list(rows):
            mine = set(self.assigned(p))
            recs = [r for q, r in rows.get(p, {}).items() if q in mine]
            people.append({"name": p, "assigned": len(mine), "labelled": sum(r.status == "labelled" for r in recs),
                           "skipped": sum(r.status == "skipped" for r in recs)})
        cmp_, why = self.comparison(rows)
        agreement = None
        if cmp_ is not None:
            agreement = {"kappa": _num(cmp_.kappa), "name": cmp_.kappa_name, "strength": strength(cmp_.kappa),
                         "compared": len(cmp_.compared), "raw": _num(cmp_.raw_agreement),
                         "pairwise": [{"a": a, "b": b, "kappa": _num(k)} for a, b, k in cmp_.pairwise]}
        return {
            "you": who, "roster": self.plan.people, "reviewers": self.plan.reviewers, "assign": self.plan.assign,
            "questions": len(self.plan.questions), "people": people,
            **{s: statuses.count(s) for s in ("agreed", "adjudicated", "disagree", "skipped", "open")},
            "gold": statuses.count("agreed") + statuses.count("adjudicated"),
            "agreement": agreement, "agreement_note": why, "folder": str(self.folder), "gold_file": str(self.gold_file),
        }

    # -- the reviewer's queue ------------------------------------------------------------------------

    def queue(self) -> dict:
        """Every question people disagree on (and those decided, after them), each label with who gave it and
        the articles they cite."""
        rows = self._rows()
        items = []
        for qid in self.plan.questions:
            st = self.status(qid, rows)
            if st not in ("disagree", "adjudicated"):
                continue
            given = self.given_to(qid)
            labels = [self._label_json(p, rows[p][qid]) for p in given if p in rows and qid in rows[p]
                      and rows[p][qid].status in ("labelled", "skipped")]
            base = self.base[self.plan.questions.index(qid)]
            decided = self.adjudications.get(qid)
            cited = dict.fromkeys(c for lab in labels for c in lab[EXPECTED_CITATIONS])
            if decided is not None:
                cited.update(dict.fromkeys(decided.expected_citations))
            items.append({
                QUESTION_ID: qid, QUESTION: base.question, "status": st, "labels": labels,
                "articles": [self._article(c) for c in cited if c in self.kb.by_id],
                "decision": None if decided is None else {
                    "label": decided.label, EXPECTED_CITATIONS: decided.expected_citations,
                    MUST_REFUSE: decided.must_refuse, "by": decided.adjudicated_by,
                    "reason": decided.adjudication_reason, "at": decided.labelled_at},
            })
        items.sort(key=lambda it: it["status"] != "disagree")  # the undecided first
        return {"items": items, "to_decide": sum(it["status"] == "disagree" for it in items)}

    @staticmethod
    def _label_json(person: str, rec: LabelRecord) -> dict:
        return {"person": person, "status": rec.status, "label": rec.label or rec.status,
                EXPECTED_CITATIONS: list(rec.expected_citations), MUST_REFUSE: rec.must_refuse,
                "notes": rec.notes, QUESTION: rec.question, "labelled_at": rec.labelled_at}

    def _article(self, article_id: str) -> dict:
        art = self.kb.by_id[article_id]
        return {"id": art.id, "title": art.title, "breadcrumb": [p for p in art.heading_path or [] if p],
                "text": art.text[:4000], "cut": len(art.text) > 4000}

    def adjudicate(self, reviewer: str, qid: str, *, expected_citations: list[str], must_refuse: bool, reason: str,
                   seen: dict[str, str] | None = None) -> LabelRecord:
        """The reviewer's label for ``qid``, with why: it becomes the gold. ``seen`` (person -> label, as the page
        showed them): when any changed since, the decision is refused (409), never made on labels nobody saw."""
        reviewer = self.check_person(reviewer, reviewer=True)
        if qid not in self.plan.questions:
            raise PersonRejected(f"no question with id {qid!r}")
        cites = split_ids(ID_SEP.join(expected_citations or []))
        unknown = [c for c in cites if c not in self.kb.by_id]
        if unknown:
            raise PersonRejected(f"unknown article ID(s): {', '.join(unknown)}")
        if must_refuse and cites:
            raise PersonRejected("a must_refuse question cites no article; clear one of the two")
        if not must_refuse and not cites:
            raise PersonRejected("choose the answering article(s) or must_refuse")
        if not (reason or "").strip():
            raise PersonRejected("say why (the reason is kept with the decision in the gold file)")
        with self._lock:
            rows = self._rows()
            given = [p for p in self.given_to(qid) if p in rows and qid in rows[p]]
            now = {p: rows[p][qid].label or rows[p][qid].status for p in given}
            if seen is not None and {p: v for p, v in now.items() if v not in ("unlabelled",)} != \
                    {p: v for p, v in seen.items() if v not in ("unlabelled",)}:
                raise StaleDecision(f"the labels of {qid} changed since you opened it (now: "
                                    + ", ".join(f"{p} {v}" for p, v in now.items()) + "); reload and decide again")
            base = self.base[self.plan.questions.index(qid)]
            rec = LabelRecord(
                question_id=qid, question=base.question, expected_citations=cites, must_refuse=must_refuse,
                extra=dict(base.extra), status="labelled", annotator=reviewer, labelled_at=_now(),
                expected_titles=[self.kb.by_id[c].title for c in cites], provenance="human",
                labelled_by=ID_SEP.join(p for p in given if rows[p][qid].status == "labelled"),
                adjudicated_by=reviewer, adjudication_reason=reason.strip(),
            )
            self.adjudications[qid] = rec
            order = [q for q in self.plan.questions if q in self.adjudications]
            atomic_write_text(self.adjudications_file,
                              render_csv([self.adjudications[q] for q in order], self.extra_columns))
            self.write_gold()
            return copy.deepcopy(rec)

    # -- the gold ------------------------------------------------------------------------------------

    def gold_records(self, rows: dict[str, dict[str, LabelRecord]] | None = None) -> list[LabelRecord]:
        """Every question: decided ones as the reviewer decided, agreed ones as labelled (with who labelled), the
        rest unlabelled (so ``read_gold`` leaves them out until they are resolved)."""
        rows = self._rows() if rows is None else rows
        out = []
        for base in self.base:
            qid = base.question_id
            st = self.status(qid, rows)
            if st == "adjudicated":
                out.append(self.adjudications[qid])  # written as it is, not changed
                continue
            labelled = [p for p in self.given_to(qid) if p in rows and qid in rows[p] and rows[p][qid].label]
            if st == "agreed" and labelled:
                rec = copy.copy(rows[labelled[0]][qid])  # a snapshot's copy already
                rec.extra = {**base.extra, **{k: v for k, v in rec.extra.items() if v}}
                rec.labelled_by = ID_SEP.join(labelled)
                out.append(rec)
            else:
                rec = copy.copy(base)  # its fields are replaced below, never edited in place
                rec.status = "skipped" if st == "skipped" else "unlabelled"
                out.append(rec)
        return out

    def write_gold(self) -> dict[str, dict[str, LabelRecord]]:
        """Rewrite ``gold.csv`` from the labels now; returns the labels it read (the caller's summary uses them)."""
        with self._lock:
            rows = self._rows()
            atomic_write_text(self.gold_file, render_csv(self.gold_records(rows), self.extra_columns))
            return rows

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()
        self._writer.release()


def _read_plan(path: Path) -> TeamPlan:
    try:
        return TeamPlan.model_validate(json.loads(read_text_checked(path)))
    except (ValueError, TypeError) as exc:
        raise GraceError(f"{path}: not a team plan grace wrote ({str(exc).splitlines()[0]}); "
                         "restore it or start another --out folder") from None


def _check_same(plan: TeamPlan, folder: Path, people: list[str] | None, reviewers: list[str], rule: str) -> None:
    said = {"--team": (people, plan.people), "--reviewers": (reviewers, plan.reviewers), "--assign": (rule, plan.assign)}
    for option, (given, saved) in said.items():
        if given != saved:
            raise GraceError(f"{folder} was started with {option} {_shown(saved) or '(none)'}, not "
                             f"{_shown(given) or '(none)'}: resume without {option} (or the same), or start another "
                             "--out folder (a restart must not give people other questions)")


def _shown(value: list[str] | str | None) -> str:
    return ANYONE if value is None else ",".join(value) if isinstance(value, list) else value
