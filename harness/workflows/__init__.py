"""The workflows: what each ``grace`` command does, one function each, above every stage and below the API and CLI.

A workflow is the one place that drives several stages in order (read the KB and
gold once, call the models, score, write the reports); the stages below import
only what comes before them in the data flow (``tests/source_tree/test_layers.py``). The
Python API (``import grace``) re-exports these functions; a command line parses
its options, makes one call here and prints the result.

* :mod:`harness.workflows.kb`: ``grace kb`` (build, index, search, lint, evaluate retrieval)
* :mod:`harness.workflows.run`: ``grace run`` (:func:`~harness.workflows.run.run`, the run session)
* :mod:`harness.workflows.score`: ``grace score``, ``grace report``
* :mod:`harness.workflows.gate`: ``grace gate``
* :mod:`harness.workflows.compare`: ``grace compare``
* :mod:`harness.workflows.board`: ``grace report RUN_A RUN_B ...`` (one leaderboard across runs)
* :mod:`harness.workflows.view`: ``grace view``, ``grace view --export``
* :mod:`harness.workflows.spotcheck`: ``grace spotcheck`` (run, calibrate, meta-eval)
* :mod:`harness.workflows.annotate`: ``grace annotations`` (audit, suggest, validate, stats, agree)
* :mod:`harness.workflows.gold`: ``grace gold generate``
* :mod:`harness.workflows.curate_app`: ``grace kb curate`` (the curation web app, proposals for lint findings)
* :mod:`harness.workflows.kb_edits`: ``grace kb edit`` (one curation action on a KB, or the list of them)
* :mod:`harness.workflows.calls`: :class:`~harness.workflows.calls.ModelCalls`, the one model-call config
* :mod:`harness.workflows.results`: the typed results (a run folder read, its leaderboard)

Each module's ``__all__`` is its part of the Python API: the package ``grace`` imports every one of those names
by name (``tests/grace/test_grace_package.py`` names a new one missing there, with the line to add).
"""
