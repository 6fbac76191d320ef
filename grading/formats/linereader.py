"""Read JSON Lines from a byte stream one line at a time, gzip or not, with a per-line cap.

A whole training step (hundreds of MB) goes through without ever being held in memory:
only the current line is buffered, and a line longer than the cap is skipped to its end
and reported, not loaded.

>>> import io
>>> [(n, line) for n, line in iter_lines(io.BytesIO(b'{"a":1}\\n\\n{"b":2}\\r\\n'), max_line_bytes=100)]
[(1, b'{"a":1}'), (3, b'{"b":2}')]
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


@dataclass(frozen=True)
class OversizeLine:
    """Stands in for a line longer than the cap; only its length is known."""

    size: int
    limit: int

    def __str__(self) -> str:
        return f"line is {self.size:,} bytes, over the per-line limit of {self.limit:,} bytes"


class Readable(Protocol):
    """What a body is read through: a request, an open file, a GzipFile."""

    def read(self, size: int | None = -1, /) -> bytes: ...


class BodyError(ValueError):
    """The stream itself is unreadable (e.g. a corrupt gzip member)."""


class _Prefixed:
    """A read()-able stream with some already-read bytes put back in front."""

    def __init__(self, prefix: bytes, stream: Readable):
        self._prefix = prefix
        self._stream = stream

    def read(self, size: int | None = -1, /) -> bytes:
        if self._prefix:
            if size is None or size < 0:
                data, self._prefix = self._prefix + self._stream.read(), b""
                return data
            data, self._prefix = self._prefix[:size], self._prefix[size:]
            if len(data) < size:
                data += self._stream.read(size - len(data))
            return data
        return self._stream.read(size)


def open_body(stream: Readable, *, content_encoding: str = "") -> Readable:
    """Wrap a request body or file: gunzip when the header says so or the magic bytes do."""
    head = stream.read(2)
    body = _Prefixed(head, stream)
    if content_encoding.lower().strip() in {"gzip", "x-gzip"} or head == GZIP_MAGIC:
        # typeshed wants a seek() too; GzipFile seeks only to rewind, which nothing here does.
        unzipped: Readable = gzip.GzipFile(fileobj=body, mode="rb")  # type: ignore[call-overload]
        return unzipped
    return body


def iter_lines(stream: Readable, *, max_line_bytes: int, chunk_size: int = CHUNK) -> Iterator[tuple[int, bytes | OversizeLine]]:
    """Yield (line number, bytes) for every non-blank line; OversizeLine for lines over the cap."""
    buffer = bytearray()
    line_no = 0
    skipping = 0  # bytes of an oversize line seen so far, 0 when not skipping
    while True:
        try:
            chunk = stream.read(chunk_size)
        except (OSError, EOFError, zlib.error) as exc:  # gzip raises these on corrupt input
            raise BodyError(f"body could not be read after line {line_no}: {exc}") from None
        if not chunk:
            break
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                piece = chunk[start:]
                if skipping:
                    skipping += len(piece)
                elif len(buffer) + len(piece) > max_line_bytes:
                    skipping = len(buffer) + len(piece)
                    buffer.clear()
                else:
                    buffer += piece
                break
            piece = chunk[start:newline]
            start = newline + 1
            line_no += 1
            if skipping or len(buffer) + len(piece) > max_line_bytes:
                yield line_no, OversizeLine(skipping + len(buffer) + len(piece), max_line_bytes)
                skipping = 0
                buffer.clear()
                continue
            buffer += piece
            line = bytes(buffer).rstrip(b"\r")
            buffer.clear()
            if line.strip():
                yield line_no, line
    if skipping:
        yield line_no + 1, OversizeLine(skipping, max_line_bytes)
    elif buffer.strip():
        yield line_no + 1, bytes(buffer).rstrip(b"\r")
