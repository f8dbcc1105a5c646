"""A judge on llama-cpp-python's server: its JSON schema has to travel as ``{"type": "json_object", "schema": ...}``.

Measured with SmolLM2-135M-Instruct through llama-cpp-python 0.3.36 (``grace spotcheck meta-eval --judge
llamacpp:smollm2``): the server rejects ``response_format`` ``json_schema``, grace fell back to a bare
``json_object``, and the grammar that builds only forces *some* JSON object. 43 of 46 verdicts came back
unreadable, even asked again: ``{"explanation": "The claim is not supported by the source."}`` and the like, with
no ``"supported"`` key (tests/data/smollm2_judge_replies_json_object.json holds some of them verbatim). The same
server takes the schema beside ``json_object`` and compiles it into a grammar, and then every reply has the keys.

The fake server below answers the way that server does: with a schema, a reply that follows it; without one,
the tiny model's real replies.
"""

from __future__ import annotations

import json
import re

import pytest

from harness.providers.base import ModelSpec, Request
from harness.providers.openai_chat import OpenAIChatProvider
from harness.spotcheck.claims import VERIFY_SCHEMA, load_claims_template
from harness.spotcheck.judge_calls import Judge, JudgeSettings
from harness.spotcheck.judge_prompt import JUDGE_SCHEMA, load_judge_template, parse_verdict
from harness.spotcheck.meta_eval import load_cases, run_meta_eval
from harness.testing import FakeAPIServer, Reply, prompt_text
from harness.testing.fake_api import LocalServer
from tests.conftest import ROOT

REAL = json.loads((ROOT / "tests" / "data" / "smollm2_judge_replies_json_object.json").read_text())["replies"]
CASES = ("num-01", "ent-05", "para-01")  # two unsupported, one supported


def cases():
    return [c for c in load_cases() if c.id in CASES]


def checked(body: dict) -> str:
    """The segment or claim the judge is asked about."""
    m = re.search(r"<segment>\n(.*?)\n</segment>", prompt_text(body), re.S) or re.search(
        r"<claims>\n\[1\] (.*?)\n</claims>", prompt_text(body), re.S)
    return m.group(1)


def right(body: dict) -> bool:
    """The right verdict for the three cases: only para-01's segment is supported."""
    return checked(body) in {c.segment for c in cases() if c.expected_supported}


def grammar_server(body: dict) -> str:
    """llama-cpp-python: a schema sent beside json_object constrains the reply; without one, any JSON object."""
    fmt = body.get("response_format") or {}
    schema = fmt.get("schema")
    if schema is None:  # what SmolLM2 wrote under the bare json_object grammar
        return REAL[sorted(REAL)[sum(map(ord, checked(body))) % len(REAL)]]
    if schema["title"] == "claim_verdicts":
        return json.dumps({"verdicts": [{"claim": 1, "explanation": "x", "evidence": "",
                                         "verdict": "supported" if right(body) else "unsupported"}]})
    return json.dumps({"explanation": "x", "supported": right(body)})


def judge(srv: FakeAPIServer, template=None, **options) -> Judge:
    spec = ModelSpec("openai", "smollm2", base_url=srv.openai_base_url, api_key="k", options=options)
    return Judge(spec, OpenAIChatProvider(spec), template or load_judge_template())


@pytest.mark.parametrize("case_id", sorted(REAL))
def test_the_tiny_models_real_replies_hold_no_verdict_and_none_is_guessed(case_id):
    # JSON, but without the key asked for: reading "not supported" out of prose would be a guess (num-01's says both)
    assert parse_verdict(REAL[case_id]).supported is None


def test_the_problem_a_bare_json_object_leaves_the_tiny_models_verdicts_unreadable():
    with FakeAPIServer(responder=grammar_server, local=LocalServer()) as srv:
        result = run_meta_eval(judge(srv, json_mode="json_object"), cases(), JudgeSettings(max_attempts=1))
    assert result["unreadable"] == 3 and result["passed"] == 0
    assert {json.dumps(r.body["response_format"]) for r in srv.requests} == {'{"type": "json_object"}'}


def test_auto_mode_sends_the_schema_beside_json_object_and_every_verdict_is_read():
    with FakeAPIServer(responder=grammar_server, local=LocalServer()) as srv:
        made = judge(srv)
        result = run_meta_eval(made, cases(), JudgeSettings(max_attempts=1))
    assert srv.rejected == 1  # json_schema, once for the endpoint
    assert [r.body["response_format"]["type"] for r in srv.requests] == ["json_schema"] + ["json_object"] * 3
    assert all(r.body["response_format"]["schema"] == JUDGE_SCHEMA for r in srv.requests[1:])
    assert result["unreadable"] == 0 and result["retried"] == 0 and result["passed"] == 3
    assert made.provider.learned()["json_mode"] == "json_object_schema"


