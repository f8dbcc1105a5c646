"""The web app behind ``grace annotations review RUN --team``: each person's review page, the reviewer's queue of
claims the people disagree on, and the calibration page (the judge against each person and the team).

One server (grace's web core: Host, token and Origin checks, headers; the pages build text
nodes only) serves the team; :class:`~annotations.teamwork.TeamWebApp` routes each request
to the person it names, whose review page is the one-person page
(:class:`~annotations.review_app.ReviewApp`), saving to their file. The queue
(``review_queue.html``) reads ``/api/review/queue`` and decides through
``/api/review/adjudicate``; the calibration page (``calibration.html``) reads
``/api/review/calibration``. Both are for reviewers: they show what others said, and the
calibration the judge's verdicts, which anchor a person still reviewing.
"""

from __future__ import annotations

from typing import Any

from annotations.review_app import ReviewApp
from annotations.review_session import key_of
from annotations.review_team import TeamReview
from annotations.server import STATIC
from annotations.teamwork import TeamWebApp


class TeamReviewApp(TeamWebApp[ReviewApp]):
    """A :class:`harness.web.WebApp` for a team's spot-check review."""

    name = "grace annotations review"
    page = "review.html"
    static = STATIC
    api = "/api/review"

    def __init__(self, team: TeamReview, kb):
        super().__init__()
        self.team, self.kb = team, kb
        team.kb = kb

    @property
    def warnings(self) -> list[str]:
        return list(self.team.sources.warnings)

    def _make_app(self, who: str, shared: ReviewApp | None) -> ReviewApp:
        return ReviewApp(self.team.person(who), self.team.sources, self.kb, shared=shared)

    def unnamed(self) -> dict[str, Any]:
        return super().unnamed() | {"people": self.team.plan.people}

    def team_get(self, path: str, who: str) -> dict[str, Any] | None:
        if path == "/api/review/calibration":
            return self.team.calibration() | {"reviewer": self.team.check_person(who, reviewer=True)}
        return None

    def label(self, who: str, body: dict) -> dict:
        seg = self.team.label(who, key_of(body), body.get("supported"), body.get("note"))
        return {"segment": seg, "progress": self.app(who).session.progress(), "team": self.team.summary(who)}

    def adjudicate(self, who: str, body: dict, seen: Any) -> dict:
        done = self.team.adjudicate(who, key_of(body), body.get("verdict"), body.get("reason"), seen)
        return {"decision": done, "queue": self.team.queue(), "team": self.team.summary(done["by"])}
