"""``grace annotate`` (the labelling web app) and ``grace annotations agree|validate|stats``."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from harness.cli.call_options import call_options, model_calls, redact_option
from harness.core.errors import WorkFailed
from harness.web import listen, serve

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "annotate": "Label gold questions in a local web app.",
    "annotations": "Check, compare and summarise gold labels.",
}


_path = click.Path(path_type=Path)


@click.command("annotate")
@click.argument("kb_dir", type=_path)
@click.option("--questions", "-q", type=_path, help="CSV with question_id, question; or a text file, one per line.")
@click.option("--from-gold", type=_path, help="Review or correct an existing gold CSV (shows its labels).")
@click.option("--out", "-o", type=_path, help="Gold CSV to write (and resume). Default with --from-gold: that file.")
@click.option("--annotator", help="Name recorded on every label (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any other address than localhost requires the printed token.")
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Print the URL only.")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, 50), help="Candidates shown.")
@click.option("--embedder", help="Retriever for candidates (default: the KB's own, e.g. bm25).")
@click.option("--suggestions", "suggestions_csv", type=_path,
              help="Suggestions CSV ('grace annotations suggest'): shown per question, accepted with the y key.")
@click.option("--run", "run", type=_path, help="A run folder or responses file: suggest its models' consensus "
              "(at least 2 voting models, 60% of them on one label).")
@click.option("--order", type=click.Choice(["file", "informative"]), default="file", show_default=True,
              help="informative: the weakest suggestions (models split, low support) first.")
@click.option("--only", "only", type=_path,
              help="Suspects CSV ('grace annotations audit'): open just the questions it lists, with its reasons.")
@click.option("--question", "question_ids", multiple=True,
              help="Open just this question (repeatable; with --only, those of its questions).")
@click.option("--team", help="Serve a team: the roster (alice,bob,carol) or 'any'; --out is then a folder "
              "(labels per person, the reviewer's decisions, the gold). Given again with other names on a restart: "
              "the roster changes (labels kept, unlabelled questions given out again).")
@click.option("--assign", help="With --team: all (default), share (each question to one person) or overlap:N "
              "(each question to N people, for agreement).")
@click.option("--reviewers", help="With --team: who may decide disagreements (default: anyone named).")
@click.option("--agree", type=click.Choice(["all", "majority"]), help="With --team: when labels that differ are "
              "gold without a reviewer: all (default: every label one) or majority (more than half of the people "
              "given a question, e.g. 2 of 3).")
@click.option("--new-key", "new_keys", metavar="NAMES", help="With a team: give these people (bob,dana) a new "
              "personal link; their old one stops working.")
def annotate(kb_dir, questions, from_gold, out, annotator, host, port, no_browser, k, embedder, suggestions_csv, run,
             order, only, question_ids, team, assign, reviewers, agree, new_keys) -> None:
    """Label questions with the KB article that answers them, in a local web app.

    Every label is written to OUT at once (write-then-rename), so closing the browser
    or stopping the server loses nothing; running the same command again resumes.
    With --suggestions or --run each question shows a suggested label that the y key
    accepts; every label records its provenance (human, accepted_suggestion,
    changed_suggestion). Draft rows ('grace gold generate') are suggested the same way.
    """
    from harness.workflows.annotate import open_labelling

    with open_labelling(kb_dir, out, questions=questions, from_gold=from_gold, annotator=annotator, k=k,
                        embedder=embedder, suggestions=suggestions_csv, run=run, order=order, only=only,
                        question_ids=question_ids, team=team, assign=assign, reviewers=reviewers,
                        new_keys=new_keys, agree=agree) as opened:
        if not hasattr(opened.session, "progress"):  # a team's session
            return _serve_team(opened, host, port, no_browser)
        for note in opened.notes:
            click.echo(note)
        for w in opened.warnings:
            click.echo(f"warning: {w}", err=True)
        server, url, token = listen(opened.app, host, port)
        session, kb = opened.session, opened.kb
        p = session.progress()
        click.echo(
            f"{p['total']} questions ({p['labelled']} labelled, {p['skipped']} skipped"
            + (f", {p['draft']} drafts" if p["draft"] else "")
            + (f", {p['suggested']} with a suggestion: y accepts" if p["suggested"] else "")
            + f"); KB {kb.path} ({len(kb.articles)} articles, candidates by {getattr(opened.retriever, 'name', '?')})"
        )
        click.echo(f"saving every label to {opened.out}" + (f" (all {p['file_total']} questions kept)" if only else ""))
        serve(server, url, host if token else None, no_browser, "reach the pages (a named person acts only through "
          "their own link)")
        p = session.progress()
        prov = p["provenance"]
        click.echo(f"\nstopped; {p['labelled']}/{p['total']} labelled"
                   + (f" ({p['reviewed']} reviewed)" if only else "")
                   + (f", {prov.get('accepted_suggestion', 0)} suggestions accepted, "
                      f"{prov.get('changed_suggestion', 0)} changed" if p["suggested"] else "")
                   + f", saved in {opened.out}")


def _serve_team(opened, host: str, port: int, no_browser: bool) -> None:
    team = opened.session
    server, url, token = listen(opened.app, host, port)
    t = team.summary()
    people = ", ".join(f"{p['name']} ({p['assigned']})" for p in t["people"]) or "anyone who names themself"
    click.echo(f"{t['questions']} questions, assigned {t['assign']}: {people}; "
               f"KB {opened.kb.path} ({len(opened.kb.articles)} articles)")
    for note in opened.notes:
        click.echo(note)
    for w in opened.warnings:
        click.echo(f"warning: {w}", err=True)
    _print_links(team, url, "", "static/adjudicate.html")
    click.echo(f"saving each person's labels to {opened.out / 'labels'}, the gold to {team.gold_file}")
    serve(server, url, host if token else None, no_browser, "reach the pages (a named person acts only through "
          "their own link)")
    t = team.summary()
    click.echo(f"\nstopped; {t['gold']}/{t['questions']} questions gold ({t['adjudicated']} decided by a reviewer), "
               f"{t['disagree']} waiting for a decision, saved in {opened.out}")


def _print_links(team, url: str, page: str, review_page: str) -> None:
    """Each person's own link, with the key issued at this start (shown this once, stored hashed); a person whose
    key was issued before keeps the link printed then (lost: --new-key NAME)."""
    from harness.web.credentials import personal_link

    reviewers = set(team.plan.reviewers)
    for name in dict.fromkeys([*(team.roster or []), *team.plan.reviewers]):
        key = team.new_keys.get(name)
        where = review_page if name in reviewers and name not in (team.roster or []) else page
        if key is None:
            click.echo(f"  {name}: the link printed when their key was issued (lost? restart with --new-key {name})")
        else:
            click.echo(f"  {name}: {personal_link(url, name, key, where)}")
    if team.new_keys:
        click.echo("each link holds its person's secret key, shown only now (kept hashed): send each person their "
                   "own; a reviewer's opens the queue")
    if team.roster is None:
        click.echo(f"anyone else opens {personal_link(url, 'NAME', None)} (a team open to anyone trusts the name)")


@click.group("annotations")
def annotations() -> None:
    """Check, compare and summarise gold labels; review a spot-check by hand."""


@annotations.command("review")
@click.argument("run_dir", type=_path)
@click.option("--kb", "kb_dir", type=_path, help="KB the answers cite (default: the one the spot-check used).")
@click.option("--gold", type=_path, help="Gold CSV, for the question text (default: the one the run names).")
@click.option("--out", "-o", type=_path, help="CSV to save labels to (default: RUN_DIR/spotcheck_review.csv, "
              "which 'grace spotcheck calibrate' reads); another file keeps a second reviewer's labels apart.")
@click.option("--reviewer", help="Name recorded on every label (default: $GRACE_ANNOTATOR or $USER).")
@click.option("--team", help="A team reviews (alice,bob): each person's verdicts kept apart in the team folder "
              "(--out, default RUN_DIR/spotcheck_team), their disagreements in a reviewer's queue, the team's labels "
              "in human.csv, and a calibration page (the judge against each person).")
@click.option("--reviewers", help="With --team: who decides disagreements and sees the calibration (default: anyone "
              "of the team).")
@click.option("--viewer", help="With --team: the address 'grace view RUN_DIR' printed; the calibration page links "
              "each false positive and negative to its question page there.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any other address than localhost requires the printed token.")
@click.option("--port", default=0, show_default=True, type=int, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Print the URL only.")
@click.option("--new-key", "new_keys", metavar="NAMES", help="With --team: give these people (bob,dana) a new "
              "personal link; their old one stops working.")
def review(run_dir, kb_dir, gold, out, reviewer, team, reviewers, viewer, host, port, no_browser, new_keys) -> None:
    """Review a spot-check by hand: mark each answer segment supported or not by its cited article.

    Shows the question, the answer with its segments highlighted and the cited article
    beside it, the best-matching passage marked; not the judge's verdict. Every mark is
    written to the CSV at once (write-then-rename); running the command again resumes.
    Then measure the judge against the labels:

    \b
      grace spotcheck calibrate RUN_DIR/spotcheck_review.csv RUN_DIR/spotcheck.json
    """
    from harness.run_folder.run_dir import RunDir
    from harness.workflows.annotate import open_review

    if team:
        return _serve_review_team(run_dir, kb_dir, gold, out, team, reviewers, viewer, host, port, no_browser,
                                  new_keys)
    if reviewers or viewer or new_keys:
        raise click.UsageError("--reviewers, --viewer and --new-key go with --team (a team's review)")
    with open_review(run_dir, kb=kb_dir, gold=gold, out=out, reviewer=reviewer) as opened:
        server, url, token = listen(opened.app, host, port)
        p = opened.session.progress()
        click.echo(f"{p['answers']} answers, {p['segments']} segments ({p['reviewed']} reviewed); "
                   f"KB {opened.kb.path} ({len(opened.kb.articles)} articles)")
        for w in opened.warnings:
            click.echo(f"warning: {w}", err=True)
        click.echo(f"saving every mark to {opened.out}")
        serve(server, url, host if token else None, no_browser, "mark segments")
        p = opened.session.progress()
        where = f"saved in {opened.out}" if opened.out.exists() else f"nothing marked, {opened.out} not written"
        click.echo(f"\nstopped; {p['reviewed']}/{p['segments']} segments reviewed, {where}")
        if p["reviewed"]:
            click.echo(f"next: grace spotcheck calibrate {opened.out} {RunDir(opened.sources.run_dir).spotcheck}")


def _serve_review_team(run_dir, kb_dir, gold, out, team, reviewers, viewer, host, port, no_browser,
                       new_keys) -> None:
    from harness.run_folder.run_dir import RunDir
    from harness.workflows.annotate import open_review_team

    with open_review_team(run_dir, team=team, reviewers=reviewers, kb=kb_dir, gold=gold, out=out,
                          viewer=viewer, new_keys=new_keys) as opened:
        server, url, token = listen(opened.app, host, port)
        t = opened.session.summary()
        click.echo(f"{t['claims']} claims to review by {', '.join(p['name'] for p in t['people'])}; "
                   f"KB {opened.kb.path} ({len(opened.kb.articles)} articles)")
        for w in opened.warnings:
            click.echo(f"warning: {w}", err=True)
        _print_links(opened.session, url, "", "static/review_queue.html")
        click.echo("the calibration: the link on a reviewer's queue page (static/calibration.html, their own key)")
        click.echo(f"saving each person's verdicts to {opened.out / 'labels'}, the team's labels to "
                   f"{opened.session.human_file}")
        serve(server, url, host if token else None, no_browser, "reach the pages (a named person acts only "
              "through their own link)")
        t = opened.session.summary()
        click.echo(f"\nstopped; {t['labelled']}/{t['claims']} claims labelled by the team ({t['adjudicated']} decided "
                   f"by a reviewer), {t['disagree']} waiting for a decision, saved in {opened.out}")
        if t["labelled"]:
            click.echo(f"next: grace spotcheck calibrate {opened.session.human_file} "
                       f"{RunDir(opened.sources.run_dir).spotcheck}")


@annotations.command("agree")
@click.argument("files", nargs=-1, required=True, type=_path)
@click.option("--merge", type=_path, help="Write an adjudication CSV with every annotator's label side by side.")
@click.option("--kb", "kb_dir", type=_path, help="KB to show article titles in the disagreement list.")
@click.option("--limit", default=50, show_default=True, help="Disagreements listed (0 = all).")
@click.option("--force", is_flag=True, help="Replace an existing --merge file (the old one is kept as NAME.bak).")
def agree(files, merge, kb_dir, limit, force) -> None:
    """Agreement between annotators: Cohen's kappa (two) or Fleiss' kappa (three or more).

    Files whose labels were made with suggestions also get the suggester's agreement
    with the people (per suggestion source: share accepted, Cohen's kappa); one such
    file alone gives just that.
    """
    from annotations import agreement
    from harness.workflows.annotate import agree_labels

    done = agree_labels(files, merge=merge, kb=kb_dir, force=force)
    if done.comparison is None:
        click.echo(agreement.render_suggester(done.suggester))
        return
    click.echo(agreement.render(done.comparison, done.titles, limit=limit))
    if done.suggester:
        click.echo(agreement.render_suggester(done.suggester))
        click.echo("  (people shown the same suggestion are anchored by it: their agreement overstates independent labels)")
    if done.merged:
        click.echo(f"adjudication sheet: {done.merged} ({len(done.comparison.disagreements)} to adjudicate)")


@annotations.command("validate")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB the gold set cites.")
@click.option("--old-kb", type=_path, help="The KB the labels were made on, to name retired IDs by title.")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, None),
              help="Retrieval depth for the 'never surfaced' check.")
@click.option("--embedder", help="Retriever for that check (default: the KB's own).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(gold, kb_dir, old_kb, k, embedder, as_json) -> None:
    """Check a gold CSV against its KB; exit 1 when it has errors."""
    from annotations import validate as v
    from harness.workflows.annotate import validate_gold

    report = validate_gold(gold, kb_dir, old_kb=old_kb, k=k, embedder=embedder)
    click.echo(report.model_dump_json(indent=2) if as_json else v.render(report))
    if report.errors:
        sys.exit(1)


@annotations.command("stats")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB, to find articles no question cites.")
@click.option("--by", "column", help="Category column to count (default: 'category' if present).")
@click.option("--limit", default=20, show_default=True, help="Rows per table (0 = all).")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
def stats(gold, kb_dir, column, limit, as_json) -> None:
    """Questions per article, coverage gaps, and category counts."""
    from annotations import stats as s
    from harness.workflows.annotate import gold_stats

    st = gold_stats(gold, kb_dir, column=column)
    click.echo(st.model_dump_json(indent=2) if as_json else s.render(st, limit=limit))


@annotations.command("suggest")
@click.argument("questions", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB the labels cite.")
@click.option("--run", "run", type=_path, help="A run folder or responses file: suggest the models' consensus citation.")
@click.option("--labeler", help="PROVIDER:MODEL that reads each question with its top-k articles and picks the answer. "
              "With --run too, it is asked only where the models do not agree enough.")
@click.option("--out", "-o", required=True, type=_path, help="Suggestions CSV to write.")
@click.option("--min-agreement", default=0.6, show_default=True, type=click.FloatRange(0.5, 1.0),
              help="Share of voting models that must agree on one label (consensus rule).")
@click.option("--min-models", default=2, show_default=True, type=click.IntRange(1, None),
              help="Voting models needed before a consensus counts.")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, 50), help="Articles the labeler sees.")
@click.option("--template", default=None, help="Labeler template: built-in name or file path [default: labeler.v1 in "
              "the KB's language when grace has it (labeler.v1.fr)].")
@click.option("--dry-run", is_flag=True, help="Estimate the labeler's calls and cost; call nothing.")
@click.option("--force", is_flag=True, help="Replace an existing --out file (the old one is kept as NAME.bak).")
@call_options("labeler calls")
@redact_option
def suggest(questions, kb_dir, run, labeler, out, min_agreement, min_models, k, template, dry_run, force, **call) -> None:
    """Pre-label questions: the consensus of a run's models (--run), an LLM labeler (--labeler), or both.

    Writes one row per question: suggested (article IDs joined by ';', or REFUSE;
    empty when there is none), support, source, votes and a reason. Open it with
    `grace annotate KB --questions QUESTIONS --suggestions OUT` to accept each with one key.
    """
    from rich.console import Console

    from harness.workflows.annotate import suggest_labels

    def consensus(done) -> None:
        if len(done.models) < 3:
            click.echo(f"warning: only {len(done.models)} model(s) voted; consensus from 3+ different LLMs is what "
                       "makes a suggestion worth accepting with one key", err=True)
        click.echo(f"consensus of {len(done.models)} model(s) in {run}: a suggestion for {done.usable} of "
                   f"{done.questions} questions (rule: >= {min_models} voting models, >= {min_agreement:.0%} of them "
                   "on one label)")

    done = suggest_labels(questions, kb_dir, out, run=run, labeler=labeler, min_agreement=min_agreement,
                          min_models=min_models, k=k, template=template, dry_run=dry_run, force=force,
                          calls=model_calls(call), console=Console(stderr=True), on_consensus=consensus)
    if done.labeler_skipped:
        click.echo("every question has a consensus suggestion; the labeler is not asked")
    if done.redaction is not None:
        from harness.privacy.redactor import summary_line

        click.echo(f"--redact-pii: {summary_line(done.redaction)}; counts -> {done.redaction_file}", err=True)
    if done.suggestions is None:  # the labeler's dry run printed its estimate
        return
    if dry_run and not labeler:
        click.echo("--dry-run: a consensus needs no calls")
    flags = done.flags()
    click.echo(f"{len(done.suggestions)} rows -> {out} ({', '.join(f'{k} {n}' for k, n in flags.most_common())})")
    click.echo(f"next: grace annotate {kb_dir} --questions {questions} --suggestions {out} --order informative")
    why = done.failure()
    if why:
        raise WorkFailed(why)
    if done.failed:  # last: a partial failure exits 0, and this count is what a CI log should end on
        click.echo(f"{done.failed} labeler call(s) failed (flagged labeler_error in {out}); run the same command again "
                   "to retry them", err=True)


@annotations.command("sample")
@click.argument("questions", type=_path)
@click.option("-n", "n", required=True, type=click.IntRange(min=1), help="Questions to draw for humans to label.")
@click.option("--seed", default=0, show_default=True, help="Random seed: the same file, n and seed draw the same questions.")
@click.option("--by", "by", default=None, help="Stratify by this column (e.g. category): each value gets its share "
              "of n, at least 2; the weights are recorded.")
@click.option("--out", "-o", required=True, type=_path, help="Subset CSV to write (the draw record goes beside it "
              "as OUT.draw.json).")
@click.option("--force", is_flag=True, help="Replace an existing --out file (the old one is kept as NAME.bak).")
def sample(questions, n, seed, by, out, force) -> None:
    """Draw the random subset of questions for humans to label, and record the draw.

    A prediction-powered leaderboard ('grace score --gold HUMAN --machine-gold
    MACHINE') corrects machine labels by their error on human-labelled
    questions, which is unbiased only for a random draw made before anyone saw
    a label. Label OUT ('grace annotate KB --questions OUT --out HUMAN.csv'),
    keep OUT.draw.json in the folder of HUMAN.csv, and the scorer checks that
    the human labels are the drawn questions.
    """
    from harness.workflows.sample import sample_questions

    drawn = sample_questions(questions, n, out, seed=seed, by=by, force=force)
    rec = drawn.record
    how = (f"stratified by {rec.by}: " + ", ".join(f"{s.name} {s.drawn}/{s.population}" for s in rec.strata)
           if rec.by else f"uniformly, seed {rec.seed}")
    click.echo(f"drew {rec.n} of {sum(s.population for s in rec.strata)} questions ({how}) -> {drawn.subset}")
    click.echo(f"draw record -> {drawn.record_path}")
    for w in drawn.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo(f"next: grace annotate KB --questions {drawn.subset} --out HUMAN.csv")


@annotations.command("migrate")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The curated KB (grace kb edit, grace kb curate).")
@click.option("--out", "-o", required=True, type=_path, help="Gold CSV to write, its labels following the curation.")
@click.option("--suggestions", "suggestions_csv", type=_path,
              help="Where the relabelling suggestions go (default: OUT.relabel.csv).")
@click.option("--force", is_flag=True, help="Replace existing output files (the old ones are kept as NAME.bak).")
def migrate(gold, kb_dir, out, suggestions_csv, force) -> None:
    """Keep a gold set valid after curation: labels of merged articles move to the surviving ID; labels of split
    articles are taken off for relabelling, with both parts suggested."""
    from harness.workflows.gold import migrate_gold

    done = migrate_gold(gold, kb_dir, out, suggestions=suggestions_csv, force=force)
    click.echo(f"{done.questions} questions: {len(done.moved)} label(s) moved to a merged article's surviving ID, "
               f"{len(done.relabel)} taken off for relabelling (split articles) -> {done.out}")
    for m in done.moved:
        click.echo(f"  moved {m.question_id}: {';'.join(m.before)} -> {';'.join(m.after)}")
    for r in done.relabel:
        parts = "; ".join(f"{c} -> {' and '.join(p)}" for c, p in r.split.items())
        click.echo(f"  relabel {r.question_id}: was {';'.join(r.before)} ({parts})")
    for qid, ids in done.unknown.items():
        click.echo(f"  not migrated {qid}: cites {', '.join(ids)}, not in the KB and not merged or split by curation; "
                   f"'grace annotations validate {done.out} --kb {kb_dir}' explains", err=True)
    if done.suggestions is not None:
        click.echo(f"next: grace annotate {kb_dir} --from-gold {done.out} --suggestions {done.suggestions} "
                   "(both parts of each split article are suggested; keep the one that answers)")


@annotations.command("audit")
@click.argument("gold", type=_path)
@click.option("--kb", "kb_dir", required=True, type=_path, help="The KB the gold set cites.")
@click.option("--run", "run", required=True, type=_path, help="A run folder or responses file with several models.")
@click.option("--out", "-o", required=True, type=_path, help="Suspects CSV to write.")
@click.option("--min-models", default=2, show_default=True, type=click.IntRange(1, None),
              help="Voting models a rule needs before it flags a label.")
@click.option("--min-swaps", default=2, show_default=True, type=click.IntRange(1, None),
              help="Questions each way before two articles count as near-duplicates.")
@click.option("--limit", default=20, show_default=True, help="Suspects printed (0 = all; the file has all).")
@click.option("--force", is_flag=True, help="Replace an existing --out file (the old one is kept as NAME.bak).")
def audit(gold, kb_dir, run, out, min_models, min_swaps, limit, force) -> None:
    """List the gold labels a run's models contradict, most likely wrong first.

    Rules: most models cite one other article; a must_refuse question most models
    answer from one article; an answerable question every model refuses; two
    articles the models swap both ways (near-duplicates). Review them with
    `grace annotate KB --from-gold GOLD --only OUT`.
    """
    from harness.workflows.annotate import audit_gold

    result = audit_gold(gold, kb_dir, run, out, force=force, min_voters=min_models, min_swaps=min_swaps)
    kinds = Counter(s.kind for s in result.suspects)
    if len(result.models) < 3:
        click.echo(f"warning: only {len(result.models)} model(s) voted; a flag is only as good as the models' "
                   "independence (two retrieval baselines are one opinion): audit a run of 3+ different LLMs", err=True)
    click.echo(f"{len(result.suspects)} suspect(s) among {result.questions} voted question(s), from "
               f"{len(result.models)} model(s): " + (", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "none"))
    for s in result.suspects[: limit or None]:
        click.echo(f"- {s.question_id} [{s.kind}] gold {s.gold} -> {s.suggested}: {s.reason}")
    if limit and len(result.suspects) > limit:
        click.echo(f"... {len(result.suspects) - limit} more in {out}")
    click.echo(f"suspects -> {out}; review: grace annotate {kb_dir} --from-gold {gold} --only {out}")
