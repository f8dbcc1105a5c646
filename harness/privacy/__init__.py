"""Personal data kept from the models grace calls (``--redact-pii``).

When an eval set holds user data, guidance for grounded-QA evaluation asks to
redact it before it reaches a judge; grace applies that to every model it calls
for a command (the answering models of ``grace run`` and its reranker, the
spot-check judge, the labeler, the question generator). Modules:
:mod:`.detectors` (patterns with checksums, read on the text folded by :mod:`.folding`; phone numbers in
:mod:`.phones`, national IDs in :mod:`.national_ids`, check digits in :mod:`.checks`), :mod:`.names`
(person names through Presidio, the optional extra ``grace-eval[pii]``, asked only about the capitalised runs that
:mod:`.name_runs` reads as a possible name),
:mod:`.own_text` (grace's own template lines, never redacted) and :mod:`.redactor` (one call's request redacted
with consistent placeholders, the way back, the counts).
"""

from harness.privacy.redactor import RedactionRecord, Redactor, make_redactor, restore

__all__ = ["RedactionRecord", "Redactor", "make_redactor", "restore"]
