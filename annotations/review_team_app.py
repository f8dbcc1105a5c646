"""The web app behind ``grace annotations review RUN --team``: each person's review page, the reviewer's queue of
claims the people disagree on, and the calibration page (the judge against each person and the team).

One server (grace's web core: Host, token and Origin checks, headers; the pages build text
nodes only) serves the team. Every request names its person (``?who=NAME``, which the shared
``common.js`` adds to each call of a page opened with it); the team checks the name and routes
a person's request to their own :class:`~annotations.review_app.ReviewApp`, so the review page
is the one-person page, saving to that person's file. The queue (``review_queue.html``) reads
``/api/review/queue`` and decides through ``/api/review/adjudicate``; the calibration page
(``calibration.html``) reads ``/api/review/calibration``. Both are for reviewers: they show what
others said, and the calibration the judge's verdicts, which anchor a person still reviewing.
"""

from __future__ import annotations

import threading

from annotations.review_app import ReviewApp
from annotations.review_team import TeamReview, key_of
from annotations.server import STATIC
from annotations.team import PersonRejected


class TeamReviewApp:
    """A :class:`harness.web.WebApp` for a team's spot-check review."""

    name = "grace annotations review"
    page = "review.html"
    static = STATIC
    post_paths = ("/api/review/label", "/api/review/adjudicate")

    def __init__(self, team: TeamReview, kb):
        self.team, self.kb = team, kb
        team.kb = kb
        self.apps: dict[str, ReviewApp] = {}
        self._lock = threading.Lock()

    @property
    def warnings(self) -> list[str]:
        return list(self.team.sources.warnings)

    def app(self, who: str) -> ReviewApp:
        with self._lock:
            app = self.apps.get(who)
            if app is None:
                app = ReviewApp(self.team.person(who), self.team.sources, self.kb,
                                shared=next(iter(self.apps.values()), None))
                self.apps[who] = app
            return app

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        who = (query.get("who") or [""])[0]
        if path == "/api/review/state" and not who:  # the page asks its person to name themself
            return {"need_person": True, "team": self.team.summary(), "people": self.team.plan.people}
        if path == "/api/review/team":
            return self.team.summary(self.team.check_person(who) if who else None)
        if path == "/api/review/queue":
            reviewer = self.team.check_person(who, reviewer=True)
            return self.team.queue() | {"reviewer": reviewer, "team": self.team.summary(reviewer),
                                        "claims": self.team.claims}
        if path == "/api/review/calibration":
            return self.team.calibration() | {"reviewer": self.team.check_person(who, reviewer=True)}
        who = self.team.check_person(who)
        data = self.app(who).get(path, query)
        if path == "/api/review/state" and data is not None:
            data["team"] = self.team.summary(who)
        return data

    def post(self, path: str, body) -> dict | None:
        if not isinstance(body, dict):
            raise PersonRejected("expected a JSON object")
        if path == "/api/review/adjudicate":
            seen = body.get("seen")
            if seen is not None and (not isinstance(seen, dict) or not all(isinstance(v, str) for v in seen.values())):
                raise PersonRejected("seen must map each person to the verdict the page showed")
            done = self.team.adjudicate(body.get("who"), key_of(body), body.get("verdict"), body.get("reason"), seen)
            return {"decision": done, "queue": self.team.queue(), "team": self.team.summary(done["by"])}
        if path != "/api/review/label":
            return None
        who = self.team.check_person(body.get("who"))
        seg = self.team.label(who, key_of(body), body.get("supported"), body.get("note"))
        return {"segment": seg, "progress": self.app(who).session.progress(), "team": self.team.summary(who)}
