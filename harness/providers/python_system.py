"""``python:`` systems: your own RAG pipeline, a Python function, evaluated like any model.

``--model python:my_rag.py:answer`` (a file) or ``python:my_pkg.rag:answer`` (an
importable module), optionally ``@VERSION`` (``python:my_rag.py:answer@v3``). The
function, sync or async, takes one :class:`SystemRequest` and returns the answer
text or a :class:`SystemAnswer` (with structured citations, the IDs the system
retrieved itself, token usage, cost). It runs through the same engine as every
provider: concurrency, retries, progress, the cache, resuming and error rows.

Why the cache key holds the source: a pipeline is code, and an edited pipeline
must be asked again rather than answered from the cache. Without ``@VERSION``
the key (and each row's fingerprint) holds the SHA-256 of the function's source
file, so editing that file re-asks every question on the next run; with
``@VERSION`` the user says when the system changed (the only way to cover code
spread over several files), and the file hash is left out.

The function runs behind grace's boundary around user code
(:mod:`harness.providers.user_code`): in a worker process of its own, started
(and the function imported) before the first call, so a missing function or a
failed import refuses the model before anything is asked. Whatever the function
does (exits, hangs, forks, crashes, mutates what it is shown), grace records an
error row and goes on. A sync function runs in the worker's thread pool, an
async one on its event loop; an exception it raises becomes an error row with the
exception's type and message (a ``ProviderError`` it raises keeps its kind, and an
SDK's HTTP error is classified like grace's own providers' errors).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import GraceError
from harness.prompts import RetrievedArticle
from harness.providers.base import Completion, ModelSpec, Provider, ProviderError, Request, RunContext

__all__ = ["SystemAnswer", "SystemRequest"]


@dataclass(frozen=True)
class SystemRequest:
    """What a ``python:`` system is asked: one gold question, and what grace would show a model for it.

    ``articles`` are grace's retrieved articles for the question (``.id``, ``.title``, ``.text``, ``.score``,
    best first); a system with its own retriever may ignore them and return what it retrieved in
    :attr:`SystemAnswer.retrieved`. ``messages`` are the chat messages grace would send a model (its prompt
    template filled with the question and the articles); ``k`` is the run's ``--k``; ``language`` the KB's
    language (``"en"``, ``"fr"``...); ``repeat`` which repeat of the question this is (``--repeats``, from 0).
    """

    question_id: str
    question: str
    articles: list[RetrievedArticle]
    messages: list[dict[str, str]]
    k: int
    language: str
    repeat: int = 0


@dataclass
class SystemAnswer:
    """What a ``python:`` system may return instead of the bare answer text.

    ``citations``: the article IDs the answer cites, as data (None: grace reads ``[ID: x]`` from the text).
    ``retrieved``: the IDs the system retrieved itself, best first (None: it used ``request.articles``); grace
    then judges unshown citations against them and reports the system's own retrieval recall.
    ``input_tokens``, ``output_tokens``, ``cost_usd``: what the call used and cost, when known (a cost given here
    is recorded as is; otherwise the model's prices, if any, price the tokens).
    """

    answer: str
    citations: list[str] | None = None
    retrieved: list[str] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # not recorded; room for a pipeline's own notes


@dataclass(frozen=True)
class Target:
    """Where a ``python:`` model's function lives, parsed from ``PATH_OR_MODULE:FUNCTION[@VERSION]``."""

    source: str  # the file path or module name as given
    function: str
    version: str | None
    path: Path | None  # the file, for a file target; None for a module

    @property
    def label(self) -> str:
        return f"{self.source}:{self.function}"


@functools.lru_cache(maxsize=256)  # every call's cache key asks
def parse_target(model: str) -> Target:
    """``my_rag.py:answer@v3`` -> the file, the function and the version; a GraceError says the form."""
    text, version = model.strip(), None
    head, sep, tail = text.rpartition(":")
    if "@" in tail:
        tail, _, version = tail.partition("@")
        version = version.strip() or None
        if version is None:
            raise GraceError(f"python:{model}: nothing after '@'; give a version (python:{head}:{tail}@v2) or leave "
                             "'@' out (the source file's hash is then the version)")
    source, function = head.strip(), tail.strip()
    if not sep or not source or not function:
        raise GraceError(f"python:{model}: expected python:FILE.py:FUNCTION or python:package.module:FUNCTION "
                         "(e.g. python:my_rag.py:answer, optionally @VERSION)")
    if not function.isidentifier():
        raise GraceError(f"python:{model}: {function!r} is not a Python function name")
    is_file = source.endswith(".py") or "/" in source or os.sep in source
    return Target(source, function, version, Path(source).expanduser() if is_file else None)


def _find_spec(name: str):
    """The module's spec as the import system would find it, without running any of it: its parent packages'
    ``__init__`` is user code too, and runs only in the worker (``importlib.util.find_spec`` imports them)."""
    path, spec = None, None
    parts = name.split(".")
    for i in range(len(parts)):
        prefix = ".".join(parts[:i + 1])
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(prefix, path)
            if spec is not None:
                break
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and i < len(parts) - 1:
            return None
    return spec


def _module_file(name: str, model: str) -> Path:
    """The source file of an importable module, found without running it or its packages."""
    try:
        found = _find_spec(name)
    except (ImportError, ValueError) as exc:
        found, why = None, f" ({type(exc).__name__}: {exc})"
    else:
        why = ""
    if found is None or not found.origin or not Path(found.origin).is_file():
        raise GraceError(f"python:{model}: no module {name!r} can be imported{why}; give a file path "
                         f"(python:path/to/{name.rsplit('.', 1)[-1]}.py:FUNCTION) or install the package / add its "
                         "folder to PYTHONPATH")
    return Path(found.origin)


def source_file(target: Target, model: str) -> Path:
    if target.path is None:
        return _module_file(target.source, model)
    path = target.path.resolve()
    if not path.is_file():
        where = "is a folder" if path.is_dir() else "not found"
        raise GraceError(f"python:{model}: {target.path} {where} (looked in {Path.cwd()}); give the path of the .py "
                         "file that defines the function, relative to where grace runs")
    return path


_HASHES: dict[tuple[str, int, int], str] = {}


def source_hash(path: Path) -> str:
    """SHA-256 of the file, remembered per (path, size, mtime): every call's cache key asks for it."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    digest = _HASHES.get(key)
    if digest is None:
        digest = _HASHES[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


_FILES: dict[tuple[str, str], Path] = {}


def _identity(model: str) -> str | None:
    """The model's part of every cache key beside its name: None with ``@VERSION`` (the version is in the name),
    else the source file's hash."""
    target = parse_target(model)
    if target.version is not None:
        return None
    at = (model, os.getcwd())  # a relative path means another file from another folder
    path = _FILES.get(at)
    if path is None:
        path = _FILES[at] = source_file(target, model)
    try:
        return f"sha256:{source_hash(path)[:16]}"
    except OSError as exc:
        raise GraceError(f"python:{model}: cannot read {path} ({exc.strerror or exc})") from None


def load_function(target: Target, model: str) -> Callable[[SystemRequest], Any]:
    """Import the file or module and check the function takes one request; every problem is a GraceError."""
    if target.path is not None:
        path = source_file(target, model)
        folder = str(path.parent)
        if folder not in sys.path:  # the pipeline's own modules beside it import as they do when it runs alone
            sys.path.insert(0, folder)
        name = f"grace_system_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise GraceError(f"python:{model}: {path} cannot be loaded as a Python module; name it NAME.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look their module up by name
        runner = lambda: spec.loader.exec_module(module)  # noqa: E731
    else:
        module = None
        runner = lambda: importlib.import_module(target.source)  # noqa: E731
    try:
        loaded = runner()
    except GraceError:
        raise
    except SyntaxError as exc:
        raise GraceError(f"python:{model}: {exc.filename}:{exc.lineno}: syntax error ({exc.msg}); fix the file") from None
    except Exception as exc:  # importing the user's code: anything may go wrong, and it is theirs to fix
        raise GraceError(f"python:{model}: importing {target.source} failed: {type(exc).__name__}: {exc}") from None
    module = module if module is not None else loaded
    fn = getattr(module, target.function, None)
    if fn is None:
        defined = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_"))
        raise GraceError(f"python:{model}: {target.source} has no function {target.function!r}"
                         + (f"; it defines {', '.join(defined[:10])}" if defined else ""))
    if not callable(fn):
        raise GraceError(f"python:{model}: {target.function} in {target.source} is a {type(fn).__name__}, not a "
                         "function")
    check_signature(fn, model)
    return fn


def check_signature(fn: Callable[..., Any], model: str) -> None:
    """The function must take the request as its one positional argument (others need defaults)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return  # a builtin or C callable without a signature: let the first call say
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_one = bool(positional) or any(p.kind == p.VAR_POSITIONAL for p in params)
    fix = "define it as def FUNCTION(request: SystemRequest) -> str | SystemAnswer (from grace import SystemRequest)"
    if not takes_one:
        raise GraceError(f"python:{model}: the function takes no positional argument; {fix}")
    if len(required) > 1:
        names = ", ".join(p.name for p in required)
        raise GraceError(f"python:{model}: the function needs {len(required)} arguments ({names}) but is given one, "
                         f"the request; {fix}")
    if required and required[0].kind == required[0].KEYWORD_ONLY:
        raise GraceError(f"python:{model}: its argument {required[0].name!r} is keyword-only; {fix}")


def to_completion(value: Any, model: str) -> Completion:
    """The function's return value as a Completion; anything else is an error row saying what it returned."""
    who = f"python:{model}"
    if isinstance(value, str):
        return Completion(text=value)
    if isinstance(value, dict):
        try:
            value = SystemAnswer(**value)
        except TypeError as exc:
            raise _bad(who, f"returned a dict that is not a SystemAnswer ({exc})") from None
    if not isinstance(value, SystemAnswer):
        raise _bad(who, f"returned {type(value).__name__}; return the answer text (str) or a SystemAnswer")
    if not isinstance(value.answer, str):
        raise _bad(who, f"SystemAnswer.answer is {type(value.answer).__name__}, not text")
    return Completion(text=value.answer, input_tokens=_count(value.input_tokens, "input_tokens", who),
                      output_tokens=_count(value.output_tokens, "output_tokens", who),
                      citations=ids(value.citations, "citations", who), retrieved=ids(value.retrieved, "retrieved", who),
                      cost_usd=_cost(value.cost_usd, who))


def plain(value: Any, model: str) -> dict[str, Any]:
    """The function's return value, checked, as the plain data that crosses the boundary (a SystemAnswer's
    fields; ``extra`` stays behind)."""
    comp = to_completion(value, model)
    return {"answer": comp.text, "citations": comp.citations, "retrieved": comp.retrieved,
            "input_tokens": comp.input_tokens, "output_tokens": comp.output_tokens, "cost_usd": comp.cost_usd}


def ids(value: Any, what: str, who: str) -> list[str] | None:
    """A list of article IDs (numbers become text; one ID alone is a list of one); None stays None. Also reads
    an http: system's reply."""
    if value is None:
        return None
    if isinstance(value, str | int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list | tuple) or any(isinstance(v, bool) or not isinstance(v, str | int) for v in value):
        raise _bad(who, f"{what} must be a list of article IDs, got {_short(value)}")
    return [str(v).strip() for v in value if str(v).strip()]


MAX_TOKENS = 2**53  # a count beyond any real call, and beyond what a float (scoring's sums) holds exactly


def _count(value: Any, what: str, who: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKENS:
        raise _bad(who, f"{what} must be a whole number >= 0 (and below 2**53), got {_short(value)}")
    return value


def _cost(value: Any, who: str) -> float | None:
    """A finite number >= 0: a NaN or an infinity would be written as a bare NaN / Infinity, which no JSON reader
    takes, and would poison every sum of the report."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (value >= 0 and math.isfinite(value)):
        raise _bad(who, f"cost_usd must be a finite number >= 0, got {_short(value)}")
    return float(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _bad(who: str, what: str) -> ProviderError:
    # the same system returns the same kind of value every time: retrying cannot help
    return ProviderError("bad_response", f"{who} {what}", retryable=False)


def from_exception(exc: Exception) -> ProviderError:
    """A raised exception as an error row: a ProviderError as it is; an SDK's HTTP or transport error classified
    like grace's own providers' (a 429 inside the pipeline is retried); anything else its type and message."""
    from harness.providers import http_errors

    if isinstance(exc, ProviderError):
        return exc
    said = f"{type(exc).__name__}: {exc}"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        err = http_errors.from_status(status, said, headers=headers, body=getattr(exc, "body", None))
        return err
    err = http_errors.from_transport(exc)
    if err is not None:
        err.message = f"{said} ({err.kind})"
        return err
    return ProviderError("other", said, retryable=False)


class PythonSystem(Provider):
    """A Python function under test: ``python:FILE.py:FUNCTION`` or ``python:package.module:FUNCTION``.

    The function runs in a worker process (:mod:`harness.providers.user_code`), started here so a target that
    cannot be loaded is refused before any call; requests cross as plain data and answers are checked again
    on this side, so nothing the function does reaches grace's objects or files unchecked.
    """

    provider_name = "python"

    @classmethod
    def endpoint(cls, spec: ModelSpec) -> str | None:
        """The source file's hash (no ``@VERSION``), so an edited pipeline is a new endpoint: asked again."""
        return _identity(spec.model)

    def __init__(self, spec: ModelSpec):
        from harness.providers.user_code import UserCode

        super().__init__(spec)
        self.target = parse_target(spec.model)
        path = source_file(self.target, spec.model) if self.target.path is not None else None
        if path is None:
            _module_file(self.target.source, spec.model)  # refused here, before a process is started
        init = {"model": spec.model, "source": self.target.source, "function": self.target.function,
                "version": self.target.version, "path": str(path) if path is not None else None,
                "sys_path": list(sys.path)}
        self.code = UserCode(init, f"python:{spec.model}")
        hello = self.code.start()
        if "error" in hello:
            self.code.kill()
            raise GraceError(str(hello["error"]))
        weakref.finalize(self, self.code.kill)  # a provider dropped without aclose (a dry run) leaves no process
        self.is_async = bool(hello.get("async"))
        self._timeout_s = self.timeout_s  # asked once: it hashes the source file to find the endpoint
        self.k: int | None = None
        self.language = "en"

    def prepare_run(self, context: RunContext) -> None:
        self.k, self.language = context.k, context.language or "en"

    def request_of(self, request: Request) -> SystemRequest:
        """What the function is asked, as plain data: the worker builds its own copies of the articles."""
        ctx = request.context
        articles = list(ctx.articles) if ctx is not None else []
        return SystemRequest(
            question_id=ctx.question_id if ctx is not None else "", question=ctx.question if ctx is not None else "",
            articles=articles, messages=request.messages,
            k=self.k if self.k is not None else len(articles), language=self.language,
            repeat=ctx.repeat if ctx is not None else 0)

    async def complete(self, request: Request) -> Completion:
        from harness.providers.user_code import error_of

        frame = await self.code.call(self.request_of(request), self._timeout_s)
        if "ok" not in frame:
            raise error_of(frame, f"python:{self.spec.model}")
        answer = frame["ok"]
        if not isinstance(answer, dict):
            raise _bad(f"python:{self.spec.model}", f"sent {type(answer).__name__}, not an answer")
        return to_completion(answer, self.spec.model)  # checked again: the worker's side is the user's

    async def aclose(self) -> None:
        await self.code.aclose()
