"""The model options of ``grace run`` on every one-model caller: the judge, the labeler, the question generator.

One function (:func:`harness.runner.model_options.ready_model`) applies them; these tests check it directly and
through each command, against the real SDK and the local fake server.
"""

from __future__ import annotations

import json

import pytest

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec
from harness.runner.model_options import ModelOptions, apply_model_options, ready_model
from harness.spotcheck.judge_prompt import DEFAULT_MAX_TOKENS, make_judge
from harness.testing import generate_questions, label_by_overlap, prompt_text
from tests.annotations.test_labeler import ARTICLES, QUESTIONS
from tests.conftest import run_grace, write


def test_options_are_written_into_the_spec_and_none_keeps_what_is_there():
    spec = ModelSpec("openai", "m", params={"temperature": 0.3, "max_tokens": 50}, options={"json_mode": "prompt"},
                     timeout_s=9.0, base_url="http://a/v1", api_key_env="A")
    assert apply_model_options(spec, ModelOptions()) is spec
    assert (spec.params, spec.options, spec.timeout_s, spec.base_url, spec.api_key_env) == (
        {"temperature": 0.3, "max_tokens": 50}, {"json_mode": "prompt"}, 9.0, "http://a/v1", "A")
    apply_model_options(spec, ModelOptions(max_tokens=200, json_mode="json_object", timeout=30, base_url="http://b/v1",
                                           api_key_env="B"))
    assert (spec.params["max_tokens"], spec.options["json_mode"], spec.timeout_s, spec.base_url, spec.api_key_env) == (
        200, "json_object", 30.0, "http://b/v1", "B")
    assert spec.params["temperature"] == 0.3
    for bad, message in ((ModelOptions(max_tokens=0), "--max-tokens"), (ModelOptions(timeout=0), "--timeout")):
        with pytest.raises(GraceError, match=message):
            apply_model_options(ModelSpec("openai", "m"), bad)
    assert ModelOptions(max_tokens=5).with_default_max_tokens(1024).max_tokens == 5
    assert ModelOptions().with_default_max_tokens(1024).max_tokens == 1024
    assert ModelOptions().with_default_max_tokens(None).max_tokens is None
    assert ModelOptions(timeout=2).with_default_timeout(5).timeout == 2  # the older timeout= argument never overrides
    assert ModelOptions().with_default_timeout(5).timeout == 5.0
    assert ModelOptions().with_default_timeout(None).timeout is None


def test_call_settings_are_checked_in_one_place_for_python_callers_and_commands():
    from harness.runner.model_options import call_settings
    from harness.workflows.calls import ModelCalls

    settings = call_settings(3, 2, False)
    assert (settings.concurrency, settings.max_attempts, settings.read_cache) == (3, 2, False)
    for bad in (lambda: call_settings(0, 1, True), lambda: ModelCalls(max_attempts=0).check(),
                lambda: ModelCalls(concurrency=0).settings()):
        with pytest.raises(GraceError, match="--concurrency and --max-attempts must be 1 or more"):
            bad()


def test_ready_model_applies_options_before_the_providers_own_checks(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LOCAL_KEY", "k")
    spec, _ = ready_model("openai:smollm2", role="judge", options=ModelOptions(api_key_env="LOCAL_KEY", timeout=5,
                                                                              base_url="http://127.0.0.1:8091/v1"))
    assert spec.api_key_env == "LOCAL_KEY" and spec.timeout_s == 5.0 and spec.params == {"temperature": 0}
    # json-mode values are the provider's to judge: openai does not know anthropic's "prefill", anthropic does
    with pytest.raises(GraceError, match="json_mode must be one of"):
        ready_model("openai:m", role="judge", options=ModelOptions(json_mode="prefill", api_key_env="LOCAL_KEY"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    spec, _ = ready_model("anthropic:m", role="judge", options=ModelOptions(json_mode="prefill"))
    assert spec.options == {"json_mode": "prefill"}
    with pytest.raises(GraceError, match="baseline:top1 is not a labeler.*baseline:lexical offline"):
        ready_model("baseline:top1", role="labeler", offline={"lexical": lambda s: None})


def test_the_judge_gets_an_output_limit_by_default():
    spec, _ = make_judge("baseline:lexical")
    assert spec.params == {"max_tokens": DEFAULT_MAX_TOKENS, "temperature": 0} and DEFAULT_MAX_TOKENS == 1024
    spec, _ = make_judge("baseline:lexical", ModelOptions(max_tokens=99))
    assert spec.params["max_tokens"] == 99


@pytest.fixture()
def kb(tmp_path):
    return write(tmp_path / "kb" / "articles.jsonl", "".join(json.dumps(a) + "\n" for a in ARTICLES)).parent


def test_annotations_suggest_labeler_takes_the_model_options(tmp_path, kb, openai_server, monkeypatch):
    openai_server.responder = label_by_overlap
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("LABELER_KEY", "lab-key")
    write(tmp_path / "q.csv", "question_id,question\n" + "".join(f"{q.question_id},{q.question}\n" for q in QUESTIONS))
    code, out = run_grace("annotations", "suggest", tmp_path / "q.csv", "--kb", kb, "--labeler", "openai:labeler-x",
                          "--out", tmp_path / "s.csv", "-k", "3", "--max-tokens", "256", "--json-mode", "json_object",
                          "--timeout", "20", "--base-url", openai_server.openai_base_url, "--api-key-env", "LABELER_KEY")
    assert code == 0, out
    assert len(openai_server.requests) == 3
    for r in openai_server.requests:
        assert r.body["max_tokens"] == 256 and r.body["response_format"] == {"type": "json_object"}
        assert r.headers["authorization"] == "Bearer lab-key"


def test_gold_generate_applies_the_model_options_to_generator_and_labeler(tmp_path, kb, openai_server):
    openai_server.responder = lambda body: (label_by_overlap(body) if '"article_ids"' in prompt_text(body)
                                            else generate_questions(body))
    code, out = run_grace("gold", "generate", kb, "--model", "openai:writer-x", "--per-article", "2", "--out",
                          tmp_path / "draft.csv", "-k", "3", "--max-tokens", "700", "--json-mode", "json_object")
    assert code == 0, out
    bodies = [r.body for r in openai_server.requests]
    assert len(bodies) > len(ARTICLES)  # the writer's calls, then the labeler's
    assert {b["max_tokens"] for b in bodies} == {700}
    assert {json.dumps(b["response_format"]) for b in bodies} == {'{"type": "json_object"}'}
    code, out = run_grace("gold", "generate", "--help")
    assert all(opt in out for opt in ("--max-tokens", "--json-mode", "--timeout", "--base-url", "--api-key-env"))