def test_claims_mode_sends_the_verdicts_schema_the_same_way():
    with FakeAPIServer(responder=grammar_server, local=LocalServer()) as srv:
        result = run_meta_eval(judge(srv, load_claims_template()), cases(), JudgeSettings(max_attempts=1))
    assert result["mode"] == "claims" and result["unreadable"] == 0 and result["passed"] == 3
    assert all(r.body["response_format"] == {"type": "json_object", "schema": VERIFY_SCHEMA} for r in srv.requests[1:])


def test_a_server_that_refuses_the_schema_key_gets_a_bare_json_object():
    def strict_server(body):
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema" or "schema" in fmt:
            return Reply.error(400, "Unrecognized request argument supplied: response_format." +
                               ("json_schema" if fmt.get("type") == "json_schema" else "schema"))
        return json.dumps({"explanation": "x", "supported": right(body)})

    with FakeAPIServer(responder=strict_server) as srv:
        made = judge(srv)
        result = run_meta_eval(made, cases(), JudgeSettings(max_attempts=1))
    assert [json.dumps(r.body["response_format"])[:40] for r in srv.requests[:3]] == [
        '{"type": "json_schema", "json_schema": {', '{"type": "json_object", "schema": {"titl', '{"type": "json_object"}']
    assert result["passed"] == 3 and result["calls"]["errors"] == 0
    learned = made.provider.learned()
    assert learned["json_mode"] == "json_object" and "json_schema and json_object_schema" in learned["json_mode_reason"]


def test_json_object_schema_without_a_schema_is_a_bare_json_object_and_can_be_forced():
    spec = ModelSpec("openai", "smollm2", base_url="http://127.0.0.1:9/v1", api_key="k",
                     options={"json_mode": "json_object_schema"})
    provider = OpenAIChatProvider(spec)
    provider.check_ready()  # a known mode
    ask = [{"role": "user", "content": "hi"}]
    assert provider.build_kwargs(Request(ask, output_mode="json"))["response_format"] == {"type": "json_object"}
    assert provider.build_kwargs(Request(ask, output_mode="json", json_schema=JUDGE_SCHEMA))["response_format"] == {
        "type": "json_object", "schema": JUDGE_SCHEMA}


def test_the_meta_eval_gives_kappa_against_the_expected_verdicts_over_the_readable_ones():
    with FakeAPIServer(responder=grammar_server, local=LocalServer()) as srv:
        right_judge = run_meta_eval(judge(srv), cases(), JudgeSettings(max_attempts=1))
    assert (right_judge["kappa"], right_judge["kappa_n"]) == (1.0, 3)
    with FakeAPIServer(responder=lambda body: json.dumps({"explanation": "x", "supported": True})) as srv:
        yes_judge = run_meta_eval(judge(srv), cases(), JudgeSettings(max_attempts=1))
    # passes the supported case, catches nothing: no agreement beyond chance
    assert (yes_judge["passed"], yes_judge["kappa"], yes_judge["kappa_n"]) == (1, 0.0, 3)
    with FakeAPIServer(responder=grammar_server, local=LocalServer()) as srv:
        unread = run_meta_eval(judge(srv, json_mode="json_object"), cases(), JudgeSettings(max_attempts=1))
    assert (unread["kappa"], unread["kappa_n"]) == (None, 0)


def test_a_grade_outside_1_to_5_is_unreadable_and_the_schema_now_rules_it_out():
    from harness.spotcheck.quality import SCHEMA, load_quality_template, parse_grades

    real = json.loads((ROOT / "tests" / "data" / "smollm2_judge_replies_json_object.json").read_text())
    assert parse_grades(real["quality_reply"]) is None  # "faithfulness": 49: not guessed into a 5
    for key in ("relevancy", "completeness", "faithfulness"):
        assert SCHEMA["properties"][key] == {"anyOf": [{"type": "integer", "enum": [1, 2, 3, 4, 5]}, {"type": "null"}]}
    # a grammar built from the schema writes the keys in its order: the prompt's, each justification before its grade
    prompt = load_quality_template().sections["system"]
    assert list(SCHEMA["properties"]) == SCHEMA["required"] == re.findall(r'"(\w+)":', prompt)
