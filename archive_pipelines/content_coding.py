"""Content-Encoding removed in bounded steps: gzip, deflate, br and zstd, stacked or alone.

A compressed body can inflate a thousandfold (gzip, deflate) or far more (br, zstd), in one
C call if it is handed over whole. `BodyDecoder` takes the wire bytes as they arrive and
hands back the decoded entity a piece at a time: each `read()` feeds the decoders at most
`slice_bytes` of input and returns at most about `piece_bytes` of output, so a caller on
an event loop can yield between pieces. It stops for good, with the reason, once the
decoded size passes `max_bytes` or the decode ratio passes `max_ratio` (checked once
`ratio_grace_bytes` are decoded: small bodies of zeros are not bombs).

Why 1000:1: text and HTML compress 3-20:1, very repetitive pages rarely beyond 100:1, and
gzip and deflate cannot exceed 1032:1 at all, so only a stream of one repeated byte gets
there; br and zstd reach millions:1 on such streams, which is what a bomb is. Cutting at
1000:1 after the first 256 KiB stops a bomb after about that much work (decoding, then
hashing and storing the cut body) instead of at the size cap: a host answering bombs as fast
as it is asked costs the crawl little more than any other host.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from enum import StrEnum
from typing import IO, NamedTuple, Protocol, cast

import brotli
import zstandard

MIB = 1024 * 1024
DEFAULT_MAX_RATIO = 1000.0
DEFAULT_RATIO_GRACE_BYTES = 256 * 1024
DEFAULT_PIECE_BYTES = 64 * 1024
DEFAULT_SLICE_BYTES = 2 * 1024  # of input per step: 2 MiB of output at gzip's 1032:1 at most
ZSTD_MAX_WINDOW = 8 * MIB  # what browsers accept (RFC 9659); bounds the decoder's memory
SUPPORTED = ("gzip", "deflate", "br", "zstd")
_ALIASES = {"x-gzip": "gzip"}


class CutKind(StrEnum):
    """Why a body was cut short."""

    SIZE = "size"  # the bytes on the wire passed the cap
    DECODED_SIZE = "decoded-size"  # the decoded entity passed the cap
    DECODE_RATIO = "decode-ratio"  # decoded bytes per wire byte passed the limit: a bomb


class Cut(NamedTuple):
    kind: CutKind
    reason: str  # one line for the page record, e.g. "decode ratio over 1000:1"


class DecodingError(ValueError):
    """The body is not valid in its declared Content-Encoding."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding this module cannot decode; the body is kept as it came."""


def size_text(size: int) -> str:
    """`20 MiB`, or `1,000,000 bytes` for a size that is not whole MiB."""
    return f"{size // MIB} MiB" if size >= MIB and size % MIB == 0 else f"{size:,} bytes"


def size_cut(cap: int) -> Cut:
    return Cut(CutKind.SIZE, f"body over the {size_text(cap)} cap")


def parse_encodings(header: str | None) -> list[str]:
    """The codings of a Content-Encoding header in the order they were applied (identity
    dropped); UnsupportedEncoding if any is unknown."""
    codings = []
    for token in (header or "").split(","):
        coding = token.strip().lower()
        coding = _ALIASES.get(coding, coding)
        if coding in ("", "identity"):
            continue
        if coding not in SUPPORTED:
            raise UnsupportedEncoding(coding)
        codings.append(coding)
    return codings


class _Stage(Protocol):
    ended: bool

    def feed(self, data: bytes) -> None: ...

    def end(self) -> None: ...

    def read(self, limit: int) -> bytes:
        """Up to about `limit` bytes of output; b"" when it needs more input (or is done)."""
        ...


