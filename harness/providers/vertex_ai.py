"""Gemini on Vertex AI, through ``google-genai`` with ``vertexai=True``.

Requests and responses are the Gemini API's, so everything but the client comes
from :class:`~harness.providers.google_genai.GoogleProvider` (parameters, JSON
mode, errors, usage). What differs is where calls go and how they are authorised:

* Project and location: ``options.project`` / ``options.location`` in the
  leaderboard TOML, else ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``.
  The location defaults to ``global``, as in the SDK (current Gemini models are
  served there). A missing project fails before any call: the SDK would fall
  back on the credentials' own project, billing whichever one that happens to
  be. Both are passed explicitly, which also keeps a ``GOOGLE_API_KEY`` in the
  environment from switching the SDK to Vertex AI express mode.
* Credentials: application default credentials (``gcloud auth
  application-default login``, ``GOOGLE_APPLICATION_CREDENTIALS``, or the
  attached service account), loaded by ``check_ready`` so a machine with no
  login fails before any call rather than on the first. An OAuth access token
  (``gcloud auth print-access-token``; it lives an hour) in the variable named
  by ``api_key_env``, or in ``GOOGLE_OAUTH_ACCESS_TOKEN``, is used instead; that
  is also how tests point the real SDK at a local fake server.
* Endpoint: ``spec.base_url``, else the SDK reads ``GOOGLE_VERTEX_BASE_URL``
  itself, else the location's. The path is always
  ``/{version}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent``.
"""

from __future__ import annotations

import os
from typing import Any

from harness.core.errors import GraceError
from harness.providers.base import Completion, ModelSpec, ProviderError, Request, require_sdk
from harness.providers.google_genai import GoogleProvider

TOKEN_ENVS = ["GOOGLE_OAUTH_ACCESS_TOKEN"]
OPTIONS = ("project", "location")
DEFAULT_LOCATION = "global"
_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


class VertexProvider(GoogleProvider):
    provider_name = "vertex"
    key_envs = ["GOOGLE_APPLICATION_CREDENTIALS", *TOKEN_ENVS]  # application default credentials, or a token
    batch_api = None  # Vertex AI batch prediction reads and writes Cloud Storage or BigQuery, not inline requests
    base_url_env = "GOOGLE_VERTEX_BASE_URL"

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self._credentials: Any = None

    def _project(self) -> str | None:
        return self.spec.options.get("project") or os.environ.get("GOOGLE_CLOUD_PROJECT") or None

    def _location(self) -> str:
        return self.spec.options.get("location") or os.environ.get("GOOGLE_CLOUD_LOCATION") or DEFAULT_LOCATION

    def check_ready(self) -> None:
        require_sdk("google.genai", "google-genai", self.provider_name)
        name = self.spec.name
        unknown = sorted(set(self.spec.options) - set(OPTIONS))
        if unknown:
            raise GraceError(f"{name}: unknown option(s) {', '.join(unknown)}; vertex takes {', '.join(OPTIONS)}")
        if not self._project():
            raise GraceError(f"{name}: no Google Cloud project; set GOOGLE_CLOUD_PROJECT "
                             "(or options.project in the leaderboard config)")
        if self._credentials is None:
            self._credentials = self._load_credentials()

    def _load_credentials(self) -> Any:
        token = self.spec.resolve_key(TOKEN_ENVS)
        if token:
            oauth2 = require_sdk("google.oauth2.credentials", "google-auth", self.provider_name)
            return oauth2.Credentials(token=token)  # no refresh token: used as is until it expires
        if self.spec.api_key_env:
            raise GraceError(f"{self.spec.name}: {self.spec.api_key_env} is not set (it should hold an access token)")
        auth = require_sdk("google.auth", "google-auth", self.provider_name)
        exceptions = require_sdk("google.auth.exceptions", "google-auth", self.provider_name)
        try:
            credentials, _ = auth.default(scopes=_SCOPES)
        except exceptions.DefaultCredentialsError as exc:
            raise GraceError(
                f"{self.spec.name}: no Google Cloud credentials ({exc}); run `gcloud auth application-default login`, "
                "or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file"
            ) from None
        return credentials

    def _new_client(self, genai: Any, http_options: Any) -> Any:
        return genai.Client(vertexai=True, project=self._project(), location=self._location(),
                            credentials=self._credentials, http_options=http_options)

    async def complete(self, request: Request) -> Completion:
        exceptions = require_sdk("google.auth.exceptions", "google-auth", self.provider_name)
        try:
            return await super().complete(request)
        except exceptions.RefreshError as exc:
            # the SDK refreshes the access token before a call: a revoked or expired login is not a call's error
            # to retry but the model's, to stop (a network failure while refreshing is a TransportError instead)
            message = f"Google Cloud credentials could not be refreshed: {exc}"
            raise ProviderError("auth", message, retryable=False) from exc
