"""Your own system under test: the types a ``python:`` system's function takes and returns.

``grace run --model python:my_rag.py:answer`` calls ``answer(request)`` once per
question (and repeat) through the same engine as every model: concurrency, the
cache, resuming, error rows. The function takes a :class:`SystemRequest` and
returns the answer text or a :class:`SystemAnswer`::

    from grace import SystemAnswer, SystemRequest

    def answer(request: SystemRequest) -> SystemAnswer:
        hits = my_retriever(request.question, k=request.k)
        text = my_llm(request.question, hits)
        return SystemAnswer(answer=text, citations=[hits[0].id], retrieved=[h.id for h in hits])

The types live with the provider (:mod:`harness.providers.python_system`); this
module makes them part of the Python API (``grace.SystemRequest``).
"""

from __future__ import annotations

from harness.providers.python_system import SystemAnswer, SystemRequest

__all__ = ["SystemAnswer", "SystemRequest"]
