"""The web app behind ``grace annotate --team``: the labelling page for each person, and the reviewer's queue.

One server (grace's web core: Host, token and Origin checks, headers, escaping in the
page) serves the whole team. Every request names its person (``?who=NAME``, which the
shared ``common.js`` adds to each call of a page opened with it); the team session
checks the name against the roster and routes the request to that person's own
:class:`~annotations.server.AnnotationApp`, so the labelling page is the one-person page,
walking the questions given to that person and saving to their file. Beside their own
progress every answer carries the team's (``team``: progress per person, questions
agreed, decided and waiting, and the live agreement). The reviewer's page
(``adjudicate.html``) reads ``/api/queue`` and saves decisions to ``/api/adjudicate``.
"""

from __future__ import annotations

import threading

from annotations.server import STATIC, AnnotationApp
from annotations.team import PersonRejected, TeamSession
from kb_builder.gold import EXPECTED_CITATIONS, MUST_REFUSE, QUESTION_ID


class TeamApp:
    """A :class:`harness.web.WebApp` for a team: one :class:`AnnotationApp` per person, sharing the retrieval."""

    name = "grace annotate"
    page = "index.html"
    static = STATIC
    post_paths = ("/api/label", "/api/adjudicate")

    def __init__(self, team: TeamSession, retriever, *, k: int = 10):
        self.team, self.retriever, self.k = team, retriever, k
        self.apps: dict[str, AnnotationApp] = {}
        self._lock = threading.Lock()

    def app(self, who: str) -> AnnotationApp:
        with self._lock:
            app = self.apps.get(who)
            if app is None:
                shared = next(iter(self.apps.values()), None)
                app = AnnotationApp(self.team.person(who), self.retriever, k=self.k, shared=shared)
                self.apps[who] = app
            return app

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        who = (query.get("who") or [""])[0]
        if path == "/api/state" and not who:  # the page asks its person to name themself
            return {"need_person": True, "team": self.team.summary()}
        if path == "/api/team":
            return self.team.summary(self.team.check_person(who) if who else None)
        if path == "/api/queue":
            reviewer = self.team.check_person(who, reviewer=True)
            return self.team.queue() | {"reviewer": reviewer, "team": self.team.summary(reviewer)}
        who = self.team.check_person(who)
        data = self.app(who).get(path, query)
        if path == "/api/state" and data is not None:
            data["team"] = self.team.summary(who)
        return data

    def post(self, path: str, body) -> dict | None:
        if not isinstance(body, dict):
            raise PersonRejected("expected a JSON object")
        if path == "/api/adjudicate":
            return self.adjudicate(body)
        if path != "/api/label":
            return None
        who = self.team.check_person(body.get("who"))
        self.team.check_given(who, str(body.get(QUESTION_ID, "")))
        done = self.app(who).label(body)
        return done | {"team": self.team.summary(who, self.team.write_gold())}

    def adjudicate(self, body: dict) -> dict:
        cites = body.get(EXPECTED_CITATIONS) or []
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            raise PersonRejected("expected_citations must be a list of article IDs")
        seen = body.get("seen")
        if seen is not None and (not isinstance(seen, dict) or not all(isinstance(v, str) for v in seen.values())):
            raise PersonRejected("seen must map each person to the label the page showed")
        rec = self.team.adjudicate(str(body.get("who") or ""), str(body.get(QUESTION_ID) or ""),
                                   expected_citations=cites, must_refuse=bool(body.get(MUST_REFUSE, False)),
                                   reason=str(body.get("reason") or ""), seen=seen)
        return {"record": rec.to_json(), "queue": self.team.queue(), "team": self.team.summary(rec.adjudicated_by)}
