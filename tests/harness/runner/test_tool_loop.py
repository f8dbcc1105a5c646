"""Models that search the KB for themselves: the real ``grace run`` with the real OpenAI and Anthropic SDKs against
the fake server's scripted tool-using models (harness.testing.tool_agents), over the sample handbook.

What each model searched, what came back and what it cited are read from the server's own requests and the rows'
raw answers, apart from grace's loop, and compared with what grace recorded.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from harness.testing.fake_api import FakeAPIServer, Reply
from harness.testing.tool_agents import Conversation, ToolAgents
from tests.conftest import run_grace, sample_bench

pytestmark = pytest.mark.slow  # end to end through servers, subprocesses or whole KBs: seconds a test

N = 16  # gold questions asked (refusals among them)
CAP = 4
AGENTS = ("search-top1", "search-twice", "cite-unseen", "search-forever")
_ID = re.compile(r"\[ID:\s*([^\]\s]+)\s*\]")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return sample_bench(tmp_path_factory.mktemp("search"), N)


def kb_ids(bench: Path) -> list[str]:
    with (bench / "kb" / "articles.jsonl").open(encoding="utf-8") as fh:
        return [str(json.loads(line)["id"]) for line in fh if line.strip()]


def gold(bench: Path) -> dict[str, tuple[bool, set[str]]]:
    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        return {r["question_id"]: (r["must_refuse"] == "true", set(filter(None, re.split(r"[;|]", r["expected_citations"]))))
                for r in csv.DictReader(fh)}


def rows(run: Path) -> list[dict]:
    """The rows on file; a torn last line (a kill mid-write) is no row."""
    out = []
    for line in (run / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def run_search(bench: Path, out: Path, srv: FakeAPIServer, provider: str, monkeypatch, *extra: str) -> tuple[int, str]:
    if provider == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    elif provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    elif provider == "google":
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.google_base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "g-test")
    else:  # bedrock: fake keys and region, nothing read from this machine's ~/.aws
        for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_REGION", "us-east-1"),
                            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.bedrock_base_url),
                            ("AWS_CONFIG_FILE", str(out.parent / "no-aws-config")),
                            ("AWS_SHARED_CREDENTIALS_FILE", str(out.parent / "no-aws-credentials")),
                            ("AWS_EC2_METADATA_DISABLED", "true")):
            monkeypatch.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
            monkeypatch.delenv(name, raising=False)
    args = ["run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", out, "--max-tool-calls", str(CAP),
            "--concurrency", "4", *extra]
    for agent in AGENTS:
        args += ["--model", f"{provider}:{agent}", "--search", f"{provider}:{agent}"]
    return run_grace(*args)


def conversations(srv: FakeAPIServer) -> dict[tuple[str, str], list[dict]]:
    """(model, question text) -> the request bodies the server received for it, in order."""
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for req in srv.requests:
        body = req.body
        first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        out[(body["model"], first_user)].append(body)
    return out


def tool_results(body: dict) -> list[str]:
    """The tool results a request carries, in either wire shape."""
    out = []
    for m in body["messages"]:
        if m["role"] == "tool":
            out.append(m["content"])
        elif m["role"] == "user" and isinstance(m["content"], list):
            out += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_scripted_model_runs_its_loop_and_every_turn_is_recorded(bench, tmp_path, monkeypatch, provider):
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        code, out = run_search(bench, tmp_path / "run", srv, provider, monkeypatch, "--no-score")
        assert code == 0, out
        asked = conversations(srv)
        first = srv.requests[0].body
    # the tools, in the provider's own schema, on every turn
    if provider == "openai":
        assert [t["function"]["name"] for t in first["tools"]] == ["search_kb", "open_article"]
        assert first["tools"][0]["type"] == "function"
        assert first["tools"][0]["function"]["parameters"]["required"] == ["query"]
    else:
        assert [t["name"] for t in first["tools"]] == ["search_kb", "open_article"]
        assert first["tools"][0]["input_schema"]["required"] == ["query"]
    # the prompt is the search template: the question, no articles pushed
    assert "search_kb" in json.dumps(first["messages"] if provider == "openai" else first["system"])
    assert set(_ID.findall(json.dumps(first["messages"]))) <= {"<id>"}
    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        questions = {r["question_id"]: r["question"] for r in csv.DictReader(fh)}
    per_model = defaultdict(list)
    for row in rows(tmp_path / "run"):
        per_model[row["model"].split(":", 1)[1]].append(row)
    assert {m: len(r) for m, r in per_model.items()} == dict.fromkeys(AGENTS, N)
    turns = {"search-top1": 2, "search-twice": 3, "cite-unseen": 2, "search-forever": CAP + 1}
    for agent, agent_rows in per_model.items():
        for row in agent_rows:
            loop = row["tool_loop"]
            assert row["error"] is None
            assert row["retrieved_ids"] == []  # nothing pushed
            assert len(loop["turns"]) == turns[agent]
            assert loop["tool_calls"] == min(turns[agent] - 1, CAP)
            text = questions[row["question_id"]]
            bodies = next(b for (m, first_user), b in asked.items() if m == agent and text in first_user)
            assert len(bodies) == turns[agent]  # each turn asked once
            seen = list(dict.fromkeys(i for text in tool_results(bodies[-1]) for i in _ID.findall(text)))
            assert loop["retrieved"] == seen == row["system_retrieved"]
            returned = [i for t in loop["turns"] for c in t["calls"] for i in c["returned"]]
            assert list(dict.fromkeys(returned)) == seen
            assert row["input_tokens"] == sum(t["input_tokens"] for t in loop["turns"])
            assert all(t["latency_ms"] is not None for t in loop["turns"])
        outcome = {"search-forever": "hit_cap"}.get(agent, "completed")
        assert {r["tool_loop"]["outcome"] for r in agent_rows} == {outcome}
    forever = per_model["search-forever"][0]["tool_loop"]
    assert forever["stopped"] == "hit_cap"
    last = srv.requests  # the turn after the cap went out with tools switched off
    assert any(b.body.get("tool_choice") in ("none", {"type": "none"}) for b in last)


def test_a_rerun_asks_nothing_again(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        code, out = run_search(bench, tmp_path / "run", srv, "openai", monkeypatch, "--no-score")
        assert code == 0, out
        asked = len(srv.requests)
        code, out = run_search(bench, tmp_path / "again", srv, "openai", monkeypatch, "--no-score")
        assert code == 0, out
        assert len(srv.requests) == asked  # a new folder, every turn from the cache
    again = rows(tmp_path / "again")
    assert all(r["cached"] for r in again)
    assert [r["tool_loop"]["retrieved"] for r in again] == [r["tool_loop"]["retrieved"] for r in rows(tmp_path / "run")]


@pytest.mark.parametrize(("reply", "problem"), [
    (Reply.calls(("search_kb", '{"query": "leave", ')), "malformed_arguments"),
    (Reply.calls(("search_kb", '["leave"]')), "malformed_arguments"),
    (Reply.calls(("delete_everything", {"all": True})), "unknown_tool"),
    (Reply.calls(("search_kb", {"query": "x" * 10_000_000})), "oversized_arguments"),
])
def test_a_call_grace_cannot_run_is_a_named_outcome_and_a_note_never_a_crash(bench, tmp_path, monkeypatch, reply,
                                                                            problem):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeAPIServer() as srv:
        srv.enqueue(reply, Reply.ok("It is in this article. [ID: 1]"))
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        (tmp_path / "one.csv").write_text("\n".join((bench / "gold.csv").read_text().splitlines()[:2]) + "\n")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", tmp_path / "one.csv", "--out", tmp_path / "run",
                              "--model", "openai:m", "--search", "openai:m", "--no-score")
        assert code == 0, out
        second = srv.requests[1].body
        asked = len(srv.requests)  # the same command again (another folder): every turn from the cache
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", tmp_path / "one.csv", "--out", tmp_path / "again",
                              "--model", "openai:m", "--search", "openai:m", "--no-score")
        assert code == 0, out
        assert len(srv.requests) == asked
    row = rows(tmp_path / "run")[0]
    call = row["tool_loop"]["turns"][0]["calls"][0]
    assert call["problem"] == problem and call["note"]
    assert row["tool_loop"]["outcome"] == problem
    assert row["response"].endswith("[ID: 1]")
    told = next(m for m in second["messages"] if m["role"] == "tool")["content"]
    assert told.startswith("Error: ")
    assert len(json.dumps(second)) < 100_000  # a 10 MB argument is neither sent back nor recorded whole
    assert len(json.dumps(row)) < 20_000
    # nor cached whole; read back from the cache, the call is judged the same way
    import sqlite3

    from harness.runner.cache import default_cache_path

    with sqlite3.connect(default_cache_path()) as db:
        assert max(len(c) for (c,) in db.execute("SELECT completion FROM responses")) < 40_000
    again = rows(tmp_path / "again")[0]
    assert again["tool_loop"]["outcome"] == problem and again["response"] == row["response"]


def hand_funnel(bench: Path, run: Path, srv: FakeAPIServer) -> dict[str, dict]:
    """Each model's funnel counted from the server's requests (what the tool results showed it), the rows' raw answers
    (the [ID: x] they cite) and the gold CSV: nothing of grace's loop or funnel code."""
    truth = gold(bench)
    asked = conversations(srv)
    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        questions = {r["question_id"]: r["question"] for r in csv.DictReader(fh)}
    ids = set(kb_ids(bench))
    out: dict[str, dict] = {}
    for row in rows(run):
        agent = row["model"].split(":", 1)[1]
        bodies = next(b for (m, first_user), b in asked.items() if m == agent and questions[row["question_id"]] in first_user)
        results = tool_results(bodies[-1])
        seen = {i for text in results for i in _ID.findall(text)}
        cited = {i for i in _ID.findall(row["response"]) if i in ids}
        must, expected = truth[row["question_id"]]
        answerable = not must and bool(expected)
        c = out.setdefault(row["model"], defaultdict(int, calls=[]))
        c["calls"].append(len(results))
        c["answerable"] += answerable
        c["found"] += answerable and bool(expected & seen)
        c["cited_given_found"] += answerable and bool(expected & seen) and bool(expected & cited)
        c["found_not_cited"] += answerable and bool(expected & seen) and not (expected & cited)
        c["citing"] += bool(cited)
        c["cited_unseen"] += bool(cited - seen)
        c["coverage"] += len(cited & seen) / len(seen) if seen else 0
        c["coverage_n"] += bool(seen)
        c["hit_cap"] += len(bodies) == CAP + 1 and len(results) == CAP
    return out


