"""A response's payload read from the blob store for a record: its block digest (sha1 over
the HTTP headers and the payload, what the field writes) computed, and the bytes checked
against the sha256 the payload digest will claim, in one read.

A body up to `IN_MEMORY` bytes is read once and written from memory; a bigger one is read
twice (the digests first, then the copy into the record), so memory stays flat for bodies
of any size. The time spent hashing is counted: it is the export's cost of writing the
digests third-party readers check.
"""

from __future__ import annotations

import base64
import hashlib
import io
import time
from dataclasses import dataclass
from typing import BinaryIO

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStore

IN_MEMORY = 4 * 1024 * 1024
_CHUNK = 1024 * 1024


class PayloadProblem(ArchiveError):
    """The store cannot give a capture's body as the catalog describes it."""


def sha256_digest(sha256_hex: str) -> str:
    """`sha256:<base32>`, a WARC digest of a sha256 the catalog holds (no read needed)."""
    return "sha256:" + base64.b32encode(bytes.fromhex(sha256_hex)).decode("ascii")


def sha1_digest(digester: hashlib._Hash) -> str:
    return "sha1:" + base64.b32encode(digester.digest()).decode("ascii")


@dataclass
class Payload:
    """What a record writes: the bytes (a stream positioned at the start), how many, and the
    block digest over `headers` + them."""

    stream: BinaryIO
    size: int
    block_digest: str


@dataclass
class DigestClock:
    """Seconds spent hashing payloads (sha1 blocks and sha256 checks) and bytes hashed."""

    seconds: float = 0.0
    bytes: int = 0


def read_payload(store: BlobStore, sha256: str, *, size: int, headers: bytes,
                 clock: DigestClock) -> Payload:
    """The payload of blob `sha256` (`size` bytes by the catalog) with its block digest;
    PayloadProblem when the store lacks it or holds other bytes."""
    block = hashlib.sha1(headers)
    check = hashlib.sha256()
    held: list[bytes] | None = [] if size <= IN_MEMORY else None
    got = 0
    try:
        with store.open(sha256) as stream:
            while chunk := stream.read(_CHUNK):
                got += len(chunk)
                if held is not None:
                    if got > IN_MEMORY:
                        held = None
                    else:
                        held.append(chunk)
                started = time.perf_counter()
                block.update(chunk)
                check.update(chunk)
                clock.seconds += time.perf_counter() - started
                clock.bytes += len(chunk)
    except ArchiveError as exc:  # BlobNotFound, BlobIntegrityError
        raise PayloadProblem(f"body sha256:{sha256} cannot be read from the store: {exc}") from None
    except OSError as exc:
        raise PayloadProblem(f"body sha256:{sha256} cannot be read: {exc}") from None
    if got != size or check.hexdigest() != sha256:
        raise PayloadProblem(f"body sha256:{sha256} in the store is {got:,} bytes hashing to "
                             f"{check.hexdigest()[:16]}…, not the {size:,} bytes recorded")
    stream_out: BinaryIO = io.BytesIO(b"".join(held)) if held is not None else store.open(sha256)
    return Payload(stream_out, got, sha1_digest(block))


def empty_payload(headers: bytes) -> Payload:
    return Payload(io.BytesIO(b""), 0, sha1_digest(hashlib.sha1(headers)))
