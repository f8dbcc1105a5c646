"""What each fake endpoint says: the scripted :class:`Reply`, the three APIs' JSON bodies, and
responders that answer grace's own prompts (the gold labeler's and the question generator's) sensibly.

Kept apart from the HTTP plumbing in ``fake_api`` so the wire formats, which
follow the vendors' documented responses, can be read (and corrected) alone.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_BEDROCK_ERRORS = {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
                   404: "ResourceNotFoundException", 408: "ModelTimeoutException", 424: "ModelErrorException",
                   429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}
_ID_RE = re.compile(r"\[ID:\s*([^\]\s]+)\s*\]")


@dataclass
class Reply:
    """One scripted answer. Build with the class methods; fields are the raw knobs."""

    status: int = 200
    text: str = "OK"
    input_tokens: int | None = None  # default: a word count of the prompt
    output_tokens: int | None = None  # default: a word count of the reply
    finish_reason: str | None = None  # default: the API's own "normal stop" value
    delay: float = 0.0  # seconds, on top of the server's fixed latency
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None  # sent verbatim (malformed replies)
    message: str = ""  # error message for non-2xx replies
    retry_delay_in_body: float | None = None  # Gemini-style google.rpc.RetryInfo
    data: Any = None  # the bot endpoint (POST /bot/answer): the JSON reply, in whatever shape the test wants
    content_type: str | None = None  # of a raw_body (default application/json)
    echo_credentials: bool = False  # put the request's key or token in the reply (see Reply.echo_key)
    size: int | None = None  # the bot endpoint: a generated JSON reply of this many bytes, sent a MB at a time
    chunked: bool = False  # with size: sent with no Content-Length (chunked), so only reading it tells its size
    # the model calls tools: [{"id", "name", "arguments"}] (arguments: JSON text, or any text for a malformed call),
    # written in each API's wire shape (OpenAI tool_calls, Anthropic tool_use blocks) with its "tool use" stop reason
    tool_calls: list[dict[str, str]] | None = None
    # Anthropic native citations on the text: [{"document_index", "cited_text", "start", "end"}] (char_location)
    citations: list[dict[str, Any]] | None = None

    @classmethod
    def ok(cls, text: str = "OK", *, input_tokens: int | None = None, output_tokens: int | None = None,
           finish_reason: str | None = None, delay: float = 0.0) -> Reply:
        return cls(text=text, input_tokens=input_tokens, output_tokens=output_tokens,
                   finish_reason=finish_reason, delay=delay)

    @classmethod
    def calls(cls, *calls: tuple[str, Any], text: str = "") -> Reply:
        """A turn that calls tools: ``(name, arguments)`` pairs, arguments a dict (sent as JSON) or raw text."""
        return cls(text=text, tool_calls=[
            {"id": f"call_{n}_{hashlib.blake2b(repr((name, args))[:500].encode(), digest_size=4).hexdigest()}", "name": name,
             "arguments": args if isinstance(args, str) else json.dumps(args)} for n, (name, args) in enumerate(calls)])

    @classmethod
    def rate_limit(cls, retry_after: float | str | None = 1, *, ms: float | None = None, header: bool = True) -> Reply:
        """429. ``retry_after`` in seconds or an HTTP date; ``header=False`` puts it only in a Gemini body."""
        headers: dict[str, str] = {}
        if header and retry_after is not None:
            headers["retry-after"] = str(retry_after)
        if ms is not None:
            headers["retry-after-ms"] = str(ms)
        body_delay = float(retry_after) if isinstance(retry_after, (int, float)) else None
        return cls(status=429, headers=headers, message="rate limit exceeded", retry_delay_in_body=body_delay)

    @classmethod
    def error(cls, status: int = 500, message: str = "", *, retry_after: float | None = None) -> Reply:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        return cls(status=status, headers=headers, message=message or f"fake error {status}")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls(status=401, message="invalid api key")

    @classmethod
    def echo_key(cls, status: int = 401) -> Reply:
        """A server that quotes the credential it was sent: a 4xx/5xx whose error message holds the key
        ("Incorrect API key provided: sk-..."), or with status 200 a bot that answers with its own token."""
        return cls(status=status, echo_credentials=True)

    @classmethod
    def redirect(cls, location: str, status: int = 307) -> Reply:
        """A redirect (307 keeps the method and body) to ``location``: another host or port, or the same one."""
        return cls(status=status, headers={"location": location}, raw_body=b"")

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose JSON body is cut off mid-object."""
        return cls(raw_body=b'{"id": "broken", "choices": [{"index": 0, "message": {"role": "assis')

    @classmethod
    def slow(cls, seconds: float, text: str = "OK") -> Reply:
        return cls(text=text, delay=seconds)

    @classmethod
    def json(cls, data: Any, *, delay: float = 0.0) -> Reply:
        """The bot endpoint's reply: any JSON value, sent as it is (the shape a deployed bot answers in)."""
        return cls(data=data, delay=delay)

    @classmethod
    def large(cls, size: int, *, chunked: bool = False, status: int = 200) -> Reply:
        """The bot endpoint's ``{"answer": "xxx..."}`` of ``size`` bytes, generated while sent (never held whole):
        a bot that returns a whole document, or a runaway one (or, with an error ``status``, a huge error page)."""
        return cls(size=size, chunked=chunked, status=status)

    @classmethod
    def not_json(cls, text: str = "<html><body>502 Bad Gateway</body></html>", *, status: int = 200,
                 content_type: str = "text/html") -> Reply:
        """A reply that is not JSON (a proxy's error page, a login page)."""
        return cls(status=status, raw_body=text.encode(), content_type=content_type)


