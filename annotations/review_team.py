"""A spot-check reviewed by a team (``grace annotations review RUN --team a,b``): verdicts per person, the
disagreements a reviewer decides, the human labels they add up to, and the judge measured against all of them.

A team review folder (default ``RUN/spotcheck_team/``) holds the plan (``review_team.json``:
who gives verdicts, who decides, the review CSV they work on), one review CSV per person
(``labels/NAME.csv``, written by that person's own :class:`~annotations.review_session.ReviewSession`,
so two people never write one file and nobody's verdict overwrites another's), the
decisions (``adjudications.csv``) and the human labels (``human.csv``, rewritten after
every verdict and decision: a claim every person gave the same verdict, or one a reviewer
decided). All are the review CSV's format (``REVIEW_COLUMNS``): ``grace spotcheck calibrate
human.csv RUN/spotcheck.json`` reads the team's labels as it reads one person's.

Every person reviews every claim (agreement needs the same claims from each). A claim is
``agreed`` when every person gave it one verdict, ``disagree`` when verdicts differ (it waits
in the reviewer's queue), ``adjudicated`` once a reviewer decided it, ``open`` until then.

The calibration (:meth:`TeamReview.calibration`) reads the judge's verdicts and computes,
without writing anything (:mod:`harness.spotcheck.calibration`'s ``match`` and ``figures``),
Cohen's kappa of the judge against each person and against the team's labels, of each pair
of people, the confusion, and the judge's false positives and negatives, each with the
address of the viewer's question page for that answer. The judge's verdicts are shown to
reviewers only (anyone named when no reviewer is set): a person who sees them while still
reviewing anchors on them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel, Field

from annotations.review_session import ReviewRow, ReviewSession, SegmentKey, check_label, read_review_rows
from annotations.review_sources import RunSources
from annotations.teamwork import (
    PersonRejected,
    Team,
    article,
    check_same,
    now,
    one_spelling,
    parse_names,
    read_plan,
)
from harness.core.errors import GraceError
from harness.core.files import atomic_write_text, csv_text
from harness.run_folder.file_names import CLAIMS_REVIEW_CSV
from harness.run_folder.run_dir import RunDir
from harness.spotcheck.review import HumanLabel
from harness.web.decisions import StaleDecision

PLAN = "review_team.json"
DECIDED_ON = "decided_on"  # adjudications.csv: the verdicts a decision was made on (JSON, person -> verdict)
FOLDER = "spotcheck_team"  # the default team folder, inside the run
VERDICTS = ("supported", "partial", "unsupported")
UNSUPPORTED = "unsupported"
StaleVerdicts = StaleDecision  # a decision on verdicts that changed since the queue showed them (409)


class ReviewTeamPlan(BaseModel):
    """``review_team.json``: who reviews a spot-check together, fixed at the folder's first start."""

    schema_version: int = Field(1, description="Version of this record's layout.")
    people: list[str] = Field(description="Who gives verdicts, in order.")
    reviewers: list[str] = Field(default_factory=list, description="Who decides disagreements; empty: anyone named.")
    review_csv: str = Field(description="The spot-check's review CSV every person works on (its file name in the run).")


def _key_text(key: SegmentKey) -> str:
    return f"claim {key[3]} of {key[0]}/{key[1]}/repeat {key[2]}"


