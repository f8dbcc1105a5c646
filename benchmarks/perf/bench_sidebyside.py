"""grace beside inspect_ai and promptfoo: the same calls, the same fake server, whole processes.

Is grace's own cost (start-up, retrieval, the client, scoring, reports) in line
with the tools people compare it with? Each tool sends the same N chat requests
to one local fake OpenAI server (``harness.testing.FakeAPIServer``, a fixed
latency, the deterministic ``cite_first_id`` answers) through C connections, as a
whole process run the way its users run it:

    grace       grace run --kb KB --gold GOLD -m openai:bench --concurrency C --out DIR
    inspect_ai  inspect eval task.py --model openai/bench --max-connections C  (generate(), includes())
    promptfoo   promptfoo eval -c promptfooconfig.yaml --max-concurrency C --no-cache  (contains "[ID:")

grace runs first; the system and user messages of the N requests the server saw
become inspect's samples and promptfoo's tests, so all three send the very same
prompts (question + retrieved articles). Each repeat runs the three one after the
other (paired runs); the table shows the median wall and CPU seconds (user +
system of the child and its children), wall against the ideal N * L / C, and how
many calls the server saw for each tool's run (no cache hits, no retries).

inspect_ai (``pip install inspect-ai openai``) goes in a virtual environment of
its own and promptfoo (``npm install promptfoo``) in a folder of its own, both
under ``--tools-dir`` (default ``~/.cache/grace-bench``), installed on first use
and reused afterwards. A tool that cannot be installed (no registry, no node) is
skipped with a one-line reason. Nothing touches the internet: telemetry, update
checks and sharing are switched off.

    python benchmarks/perf/bench_sidebyside.py [--calls 400] [--concurrency 20] [--latency 0.5] [--repeats 3]
        [--tools-dir ~/.cache/grace-bench] [--only grace,inspect,promptfoo]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.perf.bench_commands import grace, make_gold  # noqa: E402
from harness.testing import FakeAPIServer, cite_first_id  # noqa: E402

TOOLS = ("grace", "inspect", "promptfoo")
NAMES = {"grace": "grace", "inspect": "inspect_ai", "promptfoo": "promptfoo"}

INSPECT_TASK = '''\
import json

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

ROLES = {"system": ChatMessageSystem, "user": ChatMessageUser}


@task
def bench():
    samples = []
    with open(PROMPTS, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            messages = json.loads(line)["messages"]
            samples.append(Sample(id=i, input=[ROLES[m["role"]](content=m["content"]) for m in messages],
                                  target="[ID:"))
    return Task(dataset=samples, solver=generate(), scorer=includes())
'''

# telemetry, update checks, sharing, remote generation: nothing goes out to the internet. (Even so promptfoo 0.121
# posts one "telemetry disabled" event to r.promptfoo.app, fire and forget; here its DNS lookup fails at once.)
PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_RUNTIME_WARNINGS": "1",  # "Node.js 20 support ended"
    "NPM_CONFIG_UPDATE_NOTIFIER": "false",
}


class Unavailable(Exception):
    """The tool cannot be installed or run here; the message says why, in one line."""


def run_quiet(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    except OSError as exc:
        raise Unavailable(f"{cmd[0]}: {exc}") from exc


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def install_inspect(tools: Path) -> Path:
    """The ``inspect`` command of the tools venv, created (``pip install inspect-ai openai``) on first use."""
    venv = tools / "inspect-venv"
    exe = venv / "bin" / "inspect"
    if exe.exists():
        return exe
    print(f"installing inspect-ai into {venv} (once) ...", flush=True)
    t0 = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)  # not grace's own venv
    proc = run_quiet([base, "-m", "venv", str(venv)])
    if proc.returncode != 0:
        raise Unavailable(f"python -m venv failed: {last_line(proc.stderr)}")
    proc = run_quiet([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "inspect-ai", "openai"])
    if proc.returncode != 0 or not exe.exists():
        shutil.rmtree(venv, ignore_errors=True)
        raise Unavailable(f"pip install inspect-ai openai failed: {last_line(proc.stderr)}")
    print(f"  installed in {time.perf_counter() - t0:.0f} s", flush=True)
    return exe


def install_promptfoo(tools: Path) -> Path:
    """The ``promptfoo`` command of the tools folder, ``npm install``ed on first use."""
    folder = tools / "promptfoo"
    exe = folder / "node_modules" / ".bin" / "promptfoo"
    if exe.exists():
        return exe
    for needed in ("node", "npm"):
        if shutil.which(needed) is None:
            raise Unavailable(f"{needed} is not installed (apt-get install nodejs npm)")
    print(f"installing promptfoo into {folder} (once) ...", flush=True)
    t0 = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    proc = run_quiet(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), "promptfoo"],
                     env={**os.environ, **PROMPTFOO_ENV})
    if proc.returncode != 0 or not exe.exists():
        raise Unavailable(f"npm install promptfoo failed: {last_line(proc.stderr)}")
    print(f"  installed in {time.perf_counter() - t0:.0f} s", flush=True)
    return exe


def timed(cmd: list[str], env: dict[str, str], cwd: Path, tolerate: str = "") -> tuple[float, float]:
    """Wall and CPU seconds (the child's and its children's user + system) of one whole process; it must succeed,
    unless it failed with ``tolerate`` in its stderr."""
    before = os.times()
    t0 = time.perf_counter()
    proc = run_quiet(cmd, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    after = os.times()
    if proc.returncode != 0:
        if not (tolerate and tolerate in proc.stderr):
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        print(f"  (exit {proc.returncode} with {tolerate!r}, tolerated)", flush=True)
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def chat_requests(srv: FakeAPIServer) -> list[dict]:
    return [r.body for r in srv.requests if r.api == "openai" and isinstance(r.body, dict)]


def text_of(content: object) -> str:
    """A message's text, whether a string or a list of content parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def messages_of(body: dict) -> list[dict[str, str]]:
    """The chat messages of a request; OpenAI's newer "developer" role (inspect's) counts as "system"."""
    return [{"role": "system" if m["role"] == "developer" else m["role"], "content": text_of(m.get("content"))}
            for m in body.get("messages", [])]


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path, srv: FakeAPIServer):
        self.args, self.tmp, self.srv = args, tmp, srv
        self.base_env = {**os.environ, "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": srv.openai_base_url, "COLUMNS": "120"}
        self.versions: dict[str, str] = {}
        self.exes: dict[str, Path] = {}
        self.prompts: set[str] = set()
        self.max_tokens = 1024  # as grace asks; set from its requests

    # --- grace -------------------------------------------------------------------------
    def setup_grace(self) -> None:
        env = {**self.base_env, "PYTHONPATH": str(ROOT), "GRACE_CACHE_DIR": str(self.tmp / "cache-kb")}
        grace(["kb", "build", str(ROOT / "benchmarks/sample/handbook"), "--out", str(self.tmp / "kb")], env)
        make_gold(self.tmp / "gold.csv", self.args.calls)
        version = run_quiet([sys.executable, "-m", "harness.cli.app", "--version"], env=env).stdout
        self.versions["grace"] = last_line(version).split()[-1]  # "grace, version 0.1.0"

    def run_grace(self, rep: int) -> tuple[float, float]:
        env = {**self.base_env, "PYTHONPATH": str(ROOT), "GRACE_CACHE_DIR": str(self.tmp / f"cache{rep}")}
        wall, cpu, _ = grace(["run", "--kb", str(self.tmp / "kb"), "--gold", str(self.tmp / "gold.csv"), "-m",
                              "openai:bench", "--concurrency", str(self.args.concurrency),
                              "--out", str(self.tmp / f"grace{rep}")], env)
        return wall, cpu

    def write_prompts(self, bodies: list[dict]) -> None:
        """The messages grace sent, one request a line, for inspect's samples and promptfoo's tests."""
        with (self.tmp / "prompts.jsonl").open("w", encoding="utf-8") as fh:
            for body in bodies:
                fh.write(json.dumps({"messages": messages_of(body)}) + "\n")
        self.prompts = {json.dumps(messages_of(body)) for body in bodies}
        self.max_tokens = int(bodies[0].get("max_tokens") or bodies[0].get("max_completion_tokens") or 1024)

    def same_prompts(self, bodies: list[dict]) -> int:
        """How many of a run's requests carried one of grace's prompts, word for word."""
        return sum(json.dumps(messages_of(body)) in self.prompts for body in bodies)

    def prompts_from_sample(self) -> None:
        """Without grace in the run: one grace run, untimed, only to record the prompts it sends."""
        self.srv.clear()
        self.run_grace(-1)
        self.write_prompts(chat_requests(self.srv)[: self.args.calls])

    # --- inspect_ai ----------------------------------------------------------------------
    def setup_inspect(self) -> None:
        exe = self.exes["inspect"] = install_inspect(self.args.tools_dir)
        task = INSPECT_TASK.replace("PROMPTS", repr(str(self.tmp / "prompts.jsonl")))
        (self.tmp / "inspect_task.py").write_text(task, encoding="utf-8")
        self.versions["inspect"] = last_line(run_quiet([str(exe), "--version"]).stdout)

    def run_inspect(self, rep: int) -> tuple[float, float]:
        cmd = [str(self.exes["inspect"]), "eval", "inspect_task.py",  # relative: inspect globs it
               "--model", "openai/bench", "--max-connections", str(self.args.concurrency),
               "-M", "responses_api=false",  # the fake server speaks chat completions (the default for this name)
               "--max-tokens", str(self.max_tokens), "--max-retries", "0", "--display", "none",
               "--log-dir", str(self.tmp / f"inspect{rep}")]
        # no telemetry unless INSPECT_TELEMETRY names a hook; generate() does not cache, and its cache is ours
        env = {k: v for k, v in self.base_env.items() if k not in ("INSPECT_TELEMETRY", "INSPECT_API_KEY_OVERRIDE")}
        env.update(INSPECT_LOG_DIR=str(self.tmp / f"inspect{rep}"), INSPECT_CACHE_DIR=str(self.tmp / "inspect-cache"))
        return timed(cmd, env, self.tmp)

    # --- promptfoo ---------------------------------------------------------------------
    def setup_promptfoo(self) -> None:
        exe = self.exes["promptfoo"] = install_promptfoo(self.args.tools_dir)
        lines = (self.tmp / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
        config = {  # JSON is YAML
            "description": "grace side-by-side benchmark",
            "prompts": ["{{ messages | dump }}"],  # a JSON list of chat messages: sent as they are
            "providers": [{"id": "openai:chat:bench",
                           "config": {"apiBaseUrl": self.srv.openai_base_url, "apiKey": "x",
                                      "max_tokens": self.max_tokens}}],
            "defaultTest": {"assert": [{"type": "contains", "value": "[ID:"}]},
            "tests": [{"vars": json.loads(line)} for line in lines],
        }
        (self.tmp / "promptfooconfig.yaml").write_text(json.dumps(config), encoding="utf-8")
        self.versions["promptfoo"] = last_line(run_quiet([str(exe), "--version"], env=self.promptfoo_env()).stdout)

    def promptfoo_env(self) -> dict[str, str]:
        return {**self.base_env, **PROMPTFOO_ENV, "PROMPTFOO_CONFIG_DIR": str(self.tmp / "promptfoo-home"),
                "NODE_NO_WARNINGS": "1"}

    def run_promptfoo(self, rep: int) -> tuple[float, float]:
        cmd = [str(self.exes["promptfoo"]), "eval", "-c", str(self.tmp / "promptfooconfig.yaml"),
               "--max-concurrency", str(self.args.concurrency), "--no-cache", "--no-progress-bar",
               "-o", str(self.tmp / f"promptfoo{rep}.json")]
        # promptfoo 0.121 on Node 20 sometimes dies on exit, after the eval and its output are written, as its
        # per-run debug log (winston) is closed: the run counts, as its requests and output do
        figures = timed(cmd, self.promptfoo_env(), self.tmp, tolerate="NodeError: write after end")
        if not (self.tmp / f"promptfoo{rep}.json").exists():
            sys.exit(f"promptfoo wrote no {self.tmp / f'promptfoo{rep}.json'}")
        return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tools-dir", type=Path, default=Path.home() / ".cache" / "grace-bench",
                    help="where inspect_ai's venv and promptfoo's node_modules are installed and kept")
    ap.add_argument("--only", default=",".join(TOOLS), help="comma-separated, of: " + ", ".join(TOOLS))
    args = ap.parse_args()
    only = [t.strip() for t in args.only.split(",") if t.strip()]
    if unknown := set(only) - set(TOOLS):
        ap.error(f"--only: unknown {', '.join(sorted(unknown))} (choose from {', '.join(TOOLS)})")
    args.tools_dir = args.tools_dir.expanduser().resolve()
    args.tools_dir.mkdir(parents=True, exist_ok=True)

    figures: dict[str, list[tuple[float, float, int]]] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeAPIServer(latency=args.latency, responder=cite_first_id) as srv:
        bench = Bench(args, Path(tmp), srv)
        bench.setup_grace()
        if "grace" not in only:
            bench.prompts_from_sample()
        tools = [t for t in TOOLS if t in only]
        for rep in range(args.repeats):
            for tool in tools:
                if tool in skipped:
                    continue
                if tool != "grace" and tool not in bench.exes:
                    try:
                        getattr(bench, f"setup_{tool}")()
                    except Unavailable as exc:
                        skipped[tool] = str(exc)
                        print(f"skipping {NAMES[tool]}: {exc}", flush=True)
                        continue
                srv.clear()
                wall, cpu = getattr(bench, f"run_{tool}")(rep)
                bodies = chat_requests(srv)
                if tool == "grace" and rep == 0:
                    bench.write_prompts(bodies[: args.calls])
                figures.setdefault(tool, []).append((wall, cpu, len(bodies)))
                print(f"  repeat {rep + 1}: {NAMES[tool]:<10} {wall:6.2f} s wall  {cpu:6.2f} s CPU  "
                      f"{len(bodies)} calls, {bench.same_prompts(bodies)} with grace's prompts", flush=True)

    ideal = args.calls * args.latency / args.concurrency
    print(f"\nside by side: {args.calls} calls, concurrency {args.concurrency}, latency {args.latency}s, "
          f"median of {args.repeats} paired runs; ideal {ideal:.1f} s")
    print(f"  {'tool':<11} {'wall s':>7} {'CPU s':>7} {'of ideal':>9}  {'calls seen':>10}   version")
    for tool in tools:
        if tool in skipped:
            print(f"  {NAMES[tool]:<11} skipped: {skipped[tool]}")
            continue
        runs = figures[tool]
        wall = statistics.median(w for w, _, _ in runs)
        cpu = statistics.median(c for _, c, _ in runs)
        seen = "/".join(sorted({str(n) for _, _, n in runs}))
        flag = "" if all(n == args.calls for _, _, n in runs) else f"  (expected {args.calls})"
        print(f"  {NAMES[tool]:<11} {wall:7.2f} {cpu:7.2f} {ideal / wall:9.2f}  {seen:>10}   "
              f"{bench.versions.get(tool, '?')}{flag}")


if __name__ == "__main__":
    main()