def prompt_text(body: Any) -> str:
    """All prompt text in a request body of any of the three APIs, in order."""
    if not isinstance(body, dict):
        return ""
    chunks: list[str] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    add(part.get("text") if "text" in part else part.get("content"))
                else:
                    add(part)
        elif isinstance(content, dict):
            add(content.get("parts") if "parts" in content else content.get("text"))

    add(body.get("system"))
    add(body.get("systemInstruction"))
    for message in body.get("messages") or []:
        add(message.get("content") if isinstance(message, dict) else None)
    for content in body.get("contents") or []:
        add(content)
    add(body.get("input"))
    return "\n".join(chunks)


def cite_first_id(body: dict[str, Any]) -> str:
    """A responder for benchmarks: answer from the first ``[ID: x]`` in the prompt, or refuse. Reranker prompts
    (``reranker.v1``) get :func:`rank_by_overlap`."""
    if '"ranking"' in prompt_text(body) and "\nQuestion:" in prompt_text(body):
        return rank_by_overlap(body)
    match = _ID_RE.search(prompt_text(body))
    if match is None:
        return "I don't have enough information to answer this question."
    return f"According to the article, this is answered there. [ID: {match.group(1)}]"


# --- grace's own gold prompts (labeler.v1, generator.v1), answered sensibly and deterministically --------------
_FILLER = frozenset("""a an the of to in on at by for from with into about as and or but if so is are was were be been
do does did has have had it its this that these those there here i me my we our you your he she they them who what
when where why how which can could may might must should would will shall get gets any some much many per not no
please tell know like someone something work works here applies apply question company employee employees
staff join""".split())
_TOPIC_TEMPLATES = ("Could you explain how {t} works for me?", "Who do I talk to about {t}?",
                    "I have a question on {t}: what applies in my case?", "Quick one about {t}, what should I know?")
_OFF_TOPIC = ("Can I bring my dog to the office on Fridays?", "Is there a company choir I can join?",
              "How do I enrol in the employee stock purchase plan?", "What is the dress code for client visits?",
              "Can I get a standing desk for my home office?", "How do I nominate a colleague for the annual award?",
              "Does the company pay for a gym membership?", "Can I rent a company car for a weekend trip?")