class BodyDecoder:
    """Decodes one body incrementally with caps; see the module docstring."""

    def __init__(
        self,
        codings: Sequence[str],
        *,
        max_bytes: int,
        max_ratio: float = DEFAULT_MAX_RATIO,
        ratio_grace_bytes: int = DEFAULT_RATIO_GRACE_BYTES,
        piece_bytes: int = DEFAULT_PIECE_BYTES,
        slice_bytes: int = DEFAULT_SLICE_BYTES,
    ) -> None:
        if not codings:
            raise ValueError("no codings to decode")
        # Applied left to right, so removed right to left: the last one is decoded first.
        self._stages: list[_Stage] = [_stage(coding) for coding in reversed(codings)]
        self._codings = list(reversed(codings))
        self.max_bytes = max_bytes
        self.max_ratio = max_ratio
        self.ratio_grace_bytes = ratio_grace_bytes
        self.piece_bytes = piece_bytes
        self.slice_bytes = slice_bytes
        self._wire = bytearray()  # received, not yet fed
        self._wire_ended = False
        self.consumed = 0  # wire bytes fed to the decoders
        self.decoded = 0  # bytes returned by read()
        self.cut: Cut | None = None
        self.done = False

    def feed(self, data: bytes) -> None:
        """Wire bytes, as they arrive."""
        self._wire += data

    def end(self) -> None:
        """The body ended: read() drains what is left."""
        self._wire_ended = True

    def read(self) -> bytes:
        """The next piece of the decoded body; b"" when more wire bytes are needed, or when
        `done` (the body ended, or was cut: see `cut`)."""
        if self.done:
            return b""
        piece = self._pull(len(self._stages) - 1)
        if not piece:
            self.done = self._stages[-1].ended
            return b""
        room = self.max_bytes - self.decoded
        if len(piece) > room:
            self._stop(CutKind.DECODED_SIZE, f"decoded size over the {size_text(self.max_bytes)} cap")
            piece = piece[:room]
        self.decoded += len(piece)
        if (not self.done and self.decoded > self.ratio_grace_bytes
                and self.decoded > self.max_ratio * self.consumed):
            self._stop(CutKind.DECODE_RATIO, f"decode ratio over {self.max_ratio:g}:1")
        return piece

    def _stop(self, kind: CutKind, reason: str) -> None:
        self.cut = Cut(kind, reason)
        self.done = True
        self._wire.clear()

    def _pull(self, index: int) -> bytes:
        stage = self._stages[index]
        while True:
            try:
                out = stage.read(self.piece_bytes)
            except (zlib.error, brotli.error, zstandard.ZstdError) as exc:
                raise DecodingError(f"{self._codings[index]}: {exc}") from None
            if out or stage.ended:
                return out
            if index == 0:
                if not self._wire:
                    if not self._wire_ended:
                        return b""
                    stage.end()
                    continue
                data = bytes(self._wire[: self.slice_bytes])
                del self._wire[: self.slice_bytes]
                self.consumed += len(data)
                stage.feed(data)
                continue
            upstream = self._pull(index - 1)
            if upstream:
                stage.feed(upstream)
            elif self._stages[index - 1].ended:
                stage.end()
            else:
                return b""


def _stage(coding: str) -> _Stage:
    if coding == "br":
        return _BrotliStage()
    if coding == "zstd":
        return _ZstdStage()
    return _ZlibStage(gzip=coding == "gzip")


class _BufferedStage:
    """A stage that buffers its input until `read` decodes it."""

    def __init__(self) -> None:
        self._input = b""
        self.ended = False

    def feed(self, data: bytes) -> None:
        self._input += data

    def end(self) -> None:
        self.ended = True


class _ZlibStage(_BufferedStage):
    """gzip (concatenated members too), or deflate: zlib-wrapped or raw, as browsers accept."""

    def __init__(self, *, gzip: bool) -> None:
        super().__init__()
        self._gzip = gzip
        self._inflate: zlib._Decompress | None = None

    def read(self, limit: int) -> bytes:
        while True:
            if self._inflate is None:
                if len(self._input) < 2 and not self.ended:
                    return b""  # deflate: the first two bytes tell zlib from raw
                self._inflate = zlib.decompressobj(self._wbits(self._input))
            inflate = self._inflate
            if inflate.eof:
                rest, self._input = inflate.unused_data + self._input, b""
                if not (self._gzip and rest.startswith(b"\x1f\x8b")):
                    return b""  # the end, or trailing bytes browsers ignore too
                self._inflate, self._input = zlib.decompressobj(31), rest
                continue
            out = inflate.decompress(self._input, limit)
            self._input = inflate.unconsumed_tail
            if out or not inflate.eof:
                return out  # b"": it needs more input

    def _wbits(self, head: bytes) -> int:
        if self._gzip:
            return 31
        zlib_header = (len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7
                       and (head[0] << 8 | head[1]) % 31 == 0)
        return 15 if zlib_header else -15


class _BrotliStage(_BufferedStage):
    def __init__(self) -> None:
        super().__init__()
        self._decompressor = brotli.Decompressor()

    def read(self, limit: int) -> bytes:
        decompressor = self._decompressor
        if decompressor.is_finished():
            self._input = b""  # trailing bytes after the stream are ignored
            return b""
        if not decompressor.can_accept_more_data():  # output held back by the last limit
            return decompressor.process(b"", output_buffer_limit=limit)
        if not self._input:
            return b""
        data, self._input = self._input, b""
        return decompressor.process(data, output_buffer_limit=limit)


class _Starved(Exception):
    """Raised by the zstd stage's source when it holds no input yet."""


class _ZstdSource:
    """What zstandard's stream reader reads from. Empty but not ended, it raises `_Starved`
    (b"" would mean the end of the stream); read1 asks for input only while it holds no
    output, so nothing decoded is lost, and the reader resumes where it was."""

    def __init__(self) -> None:
        self.pending = b""
        self.ended = False

    def read(self, size: int) -> bytes:
        if not self.pending:
            if self.ended:
                return b""
            raise _Starved
        data, self.pending = self.pending[:size], self.pending[size:]
        return data


class _ZstdStage:
    def __init__(self) -> None:
        self._source = _ZstdSource()
        decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
        self._reader = decompressor.stream_reader(
            cast(IO[bytes], self._source),  # it calls read() only
            read_size=DEFAULT_SLICE_BYTES, read_across_frames=True, closefd=False)
        self.ended = False

    def feed(self, data: bytes) -> None:
        self._source.pending += data

    def end(self) -> None:
        self.ended = self._source.ended = True

    def read(self, limit: int) -> bytes:
        try:
            return self._reader.read1(limit)
        except _Starved:
            return b""
