"""Reading one response body: capped, Content-Encoding removed in bounded pieces, and the
event loop given back every couple of milliseconds while a big body is decoded."""

from __future__ import annotations

import asyncio
import time
from typing import NamedTuple

import aiohttp

from archive_pipelines.content_coding import (
    DEFAULT_MAX_RATIO,
    BodyDecoder,
    Cut,
    UnsupportedEncoding,
    parse_encodings,
    size_cut,
)

LOOP_SLICE_S = 0.002  # decode this long at most before other tasks get a turn
JOIN_IN_THREAD_BYTES = 2 * 1024 * 1024


class Body(NamedTuple):
    data: bytes  # the entity, Content-Encoding removed (unless `encoding`)
    cut: Cut | None  # why it stops short, if it does
    encoding: str | None  # the Content-Encoding still on `data` (one this fetcher cannot decode)


async def read_body(
    response: aiohttp.ClientResponse,
    *,
    cap: int,
    chunk_bytes: int,
    max_ratio: float = DEFAULT_MAX_RATIO,
) -> Body:
    """The body of `response` (opened with auto_decompress=False), decoded, at most `cap`
    bytes on the wire and `cap` decoded; never reads past the cap."""
    header = response.headers.get("Content-Encoding")
    try:
        codings = parse_encodings(header)
    except UnsupportedEncoding:
        data, cut = await _read_raw(response, cap, chunk_bytes)
        return Body(data, cut, header)
    if not codings:
        data, cut = await _read_raw(response, cap, chunk_bytes)
        return Body(data, cut, None)
    decoder = BodyDecoder(codings, max_bytes=cap, max_ratio=max_ratio)
    turn = _LoopTurn()
    parts: list[bytes] = []
    wire = 0
    wire_cut: Cut | None = None
    async for chunk in response.content.iter_chunked(chunk_bytes):
        room = cap - wire
        wire += len(chunk)
        if len(chunk) > room:
            decoder.feed(chunk[:room])
            wire_cut = size_cut(cap)
            break
        decoder.feed(chunk)
        await _drain(decoder, parts, turn)
        if decoder.cut is not None:
            break
    decoder.end()
    await _drain(decoder, parts, turn)
    return Body(await _join(parts, decoder.decoded), decoder.cut or wire_cut, None)


async def _join(parts: list[bytes], size: int) -> bytes:
    """The pieces as one body; a big one joined in a thread (bytes.join copies without the
    GIL past 1 MiB), so a 20 MiB copy is not one long stretch on the loop."""
    if size < JOIN_IN_THREAD_BYTES:
        return b"".join(parts)
    return await asyncio.to_thread(b"".join, parts)


class _LoopTurn:
    """Gives the event loop back once LOOP_SLICE_S have passed since it last had it. Over
    the whole body: chunks already buffered are read without a pause of their own."""

    def __init__(self) -> None:
        self.began = time.perf_counter()

    async def maybe_yield(self) -> None:
        if time.perf_counter() - self.began >= LOOP_SLICE_S:
            await asyncio.sleep(0)
            self.began = time.perf_counter()


async def _drain(decoder: BodyDecoder, parts: list[bytes], turn: _LoopTurn) -> None:
    """Everything the decoder can give now, yielding to the loop between slices of work."""
    while piece := decoder.read():
        parts.append(piece)
        await turn.maybe_yield()


async def _read_raw(response: aiohttp.ClientResponse, cap: int,
                    chunk_bytes: int) -> tuple[bytes, Cut | None]:
    """Up to `cap` bytes of the body as it came, and the cut if there was more."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(chunk_bytes):
        room = cap - size
        if len(chunk) > room:
            parts.append(chunk[:room])
            return await _join(parts, cap), size_cut(cap)
        parts.append(chunk)
        size += len(chunk)
    return await _join(parts, size), None
