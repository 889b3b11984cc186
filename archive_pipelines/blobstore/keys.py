"""Key layout inside a store: `sha256/ab/cd/<hash>` (raw) or `sha256/ab/cd/<hash>.zst` (zstd)."""

from __future__ import annotations

import re
from typing import Literal

Codec = Literal["raw", "zstd"]
CODECS: tuple[Codec, ...] = ("raw", "zstd")
SUFFIXES: dict[str, str] = {"raw": "", "zstd": ".zst"}
CHUNK_SIZE = 1024 * 1024  # streaming unit for hashing and copying

_SHA256 = re.compile(r"[0-9a-f]{64}")
_HEX_PREFIX = re.compile(r"[0-9a-f]{0,64}")
_KEY = re.compile(r"sha256/([0-9a-f]{2})/([0-9a-f]{2})/([0-9a-f]{64})(\.zst)?")


def check_codec(codec: str) -> Codec:
    """Return `codec` if it is one the stores know, else raise ValueError."""
    if codec == "raw":
        return "raw"
    if codec == "zstd":
        return "zstd"
    raise ValueError(f"unknown blob codec {codec!r} (expected 'raw' or 'zstd')")


def check_sha256(sha256: str) -> str:
    """Return `sha256` if it is 64 lowercase hex characters, else raise ValueError."""
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a sha256 hex digest (64 lowercase hex characters): {sha256!r}")
    return sha256


def check_hex_prefix(prefix: str) -> str:
    """Return `prefix` if it is at most 64 lowercase hex characters, else raise ValueError."""
    if not isinstance(prefix, str) or not _HEX_PREFIX.fullmatch(prefix):
        raise ValueError(f"not a sha256 hex prefix (lowercase hex, at most 64): {prefix!r}")
    return prefix


def blob_key(sha256: str, codec: Codec) -> str:
    """The key of a blob inside a store, relative to the store's root or prefix."""
    check_sha256(sha256)
    return f"sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}{SUFFIXES[codec]}"


def hash_from_key(key: str, codec: Codec) -> str | None:
    """The hash a well-formed key of this codec names, else None (temp files, other codecs)."""
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    first, second, sha256, suffix = match.groups()
    if (suffix or "") != SUFFIXES[codec] or sha256[:2] != first or sha256[2:4] != second:
        return None
    return sha256


def key_prefix(hex_prefix: str) -> str:
    """The longest key prefix that every blob starting with `hex_prefix` shares."""
    check_hex_prefix(hex_prefix)
    if len(hex_prefix) <= 2:
        return f"sha256/{hex_prefix}"
    if len(hex_prefix) <= 4:
        return f"sha256/{hex_prefix[:2]}/{hex_prefix[2:]}"
    return f"sha256/{hex_prefix[:2]}/{hex_prefix[2:4]}/{hex_prefix}"
