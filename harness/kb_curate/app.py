"""The local web app behind ``grace kb curate``: lint's findings as a worklist, fixed by hand or by a model's proposal.

Served by grace's one web server core (:mod:`harness.web`: Host and token checks,
Origin check on changes, body limits, CSP, shared assets), like ``grace
annotate``. Every action goes through the curation overlay
(:class:`kb_builder.curation.Curation`), which appends it to ``KB/curation.jsonl``
and rewrites the KB at once, so closing the page loses nothing and ``grace kb
build`` re-applies it. A model's proposal is kept in ``KB/curation_proposals.jsonl``
(:mod:`harness.kb_curate.proposal_store`) from the moment it is made, so one not yet
accepted or rejected is back after a restart. Article text and model text are hostile: they leave here
as JSON strings cut into segments (:mod:`harness.kb_curate.views`) and the page
makes text nodes of them.

After each action the worklist is linted again where the action could change
it: the touched articles' own findings (self-contained, length, titles) and the
pairs (confusable, title-query), which depend on the whole KB's words; the other
articles' own findings are kept as they were, since nothing about them changed.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from harness.core.errors import GraceError
from harness.kb_curate import STATIC
from harness.kb_curate.change_requests import (
    GONE,
    ChangeRejected,
    ChangeRequest,
    NotYourRole,
    ReviewQueue,
    article_hash,
)
from harness.kb_curate.proposal_store import ProposalStore
from harness.kb_curate.proposals import KIND_FOR_FINDING, KINDS, Proposal, make_input
from harness.kb_curate.proposer import Proposer, propose
from harness.kb_curate.views import change_blocks, lint_evidence, plain, proposal_view, shared_evidence
from harness.runner.calls import CallSettings, PromptStats
from kb_builder.retrieval import passages

PAIR_KINDS = ("confusable", "swapped_in_run")
APPROVED = re.compile(r"approved by (\S+) \(change (\d+)\)")  # the note an approved change's edit carries
CHANGES = ("title", "text", "split", "merge", "distinct", "accept")  # what a team's curator proposes for review
HISTORY = 12  # recent actions listed on the page
MAX_TEXT = 200_000  # characters of an article's text the page may send


def finding_key(f: Any) -> str:
    return f"{f.kind}:{'+'.join(f.articles)}"


class CurateApp:
    """What the API answers, independent of HTTP (the tests call it directly too): a :class:`harness.web.WebApp`."""

    name = "grace kb curate"
    page = "curate.html"
    static = STATIC
    keyed = True  # a team's request acts as the owner of its key (harness.web.credentials)
    post_paths = tuple(f"/api/curate/{a}" for a in ("title", "text", "split", "merge", "distinct", "undo", "propose",
                                                     "accept", "reject", "approve", "decline"))

    def __init__(self, curation: Any, proposer: Proposer, settings: CallSettings, *, author: str,
                 run: Any = None, review: ReviewQueue | None = None, curators: list[str] | None = None,
                 reviewers: list[str] | None = None):
        """``review``: a team session (``--reviewers``): curators' actions wait in it for a reviewer's approval;
        ``curators`` and ``reviewers`` are the roster (no curators: anyone named may propose)."""
        self.cur, self.proposer, self.settings, self.author = curation, proposer, settings, author
        self.review, self.curators, self.reviewers = review, curators, reviewers or []
        if review is not None:
            self._reconcile()
        self._actor = author  # who the action being handled is recorded as (a team: the person who asked)
        self.lock = threading.Lock()  # one action at a time: each reads and writes the whole KB
        self.stats = PromptStats()
        self.proposals = ProposalStore(curation.path)  # asked-for proposals outlive a restart
        report = curation.worklist(run)
        self.notices = list(report.notices)
        self.findings = self._without_distinct(report.findings)
        self.started_with = len(self.findings)
        self.relint_seconds: list[float] = []
        self._words = passages.KBWords(curation.kb)
        self._word_memo: dict[str, list[str]] = {}

    # -- routes ------------------------------------------------------------------------------------

    def get(self, path: str, query: dict[str, list[str]]) -> dict | None:
        if path == "/api/curate/state":
            first = {k: (query.get(k) or [""])[0] for k in ("kind", "section", "who", "cred")}
            you = None
            if self.review is not None:
                named = self.review.credentials.person(first["who"], first["cred"] or None)
                you = self._person(named, reviewer=False, strict=False)
            return self.state(kind=first["kind"] or None, section=first["section"] or None, you=you)
        if path == "/api/curate/finding":
            return self.finding((query.get("key") or [""])[0])
        return None

    def post(self, path: str, body: Any, key: str | None = None) -> dict | None:
        if not isinstance(body, dict):
            raise GraceError("expected a JSON object")
        action = path.removeprefix("/api/curate/")
        handler = getattr(self, f"do_{action}", None)
        if handler is None:
            return None
        with self.lock:
            if self.review is None:
                if action in ("approve", "decline"):
                    raise GraceError("nothing waits for review: start 'grace kb curate --reviewers NAMES' for a team")
                self._actor = self.author
                return handler(body)
            reviewing = action in ("approve", "decline", "undo")
            named = self.review.credentials.person(body.get("who") if isinstance(body.get("who"), str) else "", key)
            self._actor = self._person(named, reviewer=reviewing)
            if action in CHANGES:
                return self._submit(action, body)
            return handler(body)  # ask a model, reject its proposal, or (a reviewer) undo: the KB as reviewed

    # -- reading -----------------------------------------------------------------------------------

    def state(self, *, kind: str | None = None, section: str | None = None, you: str | None = None) -> dict:
        """The worklist (only the findings of ``kind`` and in ``section`` when given), the history, and a team's
        changes waiting for review."""
        kb = self.cur.kb
        edits = self.cur.edits()
        undone = {e.undoes for e in edits if e.action == "undo"}
        rows = [self._row(f) for f in self.findings]
        shown = [r for r in rows if (not kind or r["kind"] == kind) and (not section or section in r["sections"])]
        sections: dict[str, int] = {}
        for r in rows:
            for sec in r["sections"]:
                sections[sec] = sections.get(sec, 0) + 1
        return {
            "filter": {"kind": kind, "section": section},
            "sections": dict(sorted(sections.items())),
            "team": None if self.review is None else {
                "you": you, "curators": self.curators, "reviewers": self.reviewers,
                "changes": [r.model_dump() | ({"blocks": change_blocks(r, kb)} if r.status == "pending" else {})
                            for r in self.review.all()],
                "pending": sum(r.status == "pending" for r in self.review.requests.values())},
            "kb": {"path": str(kb.path), "articles": len(kb.articles), "kb_hash": kb.manifest.kb_hash},
            "author": you if self.review is not None and you else self.author,  # a team: the person, by name
            "proposer": self.proposer.name,
            "findings": shown,
            "counts": _counts(self.findings),
            "started_with": self.started_with,
            "actions": len(self.cur.active()),
            "history": [{"seq": e.seq, "action": e.action, "articles": e.articles, "parts": e.parts,
                         "undoes": e.undoes, "undone": e.seq in undone, "author": e.author, "time": e.time,
                         "reason": e.reason or ""} for e in edits[-HISTORY:]][::-1],
            "conflicts": [c.model_dump() for c in self.cur.conflicts()],
            "notices": self.notices,
            "cost": self.stats.as_dict(),
        }

    def finding(self, key: str) -> dict:
        """One finding with its articles side by side, paragraph by paragraph, the evidence marked."""
        f = next((f for f in self.findings if finding_key(f) == key), None)
        if f is None:
            raise LookupError(f"no open finding {key!r}: it was fixed or its articles changed; pick another")
        kb = self.cur.kb
        arts = [kb.by_id[i] for i in f.articles if i in kb.by_id]
        views = []
        for a in arts:
            paras = self.cur.paragraphs(a.id)
            if f.kind in PAIR_KINDS and len(arts) == 2:
                other = next(b for b in arts if b.id != a.id)
                segs = shared_evidence(self._words, a.id, paras, other.title + "\n" + other.text)
            elif f.kind == "not_self_contained":
                segs = lint_evidence(f.message, paras)
            else:
                segs = plain(paras)
            crumb = [p for p in (a.heading_path or []) if p and p not in a.title]
            views.append({"id": a.id, "title": a.title, "text": a.text, "source": a.source or "", "breadcrumb": crumb,
                          "tokens": a.tokens, "paragraphs": segs})
        return {**self._row(f), "articles": views, "proposal_kind": KIND_FOR_FINDING.get(f.kind, "rewrite"),
                "proposals": [self._view(p) for p in self.proposals.open() if set(p.articles) <= set(f.articles)]}

    # -- actions (each saved through the overlay at once, then the worklist linted again) -----------

    def do_title(self, body: dict) -> dict:
        aid = _s(body, "id")
        self.cur.set_title(aid, _s(body, "title"), author=self._actor, reason=_opt(body, "reason"))
        return self._after(f"retitled {aid}", {aid})

    def do_text(self, body: dict) -> dict:
        aid = _s(body, "id")
        text = _s(body, "text")
        if len(text) > MAX_TEXT:
            raise GraceError(f"the text is {len(text):,} characters; at most {MAX_TEXT:,}")
        self.cur.set_text(aid, text, author=self._actor, reason=_opt(body, "reason"))
        return self._after(f"saved the text of {aid}", {aid})

    def do_split(self, body: dict) -> dict:
        aid, at = _s(body, "id"), _i(body, "at")
        titles = body.get("titles")
        if titles is not None and (not isinstance(titles, list) or not all(isinstance(t, str) for t in titles)):
            raise GraceError("titles must be a list of two strings")
        edit = self.cur.split_article(aid, at, titles=titles, author=self._actor, reason=_opt(body, "reason"))
        return self._after(f"split {aid} at paragraph {at} into {' and '.join(edit.parts)}", {aid, *edit.parts})

    def do_merge(self, body: dict) -> dict:
        keep, other = _s(body, "keep"), _s(body, "other")
        self.cur.merge_articles(keep, other, title=_opt(body, "title"), text=_opt(body, "text"), author=self._actor,
                                reason=_opt(body, "reason"))
        return self._after(f"merged {other} into {keep} ({other} retired)", {keep, other})

    def do_distinct(self, body: dict) -> dict:
        a, b = _s(body, "a"), _s(body, "b")
        self.cur.mark_distinct(a, b, why=_opt(body, "why") or "", author=self._actor)
        return self._after(f"marked {a} and {b} distinct", {a, b})

    def do_undo(self, body: dict) -> dict:
        seq = body.get("seq")
        if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
            raise GraceError("seq must be the number of an action")
        edit = self.cur.undo(author=self._actor, seq=seq)
        target = next((e for e in self.cur.edits() if e.seq == edit.undoes), edit)
        touched = set(target.articles) | set(target.parts) | set(target.before) | set(target.after)
        return self._after(f"undid action {edit.undoes} ({target.action} of {', '.join(target.articles)})", touched)

    def do_propose(self, body: dict) -> dict:
        ids = body.get("articles")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise GraceError("articles must be a list of article IDs")
        kind = _s(body, "kind")
        if kind not in KINDS:
            raise GraceError(f"kind must be one of {', '.join(KINDS)}")
        key = _opt(body, "finding") or ""
        f = next((f for f in self.findings if finding_key(f) == key), None)
        inp = make_input(self.cur.kb, kind, ids, finding=f.message if f else "", finding_kind=f.kind if f else None,
                         paragraphs=self.cur.paragraphs)
        proposal = propose(self.proposer, [inp], self.settings, self.stats)[0]
        self.proposals.add(proposal, self.cur.kb, paragraphs=inp.paragraphs if kind == "split" else None,
                           finding=key, asked_by=self._actor)  # on disk before the page sees it
        return {"proposal": self._view(proposal), "cost": self.stats.as_dict()}

    def _view(self, p: Proposal) -> dict:
        """A proposal as the page shows it; one made stale by a later edit says so and shows no diff to apply."""
        why = self.proposals.stale(p.id, self.cur.kb)
        if why:
            return p.model_dump() | {"blocks": [], "stale": True, "stale_reason": why}
        return proposal_view(p, self.cur.kb, self.proposals.paragraphs(p.id)) | {"stale": False}

    def do_accept(self, body: dict) -> dict:
        p, q, why = self._resolve_accept(body)
        res = self._apply_accept(q, why, p.id)
        self.proposals.decide(p.id, "accepted")
        return res

    def _resolve_accept(self, body: dict) -> tuple[Proposal, Proposal, str]:
        """The proposal as accepted (with the curator's edits) and the reason recorded with it."""
        p = self._proposal(body)
        if p.error:
            raise GraceError(f"proposal {p.id} was rejected ({p.error}); ask for another or edit by hand")
        self.proposals.check_fresh(p.id, self.cur.kb)
        edited = {k: body[k] for k in ("title", "text", "keep", "at", "titles") if body.get(k) is not None}
        q = p.model_copy(update=edited)
        why = f"proposal {p.id} by {p.model}{' (edited)' if edited else ''}: {p.reason}".strip()[:500]
        return p, q, why

    def _apply_accept(self, q: Proposal, why: str, n: int) -> dict:
        if q.kind == "rewrite":
            aid, art = q.articles[0], self.cur.kb.by_id.get(q.articles[0])
            if art is None:
                raise GraceError(f"article {aid} is no longer in the KB: the proposal is stale; ask again")
            if not isinstance(q.title, str) or not isinstance(q.text, str):
                raise GraceError("title and text must be strings")
            changed = [(q.title != art.title, lambda: self.cur.set_title(aid, q.title, author=self._actor, reason=why)),
                       (q.text != art.text, lambda: self.cur.set_text(aid, q.text, author=self._actor, reason=why))]
            if not any(c for c, _ in changed):
                raise GraceError(f"proposal {n} changes nothing in article {aid}")
            for c, act in changed:
                if c:
                    act()
            touched, done = {aid}, f"accepted proposal {n}: rewrote {aid}"
        elif q.kind == "merge":
            keep = str(q.keep)
            other = next((i for i in q.articles if i != keep), None)
            if keep not in q.articles or other is None:
                raise GraceError(f"keep must be one of {', '.join(q.articles)}")
            self.cur.merge_articles(keep, other, title=q.title, text=q.text, author=self._actor, reason=why)
            touched, done = {keep, other}, f"accepted proposal {n}: merged {other} into {keep}"
        else:
            if isinstance(q.at, bool) or not isinstance(q.at, int):
                raise GraceError("at must be a paragraph number")
            edit = self.cur.split_article(q.articles[0], q.at, titles=q.titles or None, author=self._actor,
                                          reason=why)
            touched, done = {q.articles[0], *edit.parts}, f"accepted proposal {n}: split {q.articles[0]}"
        return self._after(done, touched)

    # -- a team: proposed, then approved or rejected by a reviewer ---------------------------------

    def _reconcile(self) -> None:
        """A change applied whose approval was never written (a kill in between) is recorded approved now: its
        edit in ``curation.jsonl`` names it ("approved by R (change N)"), and approving it again would be stale."""
        for e in self.cur.edits():
            notes = APPROVED.findall(e.reason or "")  # the last is the app's own: a curator's text comes before it
            rec = self.review.requests.get(int(notes[-1][1])) if notes else None
            if rec is not None and rec.status == "pending":
                self.review.reconciled(rec, notes[-1][0])

    def _you(self) -> str | None:
        """The person the request being handled acts as (a team), for the page's header."""
        return self._actor if self.review is not None else None

    def _person(self, who: Any, *, reviewer: bool, strict: bool = True) -> str | None:
        """The person a team's request names, or a clear error: nobody, someone not on the roster, a curator
        reviewing. ``strict=False`` (reading): nobody is ``None``."""
        who = who.strip() if isinstance(who, str) else ""
        if not who:
            if not strict:
                return None
            raise ChangeRejected("name yourself: open the page with ?who=YOUR_NAME")
        if reviewer and who not in self.reviewers:
            raise NotYourRole(f"{who!r} is not a reviewer of this KB ({', '.join(self.reviewers)}): a reviewer "
                                 "approves, rejects and undoes")
        if self.curators is not None and who not in self.curators + self.reviewers:
            raise ChangeRejected(f"{who!r} is not on this session's team ({', '.join(self.curators + self.reviewers)})")
        return who

    def _submit(self, action: str, body: dict) -> dict:
        """A curator's action, checked now (a bad one is refused at once) and kept for review; the KB is unchanged."""
        kb = self.cur.kb
        saved = {k: v for k, v in body.items() if k != "who"}
        if action == "accept":
            p, q, why = self._resolve_accept(body)
            ids = list(q.articles)
            saved = {"proposal": p.id, "model": p.model, "kind": q.kind, "articles": ids, "title": q.title,
                     "text": q.text, "keep": q.keep, "at": q.at, "titles": q.titles, "why": why}
            summary = f"{q.kind} of {', '.join(ids)} proposed by {p.model}"
        elif action in ("title", "text", "split"):
            ids = [_s(body, "id")]
            if action == "split":
                _i(body, "at")
            else:
                value = _s(body, action)
                if len(value) > MAX_TEXT:
                    raise GraceError(f"the text is {len(value):,} characters; at most {MAX_TEXT:,}")
            summary = {"title": f"retitle {ids[0]}: {body.get('title')}", "text": f"new text for {ids[0]}",
                       "split": f"split {ids[0]} at paragraph {body.get('at')}"}[action]
        elif action == "merge":
            ids = [_s(body, "keep"), _s(body, "other")]
            summary = f"merge {ids[1]} into {ids[0]}"
        else:
            ids = [_s(body, "a"), _s(body, "b")]
            if not (_opt(body, "why") or "").strip():
                raise GraceError("say why the two articles are distinct")
            summary = f"mark {ids[0]} and {ids[1]} distinct"
        missing = [i for i in ids if i not in kb.by_id]
        if missing:
            raise GraceError(f"no article {', '.join(missing)} in the KB: pick one the worklist shows")
        base = {i: article_hash(kb.by_id[i].title, kb.by_id[i].text) for i in ids}
        same = next((r for r in self.review.requests.values() if r.status == "pending" and r.action == action
                     and r.articles == ids and r.base == base and _said(r.body) == _said(saved)), None)
        if same is not None:
            raise ChangeRejected(f"change {same.id} ({same.author}) already proposes this and waits for review: "
                                 "nothing new to propose")
        rec = self.review.propose(action, saved, articles=ids, base=base, summary=summary, author=self._actor)
        if action == "accept":
            self.proposals.decide(p.id, "accepted")  # out of the open list: it waits in the review queue now
        return {"done": f"proposed change {rec.id} for review: {summary}", "fixed": 0, "new": 0,
                "state": self.state(you=self._actor)}

    def do_approve(self, body: dict) -> dict:
        rec = self.review.get(_i(body, "change"))
        reviewer = self._actor
        if rec.author == reviewer:
            raise NotYourRole(f"change {rec.id} is your own: another reviewer approves it")
        kb = self.cur.kb

        def hashes() -> dict[str, str]:
            return {a: GONE if a not in kb.by_id else article_hash(kb.by_id[a].title, kb.by_id[a].text)
                    for a in rec.base}

        def apply(rec: ChangeRequest) -> dict:
            note = f"approved by {reviewer} (change {rec.id})"
            self._actor = rec.author  # the edit is the curator's, as reviewed
            try:
                if rec.action == "accept":
                    b = rec.body
                    q = Proposal(kind=b["kind"], articles=b["articles"], model=b.get("model", ""),
                                 title=b.get("title"), text=b.get("text"), keep=b.get("keep"), at=b.get("at"),
                                 titles=b.get("titles") or [])
                    return self._apply_accept(q, f"{b.get('why', '')}; {note}"[:500], b.get("proposal", rec.id))
                body = dict(rec.body)
                said = "why" if rec.action == "distinct" else "reason"
                body[said] = f"{body[said]}; {note}" if body.get(said) else note
                return getattr(self, f"do_{rec.action}")(body)
            finally:
                self._actor = reviewer

        _, res = self.review.decide(rec.id, "approved", reviewer, now=hashes, apply=apply)
        return res | {"done": f"approved change {rec.id}: {res['done']}", "state": self.state(you=reviewer)}

    def do_decline(self, body: dict) -> dict:
        rec = self.review.get(_i(body, "change"))
        reason = _opt(body, "reason") or ""
        if not reason.strip():
            raise ChangeRejected("say why the change is rejected: the curator reads it")
        self.review.decide(rec.id, "rejected", self._actor, reason.strip()[:1000])
        return {"done": f"rejected change {rec.id}", "fixed": 0, "new": 0, "state": self.state(you=self._actor)}

    def do_reject(self, body: dict) -> dict:
        p = self._proposal(body)
        self.proposals.decide(p.id, "rejected")
        return {"done": f"rejected proposal {p.id}", "state": self.state(you=self._you())}

    # -- helpers -----------------------------------------------------------------------------------

    def _proposal(self, body: dict) -> Proposal:
        n = _i(body, "proposal")
        p = self.proposals.get(n)
        if p is None:
            raise GraceError(f"no proposal {n}: ask for one first")
        if p.status != "open":
            raise GraceError(f"proposal {n} is already {p.status}")
        return p

    def _after(self, done: str, touched: set[str]) -> dict:
        before = {finding_key(f) for f in self.findings}
        t0 = time.perf_counter()
        self._relint(touched)
        self.relint_seconds.append(time.perf_counter() - t0)
        after = {finding_key(f) for f in self.findings}
        return {"done": done, "fixed": len(before - after), "new": len(after - before),
                "state": self.state(you=self._you())}

    def _relint(self, touched: set[str]) -> None:
        """The worklist after an action on ``touched``: every pair finding anew, the touched articles' own
        findings anew, the other articles' own findings as they were (an article's own faults depend on it only)."""
        from kb_builder import lint
        from kb_builder.store import KB

        kb = self.cur.kb
        self._words = passages.KBWords(kb)
        live = kb.by_id
        notices: list[str] = []
        # the texts' TF-IDF once for both pair searches, as lint_kb does; an article's words are read again only
        # when its text changed (reading the words was half of a re-lint of a 1,500-article KB)
        stop = lint.kb_stop_words(kb)
        hashes = [a.content_hash or a.compute_hash() for a in kb.articles]
        memo = {h: self._word_memo.get(h) or lint.text_words(a.text, stop) for h, a in zip(hashes, kb.articles, strict=True)}
        self._word_memo = memo
        text = lint.tfidf_rows(memo[h] for h in hashes)
        pairs = lint.confusable_pairs(kb, notices=notices, text=text)
        seen = {tuple(f.articles) for f in pairs}
        pairs += [f for f in lint.title_query_pairs(kb, text=text, notices=notices) if tuple(f.articles) not in seen]
        kept = [f for f in self.findings if f.kind not in ("confusable", "duplicate_title")
                and not set(f.articles) & touched and all(a in live for a in f.articles)]
        mine = [live[i] for i in sorted(touched) if i in live]
        fresh = [f for f in lint.article_findings(KB(kb.path, mine, kb.manifest)) if f.kind != "duplicate_title"]
        titles: dict[str, list] = {}
        for a in kb.articles:
            titles.setdefault(" ".join(a.title.lower().split()), []).append(a)
        dups = [f for group in titles.values() if len(group) > 1
                for f in lint.article_findings(KB(kb.path, group, kb.manifest)) if f.kind == "duplicate_title"]
        found = self._without_distinct(pairs + kept + fresh + dups)
        found.sort(key=lambda f: (lint.SEVERITY[f.severity], lint.KIND_ORDER.index(f.kind), -f.score, f.articles))
        self.findings, self.notices = found, notices

    def _without_distinct(self, findings: list) -> list:
        from kb_builder.lint import without_distinct

        return without_distinct(findings, {frozenset(e.articles) for e in self.cur.distinct()})

    def _row(self, f: Any) -> dict:
        kb = self.cur.kb
        arts = [kb.by_id[i] for i in f.articles if i in kb.by_id]
        return {"key": finding_key(f), "kind": f.kind, "severity": f.severity, "articles": f.articles,
                "titles": [kb.by_id[i].title if i in kb.by_id else "" for i in f.articles], "message": f.message,
                "sections": sorted({section_of(a) for a in arts})}


def section_of(article: Any) -> str:
    """The part of the KB an article is in: its top heading, else its source's top folder or file."""
    if article.heading_path and article.heading_path[0]:
        return article.heading_path[0]
    source = (article.source or "").replace("\\", "/").strip("/")
    return source.split("/")[0] if source else "(none)"


def _counts(findings: list) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.kind] = out.get(f.kind, 0) + 1
    return out


def _said(body: dict) -> dict:
    """What a change does, to tell two proposals of the same change apart from two changes: its fields without the
    why (two people can give two reasons for one change)."""
    return {k: v for k, v in body.items() if k not in ("reason", "why", "who")}


def _s(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise GraceError(f"{name} must be a non-empty string")
    return value


def _opt(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise GraceError(f"{name} must be a string")
    return value


def _i(body: dict, name: str) -> int:
    value = body.get(name)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraceError(f"{name} must be a whole number")
    return value