def test_funnel_figures_equal_hand_counts_for_the_four_scripted_models(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        code, out = run_search(bench, tmp_path / "run", srv, "openai", monkeypatch)
        assert code == 0, out
        hand = hand_funnel(bench, tmp_path / "run", srv)
    assert "Retrieval funnel" in out
    md = (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")
    section = md.split("## Retrieval funnel", 1)[1]
    assert all(f"| openai:{a} | search |" in section for a in AGENTS)
    funnel = json.loads((tmp_path / "run" / "report.json").read_text())["funnel"]
    assert set(funnel) == set(hand) == {f"openai:{a}" for a in AGENTS}
    for model, h in hand.items():
        f = funnel[model]
        calls = sorted(h["calls"])
        assert f["answers"] == N and f["errors"] == 0
        assert f["tool_calls_mean"] == pytest.approx(sum(calls) / N)
        assert f["tool_calls_p95"] == calls[-(-95 * N // 100) - 1]
        assert (f["gold_found"]["k"], f["gold_found"]["n"]) == (h["found"], h["answerable"])
        assert (f["cited_given_found"]["k"], f["cited_given_found"]["n"]) == (h["cited_given_found"], h["found"])
        assert (f["found_not_cited"]["k"], f["found_not_cited"]["n"]) == (h["found_not_cited"], h["answerable"])
        assert (f["cited_unseen"]["k"], f["cited_unseen"]["n"]) == (h["cited_unseen"], h["citing"])
        assert f["coverage_n"] == h["coverage_n"]
        assert f["coverage"] == pytest.approx(h["coverage"] / h["coverage_n"], abs=1e-6)
        assert f["loop_outcomes"]["hit_cap"]["k"] == h["hit_cap"]
        lo, hi = f["gold_found"]["ci"]
        assert lo <= f["gold_found"]["rate"] <= hi
    # what each script does shows in its figures
    assert funnel["openai:cite-unseen"]["cited_unseen"]["k"] == funnel["openai:cite-unseen"]["cited_unseen"]["n"] > 0
    assert funnel["openai:search-top1"]["cited_unseen"]["k"] == 0
    assert funnel["openai:search-forever"]["loop_outcomes"]["hit_cap"]["k"] == N
    assert funnel["openai:search-twice"]["tool_calls_mean"] == 2
    assert funnel["openai:search-top1"]["found_not_cited"]["k"] + funnel["openai:search-top1"]["cited_given_found"][
        "k"] == funnel["openai:search-top1"]["gold_found"]["k"]


def test_a_run_killed_mid_loop_resumes_without_asking_answered_turns_again(bench, tmp_path):
    """SIGKILL while every question's loop is part way (7 turns each, two at a time, 50 ms a turn), then the same
    command again: each turn the server answered before the kill is taken from the cache, so the only turns asked
    twice are the ones in flight when the kill came (at most the concurrency)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    cap, concurrency = 6, 2
    with FakeAPIServer(latency=0.05, responder=ToolAgents(kb_ids(bench))) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.openai_base_url, "OPENAI_API_KEY": "x", "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "harness.cli.app", "run", "--kb", str(bench / "kb"), "--gold",
               str(bench / "gold.csv"), "--out", str(tmp_path / "run"), "--model", "openai:search-forever",
               "--search", f"openai:search-forever={cap}", "--concurrency", str(concurrency), "--no-score"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(srv.requests) < 3 * (cap + 1) + 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        before = len(srv.requests)
        on_file = len(rows(tmp_path / "run")) if (tmp_path / "run" / "responses.jsonl").exists() else 0
        assert on_file < N and before > on_file * (cap + 1), "the kill came before any loop was under way"
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        turns = [json.dumps([r.body["model"], r.body["messages"]]) for r in srv.requests]
    again = len(turns) - len(set(turns))
    assert again <= concurrency  # only what was in flight
    assert len(set(turns)) == N * (cap + 1)  # every turn of every loop asked, once
    assert len(turns) - before == N * (cap + 1) - before + again
    finished = rows(tmp_path / "run")
    assert len(finished) == N and all(r["tool_loop"]["tool_calls"] == cap for r in finished)


def test_search_set_in_the_toml_is_recorded_in_run_json_and_its_cap_applies(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        board = tmp_path / "board.toml"
        board.write_text(f'[[models]]\nspec = "openai:search-top1"\nname = "pushed"\nbase_url = "{srv.openai_base_url}"\n\n'
                         f'[[models]]\nspec = "openai:search-forever"\nname = "searches"\nbase_url = '
                         f'"{srv.openai_base_url}"\n\n[models.search]\nmax_tool_calls = 2\n', encoding="utf-8")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--config", board)
        assert code == 0, out
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [m.get("search") for m in info["models"]] == [None, {"max_tool_calls": 2, "k": None,
                                                               "tools": ["search_kb", "open_article"]}]
    assert len(info["templates"]) == 2  # the run's prompt and its search twin
    by_model = defaultdict(list)
    for row in rows(tmp_path / "run"):
        by_model[row["model"]].append(row)
    assert all("tool_loop" not in r and r["retrieved_ids"] for r in by_model["pushed"])
    assert all(r["tool_loop"]["tool_calls"] == 2 for r in by_model["searches"])
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["funnel"]["pushed"]["searches"] is False and report["funnel"]["pushed"]["tool_calls_mean"] == 0
    assert {(p["a"], p["b"]) for p in report["pairwise"]} <= {("pushed", "searches"), ("searches", "pushed")}
    assert report["pairwise"]  # pushed and searching side by side, with the paired test


@pytest.mark.parametrize(("args", "toml", "said"), [
    (["--search", "openai:nope"], None, "--search 'openai:nope': no model named 'openai:nope'"),
    (["--search", "openai:m=0"], None, "MODEL=MAX_TOOL_CALLS"),
    ([], '[[models]]\nspec = "openai:m"\n[models.search]\nmax_calls = 3\n', "unknown key 'max_calls'"),
    ([], '[[models]]\nspec = "openai:m"\nbatch = true\nsearch = true\n', "cannot be batched"),
])
def test_bad_search_settings_are_a_clear_error_before_any_call(bench, tmp_path, monkeypatch, args, toml, said):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    extra = ["--model", "openai:m", *args]
    if toml is not None:
        (tmp_path / "b.toml").write_text(toml, encoding="utf-8")
        extra = ["--config", str(tmp_path / "b.toml")]
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run", *extra)
    assert code != 0 and said in out, out
    assert "Traceback" not in out


def test_gate_caps_the_loop_and_floors_gold_found(bench, tmp_path, monkeypatch):
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        code, out = run_search(bench, tmp_path / "run", srv, "openai", monkeypatch)
        assert code == 0, out
    report = tmp_path / "run" / "report.json"
    code, out = run_grace("gate", report, "--max-tool-calls", "2", "--model", "openai:search-twice",
                          "--model", "openai:search-top1")
    assert code == 0 and out.count("PASS") == 2, out
    code, out = run_grace("gate", report, "--max-tool-calls", "2")
    assert code == 1 and f"openai:search-forever: tool calls per answer p95 {CAP}" in out, out
    found = json.loads(report.read_text())["funnel"]["openai:search-top1"]["gold_found"]["rate"]
    code, out = run_grace("gate", report, "--min-gold-found", str(min(1.0, found + 0.01)), "--model",
                          "openai:search-top1")
    assert code == (1 if found < 1 else 0), out
    plain = tmp_path / "plain.json"
    data = json.loads(report.read_text())
    del data["funnel"]
    plain.write_text(json.dumps(data))
    code, out = run_grace("gate", plain, "--max-tool-calls", "3")
    assert code == 2 and "no retrieval funnel" in out and "Traceback" not in out, out


@pytest.mark.parametrize("provider", ["google", "bedrock"])
def test_the_loop_over_gemini_and_bedrock_converse_tool_protocols(bench, tmp_path, monkeypatch, provider):
    pytest.importorskip("boto3" if provider == "bedrock" else "google.genai")
    with FakeAPIServer(responder=ToolAgents(kb_ids(bench))) as srv:
        code, out = run_search(bench, tmp_path / "run", srv, provider, monkeypatch, "--no-score")
        assert code == 0, out
        bodies = [r.body for r in srv.requests]
        models = [r.path for r in srv.requests]
    first = bodies[0]
    if provider == "google":
        (declared,) = first["tools"]
        assert [f["name"] for f in declared["functionDeclarations"]] == ["search_kb", "open_article"]
        search = declared["functionDeclarations"][0]  # the SDK writes this field's name in snake case, as the API takes
        assert (search.get("parametersJsonSchema") or search["parameters_json_schema"])["required"] == ["query"]
        assert any(b["toolConfig"]["functionCallingConfig"]["mode"] == "NONE" for b in bodies)  # after the cap
    else:
        specs = [t["toolSpec"] for t in first["toolConfig"]["tools"]]
        assert [t["name"] for t in specs] == ["search_kb", "open_article"]
        assert specs[0]["inputSchema"]["json"]["required"] == ["query"]
    turns = {"search-top1": 2, "search-twice": 3, "cite-unseen": 2, "search-forever": CAP + 1}
    for row in rows(tmp_path / "run"):
        agent = row["model"].split(":", 1)[1]
        loop = row["tool_loop"]
        assert row["error"] is None and len(loop["turns"]) == turns[agent], row
        assert sum(agent in path for path in models) == N * turns[agent]
        assert loop["tool_calls"] == min(turns[agent] - 1, CAP)
        assert loop["retrieved"] and all(i in kb_ids(bench) for i in loop["retrieved"])
        if agent == "search-top1":
            assert row["response"].endswith(f"[ID: {loop['turns'][0]['calls'][0]['returned'][0]}]")
    seen = [Conversation(b).seen() for b in bodies if len(Conversation(b).results) == 1]
    assert seen and all(seen)


def test_import_logs_reads_the_guidance_audit_record_into_the_funnel_with_no_mapping(bench, tmp_path):
    ids = kb_ids(bench)
    truth = gold(bench)
    with (bench / "gold.csv").open(encoding="utf-8") as fh:
        questions = [(r["question_id"], r["question"]) for r in csv.DictReader(fh)]
    log, hand = [], defaultdict(int)
    for i, (qid, text) in enumerate(questions):
        must, expected = truth[qid]
        retrieved = [ids[(7 * i) % len(ids)]] + (sorted(expected)[:1] if i % 2 == 0 else [])
        cite = retrieved[-1]
        log.append({"question": text, "answer": f"See the policy. [ID: {cite}]", "retrieved_uids": retrieved,
                    "tool_calls": i % 4, "context_tokens": 500 + i, "prompt_hash": f"h{i}", "latency_ms": 100 + i,
                    "feedback": "thumbs_up" if i % 3 else "thumbs_down", "user_uid": f"u{i}", "model": "bot-v2"})
        answerable = not must and bool(expected)
        hand["answerable"] += answerable
        hand["found"] += answerable and bool(expected & set(retrieved))
        hand["cited_gold"] += answerable and bool(expected & set(retrieved)) and cite in expected
        hand["calls"] += i % 4
    path = tmp_path / "audit.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in log) + "\n", encoding="utf-8")
    code, out = run_grace("import-logs", path, "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out",
                          tmp_path / "run")
    assert code == 0, out
    funnel = json.loads((tmp_path / "run" / "report.json").read_text())["funnel"]["bot-v2"]
    assert funnel["answers"] == len(questions)
    assert funnel["tool_calls_mean"] == pytest.approx(hand["calls"] / len(questions))
    assert (funnel["gold_found"]["k"], funnel["gold_found"]["n"]) == (hand["found"], hand["answerable"])
    assert (funnel["cited_given_found"]["k"], funnel["cited_given_found"]["n"]) == (hand["cited_gold"], hand["found"])
    assert funnel["latency_ms_mean"] == pytest.approx(sum(100 + i for i in range(len(questions))) / len(questions))
    row = rows(tmp_path / "run")[0]
    assert (row["user"], row["context_tokens"], row["feedback"], row["prompt_hash"]) == ("u0", 500, "thumbs_down", "h0")
    assert row["system_retrieved"] == log[0]["retrieved_uids"]


def test_a_python_system_returns_its_own_tool_calls_and_they_feed_the_funnel(bench, tmp_path):
    bot = tmp_path / "agent_bot.py"
    bot.write_text(
        "def answer(request):\n"
        "    ids = [a.id for a in request.articles]\n"
        "    calls = [{'name': 'vector_search', 'query': request.question, 'returned': ids[:2]},\n"
        "             {'name': 'vector_search', 'query': request.question[:10], 'returned': ids[2:]}]\n"
        "    return {'answer': f'It is there [ID: {ids[-1]}]', 'tool_calls': calls, 'retrieved': ids}\n",
        encoding="utf-8")
    code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                          "--model", f"python:{bot}:answer", "--citations", f"python:{bot}:answer=single:ids")
    assert code == 0, out
    truth = gold(bench)
    hand = defaultdict(int)
    for row in rows(tmp_path / "run"):
        loop = row["tool_loop"]
        assert loop["tool_calls"] == 2 and [c["name"] for c in loop["turns"][0]["calls"]] == ["vector_search"] * 2
        must, expected = truth[row["question_id"]]
        answerable = not must and bool(expected)
        hand["answerable"] += answerable
        hand["found"] += answerable and bool(expected & set(loop["retrieved"]))
    funnel = json.loads((tmp_path / "run" / "report.json").read_text())["funnel"]
    (f,) = funnel.values()
    assert f["tool_calls_mean"] == 2 and f["searches"] is True
    assert (f["gold_found"]["k"], f["gold_found"]["n"]) == (hand["found"], hand["answerable"])


def test_an_http_system_returns_its_searches_through_a_reply_path(bench, tmp_path):
    ids = kb_ids(bench)[:3]

    def bot(body):
        return Reply.json({"reply": {"text": f"It is there [ID: {ids[1]}]"},
                           "trace": {"searches": [{"tool": "search", "query": body.get("question"), "returned": ids[:2]},
                                                  {"tool": "search", "query": "again", "returned": ids[2:]}]}})

    with FakeAPIServer(responder=bot) as srv:
        board = tmp_path / "board.toml"
        board.write_text(f'[[models]]\nspec = "http:bot"\n[models.http]\nurl = "{srv.bot_url}"\n'
                         'answer = "reply.text"\ntool_calls = "trace.searches"\n', encoding="utf-8")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--config", board)
        assert code == 0, out
    truth = gold(bench)
    answerable = [q for q, (must, expected) in truth.items() if not must and expected]
    found = [q for q in answerable if truth[q][1] & set(ids)]
    f = json.loads((tmp_path / "run" / "report.json").read_text())["funnel"]["http:bot"]
    assert f["tool_calls_mean"] == 2
    assert (f["gold_found"]["k"], f["gold_found"]["n"]) == (len(found), len(answerable))
    row = rows(tmp_path / "run")[0]
    assert [c["returned"] for c in row["tool_loop"]["turns"][0]["calls"]] == [ids[:2], ids[2:]]


def test_a_model_stopped_mid_loop_leaves_error_rows_that_the_next_run_asks_again(bench, tmp_path, monkeypatch):
    agents = ToolAgents(kb_ids(bench))

    def refuses_second_turns(body):  # the key is refused once a loop is under way: the model is stopped
        return Reply.unauthorized() if Conversation(body).results else agents(body)

    with FakeAPIServer(responder=refuses_second_turns) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--model", "openai:search-top1", "--search", "openai:search-top1", "--no-score")
        assert "Traceback" not in out
        on_file = rows(tmp_path / "run")
        assert len(on_file) == N
        assert all(r["error"] is not None and r["response"] is None for r in on_file)
        assert {r["error"]["kind"] for r in on_file} <= {"auth", "not_tried"}
        srv.responder = agents  # the key works again: the next run asks them all, the first turns from the cache
        asked = len(srv.requests)
        code, out = run_grace("run", "--kb", bench / "kb", "--gold", bench / "gold.csv", "--out", tmp_path / "run",
                              "--model", "openai:search-top1", "--search", "openai:search-top1", "--no-score")
        assert code == 0, out
        first_turns = sum(1 for r in srv.requests[:asked] if not Conversation(r.body).results)
        assert len(srv.requests) - asked == N * 2 - first_turns
    assert all(r["error"] is None for r in rows(tmp_path / "run")[-N:])
