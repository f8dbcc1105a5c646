"""A team's app called as each person calls it through their own link: every call carries the key of the person it
names (``who``), as the page opened with ``?who=NAME&cred=KEY`` does; a name with no key goes without one."""

from __future__ import annotations

from typing import Any


class AsPeople:
    def __init__(self, app: Any, keys: dict[str, str]):
        self.app, self.keys = app, dict(keys)

    def get(self, path: str, query: dict[str, list[str]]) -> Any:
        who = (query.get("who") or [""])[0]
        if who in self.keys and "cred" not in query:
            query = {**query, "cred": [self.keys[who]]}
        return self.app.get(path, query)

    def post(self, path: str, body: Any, key: str | None = None) -> Any:
        who = body.get("who") if isinstance(body, dict) else None
        return self.app.post(path, body, key or self.keys.get(who or ""))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)
