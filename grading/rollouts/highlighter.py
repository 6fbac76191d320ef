"""pygments in a child process, so a highlight that runs too long can be stopped.

The lexer is chosen from a patch's file name, which the agent controls, and some of
pygments' lexers backtrack catastrophically: the Scala string rule takes ~25 s on
`val s = "` followed by 40 backslashes and never ends on 60. A regular-expression match
is one C call holding the GIL: neither a thread nor a signal handler in the web process
can interrupt it. So lexing and formatting run in worker processes (a few per web
process, started on first use, reused), and a call that outlives its timeout kills its
worker; the caller shows the text escaped and unhighlighted instead (grading/rollouts/diffs.py).

A worker also limits its own CPU time per call (RLIMIT_CPU), so one stuck in a match dies
by itself even if the web process that asked is gone.

Pure: no Django. The child runs this file as a script (`python -I highlighter.py`) and
imports nothing but the standard library and pygments.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

FRAME = struct.Struct(">I")  # every message: 4-byte big-endian length, then that many bytes of JSON
SPAWN_SECONDS = 10.0  # a new worker must be ready (pygments imported) within this
CHILD_CPU_SECONDS = 60  # the most CPU one call may use before the worker kills itself
POOL_SIZE = 4  # workers per web process: concurrent highlights beyond this wait for one


class Unhighlighted(Exception):
    """The text could not be highlighted in time (or at all); the message says why."""


class _Worker:
    def __init__(self) -> None:
        self.owner = os.getpid()
        self.proc = subprocess.Popen(  # noqa: S603  (our own interpreter and file, no shell)
            [sys.executable, "-I", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            close_fds=True,
        )
        self.ready = False

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def _read(self, deadline: float) -> dict[str, Any]:
        header = self._read_exact(FRAME.size, deadline)
        answer: dict[str, Any] = json.loads(self._read_exact(FRAME.unpack(header)[0], deadline))
        return answer

    def _read_exact(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None  # Popen(stdout=PIPE)
        fd = self.proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        buffer = bytearray()
        while len(buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(max(1, int(left * 1000))):
                raise TimeoutError
            chunk = os.read(fd, n - len(buffer))
            if not chunk:
                raise EOFError("the highlighter process ended")
            buffer += chunk
        return bytes(buffer)

    def call(self, path: str, text: str, timeout: float) -> str:
        if not self.ready:
            try:
                self._read(time.monotonic() + SPAWN_SECONDS)
            except TimeoutError:
                raise Unhighlighted(f"the highlighter did not start within {SPAWN_SECONDS:g} s") from None
            self.ready = True
        body = json.dumps({"path": path, "text": text}).encode("ascii")
        data = memoryview(FRAME.pack(len(body)) + body)
        assert self.proc.stdin is not None  # Popen(stdin=PIPE)
        fd = self.proc.stdin.fileno()
        while data:
            data = data[os.write(fd, data) :]
        try:
            answer = self._read(time.monotonic() + timeout)
        except TimeoutError:
            raise Unhighlighted(f"highlighting did not finish within {timeout:.1f} s") from None
        if "html" not in answer:
            raise Unhighlighted("the highlighter failed on this text")
        html: str = answer["html"]
        return html

    def kill(self) -> None:
        if self.owner != os.getpid():
            return  # inherited across a fork: the parent's to end
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class HighlightPool:
    """Up to `size` worker processes; `highlight` borrows one for a call. Thread-safe."""

    def __init__(self, size: int = POOL_SIZE) -> None:
        self.size = size
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a forked child starts its own workers
        atexit.register(self.close)

    def _reset(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.size)
        self.started = 0  # workers started by this process (a killed one is replaced)

    def highlight(self, path: str, text: str, timeout: float) -> str:
        """pygments' HTML for `text`, lexed as the file `path`; Unhighlighted when that takes
        longer than `timeout` seconds (the worker is killed) or cannot be done."""
        started = time.monotonic()
        if not self._slots.acquire(timeout=max(0.0, timeout)):
            raise Unhighlighted(f"no highlighter was free within {timeout:.1f} s")
        try:
            worker = self._take()
            try:
                html = worker.call(path, text, max(0.001, timeout - (time.monotonic() - started)))
            except (Unhighlighted, OSError, EOFError, ValueError) as exc:
                worker.kill()
                if isinstance(exc, Unhighlighted):
                    raise
                raise Unhighlighted("the highlighter process failed") from exc
            with self._lock:
                self._idle.append(worker)
            return html
        finally:
            self._slots.release()

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        try:
            worker = _Worker()
        except OSError as exc:
            raise Unhighlighted("the highlighter could not be started") from exc
        self.started += 1
        return worker

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


# The child: read a request, answer pygments' HTML, until stdin closes. ------------------


def _serve() -> None:  # pragma: no cover  (runs in the child process)
    # Imported here: only the child lexes, so a process that imports this module does not load pygments.
    import resource
    from functools import cache, lru_cache

    from pygments import format as format_tokens
    from pygments.formatters import HtmlFormatter
    from pygments.lexer import Lexer
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.token import STANDARD_TYPES, Text, _TokenType
    from pygments.util import ClassNotFound

    formatter = HtmlFormatter(nowrap=True, classprefix="hl-")
    style = formatter.style

    @cache
    def styled(ttype: _TokenType) -> bool:
        """Whether the style gives a token of this type a look, that is whether
        static/css/pygments.css (this style's classes) has a rule for a class its span carries:
        its own type's or, for a type outside pygments' standard ones, a parent's up to one."""
        while True:
            if style.styles_token(ttype):
                look = style.style_for_token(ttype)
                if look["color"] or look["bold"] or look["italic"] or look["underline"] or look["bgcolor"] or look["border"]:
                    return True
            if ttype in STANDARD_TYPES or ttype.parent is None:
                return False
            ttype = ttype.parent

    def spans_that_show(tokens: Iterable[tuple[_TokenType, str]]) -> Iterator[tuple[_TokenType, str]]:
        """Tokens the style leaves plain (names, punctuation: most of a patch) written as text,
        without a span that would change nothing but the page's size."""
        for ttype, value in tokens:
            yield (ttype if styled(ttype) else Text), value

    @lru_cache(maxsize=256)
    def lexer_for(path: str) -> Lexer:
        try:
            lexer: Lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
        except ClassNotFound:
            lexer = TextLexer(stripnl=False, ensurenl=False)
        return lexer

    def read_exact(n: int) -> bytes | None:
        buffer = bytearray()
        while len(buffer) < n:
            chunk = os.read(0, n - len(buffer))
            if not chunk:
                return None
            buffer += chunk
        return bytes(buffer)

    def send(obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode("ascii")
        data = memoryview(FRAME.pack(len(body)) + body)
        while data:
            data = data[os.write(1, data) :]

    def limit_cpu() -> None:
        try:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            soft = int(usage.ru_utime + usage.ru_stime) + CHILD_CPU_SECONDS
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        except (OSError, ValueError):
            pass

    send({"ready": True})
    while True:
        header = read_exact(FRAME.size)
        if header is None:
            return
        body = read_exact(FRAME.unpack(header)[0])
        if body is None:
            return
        limit_cpu()
        try:
            request = json.loads(body)
            tokens = lexer_for(request["path"]).get_tokens(request["text"])
            send({"html": format_tokens(spans_that_show(tokens), formatter)})
        except Exception as exc:  # noqa: BLE001  (any lexer failure: the caller shows plain text)
            send({"error": type(exc).__name__})


if __name__ == "__main__":  # pragma: no cover
    _serve()
