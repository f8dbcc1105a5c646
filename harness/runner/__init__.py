"""The runner: every (model, question, repeat) call, concurrent, cached, retried, resumable."""
