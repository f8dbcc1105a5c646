"""One labelling session for a team (``grace annotate --team``): who labels what, their labels, agreement, gold.

A team folder holds the plan (``team.json``: the roster, the reviewers, the assignment rule
and the questions each person was given, fixed at the first start so a restart gives nobody
other questions), the questions (``questions.csv``), one annotation file per person
(``labels/NAME.csv``, written by that person's :class:`AnnotationSession`, so two people never
write one file and ``grace annotations agree labels/*.csv`` reads exactly what the page
shows), the reviewer's decisions (``adjudications.csv``, each with the labels it was made
on, so a label changed afterwards re-opens the question), the gold they add up to
(``gold.csv``, rewritten after every label and decision) and each named person's key,
hashed (``keys.json``: a request acts as the owner of its key, :mod:`harness.web.credentials`).
Every file is written write-then-rename; a killed server loses nothing saved. A restart
with another roster changes it (:meth:`TeamSession.change_roster`, recorded in the plan).

Assignment rules: ``all`` (everyone labels every question), ``share`` (each question to one
person, in turn) and ``overlap:N`` (each question to N people, in turn, so every pair of
people shares questions to measure agreement on). A question is gold when the people given
it agree (every one of them has labelled or skipped it, and the labels are one), or when a
reviewer decided it; where labels differ it waits in the reviewer's queue (with ``--agree
majority``, more than half of the people given it agreeing is enough).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from annotations.agreement import Comparison, compare_records, strength
from annotations.labels import LabelRecord, read_labels, render_csv
from annotations.state import AnnotationSession, question_records
from annotations.teamwork import (
    ANYONE,
    NAME,
    RULES,
    PersonRejected,
    Team,
    article,
    assign,
    check_name,
    check_same,
    now,
    num,
    one_spelling,
    parse_names,
    parse_rule,
    read_plan,
    rebalance,
)
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text
from harness.web.decisions import StaleDecision
from kb_builder.gold import EXPECTED_CITATIONS, ID_SEP, MUST_REFUSE, QUESTION, QUESTION_ID, split_ids

if TYPE_CHECKING:
    from kb_builder.store import KB

__all__ = ["ANYONE", "NAME", "RULES", "PersonRejected", "StaleDecision", "TeamPlan", "TeamSession", "assign",
           "check_name", "parse_names", "parse_rule"]


PLAN = "team.json"
ADJUDICATIONS = "adjudications.csv"
DECIDED_ON = "decided_on"  # adjudications.csv: the labels a decision was made on (JSON, person -> label)


def decided_on(decision: LabelRecord) -> dict[str, str] | None:
    """The labels ``decision`` was made on (None: a decision written before grace kept them)."""
    text = decision.extra.get(DECIDED_ON) or ""
    try:
        on = json.loads(text) if text else None
    except ValueError:
        return None
    return on if isinstance(on, dict) else None


AGREE = ("all", "majority")


class RosterChange(BaseModel):
    """One change of a team's roster (or its reviewers, or its agreement rule) at a restart, as ``team.json`` keeps
    it: the labels already given stay their people's; the questions not yet labelled are given out again."""

    at: str = Field(description="When, ISO 8601 UTC.")
    people_before: list[str] = Field(description="The roster before.")
    people: list[str] = Field(description="The roster after.")
    reviewers_before: list[str] = Field(default_factory=list, description="The reviewers before.")
    reviewers: list[str] = Field(default_factory=list, description="The reviewers after.")
    agree_before: str = Field("all", description="The agreement rule before.")
    agree: str = Field("all", description="The agreement rule after.")
    moved: int = Field(0, description="Question places given to someone else (the labels given kept).")


