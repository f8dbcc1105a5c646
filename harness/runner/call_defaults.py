"""How many calls grace makes at once and how often it tries one, unless told otherwise: one place for every caller.

``grace run`` (:class:`harness.runner.config.RunConfig`), the engine
(:class:`harness.runner.engine.EngineSettings`) and the workflows that call a
judge, a labeler or a generator (:class:`harness.workflows.calls.ModelCalls`)
all start from these; the flags show them as their defaults. A module of its
own, with no imports, so a command's ``--help`` reads them without loading the
engine.
"""

CONCURRENCY = 8  # calls in flight per model: what a paid API's default rate limits take without 429 storms
MAX_ATTEMPTS = 6  # tries per call: 429s and 5xx are retried with backoff, the sixth failure is an error row
