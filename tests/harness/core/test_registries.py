"""The shared rules behind grace's extension points: one reading of ``PROVIDER:MODEL``, one resolver of the
``"module:attr"`` tables, one mapping of the openai and anthropic SDKs' exceptions.

Each was spelled in several places before (a model name split four ways, the resolver six times, the SDK mapping
twice); these tests hold every table and every reader to the one rule, so an entry that does not import, or a
reader that splits a name its own way, fails here rather than at a user's first ``--model``.
"""

from __future__ import annotations

import ast
import sys

import pytest

from harness.core.errors import GraceError
from harness.core.model_names import split_model
from harness.core.registry import resolve, split_target
from tests.conftest import ROOT

# -- one reading of a model name --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "provider", "model", "complete"), [
    ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", True),
    ("ollama:llama3.1:8b", "ollama", "llama3.1:8b", True),  # a model's own colons stay in the model
    ("openai", "openai", "", False),
    ("openai:", "openai", "", False),
    (":gpt-4o-mini", "", "gpt-4o-mini", False),
])
def test_a_model_name_splits_at_its_first_colon(text, provider, model, complete):
    name = split_model(text)
    assert (name.provider, name.model, name.complete) == (provider, model, complete)


def test_every_reader_of_a_model_name_reads_it_the_same_way():
    from harness.exports.tracking import model_params
    from harness.providers import parse_model_spec
    from harness.runner.rerank import CrossEncoderReranker, make_reranker
    from kb_builder.topics import parse_splitter

    spec = parse_model_spec(" ollama:llama3.1:8b ")
    assert (spec.provider, spec.model) == ("ollama", "llama3.1:8b")
    assert model_params("ollama:llama3.1:8b", None) == {"model": "ollama:llama3.1:8b", "provider": "ollama",
                                                         "provider_model": "llama3.1:8b"}
    assert model_params("gpt-4o", None) == {"model": "gpt-4o", "provider": None, "provider_model": "gpt-4o"}
    assert parse_splitter("llm:ollama:llama3.1:8b") == "llm:ollama:llama3.1:8b"
    for half in ("llm:openai", "llm:openai:", "llm::gpt-4o-mini"):
        with pytest.raises(GraceError, match="llm:PROVIDER:MODEL"):
            parse_splitter(half)
    for half in ("openai", "openai:", ":gpt-4o-mini"):
        with pytest.raises(GraceError, match="expected PROVIDER:MODEL"):
            parse_model_spec(half)
    reranker = make_reranker("cross-encoder:org/model:v2")
    assert isinstance(reranker, CrossEncoderReranker) and reranker.model == "org/model:v2"


# -- one resolver of "module:attr" ------------------------------------------------------------------------------


def test_every_registry_entry_resolves_to_what_its_table_promises():
    from harness.cli.app import COMMANDS
    from harness.exports import TARGETS
    from harness.providers import PROVIDERS
    from harness.providers.base import Provider
    from harness.providers.batch import BatchAPI
    from harness.spotcheck.judge_prompt import OFFLINE_JUDGES

    for target in PROVIDERS.values():
        cls = resolve(target)
        assert isinstance(cls, type) and issubclass(cls, Provider), target
        if cls.batch_api:
            batch = resolve(cls.batch_api)
            assert isinstance(batch, type) and issubclass(batch, BatchAPI), cls.batch_api
    for target in OFFLINE_JUDGES.values():
        assert issubclass(resolve(target), Provider), target
    for target in TARGETS.values():
        assert callable(resolve(target)), target
    for target, _help in COMMANDS.values():
        assert callable(resolve(target)), target
    assert len(PROVIDERS) > 10 and len(TARGETS) >= 4 and len(COMMANDS) > 10