def _stems(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w not in _FILLER:
            out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def label_by_overlap(body: dict[str, Any]) -> str:
    """A labeler (``labeler.v1`` prompts): the shown article(s) sharing most words with the question; ties give
    several, and no shared word gives ``none``. Words every shown article has do not count. Other prompts are
    answered by :func:`cite_first_id`."""
    text = prompt_text(body)
    if '"article_ids"' not in text or "\nQuestion:" not in text:
        return cite_first_id(body)
    head, _, question = text.rpartition("\nQuestion:")
    parts = _ID_RE.split(head)
    articles = {parts[i]: _stems(parts[i + 1]) for i in range(1, len(parts) - 1, 2)}
    common = set.intersection(*articles.values()) if len(articles) > 1 else set()
    asked = _stems(question)
    scores = {aid: len((asked & words) - common) for aid, words in articles.items()}
    best = max(scores.values(), default=0)
    ids = sorted(aid for aid, n in scores.items() if n == best) if best else []
    reason = (f"the question shares {best} word(s) with article(s) {', '.join(ids)}" if ids
              else "no shown article shares a word with the question")
    return json.dumps({"reason": reason, "article_ids": ids, "none": not ids})


def rank_by_overlap(body: dict[str, Any]) -> str:
    """A reranker (``reranker.v1`` prompts): the candidates by how many of the question's words their title and
    text share, ties in the order shown; a stand-in that reorders like a real reranker would, deterministically."""
    text = prompt_text(body)
    head, _, question = text.rpartition("\nQuestion:")
    parts = _ID_RE.split(head)
    asked = _stems(question)
    shown = [(parts[i], len(asked & _stems(parts[i + 1]))) for i in range(1, len(parts) - 1, 2)]
    ranking = [aid for aid, _ in sorted(shown, key=lambda p: -p[1])]
    return json.dumps({"ranking": ranking})


def _first_sentence(text: str) -> str:
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+", line.strip()):
            if len(sentence.split()) >= 6 and not sentence.startswith(("#", "-", "*", "|")):
                return sentence.rstrip(".!? ")
    return text.strip().split("\n")[0][:200]


def generate_questions(body: dict[str, Any], *, copy: bool = False) -> str:
    """A question writer (``generator.v1`` prompts): paraphrases about the article's topic, in other words;
    with ``copy`` the first question copies the article's first sentence (for the copy filter). Refusal
    prompts get workplace questions whose words no listed title has. Other prompts (the labeler's) go to
    :func:`label_by_overlap`, so one server plays both parts of ``grace gold generate``."""
    text = prompt_text(body)
    wanted = re.search(r"Write (\d+) different questions", text)
    if wanted is None or '{"questions"' not in text:
        return label_by_overlap(body)
    n = int(wanted.group(1))
    titles = re.search(r"<titles>\n(.*?)\n</titles>", text, re.S)
    if titles is not None:
        taken = _stems(titles.group(1))
        pool = [q for q in _OFF_TOPIC if not _stems(q) & taken]
        return json.dumps({"questions": [{"question": q, "topic": " ".join(sorted(_stems(q)))} for q in pool[:n]]})
    title = re.search(r"Article \[ID: [^\]]+\] (.*)", text)
    article = re.search(r"<article>\n(.*?)\n</article>", text, re.S)
    topic = (title.group(1) if title else "this").split(">")[-1].strip().lower()
    answer = _first_sentence(article.group(1) if article else "")
    questions = [_TOPIC_TEMPLATES[i % len(_TOPIC_TEMPLATES)].format(t=topic) for i in range(n)]
    if copy and questions:
        questions[0] = f"Is it true that {answer[:1].lower() + answer[1:]}?"
    return json.dumps({"questions": [{"question": q, "answer": answer} for q in questions]})


_LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "n_predict")
_LENGTH = {"openai": "length", "anthropic": "max_tokens", "google": "MAX_TOKENS", "bedrock": "max_tokens"}


def output_limit(body: dict[str, Any]) -> int | None:
    """The request's cap on output tokens, in any of the three APIs' spellings."""
    for key in _LIMIT_KEYS:
        if isinstance(body.get(key), int):
            return body[key]
    config = body.get("generationConfig")
    if isinstance(config, dict) and isinstance(config.get("maxOutputTokens"), int):
        return config["maxOutputTokens"]
    inference = body.get("inferenceConfig")  # Bedrock Converse
    if isinstance(inference, dict) and isinstance(inference.get("maxTokens"), int):
        return inference["maxTokens"]
    return None


def limit_reply(reply: Reply, body: dict[str, Any], api: str | None = None) -> Reply:
    """A reply longer than the request's output limit, cut to it (one word, one token) with finish reason length.

    ``api`` names the API whose "length" reason to use; without it, it is guessed from the body.
    """
    limit = output_limit(body)
    words = reply.text.split(" ")
    if reply.status != 200 or reply.raw_body is not None or limit is None or len(words) <= limit:
        return reply
    api = api or ("bedrock" if "inferenceConfig" in body else "anthropic" if "anthropic-version" in body or "system" in body
                  else "google" if "contents" in body else "openai")
    return Reply(text=" ".join(words[:limit]), input_tokens=reply.input_tokens, output_tokens=limit,
                 finish_reason=reply.finish_reason or _LENGTH[api], delay=reply.delay, headers=reply.headers)