class TeamReview(Team[SegmentKey, ReviewSession]):
    """A team's review folder, open: one :class:`ReviewSession` per person, the decisions, the human labels."""

    plan_name = PLAN
    command = "'grace annotations review --team'"
    kind = "verdicts"
    team_word = "this review team"
    plan: ReviewTeamPlan

    def __init__(self, folder: Path, sources: RunSources, plan: ReviewTeamPlan, viewer: str | None, kb: Any = None):
        super().__init__(folder, plan)
        self.sources, self.viewer, self.kb = sources, viewer, kb
        self.human_file = folder / "human.csv"
        self.header, rows = read_review_rows(sources.review_csv)  # the claims; a label in it is no one's here
        self.header += [c for c in ("note", "reviewer") if c not in self.header]
        self.rows = {r.key: r for r in rows}
        self.order = [r.key for r in rows]
        self.claims = sources.review_csv.name == CLAIMS_REVIEW_CSV  # a claims review: partial is a verdict
        from harness.viewer.runs import run_ids

        self.run_id = run_ids([sources.run_dir.resolve()])[0]  # what ``grace view RUN`` calls this run alone
        self._judge: tuple[Any, Any] | None = None

    @classmethod
    def open(cls, sources: RunSources, folder: str | Path | None = None, *, people: str | None = None,
             reviewers: str | None = None, viewer: str | None = None, kb: Any = None,
             new_keys: str | None = None) -> TeamReview:
        """Start a team folder (``people``: ``a,b``) or resume one; given again on a resume they must match."""
        folder = Path(folder) if folder is not None else sources.run_dir / FOLDER
        if folder.exists() and not folder.is_dir():
            raise GraceError(f"{folder}: a team review writes a folder (verdicts per person, the human labels); "
                             "give --out a folder name, not a file")
        if viewer is not None and not viewer.startswith(("http://", "https://")):
            raise GraceError(f"--viewer {viewer!r}: give the address 'grace view RUN' printed (http://...)")
        roster = parse_names(people, "--team")
        revs = parse_names(reviewers, "--reviewers") or []
        one_spelling({"--team": roster or [], "--reviewers": revs})
        plan_file = folder / PLAN
        if plan_file.exists():
            plan = read_plan(plan_file, ReviewTeamPlan, "team review plan")
            check_same(folder, [("--team", roster or plan.people, plan.people),
                                ("--reviewers", revs if reviewers else plan.reviewers, plan.reviewers)])
            if plan.review_csv != sources.review_csv.name:
                raise GraceError(f"{folder} reviews {plan.review_csv}, not {sources.review_csv.name}: start another --out")
        else:
            if not roster or len(roster) < 2:
                raise GraceError("--team names the people who review (two or more for agreement): --team alice,bob")
            plan = ReviewTeamPlan(people=roster, reviewers=revs, review_csv=sources.review_csv.name)
        folder.mkdir(parents=True, exist_ok=True)
        team = cls(folder, sources, plan, viewer, kb)
        team._writer.acquire()
        try:
            if not plan_file.exists():
                atomic_write_text(plan_file, plan.model_dump_json(indent=2) + "\n")
            if team.adjudications_file.exists():
                team.decided = {r.key: r for r in read_review_rows(team.adjudications_file)[1]}
            for name in plan.people:
                team.person(name)
            team.write_human()
            team.issue_keys(parse_names(new_keys, "--new-key"))
        except BaseException:
            team.close()
            raise
        return team

    # -- people ------------------------------------------------------------------------------------

    def _open_person(self, who: str, path: Path) -> ReviewSession:
        """``who``'s own review file: only a person of ``--team`` gives verdicts."""
        if who not in self.plan.people:
            raise PersonRejected(f"{who!r} decides disagreements but gives no verdicts of their own "
                                 f"(the people who do: {', '.join(self.plan.people)})")
        return ReviewSession.open(self.sources.review_csv, path, reviewer=who, blank=True)

    # -- what the team has done --------------------------------------------------------------------

    def keys(self) -> list[SegmentKey]:
        return self.order

    def verdicts(self) -> dict[str, dict[SegmentKey, tuple[str, str]]]:
        """Person -> claim -> (verdict, note), for the claims each has given a verdict."""
        with self._lock:
            sessions = dict(self.sessions)
        out: dict[str, dict[SegmentKey, tuple[str, str]]] = {}
        for who, s in sessions.items():
            with s._lock:
                out[who] = {r.key: (r.verdict, r.values.get("note", "")) for r in s.rows
                            if r.key in self.rows and r.verdict is not None}
        return out

    current = verdicts

    def shown(self, key: SegmentKey, verdicts: dict[str, dict[SegmentKey, tuple[str, str]]]) -> dict[str, str]:
        return {p: verdicts[p][key][0] for p in self.plan.people if key in verdicts.get(p, {})}

    def status(self, key: SegmentKey, verdicts: dict[str, dict[SegmentKey, tuple[str, str]]]) -> str:
        given = self.shown(key, verdicts)
        return self.status_of(key in self.decided, set(given.values()), len(given) == len(self.plan.people),
                              reopened=key in self.decided and self.reopened(key, verdicts))

    def summary(self, who: str | None = None, verdicts: dict | None = None) -> dict[str, Any]:
        verdicts = self.verdicts() if verdicts is None else verdicts
        counts = self.counts(verdicts)
        return {"you": who, "people": [{"name": p, "reviewed": len(verdicts.get(p, {}))} for p in self.plan.people],
                "reviewers": self.plan.reviewers, "claims": len(self.order),
                **{s: counts[s] for s in ("agreed", "adjudicated", "disagree", "reopened", "open")},
                "labelled": counts["agreed"] + counts["adjudicated"],
                "folder": str(self.folder), "human_file": str(self.human_file)}

    # -- the reviewer's queue ------------------------------------------------------------------------

    def queue(self) -> dict[str, Any]:
        return super().queue() | {"classes": list(VERDICTS if self.claims else ("supported", "unsupported"))}

    def queue_item(self, key: SegmentKey, status: str, verdicts: dict) -> dict[str, Any]:
        """A claim people disagree on (or decided): each verdict with who gave it and their note, the articles it
        cites."""
        row = self.rows[key]
        d = self.decided.get(key)
        return {
            "model": key[0], "question_id": key[1], "repeat": key[2], "segment_index": key[3],
            "question": self.sources.questions.get(key[1]), "text": row.values.get("segment_text", ""),
            "status": status,
            "verdicts": [{"person": p, "verdict": verdicts[p][key][0], "note": verdicts[p][key][1]}
                         for p in self.plan.people if key in verdicts.get(p, {})],
            "articles": [article(self.kb, c) for c in row.to_json()["citations"]],
            "decision": None if d is None else {"verdict": d.verdict, "by": d.values.get("reviewer", ""),
                                                "reason": d.values.get("note", "")},
        }

    def label(self, who: str, key: SegmentKey, verdict: Any, note: Any = None) -> dict[str, Any]:
        """``who``'s verdict on a claim, in their own file; a claim not in the set is a clear error."""
        if key not in self.rows:
            raise PersonRejected(f"no {_key_text(key)} in {self.sources.review_csv.name}: verdicts are on the "
                                 "spot-check's claims only")
        check_label(verdict, note, self.claims, PersonRejected)
        seg = self.person(who).save(key, supported=verdict, note=note)
        self.write_human()
        return seg

    def adjudicate(self, reviewer: Any, key: SegmentKey, verdict: Any, reason: Any,
                   seen: Any = None) -> dict[str, Any]:
        """The reviewer's verdict on a claim, with why: it becomes the human label (refused when ``seen`` is
        stale)."""
        reviewer = self.check_person(reviewer, reviewer=True)
        if key not in self.rows:
            raise PersonRejected(f"no {_key_text(key)} in {self.sources.review_csv.name}")
        allowed = VERDICTS if self.claims else ("supported", "unsupported")
        if verdict not in allowed:
            raise PersonRejected(f"verdict must be one of {', '.join(allowed)}")
        if not isinstance(reason, str) or not reason.strip():
            raise PersonRejected("say why (the reason is kept with the decision in human.csv)")

        def record(verdicts: dict) -> dict[str, Any]:
            values = dict(self.rows[key].values)
            values.update(supported=_cell(verdict), note=reason.strip()[:1000], reviewer=reviewer,
                          decided_on=json.dumps(self.shown(key, verdicts), sort_keys=True))
            self.decided[key] = ReviewRow(key, values, 0)
            return {"verdict": verdict, "by": reviewer, "reason": values["note"], "at": now()}

        return self.decide(key, seen, _key_text(key), record)

    def _write_decisions(self, decided: list[ReviewRow]) -> None:
        columns = [*self.header, DECIDED_ON]
        atomic_write_text(self.adjudications_file, csv_text(columns, (
            {c: r.values.get(c, "") for c in columns} for r in decided)))

    def decision_label(self, decision: ReviewRow) -> str:
        return decision.verdict or ""

    def decision_by(self, decision: ReviewRow) -> str:
        return decision.values.get("reviewer", "")

    def decided_on(self, key: SegmentKey) -> dict[str, str] | None:
        d = self.decided.get(key)
        try:
            on = json.loads(d.values.get(DECIDED_ON) or "null") if d is not None else None
        except ValueError:
            return None
        return on if isinstance(on, dict) else None

    # -- the human labels ----------------------------------------------------------------------------

    def human_rows(self, verdicts: dict | None = None) -> list[dict[str, str]]:
        """Every claim as a review CSV row: the decided verdict, the agreed one (reviewer: who gave it), or empty."""
        verdicts = self.verdicts() if verdicts is None else verdicts
        out = []
        for key in self.order:
            values = {c: self.rows[key].values.get(c, "") for c in self.header}
            st = self.status(key, verdicts)
            if st == "adjudicated":
                values.update({c: self.decided[key].values.get(c, "") for c in ("supported", "note", "reviewer")})
            elif st == "agreed":
                values.update(supported=_cell(verdicts[self.plan.people[0]][key][0]), note="",
                              reviewer=";".join(self.plan.people))
            else:
                values.update(supported="", note="", reviewer="")
            out.append(values)
        return out

    def write_human(self) -> None:
        with self._lock:
            atomic_write_text(self.human_file, csv_text(self.header, self.human_rows()))

    write_result = write_human

    # -- the judge against the people ------------------------------------------------------------------

    def _judge_verdicts(self) -> tuple[Any, dict]:
        """The spot-check's judge verdicts, read again only when its files changed."""
        from harness.spotcheck.calibration import judge_verdicts

        spot_json = RunDir(self.sources.run_dir).spotcheck
        if not spot_json.is_file():
            raise GraceError(f"{spot_json}: not found; the calibration compares the people with the judge of "
                             "'grace spotcheck run'")
        stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in spot_json.parent.glob("spotcheck*") if p.is_file())
        if self._judge is None or self._judge[0] != stamp:
            self._judge = (stamp, judge_verdicts(spot_json))
        return self._judge[1]

    def _labels(self, verdicts: dict[SegmentKey, str], reviewer: str) -> list[HumanLabel]:
        return [HumanLabel(*k, self.rows[k].values.get("segment_text"), v == "supported", "", reviewer, 0, v)
                for k, v in verdicts.items()]

    def question_page(self, question_id: str) -> str | None:
        """The viewer's page for a question of this run (``grace view RUN``), when its address was given."""
        if not self.viewer:
            return None
        return f"{self.viewer.split('#')[0]}#/question?{urlencode({'runs': self.run_id, 'id': question_id})}"

    def calibration(self) -> dict[str, Any]:
        """Kappa of the judge against each person and the team's labels, of each pair of people; the confusion;
        the judge's false positives and negatives (positive: unsupported) with the viewer's question page. Reads;
        never writes (``grace spotcheck calibrate human.csv`` writes the same team figures to calibration.json)."""
        from harness.spotcheck.calibration import cohen_kappa, figures, match, multiclass_kappa

        spot, judged = self._judge_verdicts()
        claims = spot.mode == "claims"
        verdicts = self.verdicts()

        def block(m: Any) -> dict[str, Any]:
            f = figures(m, claims) if m.human else {"n": 0}
            return {k: f.get(k) for k in ("n", "kappa", "kappa_multiclass", "agreement", "precision_unsupported",
                                          "recall_unsupported", "confusion", "confusion_classes")} | {
                "unmatched": m.unmatched, "stale": m.stale}

        people = []
        for p in self.plan.people:
            mine = {k: v for k, (v, _) in verdicts.get(p, {}).items()}
            people.append({"name": p, **block(match(self._labels(mine, p), judged, claims))})
        pairs = []
        for i, a in enumerate(self.plan.people):
            for b in self.plan.people[i + 1:]:
                va, vb = verdicts.get(a, {}), verdicts.get(b, {})
                both = [k for k in self.order if k in va and k in vb]
                la, lb = [va[k][0] for k in both], [vb[k][0] for k in both]
                pairs.append({"a": a, "b": b, "n": len(both),
                              "kappa": _r(cohen_kappa([x == UNSUPPORTED for x in la], [x == UNSUPPORTED for x in lb])),
                              "kappa_multiclass": _r(multiclass_kappa(la, lb)),
                              "agreement": _r(sum(x == y for x, y in zip(la, lb, strict=True)) / len(both)) if both else None})
        team_labels = {}
        for k in self.order:
            st = self.status(k, verdicts)
            if st == "adjudicated":
                team_labels[k] = self.decided[k].verdict
            elif st == "agreed":
                team_labels[k] = verdicts[self.plan.people[0]][k][0]
        m = match(self._labels(team_labels, "team"), judged, claims)
        errors: dict[str, list[dict[str, Any]]] = {"false_positives": [], "false_negatives": []}
        for lab, row in m.pairs:
            judge_says = row["verdict"] if claims else ("supported" if row["supported"] else "unsupported")
            human_bad, judge_bad = lab.verdict == UNSUPPORTED, judge_says == UNSUPPORTED
            if human_bad == judge_bad:
                continue
            errors["false_positives" if judge_bad else "false_negatives"].append({
                "model": lab.model, "question_id": lab.question_id, "repeat": lab.repeat,
                "segment_index": lab.segment_index, "text": row["segment_text"], "human": lab.verdict,
                "judge": judge_says, "judge_explanation": row.get("explanation") or "",
                "question_page": self.question_page(lab.question_id)})
        return {"judge": spot.judge.name, "mode": spot.mode, "run": str(self.sources.run_dir), "run_id": self.run_id,
                "viewer": self.viewer, "classes": list(VERDICTS if claims else ("supported", "unsupported")),
                "judge_vs_people": people, "people_pairs": pairs, "judge_vs_team": block(m), **errors,
                "team": self.summary(verdicts=verdicts)}


def _cell(verdict: str) -> str:
    """A verdict as the review CSV's ``supported`` cell."""
    return "partial" if verdict == "partial" else str(verdict == "supported").lower()


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)