def test_no_module_resolves_a_module_attr_string_by_hand():
    """A function that splits at ``":"`` and imports what it split is the registry idiom written again."""
    found = []
    for path in sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "kb_builder").rglob("*.py")]):
        if path.relative_to(ROOT).as_posix() == "harness/core/registry.py":
            continue
        for func in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
            splits = any(c.func.attr in ("partition", "split") and c.args and isinstance(c.args[0], ast.Constant)
                         and c.args[0].value == ":" for c in calls)
            if splits and any(c.func.attr == "import_module" for c in calls):
                found.append(f"{path.relative_to(ROOT)}:{func.lineno} {func.name}")
    assert not found, f"resolve 'module:attr' with harness.core.registry.resolve: {found}"


def test_resolve_reads_a_dotted_attribute_and_a_bare_module():
    assert resolve(" harness.core.registry : resolve ") is resolve
    assert resolve("harness.core.errors:GraceError.exit_code") == 2
    assert resolve("harness.core.registry") is sys.modules["harness.core.registry"]
    assert split_target("a.b:C.d") == ("a.b", "C.d") and split_target("a.b") == ("a.b", "")


def test_a_missing_module_is_the_install_hint_when_one_is_given(monkeypatch):
    monkeypatch.setitem(sys.modules, "grace_test_extra", None)  # `import grace_test_extra` raises ImportError
    hint = "the demo target needs grace_test_extra: pip install 'grace-eval[demo]'"
    with pytest.raises(GraceError) as caught:
        resolve("grace_test_extra:thing", missing=hint)
    assert str(caught.value) == hint and caught.value.__cause__ is None
    with pytest.raises(ImportError):  # no hint: an entry of grace's own tables that does not import is a bug
        resolve("grace_test_extra:thing")


def test_an_unknown_export_target_lists_the_known_ones():
    from harness.exports import target_function

    with pytest.raises(GraceError, match=r"unknown export target 'mlfow'; known: inspect, mlflow, wandb, parquet"):
        target_function("mlfow")


# -- one mapping of the openai and anthropic SDKs' exceptions ----------------------------------------------------


@pytest.mark.parametrize("sdk_name", ["openai", "anthropic"])
def test_both_stainless_sdks_map_their_failures_alike(sdk_name):
    """The same exception classes of the two SDKs, built as the SDKs build them, classified by the one mapping."""
    import httpx

    from harness.core import secrets
    from harness.providers.base import ProviderError
    from harness.providers.http_errors import stainless_errors

    sdk = pytest.importorskip(sdk_name)
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/x")
    secret = "sk-" + "planted0123456789abcdef"
    secrets.remember(secret)

    def raised(exc: BaseException) -> ProviderError:
        with pytest.raises(ProviderError) as caught, stainless_errors(sdk, 12.5):
            raise exc
        assert caught.value.__cause__ is exc
        return caught.value

    reply = httpx.Response(429, headers={"retry-after": "7"}, request=request,
                           json={"error": {"message": f"slow down {secret}"}})
    limited = raised(sdk.RateLimitError(f"slow down {secret}", response=reply, body={"error": {"message": "x"}}))
    assert (limited.kind, limited.retryable, limited.retry_after, limited.status) == ("rate_limit", True, 7.0, 429)
    assert secret not in limited.message  # the server's words are masked, as every ProviderError's are
    timeout = raised(sdk.APITimeoutError(request=request))
    assert (timeout.kind, timeout.message, timeout.retryable) == ("timeout", "request timed out after 12.5s", True)
    refused = raised(sdk.APIConnectionError(request=request))
    assert (refused.kind, refused.retryable) == ("connection", True)
    assert refused.message.startswith("connection to ") and " failed: " in refused.message
    unread = raised(sdk.APIResponseValidationError(reply, None, message="not a completion"))
    assert (unread.kind, unread.retryable) == ("bad_response", True)
    below = raised(httpx.ReadTimeout("read timed out", request=request))  # raised under the SDK: the transport's
    assert (below.kind, below.retryable) == ("timeout", True)
    own = ProviderError("auth", "bad key", retryable=False)
    with pytest.raises(ProviderError) as caught, stainless_errors(sdk, 12.5):
        raise own
    assert caught.value is own  # a ProviderError raised inside goes up as it is
    with pytest.raises(KeyError), stainless_errors(sdk, 12.5):  # a bug keeps its own exception and traceback
        raise KeyError("x")