def rejected_json_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """llama-cpp-python's answer to ``response_format`` ``json_schema`` (it takes only text and json_object)."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text", "json_object"):
        return None
    message = ("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
               f"'json_object' [type=literal_error, input_value='{fmt.get('type')}', input_type=str]")
    return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}


def _words(text: str) -> int:
    return max(1, len(text.split()))


def _embedding(text: str, dims: int) -> list[float]:
    """Hashed bag of words: deterministic, and texts sharing words come out similar."""
    vec = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vec[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def bot_answer(body: Any) -> Reply:
    """A small deployed bot, for ``http:`` systems: it "retrieves" the articles it is sent (``articles``: a list
    of ``{"id", ...}``), cites the first and answers ``{"answer", "citations", "retrieved", "usage"}``; with no
    articles it refuses."""
    articles = body.get("articles") if isinstance(body, dict) else None
    ids = [str(a.get("id")) for a in articles if isinstance(a, dict) and a.get("id") is not None] if isinstance(
        articles, list) else []
    if not ids:
        return Reply.json({"answer": "I don't have enough information to answer this question.", "citations": [],
                           "retrieved": [], "usage": {"input_tokens": 5, "output_tokens": 10}})
    return Reply.json({"answer": f"It is in article {ids[0]}.", "citations": ids[:1], "retrieved": ids,
                       "usage": {"input_tokens": 50, "output_tokens": 8}})


def cite_documents(body: Any) -> Reply:
    """A Claude that cites natively (Anthropic's or Converse's document blocks): its first document's first sentence,
    at its true offsets; a model named ``*misquotes*`` quotes a sentence the document does not hold. Without
    documents it refuses."""
    blocks = [b for m in (body.get("messages") or []) if isinstance(m, dict) and isinstance(m.get("content"), list)
              for b in m["content"] if isinstance(b, dict)]
    # Anthropic's {"type": "document", "source": {"data"}}, or Converse's {"document": {"source": {"text"}}}
    texts = [b.get("source", {}).get("data") if b.get("type") == "document" else b["document"].get("source", {}).get("text")
             for b in blocks if b.get("type") == "document" or isinstance(b.get("document"), dict)]
    if not texts:
        return Reply.ok("I don't have enough information to answer this question.")
    data = str(texts[0] or "")
    quoted = data.split(". ")[0][:200] if "misquotes" not in str(body.get("model")) else "Every employee gets a pony."
    start = data.find(quoted) if quoted in data else 0
    return Reply(text="The policy says so.", citations=[{"document_index": 0, "cited_text": quoted, "start": start,
                                                         "end": start + len(quoted)}])


def model_in_path(path: str) -> str:
    """The model a Gemini (``/models/NAME:generateContent``) or Bedrock (``/model/ID/converse``) path names."""
    from urllib.parse import unquote

    match = re.search(r"/models?/([^/:]+)", path)
    return unquote(match.group(1)) if match else ""


def route(path: str) -> str:
    if path.endswith("/bot/answer"):
        return "bot"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/embeddings"):
        return "openai-embeddings"
    if path.endswith("/messages"):
        return "anthropic"
    if re.search(r"/models/[^/]+:generateContent$", path):  # Gemini API, and Vertex AI's .../publishers/google/...
        return "google"
    if re.search(r"^/model/[^/]+/converse$", path):  # Bedrock; the model ID is URL-encoded (%3A for ':')
        return "bedrock"
    return "unknown"


def success_body(api: str, path: str, body: dict[str, Any], reply: Reply) -> Any:
    if api == "bot":  # the reply's own JSON, else the plain shape: answer, the [ID: x] it cites
        return reply.data if reply.data is not None else {"answer": reply.text, "citations": _ID_RE.findall(reply.text)}
    prompt = prompt_text(body)
    tokens_in = reply.input_tokens if reply.input_tokens is not None else _words(prompt)
    tokens_out = reply.output_tokens if reply.output_tokens is not None else _words(reply.text)
    model = body.get("model") or path.rsplit("/", 1)[-1].split(":")[0]
    if api == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message = {"role": "assistant", "content": reply.text or None, "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in reply.tool_calls]}
        return {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
                         "logprobs": None}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
        }
    if api == "openai-embeddings":
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dims = int(body.get("dimensions") or 64)
        return {
            "object": "list", "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": _embedding(str(t), dims)} for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": tokens_in, "total_tokens": tokens_in},
        }
    if api == "anthropic":
        return {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": ([{"type": "text", "text": reply.text, **({"citations": [
                {"type": "char_location", "cited_text": c["cited_text"], "document_index": c["document_index"],
                 "document_title": None, "start_char_index": c["start"], "end_char_index": c["end"]}
                for c in reply.citations]} if reply.citations else {})}]
                if reply.text or not reply.tool_calls else []) + [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": _tool_input(c["arguments"])}
                for c in reply.tool_calls or []],
            "stop_reason": reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn"), "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    if api == "bedrock":
        text = [{"text": reply.text}] if not reply.citations else [{"citationsContent": {
            "content": [{"text": reply.text}],
            "citations": [{"title": "", "sourceContent": [{"text": c["cited_text"]}], "location": {"documentChar": {
                "documentIndex": c["document_index"], "start": c["start"], "end": c["end"]}}} for c in reply.citations]}}]
        content = (text if reply.text or not reply.tool_calls else []) + [
            {"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": _tool_input(c["arguments"])}}
            for c in reply.tool_calls or []]
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn"),
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out},
            "metrics": {"latencyMs": int(reply.delay * 1000)},
        }
    return {
        "candidates": [{"content": {"role": "model", "parts": ([{"text": reply.text}] if reply.text or not
                                                               reply.tool_calls else []) + [
            {"functionCall": {"id": c["id"], "name": c["name"], "args": _tool_input(c["arguments"])}}
            for c in reply.tool_calls or []]},
                        "finishReason": reply.finish_reason or "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out,
                          "totalTokenCount": tokens_in + tokens_out},
        "modelVersion": model,
    }


def _tool_input(arguments: str) -> Any:
    """Anthropic sends a call's arguments as an object, never as text: text that is not one is sent as the string it
    is (a model's malformed call reaches the client as a value of the wrong type, as near as the API lets it)."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def error_headers(api: str, reply: Reply) -> dict[str, str]:
    """Headers an error carries besides the reply's own: Bedrock names its error code in ``x-amzn-ErrorType``
    (botocore reads the code from there); a reply that sets the header itself picks another code."""
    if api != "bedrock" or any(k.lower() == "x-amzn-errortype" for k in reply.headers):
        return {}
    return {"x-amzn-ErrorType": _BEDROCK_ERRORS.get(reply.status, "InternalServerException" if reply.status >= 500
                                                    else "ValidationException")}


def credential(headers: dict[str, str]) -> str:
    """The key or token a request carried (lower-case header names), as a careless server would quote it."""
    for name in ("authorization", "x-api-key", "api-key", "x-goog-api-key"):
        if headers.get(name):
            value = headers[name]
            return value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
    return "; ".join(f"{k}: {v}" for k, v in headers.items())


def echoed(reply: Reply, headers: dict[str, str], api: str) -> Reply:
    """``reply`` with the request's credential put where :meth:`Reply.echo_key` says."""
    from dataclasses import replace

    key = credential(headers)
    if reply.status >= 400:
        return replace(reply, message=f"Incorrect API key provided: {key}. You can find your API key in your account.")
    if api == "bot":
        return replace(reply, data={"answer": f"Your token is {key} [ID: 1]", "citations": ["1"]})
    return replace(reply, text=f"Your key is {key}.")


def error_body(api: str, reply: Reply) -> dict[str, Any]:
    if api == "bedrock":
        return {"message": reply.message}
    if api == "anthropic":
        kind = _ANTHROPIC_TYPES.get(reply.status, "api_error" if reply.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": reply.message}}
    if api == "google":
        error: dict[str, Any] = {"code": reply.status, "message": reply.message,
                                 "status": _GOOGLE_STATUS.get(reply.status, "UNKNOWN")}
        if reply.retry_delay_in_body is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                 "retryDelay": f"{reply.retry_delay_in_body:g}s"}]
        return {"error": error}
    code = "rate_limit_exceeded" if reply.status == 429 else ("invalid_api_key" if reply.status == 401 else None)
    return {"error": {"message": reply.message, "type": "fake_error", "param": None, "code": code}}
