"""Azure OpenAI: ``azure:DEPLOYMENT``, through the openai SDK's ``AsyncAzureOpenAI``.

Azure serves the OpenAI Chat Completions format at a per-resource endpoint
(``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``),
so this is the OpenAI provider with Azure's client: requests, responses, the
JSON-mode fallback and error mapping are inherited unchanged. The model part of
the spec is the deployment name, which the SDK puts in the path.

Settings, each as Azure documents it, the model's own first:

- endpoint: ``base_url``, else ``AZURE_OPENAI_ENDPOINT`` (``https://RESOURCE.openai.azure.com``);
- API version: ``options.api_version``, else ``OPENAI_API_VERSION``, else the
  latest dated GA inference version (:data:`DEFAULT_API_VERSION`);
- credentials: a key (``api_key_env``, else ``AZURE_OPENAI_API_KEY``, sent as
  the ``api-key`` header), else a Microsoft Entra ID bearer token
  (``AZURE_OPENAI_AD_TOKEN``), else, when ``azure-identity`` is installed,
  ``DefaultAzureCredential`` (az login, managed identity, workload identity),
  whose tokens the SDK refreshes.

The output limit is sent as ``max_completion_tokens``, as on api.openai.com:
Azure deploys the same models, and reasoning deployments (o-series, gpt-5)
reject ``max_tokens``. API versions older than 2024-09-01 do not know that
name, so they keep ``max_tokens``.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from harness.core.errors import GraceError
from harness.providers.base import ModelSpec, missing_key
from harness.providers.openai_chat import OpenAIChatProvider

KEY_ENVS = ["AZURE_OPENAI_API_KEY"]
TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"
VERSION_ENV = "OPENAI_API_VERSION"
DEFAULT_API_VERSION = "2024-10-21"  # the latest dated GA data-plane inference version
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
_MAX_COMPLETION_TOKENS_SINCE = "2024-09-01"  # 2024-09-01-preview added it, for o1


class AzureOpenAIProvider(OpenAIChatProvider):
    provider_name = "azure"
    batch_api = "harness.providers.openai_batch:AzureOpenAIBatch"  # needs a Global-Batch deployment
    base_url_env = "AZURE_OPENAI_ENDPOINT"
    key_envs = KEY_ENVS
    # OpenAI's own API: a schema beside json_object (llama.cpp's form) means nothing to it, so never worth a call
    json_fallback = ("json_schema", "json_object", "prompt")

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._auth: dict[str, Any] | None = None

    def api_version(self) -> str:
        return str(self.spec.options.get("api_version") or os.environ.get(VERSION_ENV) or DEFAULT_API_VERSION)

    def _credentials(self) -> dict[str, Any]:
        """One of the three ways ``AsyncAzureOpenAI`` authenticates, in the order Azure's docs list them."""
        if self._auth is not None:
            return self._auth
        key = self._api_key()
        if key:
            self._auth = {"api_key": key}
        elif self.spec.api_key_env:  # the config named a variable: a token found elsewhere would hide the mistake
            raise missing_key(self.spec.name, self._key_envs())
        elif os.environ.get(TOKEN_ENV):
            self._auth = {"azure_ad_token": os.environ[TOKEN_ENV]}
        else:
            try:
                identity = importlib.import_module("azure.identity")
            except ImportError:
                raise GraceError(
                    f"{self.spec.name}: no Azure credentials; set {KEY_ENVS[0]} or {TOKEN_ENV} (or api_key_env in the "
                    "leaderboard config), or pip install azure-identity to sign in with Entra ID"
                ) from None
            provider = identity.get_bearer_token_provider(identity.DefaultAzureCredential(), ENTRA_SCOPE)
            self._auth = {"azure_ad_token_provider": provider}
        return self._auth

    def _check_credentials(self) -> None:
        if not type(self).endpoint(self.spec):
            raise GraceError(f"{self.spec.name}: no Azure endpoint; set {self.base_url_env} "
                             "(https://RESOURCE.openai.azure.com) or base_url in the leaderboard config")
        if not isinstance(self.spec.options.get("api_version", ""), str):
            raise GraceError(f"{self.spec.name}: options.api_version must be a string such as \"{DEFAULT_API_VERSION}\"")
        self._credentials()

    def _new_client(self, openai: Any, common: dict[str, Any]) -> Any:
        return openai.AsyncAzureOpenAI(azure_endpoint=type(self).endpoint(self.spec), api_version=self.api_version(),
                                       **self._credentials(), **common)

    def _uses_max_completion_tokens(self) -> bool:
        version = self.api_version()
        return not (re.match(r"\d{4}-\d{2}-\d{2}", version) and version[:10] < _MAX_COMPLETION_TOKENS_SINCE)

    async def parallel_slots(self) -> int | None:
        return None  # a hosted service: nothing to probe
