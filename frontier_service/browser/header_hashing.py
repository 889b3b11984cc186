"""Cookie and Authorization values never stored in clear: HMAC-SHA256 with a per-data-dir secret.

A keyed hash, not a plain one: two records sending the same session cookie still match, but a
guessable value (a short password in Basic auth) cannot be found by hashing guesses without
the secret, which stays in the data dir (`secrets/browser-headers.key`, mode 0600).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

SENSITIVE_HEADERS = frozenset({"cookie", "authorization", "proxy-authorization", "set-cookie"})
SECRET_FILE = Path("secrets") / "browser-headers.key"
HASH_PREFIX = "hmac-sha256:"
_SECRET_BYTES = 32


def header_secret(data_dir: Path) -> bytes:
    """The data dir's secret for header hashes, created (0600) on first use."""
    path = data_dir / SECRET_FILE
    try:
        secret = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            secret = path.read_bytes()
        else:
            secret = secrets.token_bytes(_SECRET_BYTES)
            with os.fdopen(fd, "wb") as out:
                out.write(secret)
            return secret
    if len(secret) < _SECRET_BYTES:
        raise ValueError(f"{path} holds {len(secret)} bytes, not a {_SECRET_BYTES}-byte secret: "
                         "remove it to make a new one (earlier hashes will no longer match)")
    return secret


class HeaderHasher:
    """Replaces the values of SENSITIVE_HEADERS by `hmac-sha256:<hex>` of the value."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("a header-hash secret needs at least 16 bytes")
        self._secret = secret

    def value(self, value: str) -> str:
        digest = hmac.new(self._secret, value.encode("utf-8", "surrogateescape"), hashlib.sha256)
        return HASH_PREFIX + digest.hexdigest()

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name, self.value(value) if name.lower() in SENSITIVE_HEADERS else value)
                for name, value in headers]
