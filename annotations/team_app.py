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

from typing import Any

from annotations.server import STATIC, AnnotationApp, search_box_retriever, search_hits
from annotations.team import PersonRejected, TeamSession
from annotations.teamwork import TeamWebApp, article
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
        self._search_retriever: Any = None

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        """``/api/kb?q=``: a reviewer's search of the whole KB, so a decision can cite an article nobody cited (both
        labels wrong), found as the labelling page's search box finds it; the rest as any team's."""
        if path == "/api/kb":
            who = self.person((query.get("who") or [""])[0], (query.get("cred") or [""])[0] or None)
            self.team.check_person(who, reviewer=True)
            return self.kb_search((query.get("q") or [""])[0])
        return super().get(path, query)

    def kb_search(self, q: str) -> dict:
        q = q.strip()[:500]
        if self._search_retriever is None:
            self._search_retriever = search_box_retriever(self.team.kb, self.retriever)
        hits = search_hits(self.team.kb, self._search_retriever, q, self.k) if q else []
        return {"query": q, "results": [article(self.team.kb, h.id) for h in hits]}

    def _make_app(self, who: str, shared: AnnotationApp | None) -> AnnotationApp:
        return AnnotationApp(self.team.person(who), self.retriever, k=self.k, shared=shared)

    def label(self, who: str, body: dict) -> dict:
        self.team.check_given(who, str(body.get(QUESTION_ID, "")))
        done = self.app(who).label(body)
        return done | {"team": self.team.summary(who, self.team.write_gold())}

    def adjudicate(self, who: str, body: dict, seen: Any) -> dict:
        cites = body.get(EXPECTED_CITATIONS) or []
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            raise PersonRejected("expected_citations must be a list of article IDs")
        rec = self.team.adjudicate(who, str(body.get(QUESTION_ID) or ""),
                                   expected_citations=cites, must_refuse=bool(body.get(MUST_REFUSE, False)),
                                   reason=str(body.get("reason") or ""), seen=seen)
        return {"record": rec.to_json(), "queue": self.team.queue(), "team": self.team.summary(rec.adjudicated_by)}
