"""The fields of a CDX line, under the names both servers use, and their values for a capture.

- `urlkey`: the SURT key the catalog files the capture under (`surt.urlkey`);
- `timestamp`: `YYYYMMDDhhmmss`, UTC;
- `original` / `url`: the URL as fetched;
- `mimetype` / `mime`: the Content-Type without parameters, lowercased (`unk` / `-` if none);
- `statuscode` / `status`: the HTTP status;
- `digest`: `sha256:` and the base32 of the body's SHA-256, the `WARC-Payload-Digest` our WARC
  export writes (the Internet Archive's is a bare base32 SHA-1: we hold SHA-256 only, and name
  the algorithm so nobody compares it with a SHA-1);
- `length`: the body's size in bytes, decoded (the Internet Archive's is the WARC record's
  compressed length, which a catalog capture does not have);
- `redirect`: a 3xx capture's Location.

A value that does not exist is `-`.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Literal

from archive_pipelines.catalog import Capture
from archive_pipelines.replay.timestamps import timestamp_of

Dialect = Literal["ia", "pywb"]
DIALECTS: tuple[Dialect, ...] = ("ia", "pywb")
MISSING = "-"

# Every accepted name -> the field it names.
ALIASES: dict[str, str] = {
    "urlkey": "urlkey", "timestamp": "timestamp",
    "original": "original", "url": "original",
    "mimetype": "mimetype", "mime": "mimetype",
    "statuscode": "statuscode", "status": "statuscode",
    "digest": "digest", "length": "length", "redirect": "redirect",
}
# Each field's name in each dialect's output.
NAMES: dict[Dialect, dict[str, str]] = {
    "ia": {field: field for field in set(ALIASES.values())},
    "pywb": {field: field for field in set(ALIASES.values())}
    | {"original": "url", "mimetype": "mime", "statuscode": "status"},
}
DEFAULT_FIELDS = ("urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length")


@functools.lru_cache(maxsize=65_536)  # bodies repeat: base32 is the dearest field
def digest_of(sha256_hex: str) -> str:
    """`sha256:<BASE32>` of a hex SHA-256 (as our WARC export's WARC-Payload-Digest)."""
    return "sha256:" + base64.b32encode(bytes.fromhex(sha256_hex)).decode("ascii")


def _mime(capture: Capture, dialect: Dialect) -> str:
    mime = (capture.content_type or "").split(";", 1)[0].strip().lower()
    return mime or ("unk" if dialect == "ia" else MISSING)


def _redirect(capture: Capture) -> str:
    status = capture.status_code or 0
    if 300 <= status < 400 and capture.final_url and capture.final_url != capture.url:
        return capture.final_url
    return MISSING


_VALUES: dict[str, Callable[[Capture, Dialect], str]] = {
    "urlkey": lambda c, _d: c.urlkey,
    "timestamp": lambda c, _d: timestamp_of(c.fetched_ms),
    "original": lambda c, _d: c.url,
    "mimetype": _mime,
    "statuscode": lambda c, _d: MISSING if c.status_code is None else str(c.status_code),
    "digest": lambda c, _d: MISSING if c.body_sha256 is None or not c.stored
    else digest_of(c.body_sha256),
    "length": lambda c, _d: MISSING if c.body_size is None or not c.stored else str(c.body_size),
    "redirect": lambda c, _d: _redirect(c),
}


def field_value(capture: Capture, field: str, dialect: Dialect) -> str:
    """The value of `field` (a canonical name: a value of ALIASES) for `capture`."""
    return _VALUES[field](capture, dialect)