class TeamPlan(BaseModel):
    """``team.json``: who labels which questions, set at a team folder's first start and changed only by a restart
    with another roster (each change recorded in ``changes``)."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    people: list[str] | None = Field(description="The roster, in order; null: anyone who names themself (--team any).")
    reviewers: list[str] = Field(default_factory=list, description="Who may decide disagreements; empty: anyone named.")
    assign: str = Field(description="The assignment rule: all, share or overlap:N.")
    questions: list[str] = Field(description="Every question ID, in the questions file's order.")
    assignment: dict[str, list[str]] = Field(
        default_factory=dict, description="Person -> the question IDs given to them (empty with the rule all); "
        "someone removed from the roster keeps the questions they labelled.")
    agree: str = Field("all", description="When labels that differ still agree without a reviewer: all (every "
                       "label one), majority (more than half of the people given a question give one label).")
    changes: list[RosterChange] = Field(default_factory=list, description="Every roster change, in order.")


class TeamSession(Team[str, AnnotationSession]):
    """A team's folder open for labelling: one :class:`AnnotationSession` per person, the decisions, the gold."""

    plan_name = PLAN
    command = "'grace annotate --team'"
    kind = "labels"
    team_word = "this session's team"
    anyone_decides = True  # the plan's doc: no reviewers named, anyone named decides
    plan: TeamPlan

    def __init__(self, folder: Path, kb: KB, plan: TeamPlan):
        super().__init__(folder, plan)
        self.kb = kb
        self.questions_file = folder / "questions.csv"
        self.gold_file = folder / "gold.csv"
        self.base: list[LabelRecord] = []
        self.extra_columns: list[str] = []
        self._assigned_sets: dict[str, set[str]] | None = None
        self._focus: Callable[[AnnotationSession], None] | None = None

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def open(cls, kb: KB, folder: str | Path, *, questions: str | Path | None = None, people: str | None = None,
             reviewers: str | None = None, rule: str | None = None, new_keys: str | None = None,
             agree: str | None = None) -> TeamSession:
        """Start a team folder (``questions``, ``people``: ``a,b,c`` or ``any``, ``rule``) or resume one; given
        again on a resume, ``people`` and ``reviewers`` (and ``agree``: ``all`` or ``majority``) may change the
        roster (:meth:`change_roster`); the rule must stay. Every person named gets a key
        (:attr:`~annotations.teamwork.Team.new_keys`, once); ``new_keys`` (``bob``) replaces theirs."""
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise GraceError(f"{folder}: a team session writes a folder (labels per person, the gold); "
                             "give --out a folder name, not a file")
        plan_file = folder / cls.plan_name
        roster = None if people is None or people.strip().lower() == ANYONE else parse_names(people, "--team")
        revs = parse_names(reviewers, "--reviewers") or []
        one_spelling({"--team": roster or [], "--reviewers": revs})
        if agree is not None and agree not in AGREE:
            raise GraceError(f"--agree must be one of {', '.join(AGREE)}, got {agree!r}")
        change = None
        if plan_file.exists():
            plan = read_plan(plan_file, TeamPlan, "team plan")
            check_same(folder, [("--assign", rule or plan.assign, plan.assign)])
            if (people is not None and (roster is None) != (plan.people is None)):
                check_same(folder, [("--team", roster, plan.people)])  # open to anyone <-> a roster: refused
            after = (roster if people is not None else plan.people, revs if reviewers else plan.reviewers,
                     agree or plan.agree)
            if after != (plan.people, plan.reviewers, plan.agree):  # a roster change: recorded, questions given again
                change = after
        else:
            if questions is None:
                raise GraceError(f"{folder} is not a team folder yet: give --questions Q.csv to start one")
            if people is None:
                raise GraceError("give --team alice,bob,carol (the roster) or --team any (no roster)")
            rule = rule or "all"
            if parse_rule(rule) and roster is None:
                raise GraceError(f"--assign {rule} gives questions to named people: list them in --team (a,b,c)")
            assign([], roster or [], rule)  # a rule the roster cannot meet: said before anything is written
            plan = TeamPlan(people=roster, reviewers=revs, assign=rule, questions=[], agree=agree or "all")
        folder.mkdir(parents=True, exist_ok=True)
        team = cls(folder, kb, plan)
        team._writer.acquire()
        try:
            if change is not None:
                team.change_roster(*change)
            team._load(questions)
            team.issue_keys(parse_names(new_keys, "--new-key"))
        except BaseException:
            team.close()
            raise
        return team

    def change_roster(self, people: list[str] | None, reviewers: list[str], agree: str) -> RosterChange:
        """A restart with another roster: people added get questions, people removed keep the ones they labelled
        (their labels stay theirs and count) and give the rest to the others, least loaded first
        (:func:`rebalance`); recorded in the plan's ``changes``."""
        one_spelling({"--team": people or [], "--reviewers": reviewers})
        acted: dict[str, set[str]] = {}
        for path in sorted((self.folder / "labels").glob("*.csv")):
            acted[path.stem] = {r.question_id for r in read_labels(path)[0] if r.status in ("labelled", "skipped")}
        before = self.plan.assignment
        after = rebalance(self.plan.questions, before, acted, people or [], self.plan.assign) if people else {}
        moved = sum(len(set(q) - set(before.get(p, []))) for p, q in after.items())
        change = RosterChange(at=now(), people_before=self.plan.people or [], people=people or [],
                              reviewers_before=self.plan.reviewers, reviewers=reviewers,
                              agree_before=self.plan.agree, agree=agree, moved=moved)
        self.plan = self.plan.model_copy(update={"people": people, "reviewers": reviewers, "agree": agree,
                                                 "assignment": after, "changes": [*self.plan.changes, change]})
        self._assigned_sets = None
        atomic_write_text(self.folder / self.plan_name, self.plan.model_dump_json(indent=2) + "\n")
        return change

    def _load(self, questions: str | Path | None) -> None:
        fresh = not self.plan.questions
        if fresh:  # the questions, as an annotation file every person's session starts from
            records, cols = question_records(questions)
            atomic_write_text(self.questions_file, render_csv(records, cols))
            self.plan.questions = [r.question_id for r in records]
            self.plan.assignment = assign(self.plan.questions, self.plan.people or [], self.plan.assign)
            atomic_write_text(self.folder / self.plan_name, self.plan.model_dump_json(indent=2) + "\n")
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
            self.decided = {r.question_id: r for r in decided}
        for name in self.plan.people or []:
            self.person(name)
        for path in sorted((self.folder / "labels").glob("*.csv")):  # an open team: who has labelled before
            if NAME.match(path.stem):
                self.person(path.stem)
        self.write_gold()

    # -- people ------------------------------------------------------------------------------------

    def _open_person(self, who: str, path: Path) -> AnnotationSession:
        """``who``'s session, walking the questions given to them (narrowed as :meth:`narrow` says)."""
        s = AnnotationSession.open(self.kb, path, questions=self.questions_file, annotator=who)
        self._narrow_one(who, s)
        return s

    def narrow(self, focus: Callable[[AnnotationSession], None]) -> None:
        """What a one-person session takes (suggestions, ``--only``, ``--question``, ``--order``: ``focus`` does it
        to a session) done to every person's, now and as each opens, within the questions given to them: a team is
        its people's one-person sessions."""
        self._focus = focus
        with self._lock:
            sessions = dict(self.sessions)
        for who, s in sessions.items():
            self._narrow_one(who, s)

    def _narrow_one(self, who: str, s: AnnotationSession) -> None:
        mine = self.assigned(who)
        s.view = mine
        if self._focus is not None:
            self._focus(s)
            given = set(mine)
            s.view = [q for q in (s.view if s.view is not None else mine) if q in given]

    def assigned(self, who: str) -> list[str]:
        if self.plan.people is None or not self.plan.assignment:
            return [] if self.plan.people is not None and who not in self.plan.people else list(self.plan.questions)
        return list(self.plan.assignment.get(who, []))

    def given_to(self, qid: str) -> list[str]:
        """Who was given question ``qid`` (an open team: everyone who has a file); someone removed from the roster
        for the questions they labelled."""
        if self.plan.people is not None and self.plan.assignment:
            return [p for p in self.plan.assignment if qid in self._sets()[p]]
        return list(self.sessions) if self.plan.people is None else list(self.plan.people)

    def _sets(self) -> dict[str, set[str]]:
        if self._assigned_sets is None:  # the plan is fixed once loaded
            self._assigned_sets = {p: set(q) for p, q in self.plan.assignment.items()}
        return self._assigned_sets

    def check_given(self, who: str, qid: str) -> None:
        if qid not in set(self.assigned(who)):
            raise PersonRejected(f"question {qid!r} is not one of {who}'s ({len(self.assigned(who))} given)")

    # -- what the team has done ------------------------------------------------------------------------

    def keys(self) -> list[str]:
        return self.plan.questions

    def current(self) -> dict[str, dict[str, LabelRecord]]:
        with self._lock:
            sessions = dict(self.sessions)
        return {p: {r.question_id: r for r in s.snapshot()} for p, s in sessions.items()}

    def _given_records(self, qid: str, rows: dict[str, dict[str, LabelRecord]]) -> dict[str, LabelRecord]:
        return {p: rows[p][qid] for p in self.given_to(qid) if p in rows and qid in rows[p]}

    def shown(self, qid: str, rows: dict[str, dict[str, LabelRecord]]) -> dict[str, str]:
        return {p: r.label or r.status for p, r in self._given_records(qid, rows).items()}

    def comparison(self, rows: dict[str, dict[str, LabelRecord]] | None = None) -> tuple[Comparison | None, str]:
        """The agreement ``grace annotations agree labels/*.csv`` gives now, or None and why there is none yet."""
        rows = self.current() if rows is None else rows
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
        given = self.given_to(qid)
        recs = [rows[p][qid] for p in given if p in rows and qid in rows[p]]
        acted = bool(given) and len(recs) == len(given) and all(r.status in ("labelled", "skipped") for r in recs)
        return self.status_of(qid in self.decided, [r.label for r in recs if r.label is not None], acted,
                              open_team=self.plan.people is None,
                              reopened=qid in self.decided and self.reopened(qid, rows),
                              majority_of=len(given) if self.plan.agree == "majority" else 0)

    def summary(self, who: str | None = None, rows: dict[str, dict[str, LabelRecord]] | None = None) -> dict:
        """The team's progress and agreement, as the page shows them beside a person's own."""
        rows = self.current() if rows is None else rows
        counts = self.counts(rows)
        people = []
        for p in self.plan.people if self.plan.people is not None else list(rows):
            mine = set(self.assigned(p))
            recs = [r for q, r in rows.get(p, {}).items() if q in mine]
            people.append({"name": p, "assigned": len(mine), "labelled": sum(r.status == "labelled" for r in recs),
                           "skipped": sum(r.status == "skipped" for r in recs)})
        cmp_, why = self.comparison(rows)
        agreement = None
        if cmp_ is not None:
            agreement = {"kappa": num(cmp_.kappa), "name": cmp_.kappa_name, "strength": strength(cmp_.kappa),
                         "compared": len(cmp_.compared), "raw": num(cmp_.raw_agreement),
                         "pairwise": [{"a": a, "b": b, "kappa": num(k)} for a, b, k in cmp_.pairwise]}
        return {
            "you": who, "roster": self.plan.people, "reviewers": self.plan.reviewers, "assign": self.plan.assign,
            "agree": self.plan.agree, "roster_changes": len(self.plan.changes),
            "questions": len(self.plan.questions), "people": people, **counts,
            "gold": counts["agreed"] + counts["adjudicated"],
            "agreement": agreement, "agreement_note": why, "folder": str(self.folder), "gold_file": str(self.gold_file),
        }

    # -- the reviewer's queue ------------------------------------------------------------------------

    def queue_item(self, qid: str, status: str, rows: dict[str, dict[str, LabelRecord]]) -> dict:
        """A question people disagree on (or decided): each label with who gave it, the articles they cite."""
        labels = [self._label_json(p, r) for p, r in self._given_records(qid, rows).items()
                  if r.status in ("labelled", "skipped")]
        decided = self.decided.get(qid)
        cited = dict.fromkeys(c for lab in labels for c in lab[EXPECTED_CITATIONS])
        if decided is not None:
            cited.update(dict.fromkeys(decided.expected_citations))
        return {
            QUESTION_ID: qid, QUESTION: self.base[self.plan.questions.index(qid)].question, "status": status,
            "labels": labels, "articles": [article(self.kb, c) for c in cited if c in self.kb.by_id],
            "decision": None if decided is None else {
                "label": decided.label, EXPECTED_CITATIONS: decided.expected_citations,
                MUST_REFUSE: decided.must_refuse, "by": decided.adjudicated_by,
                "reason": decided.adjudication_reason, "at": decided.labelled_at},
        }

    @staticmethod
    def _label_json(person: str, rec: LabelRecord) -> dict:
        return {"person": person, "status": rec.status, "label": rec.label or rec.status,
                EXPECTED_CITATIONS: list(rec.expected_citations), MUST_REFUSE: rec.must_refuse,
                "notes": rec.notes, QUESTION: rec.question, "labelled_at": rec.labelled_at}

    def adjudicate(self, reviewer: str, qid: str, *, expected_citations: list[str], must_refuse: bool, reason: str,
                   seen: Any = None) -> LabelRecord:
        """The reviewer's label for ``qid``, with why: it becomes the gold (refused when ``seen`` is stale)."""
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

        def record(rows: dict[str, dict[str, LabelRecord]]) -> LabelRecord:
            base = self.base[self.plan.questions.index(qid)]
            on = {p: v for p, v in self.shown(qid, rows).items() if v != "unlabelled"}
            rec = LabelRecord(
                question_id=qid, question=base.question, expected_citations=cites, must_refuse=must_refuse,
                extra={**base.extra, DECIDED_ON: json.dumps(on, sort_keys=True)}, status="labelled", annotator=reviewer, labelled_at=now(),
                expected_titles=[self.kb.by_id[c].title for c in cites], provenance="human",
                labelled_by=ID_SEP.join(p for p, r in self._given_records(qid, rows).items() if r.status == "labelled"),
                adjudicated_by=reviewer, adjudication_reason=reason.strip(),
            )
            self.decided[qid] = rec
            return copy.deepcopy(rec)

        return self.decide(qid, seen, qid, record)

    def _write_decisions(self, decided: list[LabelRecord]) -> None:
        atomic_write_text(self.adjudications_file, render_csv(decided, self.extra_columns + [DECIDED_ON]))

    def decision_label(self, decision: LabelRecord) -> str:
        return decision.label or ""

    def decision_by(self, decision: LabelRecord) -> str:
        return decision.adjudicated_by

    def decided_on(self, qid: str) -> dict[str, str] | None:
        d = self.decided.get(qid)
        return None if d is None else decided_on(d)

    # -- the gold ------------------------------------------------------------------------------------

    def gold_records(self, rows: dict[str, dict[str, LabelRecord]] | None = None) -> list[LabelRecord]:
        """Every question: decided ones as the reviewer decided, agreed ones as labelled (with who labelled), the
        rest unlabelled (so ``read_gold`` leaves them out until they are resolved)."""
        rows = self.current() if rows is None else rows
        out = []
        for base in self.base:
            qid = base.question_id
            st = self.status(qid, rows)
            if st == "adjudicated":
                out.append(self.decided[qid])  # written as it is, not changed
                continue
            labels = {p: r.label for p, r in self._given_records(qid, rows).items() if r.label}
            top = max(labels.values(), key=list(labels.values()).count, default=None)  # --agree majority: the most
            labelled = [p for p, lab in labels.items() if lab == top]  # given; unanimity: the one label
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
            rows = self.current()
            atomic_write_text(self.gold_file, render_csv(self.gold_records(rows), self.extra_columns))
            return rows

    write_result = write_gold
