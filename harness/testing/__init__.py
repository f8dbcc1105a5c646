"""Test helpers shipped with grace, for its own tests, the perf benchmark and users' offline tests."""

from harness.testing.api_formats import generate_questions, label_by_overlap
from harness.testing.fake_api import FakeAPIServer, RecordedRequest, Reply, cite_first_id, prompt_text

__all__ = ["FakeAPIServer", "RecordedRequest", "Reply", "cite_first_id", "generate_questions", "label_by_overlap",
           "prompt_text"]
