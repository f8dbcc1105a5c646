"""The web app behind ``grace annotate --team``: the labelling page for each person, and the reviewer's queue.

One server (grace's web core: Host, token and Origin checks, headers, escaping in the
page) serves the whole team; :class:`~annotations.teamwork.TeamWebApp` routes each request
to the person it names, whose page is the one-person page
(:class:`~annotations.server.AnnotationApp`), walking the questions given to them and saving
to their file. Beside their own progress every answer carries the team's (``team``:
progress per person, questions agreed, decided and waiting, and the live agreement). The
reviewer's page (``adjudicate.html``) reads ``/api/queue`` and saves decisions to
``/api/adjudicate``.
"""

from __future__ import annotations

from annotations.server import STATIC, AnnotationApp
from annotations.team import PersonRejected, TeamSession
from annotations.teamwork import TeamWebApp
from kb_builder.gold import EXPECTED_CITATIONS, MUST_REFUSE, QUESTION_ID


class TeamApp(TeamWebApp[AnnotationApp]):
    """A :class:`harness.web.WebApp` for a team: one :class:`AnnotationApp` per person, sharing the retrieval."""

    name = "grace annotate"
    page = "index.html"
    static = STATIC
    api = "/api"

    def __init__(self, team: TeamSession, retriever, *, k: int = 10):
        super().__init__()
        self.team, self.retriever, self.k = team, retriever, k

    def _make_app(self, who: str, shared: AnnotationApp | None) -> AnnotationApp:
        return AnnotationApp(self.team.person(who), self.retriever, k=self.k, shared=shared)

    def label(self, who: str, body: dict) -> dict:
        self.team.check_given(who, str(body.get(QUESTION_ID, "")))
        done = self.app(who).label(body)
        return done | {"team": self.team.summary(who, self.team.write_gold())}

    def adjudicate(self, who: str, body: dict, seen: dict[str, str] | None) -> dict:
        cites = body.get(EXPECTED_CITATIONS) or []
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            raise PersonRejected("expected_citations must be a list of article IDs")
        rec = self.team.adjudicate(who, str(body.get(QUESTION_ID) or ""),
                                   expected_citations=cites, must_refuse=bool(body.get(MUST_REFUSE, False)),
                                   reason=str(body.get("reason") or ""), seen=seen)
        return {"record": rec.to_json(), "queue": self.team.queue(), "team": self.team.summary(rec.adjudicated_by)}
