"""How many failures in a row stop an endpoint: a model in the engine, or one replica of a model.

One pair of numbers for both, so a replica is dropped exactly when a model on its own would have been stopped
(``harness.runner.engine`` for the model, ``harness.providers.replicas`` for a replica); they live with the
providers because the replicas sit below the engine in grace's layers.
"""

from __future__ import annotations

# connection failures in a row (no success between) that stop a model; for one replica of a model, its failed calls
# in a row (connection failures, and replies that are no answer: a 5xx, a body that is not the API's) while another
# replica answers
BREAKER_AFTER = 8
# Timeouts in a row (no success between), from at least two calls, of calls sent one at a time or before the
# model's first answer, that stop a model: the server accepts and does not answer. Two calls, so that one prompt
# too long to answer within the timeout fails alone instead of stopping the model.
TIMEOUT_BREAKER_AFTER = 3
