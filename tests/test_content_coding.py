"""BodyDecoder: every coding round-trips in any chunking; bombs stop early with the reason."""

from __future__ import annotations

import gzip
import random
import zlib
from collections.abc import Callable

import brotli
import pytest
import zstandard

from archive_pipelines.content_coding import (
    DEFAULT_RATIO_GRACE_BYTES,
    MIB,
    BodyDecoder,
    CutKind,
    DecodingError,
    UnsupportedEncoding,
    parse_encodings,
)


def _page_text(size: int) -> bytes:
    rng = random.Random(7)
    words = [b"crawl", b"archive", b"frontier", b"<a href='/x'>", b"</p>", b"\n", b"zstd"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + bytes([rng.randrange(97, 123)])
    return bytes(out[:size])


TEXT = _page_text(300_000)


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # zlib-wrapped, as the RFC says
    "br": lambda data: brotli.compress(data, quality=5),
    "zstd": zstandard.ZstdCompressor().compress,
}


def decode(codings: list[str], wire: bytes, *, chunk: int, seed: int = 1,
           **caps: float) -> tuple[bytes, BodyDecoder]:
    """Feed `wire` in random chunks of 1..chunk bytes, reading everything after each."""
    rng = random.Random(seed)
    decoder = BodyDecoder(codings, max_bytes=int(caps.pop("max_bytes", 50 * MIB)), **caps)
    out: list[bytes] = []
    at = 0
    while at < len(wire) and not decoder.done:
        size = rng.randint(1, chunk)
        decoder.feed(wire[at:at + size])
        at += size
        while piece := decoder.read():
            out.append(piece)
    decoder.end()
    while piece := decoder.read():
        out.append(piece)
    return b"".join(out), decoder


@pytest.mark.unit
@pytest.mark.parametrize("chunk", [3, 1_000, 100_000])
@pytest.mark.parametrize("coding", list(ENCODERS))
def test_each_coding_round_trips_in_any_chunking(coding: str, chunk: int) -> None:
    body, decoder = decode([coding], ENCODERS[coding](TEXT), chunk=chunk)
    assert body == TEXT
    assert decoder.done and decoder.cut is None


@pytest.mark.unit
def test_raw_deflate_is_accepted_as_browsers_do() -> None:
    body, _ = decode(["deflate"], _raw_deflate(TEXT), chunk=5_000)
    assert body == TEXT


@pytest.mark.unit
def test_stacked_codings_are_removed_last_first() -> None:
    wire = brotli.compress(gzip.compress(TEXT))  # Content-Encoding: gzip, br
    body, _ = decode(parse_encodings("gzip, br"), wire, chunk=4_000)
    assert body == TEXT


@pytest.mark.unit
def test_concatenated_gzip_members_are_one_body() -> None:
    wire = gzip.compress(TEXT[:1000]) + gzip.compress(TEXT[1000:])
    body, _ = decode(["gzip"], wire, chunk=3_000)
    assert body == TEXT


@pytest.mark.unit
def test_pieces_stay_bounded() -> None:
    decoder = BodyDecoder(["gzip"], max_bytes=50 * MIB, max_ratio=1e9)
    decoder.feed(gzip.compress(bytes(30 * MIB)))
    decoder.end()
    sizes = []
    while piece := decoder.read():
        sizes.append(len(piece))
    assert sum(sizes) == 30 * MIB and max(sizes) <= 64 * 1024


def _bomb(coding: str, size: int) -> bytes:
    zeros = bytes(size)
    if coding == "br":
        return brotli.compress(zeros, quality=5)
    if coding == "zstd":
        return zstandard.ZstdCompressor(level=1).compress(zeros)
    return ENCODERS[coding](zeros)


@pytest.mark.unit
@pytest.mark.parametrize("coding", list(ENCODERS))
def test_a_bomb_stops_at_the_ratio_after_the_grace(coding: str) -> None:
    body, decoder = decode([coding], _bomb(coding, 30 * MIB), chunk=64 * 1024)
    assert decoder.cut is not None and decoder.cut.kind is CutKind.DECODE_RATIO
    assert decoder.cut.reason == "decode ratio over 1000:1"
    # Stopped within a few input slices past the grace, not at the 50 MiB cap.
    assert DEFAULT_RATIO_GRACE_BYTES < len(body) <= DEFAULT_RATIO_GRACE_BYTES + 3 * MIB
    assert body == bytes(len(body))


@pytest.mark.unit
def test_decoded_size_cap_cuts_at_exactly_the_cap() -> None:
    wire = gzip.compress(TEXT)
    body, decoder = decode(["gzip"], wire, chunk=10_000, max_bytes=100_000)
    assert body == TEXT[:100_000]
    assert decoder.cut is not None and decoder.cut.kind is CutKind.DECODED_SIZE
    assert decoder.cut.reason == "decoded size over the 100,000 bytes cap"


@pytest.mark.unit
def test_a_body_exactly_at_the_cap_is_not_cut() -> None:
    body, decoder = decode(["gzip"], gzip.compress(TEXT), chunk=10_000, max_bytes=len(TEXT))
    assert body == TEXT and decoder.cut is None


@pytest.mark.unit
def test_small_bodies_of_zeros_are_not_bombs() -> None:
    body, decoder = decode(["gzip"], gzip.compress(bytes(900_000)), chunk=10_000)
    assert len(body) == 900_000 and decoder.cut is None


@pytest.mark.unit
def test_corrupt_data_is_a_decoding_error() -> None:
    wire = bytearray(gzip.compress(TEXT))
    wire[500:520] = b"\xff" * 20
    with pytest.raises(DecodingError, match="gzip"):
        decode(["gzip"], bytes(wire), chunk=10_000)


@pytest.mark.unit
def test_a_cut_off_stream_gives_what_arrived() -> None:
    wire = zstandard.ZstdCompressor().compress(TEXT)
    body, decoder = decode(["zstd"], wire[: len(wire) // 2], chunk=10_000)
    assert 0 < len(body) < len(TEXT) and TEXT.startswith(body) and decoder.cut is None


@pytest.mark.unit
@pytest.mark.parametrize(("header", "codings"), [
    (None, []), ("", []), ("identity", []), ("GZIP", ["gzip"]), ("x-gzip", ["gzip"]),
    ("gzip, br", ["gzip", "br"]), (" zstd ,identity", ["zstd"]),
])
def test_content_encoding_header_is_read_in_order(header: str | None, codings: list[str]) -> None:
    assert parse_encodings(header) == codings


@pytest.mark.unit
@pytest.mark.parametrize("header", ["compress", "gzip, sdch", "x-unknown"])
def test_unknown_codings_are_refused(header: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        parse_encodings(header)
